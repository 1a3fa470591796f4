"""Child process: export one model, compile it with AOTInductor, store the artefact.

Run as ``python -m aoti_shim.smoke.compile_worker REQUEST.json``. Compiling runs in a
child so that inductor's state, threads and memory never touch the smoke process,
and a compiler crash becomes an error line instead of killing the run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback
import zipfile
from pathlib import Path
from typing import Any

from aoti_shim.errors import UsageError

# Autotuning choices per GEMM or convolution on CUDA when AOTI_SHIM_MAX_MM_CONFIGS is unset
# (0 lifts the cap): a real conv net compiles in a minute or two, not five.
DEFAULT_CUDA_MM_CONFIGS = 6

# torch's own prefix option (PyTorch's open PR; no released torch has it yet): with it the
# generated wrapper asks for <prefix>aoti_torch_* itself, and aoti_shim_add_model's rename
# header steps aside for torch's (the header guards AOTI_TORCH_SHIM_SYMBOL_PREFIX_H).
NATIVE_PREFIX_OPTION = "aot_inductor.shim_symbol_prefix"

# Keys that restrict Inductor to generated GEMMs and convolutions: they only make sense
# while autotuning, since without it the ATen choices are the only ones left.
_BACKEND_KEYS = ("max_autotune_gemm_backends", "max_autotune_conv_backends")


def user_options() -> dict[str, Any]:
    """AOTI_SHIM_INDUCTOR_OPTIONS, a JSON object: a runtime team's own Inductor settings."""
    extra = os.environ.get("AOTI_SHIM_INDUCTOR_OPTIONS")
    if not extra:
        return {}
    parsed = json.loads(extra)
    if not isinstance(parsed, dict):
        raise ValueError("AOTI_SHIM_INDUCTOR_OPTIONS must be a JSON object")
    return parsed


def inductor_options(device: str, route: str, prefix: str = "", policy: str = "zero-fallback") -> dict[str, Any]:
    """Compile the way slim runtimes do: no libtorch in the blob, weights inside it,
    GEMMs and convolutions generated (Triton on CUDA, the C++ template on CPU, which
    covers GEMMs only) rather than left to ATen, so that the blob needs no fallback op on
    CUDA (on the CPU convolutions stay ATen's: ``compile.ZERO_FALLBACK_LEFT``). Attention is lowered to
    math by ``compile_model`` (an SDPA fallback is not an Inductor option).

    The user's options go on top. Switching autotuning off (``max_autotune`` false)
    lets ATen's GEMMs and convolutions back in: the blob then needs fallback ops
    (``cpu_addmm_out``, ``cuda_mm_out``, ``cuda_convolution``...).

    The ``default`` policy is that plain compile from the start: Inductor's own defaults
    (no autotuning), with only what a slim runtime needs (no libtorch, weights and kernels
    inside the blob)."""
    import torch._inductor.config as config

    user = user_options()
    options: dict[str, Any] = {
        "aot_inductor.link_libtorch": False,
        "aot_inductor.package_constants_in_so": True,
    }
    cap = ""
    if policy == "default":
        options["max_autotune"] = False
        options["max_autotune_gemm"] = False
        if device == "cuda":
            options["aot_inductor.embed_kernel_binary"] = True
    elif device == "cuda":
        # Templates for GEMMs and convolutions only (max_autotune_gemm): max_autotune would
        # also compile and time several configurations of every pointwise kernel.
        options["max_autotune"] = False
        options["max_autotune_gemm"] = True
        options["max_autotune_gemm_backends"] = "TRITON"
        options["max_autotune_conv_backends"] = "TRITON"
        # Fused epilogues are kept without timing both ways: half the benchmarking.
        options["benchmark_epilogue_fusion"] = False
        # Kernels inside the blob: a private copy of the blob must not need files beside it.
        options["aot_inductor.embed_kernel_binary"] = True
        cap = os.environ.get("AOTI_SHIM_MAX_MM_CONFIGS", str(DEFAULT_CUDA_MM_CONFIGS))
    else:
        options["max_autotune"] = True
        # The C++ GEMM template only: an ATen choice would import cpu_addmm_out.
        options["max_autotune_gemm_backends"] = "CPP"
        cap = os.environ.get("AOTI_SHIM_MAX_MM_CONFIGS", "")
    if route == "source":
        options["aot_inductor.package_cpp_only"] = True
        if prefix:
            # The native route, where torch has it (dropped below where it does not). The binary
            # route's compile stays unprefixed: the control runs that very blob.
            options[NATIVE_PREFIX_OPTION] = prefix
    # Autotuning dominates CUDA compile time; a cap trades kernel speed for minutes
    # (it bounds the Triton configurations of GEMMs and convolutions alike).
    if cap.isdigit() and int(cap) > 0:
        options["test_configs.max_mm_configs"] = int(cap)
    if "max_autotune" in user and not user["max_autotune"] and "max_autotune_gemm" not in user:
        # The user's "no autotuning" means none at all, GEMM templates included.
        options["max_autotune_gemm"] = False
    options.update(user)
    if not (options.get("max_autotune") or options.get("max_autotune_gemm")):
        # No autotuning: ATen's kernels are the only choice left; restricting the backends
        # to templates would leave none (NoValidChoicesError). The user's own choice stays.
        for key in _BACKEND_KEYS:
            if key not in user:
                options.pop(key, None)
    # Another torch (2.11, say) may lack an option: drop it rather than fail.
    known = set(config.get_config_copy())
    return {k: v for k, v in options.items() if k in known}


def precise_float32() -> None:
    """No TF32 in the compile: Triton's GEMM and convolution templates read torch's TF32
    flags when they are generated, and a float32 blob should compute in float32."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def attention_for(policy: str) -> Any:
    """The attention context of a compile: math for the zero-fallback one, PyTorch's own
    choice (a fused kernel, a fallback op) for the default one."""
    import contextlib

    return attention_as_math() if policy == "zero-fallback" else contextlib.nullcontext()


def attention_as_math() -> Any:
    """A context in which scaled_dot_product_attention decomposes to matmuls and a
    softmax (its math backend), which Inductor then generates and fuses, as ExecuTorch's
    CUDA backend lowers it; otherwise export and Inductor pick a fused kernel, a
    fallback op (``cuda__scaled_dot_product_efficient_attention``)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


def eager_reference(module: Any, inputs: tuple[Any, ...]) -> list[Any] | None:
    """The eager outputs in float64 (a float64 copy of the module on float64 inputs):
    the eager check's reference, free of TF32 and of float32 rounding. None when the
    module cannot run in float64."""
    import copy

    import torch

    try:
        twin = copy.deepcopy(module).to(torch.float64)
        wide = tuple(t.to(torch.float64) if t.is_floating_point() else t for t in inputs)
        with torch.no_grad(), attention_as_math():
            out = twin(*wide)
    except Exception:  # noqa: BLE001 - some modules hold float32-only state; the caller says so
        return None
    outputs = out if isinstance(out, (tuple, list)) else (out,)
    return [t.detach().cpu() for t in outputs]


# The exit status of a compile whose failure is the user's model (it raised, returned the
# wrong thing, or torch.export refused it), not the compiler's: a usage error, said once.
EXIT_USER_MODEL = 3


class UserModelError(Exception):
    """The user's model failed before Inductor ran; the message is the one line to show."""


def _first_line(e: BaseException) -> str:
    lines = f"{type(e).__name__}: {e}".strip().splitlines()
    return lines[0] if lines else type(e).__name__


def compile_model(request: dict[str, Any]) -> dict[str, Any]:
    import torch

    from aoti_shim.smoke.models import bundled, user_case

    device = request["device"]
    precise_float32()
    model = request["model"]
    # The user's module comes from the folder the user ran smoke in, given explicitly:
    # this child may run isolated (no current folder, no PYTHONPATH on sys.path).
    case = user_case(model, request.get("user_dir")) if ":" in model else bundled((model,))[0]
    policy = request.get("compile", "zero-fallback")
    # "overrides": options a caller changes on top of the smoke's (the bench's libtorch-linked twin).
    options = {
        **inductor_options(device, request["route"], request.get("prefix", ""), policy),
        **request.get("overrides", {}),
    }
    stage = "building it"
    try:
        module, inputs = case.build(device)
        with torch.no_grad(), attention_for(policy):
            stage = "running it eagerly"
            expected = module(*inputs)
            stage = "torch.export.export"
            program = torch.export.export(module, inputs)
    except Exception as e:
        if ":" not in model:
            raise
        if isinstance(e, UsageError):  # the smoke's own verdict on what the callable returned
            raise UserModelError(str(e)) from e
        raise UserModelError(f"--model {model}: {stage} failed: {_first_line(e)}") from e
    outputs = expected if isinstance(expected, (tuple, list)) else (expected,)
    reference = eager_reference(module, inputs)
    out_dir = Path(request["output"])
    pt2 = out_dir / "model.pt2"
    # Inductor decomposes attention while lowering: the math backend must be the one chosen then.
    with attention_for(policy):
        torch._inductor.aoti_compile_and_package(program, package_path=str(pt2), inductor_configs=options)
    package = out_dir / "package"
    with zipfile.ZipFile(pt2) as archive:
        archive.extractall(package)
    pt2.unlink()
    # Inputs and eager outputs travel with the blob: the run compares against these.
    torch.save(
        {
            "inputs": [t.detach().cpu() for t in inputs],
            "expected": [t.detach().cpu() for t in outputs],
            # float64 eager outputs (None: the module does not run in float64).
            "reference": reference,
        },
        out_dir / "io.pt",
    )
    result: dict[str, Any] = {"model": case.name, "device": device, "route": request["route"], "compile": policy,
                              "inductor_options": {k: repr(v) for k, v in options.items()}}
    if NATIVE_PREFIX_OPTION in options:
        result["native_prefix"] = options[NATIVE_PREFIX_OPTION]
    if request["route"] == "binary":
        blobs = sorted(package.rglob("*.so"))
        if len(blobs) != 1:
            raise RuntimeError(f"expected one .so in the package, found {len(blobs)}")
        shutil.copy2(blobs[0], out_dir / "blob.so")
        result["blob"] = "blob.so"
        result["kernel_dir"] = str(blobs[0].parent.relative_to(out_dir))
    else:
        wrappers = sorted(package.rglob("*wrapper.cpp"))
        if len(wrappers) != 1:
            raise RuntimeError(f"expected one wrapper .cpp in the package, found {len(wrappers)}")
        result["package"] = "package"
    return result


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    try:
        result = compile_model(request)
    except UserModelError as e:
        traceback.print_exc()  # the whole torch error, into the log the parent keeps
        Path(request["output"], "user_error.txt").write_text(str(e))
        return EXIT_USER_MODEL
    except Exception as e:  # noqa: BLE001 - any compiler failure becomes one reported line
        traceback.print_exc()  # into compile.log, for whoever debugs it
        message = f"{type(e).__name__}: {e}".strip().splitlines()
        Path(request["output"], "error.txt").write_text(message[0] if message else type(e).__name__)
        return 1
    Path(request["output"], "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
