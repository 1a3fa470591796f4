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


def inductor_options(device: str, route: str) -> dict[str, Any]:
    """Compile the way slim runtimes do: no libtorch in the blob, weights inside it,
    and GEMMs (and convolutions on CUDA) generated rather than left to ATen."""
    import torch._inductor.config as config

    options: dict[str, Any] = {
        "aot_inductor.link_libtorch": False,
        "aot_inductor.package_constants_in_so": True,
        "max_autotune": True,
    }
    if device == "cuda":
        options["max_autotune_gemm_backends"] = "TRITON"
        options["max_autotune_conv_backends"] = "TRITON"
        # Kernels inside the blob: a private copy of the blob must not need files beside it.
        options["aot_inductor.embed_kernel_binary"] = True
    else:
        # The C++ GEMM template only: an ATen choice would import cpu_addmm_out.
        options["max_autotune_gemm_backends"] = "CPP"
    if route == "source":
        options["aot_inductor.package_cpp_only"] = True
    # Autotuning dominates CUDA compile time; a cap trades kernel speed for minutes.
    cap = os.environ.get("AOTI_SHIM_MAX_MM_CONFIGS")
    if cap and cap.isdigit() and int(cap) > 0:
        options["test_configs.max_mm_configs"] = int(cap)
    # Extra Inductor options, as a JSON object: a runtime team's own settings.
    extra = os.environ.get("AOTI_SHIM_INDUCTOR_OPTIONS")
    if extra:
        parsed = json.loads(extra)
        if not isinstance(parsed, dict):
            raise ValueError("AOTI_SHIM_INDUCTOR_OPTIONS must be a JSON object")
        options.update(parsed)
    # Another torch (2.11, say) may lack an option: drop it rather than fail.
    known = set(config.get_config_copy())
    return {k: v for k, v in options.items() if k in known}


def compile_model(request: dict[str, Any]) -> dict[str, Any]:
    import torch

    from aoti_shim.smoke.models import bundled, user_case

    device = request["device"]
    model = request["model"]
    # The user's module comes from the folder the user ran smoke in, given explicitly:
    # this child may run isolated (no current folder, no PYTHONPATH on sys.path).
    case = user_case(model, request.get("user_dir")) if ":" in model else bundled((model,))[0]
    module, inputs = case.build(device)
    with torch.no_grad():
        expected = module(*inputs)
        program = torch.export.export(module, inputs)
    outputs = expected if isinstance(expected, (tuple, list)) else (expected,)
    out_dir = Path(request["output"])
    pt2 = out_dir / "model.pt2"
    torch._inductor.aoti_compile_and_package(
        program, package_path=str(pt2), inductor_configs=inductor_options(device, request["route"])
    )
    package = out_dir / "package"
    with zipfile.ZipFile(pt2) as archive:
        archive.extractall(package)
    pt2.unlink()
    # Inputs and eager outputs travel with the blob: the run compares against these.
    torch.save(
        {
            "inputs": [t.detach().cpu() for t in inputs],
            "expected": [t.detach().cpu() for t in outputs],
        },
        out_dir / "io.pt",
    )
    result: dict[str, Any] = {"model": case.name, "device": device, "route": request["route"]}
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
    except Exception as e:  # noqa: BLE001 - any compiler failure becomes one reported line
        traceback.print_exc()  # into compile.log, for whoever debugs it
        message = f"{type(e).__name__}: {e}".strip().splitlines()
        Path(request["output"], "error.txt").write_text(message[0] if message else type(e).__name__)
        return 1
    Path(request["output"], "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
