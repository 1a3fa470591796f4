"""The GPU kit (tests/gpu, docs/gpu) cannot rot unseen on machines without a GPU.

CI has no GPU, so the GPU tests only skip there; a GPU test that no longer imports, or a
script that names a moved file, showed only on the H200 (issue 28: a test built
tests/packages/plugin_cuda after it moved to fixtures/). Here, without a GPU: every GPU
test is collected, every path the kit names exists, and the H200 script's "tests" phase
runs as a CPU rehearsal (AOTI_SHIM_GPU_DEVICE=cpu) within its time budget.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import aoti_shim

REPO = Path(__file__).resolve().parents[1]
GPU_TESTS = REPO / "tests" / "gpu"
KIT = sorted([*REPO.glob("docs/gpu/*.sh"), *REPO.glob("docs/gpu/*.py"), *GPU_TESTS.glob("*.py")])
# A path the kit names in its text: under one of the checkout's top folders, written from
# the checkout root ("tests/gpu/x.py") or after $REPO/ in a script.
_TOP = "tests|docs|fixtures|bench|shims|checks|plugin|smoke|src|cmake"
_TEXT_PATH = re.compile(rf"(?:\$REPO/|\$\{{REPO\}}/|(?<![\w./$\-{{}}]))((?:{_TOP})/[\w./*\-]*[\w*/])")
# The rehearsal's budget (the script's own AOTI_SHIM_GPU_BUDGET_S): what CI spends on it.
REHEARSAL_BUDGET_S = 90


def _gpu_test_functions() -> dict[str, list[str]]:
    """Per GPU test file, the test functions it defines at module level."""
    found: dict[str, list[str]] = {}
    for path in sorted(GPU_TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found[path.name] = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    return found


def test_every_gpu_test_is_collected_without_a_gpu() -> None:
    env = {k: v for k, v in os.environ.items() if k != "AOTI_SHIM_GPU_DEVICE"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(GPU_TESTS)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    collected = {line.split("::")[0].rsplit("/", 1)[-1] + "::" + line.split("::")[1].split("[")[0]
                 for line in done.stdout.splitlines() if "::" in line}
    expected = {f"{file}::{name}" for file, names in _gpu_test_functions().items() for name in names}
    assert len(expected) > 20, expected  # the five GPU test files' tests, not an empty glob
    assert expected <= collected, sorted(expected - collected)


def _named_paths(path: Path) -> list[tuple[str, Path]]:
    """(as written, where it points) for every checkout path ``path`` names."""
    text = path.read_text(encoding="utf-8")
    named = [(m.group(1), REPO / m.group(1)) for m in _TEXT_PATH.finditer(text)]
    if path.suffix == ".py":
        named += _joined_paths(ast.parse(text), path)
    return named


def _joined_paths(tree: ast.AST, path: Path) -> list[tuple[str, Path]]:
    """``REPO / "a" / "b"`` and ``Path(__file__).resolve().parent / "c"`` joins, outermost only."""
    joins = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]
    inner = {id(n.left) for n in joins}
    out = []
    for node in joins:
        if id(node) in inner:
            continue
        parts: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.BinOp) and isinstance(base.op, ast.Div) and isinstance(base.right, ast.Constant):
            if not isinstance(base.right.value, str):
                break
            parts.insert(0, base.right.value)
            base = base.left
        root = _root_of(base, path)
        if root is not None and parts and not parts[0].startswith("."):  # .whl/: made by a script, git-ignored
            out.append((ast.unparse(node), root.joinpath(*parts)))
    return out


def _root_of(base: ast.expr, path: Path) -> Path | None:
    """The folder ``base`` stands for: REPO, or ``Path(__file__).resolve().parent(s[N])``."""
    if isinstance(base, ast.Name) and base.id == "REPO":
        return REPO
    text = ast.unparse(base)
    if text == "Path(__file__).resolve().parent":
        return path.parent
    m = re.fullmatch(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d)\]", text)
    return path.parents[int(m.group(1))] if m else None


@pytest.mark.parametrize("path", KIT, ids=lambda p: str(p.relative_to(REPO)))
def test_every_path_the_gpu_kit_names_exists(path: Path) -> None:
    missing = [
        written
        for written, target in _named_paths(path)
        if not (any(target.parent.glob(target.name)) if "*" in written else target.exists())
    ]
    assert not missing, f"{path.relative_to(REPO)} names what the checkout lacks: {missing}"


def test_the_path_reader_sees_a_moved_fixture(tmp_path: Path) -> None:
    # The rot this file exists for, as it was: the kernel test's join and its docstring.
    rotten = tmp_path / "test_x_gpu.py"
    rotten.write_text('"""Builds tests/packages/plugin_cuda."""\nX = REPO / "tests" / "packages" / "plugin_cuda"\n')
    named = _named_paths(rotten)
    assert [written for written, _ in named] == [
        "tests/packages/plugin_cuda",
        "REPO / 'tests' / 'packages' / 'plugin_cuda'",
    ]
    assert all(not target.exists() for _, target in named)
    assert all(target.exists() for _, target in _named_paths(GPU_TESTS / "test_cuda_kernels_gpu.py"))


@pytest.mark.slow
def test_the_gpu_script_rehearses_its_tests_on_the_cpu(tmp_path: Path) -> None:
    site = Path(aoti_shim.__file__).resolve().parents[1]  # the installed package: nothing to install
    assert (site / "aoti_shim" / "lib" / "libaoti_shim.so").is_file()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AOTI_SHIM_")},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AOTI_SHIM_GPU_DEVICE": "cpu",
        "AOTI_SHIM_GPU_SITE": str(site),
        "AOTI_SHIM_GPU_WORK": str(tmp_path / "work"),
        "AOTI_SHIM_GPU_CACHE": str(tmp_path / "cache"),
        "AOTI_SHIM_GPU_BUDGET_S": str(REHEARSAL_BUDGET_S),
        "OUT": str(tmp_path / "out"),
    }
    done = subprocess.run(
        ["bash", str(REPO / "docs" / "gpu" / "run_h200.sh"), "tests"],
        env=env, capture_output=True, text=True, timeout=REHEARSAL_BUDGET_S + 60, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run_log = (tmp_path / "out" / "00_run.log").read_text()
    summary = run_log[run_log.index("# summary") :].splitlines()[1:]
    steps = {line[:28].strip(): line[28:].split()[:2] for line in summary if line.strip()}
    assert list(steps) == ["gpu tests: CUDA kernels", "gpu tests: stream contract", "gpu tests: concurrent blobs",
                           "gpu tests: two GPUs", "gpu tests: attention"], run_log
    assert all(result == ["exit", "0"] for result in steps.values()), run_log
    tests_log = (tmp_path / "out" / "03_gpu_tests.log").read_text()
    # The kernels' host paths really ran; the rest skipped (collected, so imported); the
    # two-GPU step said why it had nothing to run instead of failing.
    assert re.search(r"=+ \d+ passed, \d+ skipped in ", tests_log), tests_log
    assert "skipped: fewer than two GPUs (0 visible)" in tests_log


def test_the_gpu_script_stops_first_when_the_wheels_were_not_carried(tmp_path: Path) -> None:
    # run40 (docs/gpu/results-2026-12-06): a device call without carry=[".whl"] ran six minutes
    # of steps that each failed at LIEF's rewrite. A python3 without LIEF, no wheels: stop at once.
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AOTI_SHIM_")},
        "PATH": f"{bare / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "AOTI_SHIM_GPU_DEVICE": "cuda",
        "AOTI_SHIM_GPU_WHEELS": str(tmp_path / "no-wheels"),
        "AOTI_SHIM_GPU_SITE": str(tmp_path / "site"),
        "AOTI_SHIM_GPU_WORK": str(tmp_path / "work"),
        "AOTI_SHIM_GPU_CACHE": str(tmp_path / "cache"),
        "OUT": str(tmp_path / "out"),
    }
    done = subprocess.run(["bash", str(REPO / "docs" / "gpu" / "run_h200.sh"), "core"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("stopped before any step: no lief wheel in ") and done.stderr.count("\n") == 1
    run_log = (tmp_path / "out" / "00_run.log").read_text()
    assert "stopped before any step" in run_log and "# summary" not in run_log
    assert not (tmp_path / "site").exists()  # nothing installed


def _package_imports(tree: ast.AST) -> list[tuple[str, str | None]]:
    """(module, name or None) for every ``from aoti_shim... import name`` and ``import aoti_shim...``."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aoti_shim":
            out += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "aoti_shim"]
    return out


@pytest.mark.parametrize("path", [p for p in KIT if p.suffix == ".py"], ids=lambda p: str(p.relative_to(REPO)))
def test_every_package_name_the_gpu_kit_imports_exists(path: Path) -> None:
    """A GPU script or test that imports a function the package moved fails here, not on the GPU."""
    import importlib

    missing = []
    for module, name in _package_imports(ast.parse(path.read_text(encoding="utf-8"))):
        try:
            found = importlib.import_module(module)
        except ImportError:
            missing.append(module)
            continue
        if name is not None and not hasattr(found, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert not missing, missing


@pytest.mark.slow
def test_the_attention_probe_compiles_without_a_gpu(tmp_path: Path) -> None:
    """docs/gpu/attention_probe.cu includes the shims' kernel source and names its launch
    template: a renamed file or template argument fails here, not on a borrowed GPU. One dtype,
    compiled to PTX (not linked: CI has no static CUDA runtime) by the test env's nvcc wheels."""
    from cuda_support import wheels_root
    from script_support import load_script

    probe = load_script(REPO / "docs" / "gpu" / "attention_probe.py", "attention_probe_under_test")
    out = tmp_path / "probe.o"
    env = {**os.environ, "PATH": f"{wheels_root() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(probe.nvcc_command(out, "bfloat16", link=False), env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert out.stat().st_size > 0
    assert "probe_attention" in subprocess.run(["nm", str(out)], capture_output=True, text=True, check=True).stdout


def test_the_stream_query_probe_compiles_without_a_gpu(tmp_path: Path) -> None:
    """docs/gpu/stream_query_probe.cpp (host code: the CUDA runtime's and the driver's stream
    questions) compiles with the test env's nvcc wheels, as its header says it is built on a GPU
    machine; compiled only (CI has no GPU to run it on)."""
    from cuda_support import wheels_root

    out = tmp_path / "probe.o"
    done = subprocess.run(
        [str(wheels_root() / "bin" / "nvcc"), "-O2", "-std=c++17", "-c",
         str(REPO / "docs" / "gpu" / "stream_query_probe.cpp"), "-I", str(wheels_root() / "include"), "-o", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cudaStreamGetId" in subprocess.run(["nm", str(out)], capture_output=True, text=True, check=True).stdout


def test_the_prewarm_script_loads_the_bench_from_anywhere(tmp_path: Path) -> None:
    # run43: prewarm.py loaded bench/shim_latency.py by path, and the bench had come to import
    # its sibling host_sampler.py; every compile of the GPU run's first phase failed at import.
    code = ("import runpy, sys; m = runpy.run_path(sys.argv[1], run_name='prewarm_under_test'); "
            "print(m['_bench_module']().HostSampler.__name__)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code, str(REPO / "docs" / "gpu" / "prewarm.py")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "HostSampler", done.stderr


def _kit_functions(text: str) -> dict[str, str]:
    """Each shell function of a kit script, name to body: from its `name() {` line to the next
    line that is `}`, or a one-line `name() { ...; }`."""
    found = {m.group(1): m.group(2) for m in re.finditer(r"(?m)^(\w+)\(\) \{\n(.*?)^\}", text, re.S)}
    found |= {m.group(1): m.group(2) for m in re.finditer(r"(?m)^(\w+)\(\) \{ (.*) \}$", text)}
    return found


STEP_SCRIPTS = sorted(p.name for p in (REPO / "docs" / "gpu").glob("*.sh") if "export -f" in p.read_text())


@pytest.mark.parametrize("script", STEP_SCRIPTS)
def test_every_variable_a_step_reads_from_the_script_is_exported(script: str) -> None:
    # Each step runs its function in a child bash (`export -f`): a variable the script sets but
    # does not export is empty there. run42: WHEELS was not exported, so the wheel install
    # installed nothing, exited 0, and every binary-route step failed later at LIEF's import.
    text = (REPO / "docs" / "gpu" / script).read_text(encoding="utf-8")
    functions = _kit_functions(text)
    if "docs/gpu/steps.sh" in text:  # sourced: its functions are the script's too
        functions |= _kit_functions((REPO / "docs" / "gpu" / "steps.sh").read_text(encoding="utf-8"))
    exported_functions = {n for line in re.findall(r"(?m)^export -f (.*)$", text) for n in line.split()}
    assert exported_functions and exported_functions <= set(functions), exported_functions - set(functions)
    set_at_top = set(re.findall(r"(?m)^([A-Z_][A-Z0-9_]*)=", text))
    exported = {n for line in re.findall(r"(?m)^export ([A-Z_][A-Z0-9_ ]*)$", text) for n in line.split()}
    exported |= set(re.findall(r"(?m)^export ([A-Z_][A-Z0-9_]*)=", text))
    missing = {}
    for name in sorted(exported_functions):
        body = functions[name]
        local = set(re.findall(r"\blocal\s+(?:-\w+\s+)?([A-Za-z_]\w*)", body))
        read = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", body))
        unseen = (read & set_at_top) - exported - local
        if unseen:
            missing[name] = sorted(unseen)
    assert set_at_top and not missing, missing
