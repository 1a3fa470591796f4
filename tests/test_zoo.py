"""The smoke's oracle (control and eager checks), its compile policy, and zoo models
(transformers' GPT-2 and BERT, built from configurations) run through the shims on CPU."""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path

import pytest
import torch  # in the test extra: its absence fails, it does not skip

from cli_support import cli
from smoke_support import PREFIX

# --- the two checks ------------------------------------------------------------------


def test_control_check_is_bitwise_or_within_a_few_roundings() -> None:
    from aoti_shim.smoke.compare import against_control

    x = torch.randn(64, 64) * 100
    same = against_control([x.clone()], [x])
    assert same.ok and same.bitwise and same.max_abs == 0
    # One float32 rounding step at the largest magnitude is allowed, but not bitwise.
    nudged = x.clone()
    nudged[0, 0] = torch.nextafter(nudged[0, 0], torch.tensor(float("inf")))
    near = against_control([nudged], [x])
    assert near.ok and not near.bitwise and 0 < near.max_abs <= near.bound
    assert near.bound == pytest.approx(1e-5 * float(x.abs().max()))
    far = against_control([x + 1e-3 * float(x.abs().max())], [x])
    assert not far.ok and "differ by more than" in far.detail
    ints = torch.arange(10)
    assert not against_control([ints + 1], [ints]).ok  # integers must be equal
    nan = x.clone()
    nan[1, 1] = float("nan")
    assert against_control([nan.clone()], [nan]).bitwise  # the same NaN is no difference
    assert not against_control([nan], [x]).ok
    assert not against_control([x[:8]], [x]).ok  # shape mismatch


def test_eager_check_scales_with_the_outputs_magnitude() -> None:
    from aoti_shim.smoke.compare import against_eager

    reference = torch.randn(100, dtype=torch.float64)
    for magnitude in (1e-3, 1.0, 1e4):
        ref = reference * magnitude
        scale = float(ref.abs().max())
        assert against_eager([(ref + 5e-5 * scale).float()], [ref]).ok
        assert not against_eager([(ref + 5e-4 * scale).float()], [ref]).ok
    # bfloat16 gets its own, wider bound.
    ref = reference * 10
    assert against_eager([(ref * (1 + 2 ** -8)).to(torch.bfloat16)], [ref]).ok


# --- the compile policy --------------------------------------------------------------


def _options(monkeypatch: pytest.MonkeyPatch, device: str, user: str | None, cap: str | None = None) -> dict:
    from aoti_shim.smoke.compile_worker import inductor_options

    for name, value in (("AOTI_SHIM_INDUCTOR_OPTIONS", user), ("AOTI_SHIM_MAX_MM_CONFIGS", cap)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    return inductor_options(device, "binary")


def test_default_cuda_compile_generates_gemms_and_convolutions(monkeypatch: pytest.MonkeyPatch) -> None:
    options = _options(monkeypatch, "cuda", None)
    assert options["max_autotune_gemm"] is True and options["max_autotune"] is False
    assert options["max_autotune_gemm_backends"] == options["max_autotune_conv_backends"] == "TRITON"
    assert options["test_configs.max_mm_configs"] == 6  # autotuning capped by default on CUDA
    assert _options(monkeypatch, "cuda", None, cap="0").get("test_configs.max_mm_configs") is None
    assert _options(monkeypatch, "cuda", None, cap="3")["test_configs.max_mm_configs"] == 3
    assert _options(monkeypatch, "cpu", None)["max_autotune_gemm_backends"] == "CPP"


def test_users_options_compose_and_autotuning_off_lets_aten_back_in(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch._inductor.config as config

    for device in ("cuda", "cpu"):
        options = _options(monkeypatch, device, '{"max_autotune": false}')
        assert not options["max_autotune"] and not options.get("max_autotune_gemm")
        # No backend restriction left: Inductor's own default (ATen included) applies,
        # instead of a NoValidChoicesError for every convolution.
        assert "max_autotune_conv_backends" not in options and "max_autotune_gemm_backends" not in options
        with config.patch(options):
            from torch._inductor.utils import use_aten_gemm_kernels

            assert use_aten_gemm_kernels()
    # What the user sets explicitly stays, even when it makes little sense.
    options = _options(monkeypatch, "cuda", '{"max_autotune": false, "max_autotune_conv_backends": "TRITON"}')
    assert options["max_autotune_conv_backends"] == "TRITON" and "max_autotune_gemm_backends" not in options
    options = _options(monkeypatch, "cuda", '{"max_autotune_gemm_backends": "ATEN,TRITON"}')
    assert options["max_autotune_gemm_backends"] == "ATEN,TRITON" and options["max_autotune_gemm"] is True


def test_the_default_compile_is_inductors_plain_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """smoke --compile default: no autotuning, no backend restriction, no cap; still no
    libtorch in the blob and (CUDA) the kernels inside it; its own cache entries."""
    from aoti_shim.smoke.compile import CompileRequest, cache_key
    from aoti_shim.smoke.compile_worker import inductor_options

    for name in ("AOTI_SHIM_INDUCTOR_OPTIONS", "AOTI_SHIM_MAX_MM_CONFIGS"):
        monkeypatch.delenv(name, raising=False)
    for device in ("cuda", "cpu"):
        options = inductor_options(device, "binary", policy="default")
        assert options["max_autotune"] is False and options["max_autotune_gemm"] is False
        assert not {"max_autotune_gemm_backends", "max_autotune_conv_backends", "test_configs.max_mm_configs"} & set(
            options
        )
        assert (
            options["aot_inductor.link_libtorch"] is False and options["aot_inductor.package_constants_in_so"] is True
        )
    assert inductor_options("cuda", "binary", policy="default")["aot_inductor.embed_kernel_binary"] is True
    plain, tuned = CompileRequest("mlp", "cuda", "binary", compile="default"), CompileRequest("mlp", "cuda", "binary")
    assert cache_key(plain) != cache_key(tuned) and "-binary-default-" in cache_key(plain)


def test_attention_lowers_to_math_inside_the_compile_context() -> None:
    from torch._inductor.decomposition import select_decomp_table

    from aoti_shim.smoke.compile_worker import attention_as_math, attention_for

    q = torch.randn(1, 2, 8, 16)

    class Attention(torch.nn.Module):
        def forward(self, q: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    def lowered(math: bool) -> set[str]:
        # Inductor's own decompositions: the ones the compile applies.
        with torch.no_grad(), (attention_as_math() if math else attention_for("default")):
            program = torch.export.export(Attention(), (q,)).run_decompositions(select_decomp_table())
        return {str(n.target) for n in program.graph.nodes if n.op == "call_function"}

    assert any("scaled_dot_product" in t for t in lowered(False))  # a fallback op, left alone
    targets = lowered(True)
    assert not any("scaled_dot_product" in t for t in targets), targets
    assert any("bmm" in t for t in targets)
    with attention_for("zero-fallback"):  # the zero-fallback compile's context is the math one
        program = torch.export.export(Attention(), (q,)).run_decompositions(select_decomp_table())
    assert not any("scaled_dot_product" in str(n.target) for n in program.graph.nodes)


# --- zoo models through the shims ----------------------------------------------------


@pytest.mark.compiles(("zoo:gpt2", "binary"), ("zoo:bert", "binary"))
def test_zoo_transformers_run_through_the_shims(smoke_cache: Path, tmp_path: Path) -> None:
    """GPT-2 and BERT (2 layers, random weights): zero fallback ops in the default CPU
    compile (attention lowered to math), the prefixed blob bitwise equal to the control,
    and within the float64 eager bound."""
    import transformers  # noqa: F401 - in the test extra: its absence fails, it does not skip

    from aoti_shim.checks.elf.image import ElfImage
    from aoti_shim.smoke.compile import CompileRequest, compile_cached
    from aoti_shim.smoke.zoo import spec

    cache = smoke_cache
    models = [spec("gpt2"), spec("bert")]
    # Both compiles at once (each is mostly one g++ process): the smoke then finds them cached.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda m: compile_cached(CompileRequest(m, "cpu", "binary"), cache), models))
    out = tmp_path / "zoo.json"
    args = [
        "smoke",
        "--device",
        "cpu",
        "--route",
        "binary",
        "--iterations",
        "2",
        "--cache-dir",
        str(cache),
        "--json",
        str(out),
    ]
    for model in models:
        args += ["--model", model]
    proc = cli(*args, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["schema_version"] == 3 and report["prefix"] == PREFIX
    rows = {(r["model"], r["route"]): r for r in report["rows"]}
    assert set(rows) == {(m, r) for m in models for r in ("binary", "control")}
    for model in models:
        binary, control = rows[(model, "binary")], rows[(model, "control")]
        assert binary["ok"] and control["ok"]
        assert binary["control_bitwise"] is True and binary["control_max_abs"] == 0
        for row in (binary, control):
            assert row["eager_reference"] == "float64" and row["eager_ok"] is True
            assert 0 < row["eager_max_abs"] <= row["eager_bound"] < 1e-2
        with ElfImage(compile_cached(CompileRequest(model, "cpu", "binary"), cache).blob) as image:
            fallbacks = sorted(n for n in image.imports() if n.startswith("aoti_torch_cpu_"))
        assert fallbacks == [], f"{model} calls fallback ops: {fallbacks}"
    assert "bitwise" in proc.stdout


@pytest.mark.compiles(("block", "binary", "default"), ("block", "binary"))
def test_the_default_compile_runs_through_the_shims_fallbacks(smoke_cache: Path, tmp_path: Path) -> None:
    """smoke --compile default on CPU: no autotuning leaves the bundled block's GEMMs to ATen,
    fallback ops the reference shims serve (cpu_addmm_out, cpu_bmm_out), equal to the control."""
    from aoti_shim.checks.elf.image import ElfImage
    from aoti_shim.smoke.compile import CompileRequest, compile_cached

    out = tmp_path / "default.json"
    proc = cli("smoke", "--device", "cpu", "--compile", "default", "--model", "block", "--route", "binary",
                     "--iterations", "2", "--cache-dir", str(smoke_cache), "--json", str(out), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rows = {r["route"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["binary"]["ok"] and rows["binary"]["control_ok"] and rows["control"]["ok"]
    with ElfImage(
        compile_cached(CompileRequest("block", "cpu", "binary", compile="default"), smoke_cache).blob
    ) as image:
        fallbacks = {n for n in image.imports() if n.startswith("aoti_torch_cpu_")}
    assert {"aoti_torch_cpu_addmm_out", "aoti_torch_cpu_bmm_out"} <= fallbacks, fallbacks
    # The zero-fallback compile of the same model (the smoke's default) imports none.
    with ElfImage(compile_cached(CompileRequest("block", "cpu", "binary"), smoke_cache).blob) as image:
        assert not [n for n in image.imports() if n.startswith("aoti_torch_cpu_")]


def test_a_missing_zoo_library_is_named_with_a_pin_that_loads_next_to_torch() -> None:
    from aoti_shim.smoke.zoo import install_hint

    assert install_hint("torchvision", "2.13.0+cpu") == (
        "pip install 'torchvision==0.28.*' --index-url https://download.pytorch.org/whl/cpu "
        "(the release that loads next to torch 2.13.0+cpu)"
    )
    assert (
        install_hint("torchvision", "2.11.0+cu130")
        == "pip install 'torchvision==0.26.*' (the release that loads next to torch 2.11.0+cu130)"
    )
    # The others take the [zoo] extra's pins (it was a bare `pip install transformers`).
    assert install_hint("transformers", "2.13.0") == "pip install 'transformers<6,>=5'"
    assert install_hint("timm", None) == "pip install 'timm>=1'"
