from __future__ import annotations

from pathlib import Path

import pytest

import torch_support
from checker_fixtures import build_fixtures
from cmake_support import CMakeProject
from smoke_support import FakeLibs, build_fake_libs
from summary_support import SUMMARY_LINES

# The markers a fixture brings to every test that uses it, directly or through another
# fixture (item.fixturenames is that closure). So `pytest -m "not slow"` leaves out the
# pip and CMake builds, the torch compiles and the fuzzing without a list of tests to keep.
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    # CMake and pip builds
    "cmake_project": ("slow",),
    "model_build": ("slow",),
    "public_build": ("slow",),
    "runtime_build": ("slow",),
    "cuda_runtime_build": ("slow",),
    "shim_test_binary": ("slow",),
    "cuda_blob": ("slow",),
    "wheelhouse": ("slow",),
    "plugin_project": ("slow",),
    "skbuild_wheel": ("slow",),
    "scan_envs": ("slow",),
    "ci_runner": ("slow",),
    # torch: its libraries, its module, or a model it compiles
    "torch_lib": ("torch",),
    "torch_module": ("torch",),
    "smoke_cache": ("slow", "torch"),
    "prefixed_blob": ("slow", "torch"),
    # thousands of mutants
    "corpus": ("slow",),
}
GPU_TESTS = Path(__file__).resolve().parent / "gpu"


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """The lines tests gave summary_support.summary_line, at the end of the run's output."""
    lines = config.stash.get(SUMMARY_LINES, [])
    if lines:
        terminalreporter.section("aoti-shim counts")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            for marker in FIXTURE_MARKERS.get(fixture, ()):
                item.add_marker(marker)
        if GPU_TESTS in Path(str(item.path)).parents:
            item.add_marker("gpu")


@pytest.fixture(scope="session")
def checker_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_fixtures(tmp_path_factory.mktemp("checker-fixtures"))


@pytest.fixture(scope="session")
def fake(tmp_path_factory: pytest.TempPathFactory) -> FakeLibs:
    """The smoke's stand-in libraries (blob, prefixed shims, a libtorch stand-in), built once:
    four modules compiled the same four C files each. Tests copy them before changing one."""
    return build_fake_libs(tmp_path_factory.mktemp("fake-libs"))


@pytest.fixture(scope="session")
def native_torches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """The miniature macOS and Windows torch (folder, wheel), built once: two modules read them."""
    from torch_native_fixtures import build_torches

    return build_torches(tmp_path_factory.mktemp("native-torch"))


@pytest.fixture(scope="session")
def scan_envs(tmp_path_factory: pytest.TempPathFactory):
    """The scan's fixture venvs (one set per session: pip installs cost seconds each)."""
    from scan_support import build_envs

    return build_envs(tmp_path_factory.mktemp("scan-envs"))


@pytest.fixture(scope="session")
def torch_lib() -> Path:
    """The installed torch's lib/ folder (torch is in the test extra: no torch fails)."""
    return torch_support.torch_lib()


@pytest.fixture(scope="session")
def torch_module():
    """The torch module (in the test extra: its absence fails, it does not skip)."""
    import torch

    return torch


def _smoke_cache_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "smoke-compile-cache"


@pytest.fixture(scope="session")
def smoke_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's smoke compile cache: every test that compiles the bundled models shares it."""
    path = _smoke_cache_path(tmp_path_factory)
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session", autouse=True)
def _prewarmed_compiles(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The selected tests' ``compiles`` markers, compiled early by a child (tests/prewarm_support.py)."""
    import prewarm_support

    requests = prewarm_support.wanted(request.session.items)
    if not requests:
        yield
        return
    base = tmp_path_factory.getbasetemp()
    child = prewarm_support.start(requests, _smoke_cache_path(tmp_path_factory), base / "prewarm.log")
    try:
        yield
    finally:
        prewarm_support.stop(child)


@pytest.fixture(scope="session")
def own_wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding aoti-shim's own wheel, written once per session by the README's command
    (``aoti-shim wheelhouse``: the installed aoti-shim, as the wheel pip installed)."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("own-wheelhouse")
    aoti_shim = Path(sys.executable).parent / "aoti-shim"
    done = subprocess.run([str(aoti_shim), "wheelhouse", str(folder)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in folder.iterdir()] == [Path(done.stdout.strip()).name]
    return folder


@pytest.fixture(scope="session")
def ci_runner(tmp_path_factory: pytest.TempPathFactory, own_wheelhouse: Path):
    """A GitHub runner's job environment here (a fresh venv; tests/actions_support.py), with
    aoti-shim's wheel already where action.yml keeps it: its step that builds that wheel from
    the source (a minute, the same wheel) finds it, as on a runner with a warm cache."""
    import shutil

    from actions_support import Runner

    runner = Runner.fresh(tmp_path_factory.mktemp("ci-runner"))
    shutil.copytree(own_wheelhouse, runner.temp / "aoti-shim-wheelhouse")
    return runner


@pytest.fixture
def cmake_project(tmp_path: Path):
    """``cmake_project(source, defines, build=..., **kw)``: a CMakeProject building into ``build``
    (default: this test's tmp_path/build)."""

    def make(
        source: Path, defines: dict[str, str] | None = None, *, build: Path | None = None, **kwargs: object
    ) -> CMakeProject:
        return CMakeProject(source, build or tmp_path / "build", dict(defines or {}), **kwargs)

    return make


@pytest.fixture
def plugin_project(tmp_path: Path):
    """``plugin_project(name)``: a private copy of fixtures/packages/<name> to build (builds write into it)."""
    from plugin_support import copy_fixture

    return lambda name: copy_fixture(name, tmp_path)
