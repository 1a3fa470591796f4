"""Helpers shared by the smoke, loader and rewrite tests: fixture builds with the
real C compiler, the installed CLI, and one compiled MLP reused by every test."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aoti_shim.checks.abi.prefix import DEFAULT_PREFIX
from compile_support import compile_shared

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures" / "smoke"
PREFIX = DEFAULT_PREFIX  # the installed reference shims' (the fake shims take it too)


def build_c(source: str, out: Path, *defines: str) -> Path:
    """A shared library from fixtures/smoke/<source>, undefined symbols allowed."""
    compile_shared(FIXTURES / source, out, defines)
    return out


@dataclass(frozen=True)
class FakeLibs:
    blob: Path  # imports aoti_torch_get_dim / aoti_torch_dtype_float32 unprefixed
    shims: Path  # defines aotishim_aoti_torch_* (answers 1)
    torch: Path  # defines the unprefixed names, like libtorch (answers 2)
    counter: Path


def build_fake_libs(root: Path) -> FakeLibs:
    return FakeLibs(
        blob=build_c("fake_blob.c", root / "libfake_blob.so"),
        shims=build_c("fake_shims.c", root / "libfake_shims.so", f"-DSHIM_NAME(x)={PREFIX}##x", "-DOWNER=1"),
        torch=build_c("fake_shims.c", root / "libtorch_stand_in.so", "-DOWNER=2"),
        counter=build_c("counter.c", root / "libcounter.so"),
    )


def compiled_mlp(cache_dir: Path, route: str = "binary"):
    """The bundled MLP, compiled once per test session (``cache_dir`` is the session's
    ``smoke_cache`` fixture, so every module that asks shares the one compile)."""
    from aoti_shim.smoke.compile import CompileRequest, compile_cached

    return compile_cached(CompileRequest(model="mlp", device="cpu", route=route), cache_dir)
