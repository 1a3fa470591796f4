"""``aoti-shim smoke`` end to end, and its parts: binding proof, comparison, errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aoti_shim.smoke import bindings
from cli_support import cli, one_line_error
from shims_support import reference_library
from smoke_support import (
    FIXTURES,
    PREFIX,
    compiled_mlp,
)

# --- the binding proof, from the real dynamic linker -------------------------------

_LOAD_SCRIPT = textwrap.dedent(
    """
    import ctypes, os, sys
    from pathlib import Path
    from aoti_shim.smoke.loader import load_private_copy
    for lib in sys.argv[2:]:
        ctypes.CDLL(lib, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    with load_private_copy(Path(sys.argv[1])) as blob:
        blob.library.smoke_model_run.restype = ctypes.c_int64
        print(blob.path, blob.library.smoke_model_run())
    """
)


def _bound(blob: Path, shims: Path, *globals_: Path, tmp_path: Path) -> tuple[bindings.BindingReport, int]:
    debug = tmp_path / "ld"
    debug.mkdir(parents=True)
    env = dict(os.environ, LD_DEBUG="bindings", LD_BIND_NOW="1", LD_DEBUG_OUTPUT=str(debug / "ld"))
    proc = subprocess.run([sys.executable, "-c", _LOAD_SCRIPT, str(blob), *map(str, globals_)],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    path, answer = proc.stdout.split()
    report = bindings.classify(bindings.parse_bindings(bindings.read_debug_output(debug)), path, str(shims))
    return report, int(answer)


def test_linker_record_shows_the_collision_and_the_fix(fake, tmp_path: Path) -> None:
    # libtorch's stand-in global first, then the shims: the coalesced process.
    report, answer = _bound(fake.blob, fake.shims, fake.torch, fake.shims, tmp_path=tmp_path / "a")
    assert report.summary == bindings.LIBTORCH and answer == 206
    assert report.by_place[bindings.LIBTORCH] == ("aoti_torch_dtype_float32", "aoti_torch_get_dim")
    prefixed = tmp_path / "prefixed.so"
    assert cli("rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", str(prefixed)).returncode == 0
    report, answer = _bound(prefixed, fake.shims, fake.torch, fake.shims, tmp_path=tmp_path / "b")
    assert report.summary == bindings.SHIMS and answer == 106
    assert report.count == 2  # the address-taken import is in the record too
    assert report.targets[f"{PREFIX}aoti_torch_get_dim"] == str(fake.shims)


def test_parse_bindings_reads_versioned_and_plain_lines() -> None:
    lines = [
        "     11706:\tbinding file /proc/self/fd/4 [0] to /x/libtorch_cpu.so [0]: normal symbol "
        "`aoti_torch_empty_strided'\n",
        "     11706:\tbinding file /proc/self/fd/4 [0] to /lib/libstdc++.so.6 [0]: normal symbol "
        "`_ZTVN10__cxxabiv117__class_type_infoE' [CXXABI_1.3]\n",
        "     11706:\tsymbol=aoti_torch_clone;  lookup in file=/x/libtorch_cpu.so [0]\n",
        "     11706:\tbinding file /proc/self/fd/4 [0] to /s/libaoti_shim.so [0]: normal symbol "
        "`aotishim_aoti_torch_clone'\n",
    ]
    found = list(bindings.parse_bindings(lines))
    assert [b.symbol for b in found] == [
        "aoti_torch_empty_strided", "_ZTVN10__cxxabiv117__class_type_infoE", "aotishim_aoti_torch_clone",
    ]
    report = bindings.classify(found, "/proc/self/fd/4", "/s/libaoti_shim.so")
    assert report.summary == "mixed: 1 libtorch, 1 shims"


# --- numbers -----------------------------------------------------------------------


def test_outputs_are_read_by_the_device_the_shim_reports() -> None:
    # The runner is not told the run's device: it asks the shim where each output lives
    # (a CUDA run can return host tensors, such as shapes).
    import ctypes

    import torch

    from aoti_shim.smoke.runner import ShimApi

    api = ShimApi(ctypes.CDLL(str(reference_library())), PREFIX)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    tensors = [base.t()[1:, ::2], torch.tensor([3, -1], dtype=torch.int64), torch.tensor(True), base[:0]]
    handles = [api.wrap(t) for t in tensors]
    try:
        assert [api.device_type(h) for h in handles] == ["cpu"] * len(tensors)
        copies = [api.to_torch(h) for h in handles]
    finally:
        for h in handles:
            api.delete(h)
    for copy, original in zip(copies, tensors):
        assert copy.device.type == "cpu" and copy.dtype == original.dtype and torch.equal(copy, original)
    assert copies[0].data_ptr() != tensors[0].data_ptr()  # a copy, not a view of the caller's memory


def test_cache_key_separates_device_route_and_model() -> None:
    from aoti_shim.smoke.compile import CompileRequest, cache_key

    keys = {
        cache_key(CompileRequest(m, d, r))
        for m in ("mlp", "block") for d in ("cpu", "cuda") for r in ("binary", "source")
    }
    assert len(keys) == 8


def test_a_source_route_compile_keeps_out_of_the_shared_inductor_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch writes a package_cpp_only package's kernels to <Inductor cache>/<hash of the
    graph's code>/<kernel name>.cubin and keeps a file already there: on the H200 a bfloat16
    package got the float32 compile's kernels (same graph code). Each source compile gets an
    Inductor cache of its own, removed afterwards; the binary route (kernels named by their
    content's hash) still shares the caller's."""
    from aoti_shim.smoke.compile import CompileRequest, compile_cached

    shutil.copy(FIXTURES / "user_model.py", tmp_path / "user_model.py")
    monkeypatch.chdir(tmp_path)
    shared = tmp_path / "shared-inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(shared))
    cache = tmp_path / "cache"
    source = compile_cached(CompileRequest("user_model:make", "cpu", "source"), cache)
    assert list(source.package.rglob("*.wrapper.cpp"))
    assert not list(shared.rglob("*.wrapper.cpp"))
    assert [p.name for p in cache.iterdir() if p.name != ".locks"] == [source.directory.name]
    assert not (source.directory / "inductor-cache").exists()  # the private cache is gone
    binary = compile_cached(CompileRequest("user_model:make", "cpu", "binary"), cache)
    assert binary.blob.is_file() and list(shared.rglob("*.wrapper.cpp"))


def test_reference_sample_table_is_what_render_table_prints() -> None:
    import re

    from aoti_shim.smoke.report import Row, SmokeReport, render_table

    readme = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text()
    block = next(b for b in readme.split("```") if b.lstrip("\n").startswith("model "))
    shown = block.strip("\n").splitlines()
    rows = []
    for line in shown[2:]:
        model, label, bound, control, eager, latency, checker, status = re.split(r"\s{2,}", line)
        route, prefix = re.fullmatch(r"(\w+) \((.*)\)", label).groups()
        binding, count = re.fullmatch(r"(\w+) \((\d+)\)", bound).groups()
        eager_abs, eager_bound = re.fullmatch(r"(\S+) \(<=(\S+)\)", eager).groups()
        rows.append(Row(model=model, route=route, prefix="" if prefix == "unprefixed" else prefix,
                        expected_binding=binding, binding=binding, bound={binding: int(count)},
                        control_max_abs=None if control == "-" else 0.0,
                        control_bitwise=None if control == "-" else control == "bitwise",
                        eager_max_abs=float(eager_abs), eager_bound=float(eager_bound),
                        median_us=float(latency),
                        checker=checker, ok=status.startswith("ok"), status=status))
    report = SmokeReport(device="cpu", torch_version="-", prefix=PREFIX, shim_library="-", rows=tuple(rows))
    assert len(rows) == 3 and render_table(report).splitlines() == shown


# --- the command -------------------------------------------------------------------


@pytest.mark.compiles(("mlp", "binary"), ("mlp", "source"))
def test_smoke_runs_the_chain_and_shows_the_collision(smoke_cache: Path, tmp_path: Path) -> None:
    cache = smoke_cache
    compiled_mlp(cache)
    out = tmp_path / "smoke.json"
    proc = cli("smoke", "--device", "cpu", "--model", "mlp", "--cache-dir", str(cache),
                     "--iterations", "3", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    report = json.loads(out.read_text())
    assert report["ok"] is True and report["device"] == "cpu" and report["prefix"] == PREFIX
    rows = {r["route"]: r for r in report["rows"]}
    assert set(rows) == {"source", "binary", "control"}
    imports = rows["control"]["bound"]["libtorch"]
    assert imports >= 15
    for route in ("source", "binary"):
        assert rows[route]["binding"] == "shims" and rows[route]["bound"] == {"shims": imports}
        assert rows[route]["checker"] == "clean"
    assert rows["control"]["binding"] == "libtorch"
    assert rows["control"]["checker"] == f"flags UNPREFIXED_IMPORT x{imports}"
    for row in rows.values():
        assert row["ok"] and row["max_abs"] < 1e-4 and row["median_us"] > 0
    table = proc.stdout.splitlines()
    assert table[1].split()[:2] == ["model", "route"]
    assert sum(1 for line in table if line.startswith("mlp ")) == 3
    assert "collision reproduced" in proc.stdout
    assert "2 prefixed blobs of 1 model bound every aoti_torch import" in table[-1]
    # Again: the compile and the aoti_shim_add_model build are both reused, and say so.
    again = cli("smoke", "--device", "cpu", "--model", "mlp", "--route", "source", "--no-control",
                      "--cache-dir", str(cache), "--iterations", "1")
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    steps = [line.split("] ", 1)[1] for line in again.stderr.splitlines() if line.startswith("smoke [")]
    assert steps == ["compile mlp (cpu, source route) (cached)", "build mlp with aoti_shim_add_model (cached)",
                     "run mlp (source (aotishim_))"], again.stderr
    assert again.stdout.splitlines()[-1].endswith("no control was run (--no-control)")


def test_the_latency_column_has_one_unit() -> None:
    from aoti_shim.smoke.report import Row, SmokeReport, render_table

    rows = tuple(
        Row(model="m", route="binary", prefix=PREFIX, expected_binding="shims", median_us=us) for us in (12.34, 4567.8)
    )
    table = render_table(SmokeReport(device="cpu", torch_version="-", prefix=PREFIX, shim_library="-", rows=rows))
    header, _, *lines = table.splitlines()
    assert "median us" in header
    assert [line.split()[6] for line in lines] == ["12.3", "4567.8"]


@pytest.mark.compiles(("mlp", "binary"))
def test_missing_shims_are_listed_before_anything_runs(
    fake, smoke_cache: Path, tmp_path: Path
) -> None:
    cache = smoke_cache
    artefact = compiled_mlp(cache)
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(artefact.blob) as image:
        wanted = {PREFIX + n for n in image.imports() if n.startswith("aoti_torch_")}
    proc = cli("smoke", "--device", "cpu", "--model", "mlp", "--route", "binary", "--cache-dir", str(cache),
                     "--shims", str(fake.shims), "--prefix", PREFIX, "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 8, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # The fake shim library defines two of them; every other one is listed, one a line.
    assert proc.stdout.splitlines() == sorted(
        wanted - {f"{PREFIX}aoti_torch_get_dim", f"{PREFIX}aoti_torch_dtype_float32"}
    )
    assert "nothing was run" in proc.stderr and "run mlp" not in proc.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.compiles(("user_model:make", "binary", "zero-fallback", FIXTURES))
def test_users_model_runs_through_module_callable(smoke_cache: Path, tmp_path: Path) -> None:
    """The console script, as a user runs it: its sys.path has no current folder (unlike
    python -m), so the user's module is found in the current folder on purpose, by the
    command and by the compile child, with no PYTHONPATH."""
    shutil.copy(FIXTURES / "user_model.py", tmp_path / "user_model.py")
    out = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OMP_NUM_THREADS")}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "aoti-shim"), "smoke", "--device", "cpu", "--model", "user_model:make",
         "--route", "binary", "--iterations", "3", "--cache-dir", str(smoke_cache),
         "--json", str(out), "--stream", "default"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    # Progress: a numbered, timed line as each step starts; the last stdout line says what was proven.
    steps = [line for line in proc.stderr.splitlines() if line.startswith("smoke [")]
    assert [re.match(r"smoke \[(\d+)/3 \d+:\d\d\] (\w+)", line).groups() for line in steps] == [
        ("1", "compile"), ("2", "run"), ("3", "run"),
    ], proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "smoke ok: 1 prefixed blob of 1 model bound every aoti_torch import to the shims (aotishim_) next to a "
        "global libtorch and matched eager torch; 1 unprefixed control bound to libtorch, reproducing the collision"
    )
    rows = json.loads(out.read_text())["rows"]
    assert [(r["model"], r["route"], r["binding"]) for r in rows] == [
        ("user_model:make", "binary", "shims"), ("user_model:make", "control", "libtorch"),
    ]
    # A CPU run passes no stream, whatever --stream says (the CPU rehearsal of the CUDA choice), and says so.
    assert json.loads(out.read_text())["stream"] == "none"
    assert proc.stdout.splitlines()[0].endswith(", stream none (cpu)"), proc.stdout
    # The timed runs' threads are in the table's header (one by default: steady medians).
    assert ", OMP_NUM_THREADS=1 (the default; --threads N for more), stream" in proc.stdout.splitlines()[0], proc.stdout


def test_users_callable_returning_the_wrong_thing_is_a_usage_error(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    # A usage error, said once (it was a failed row per route, exit 8).
    shutil.copy(FIXTURES / "user_model.py", tmp_path / "user_model.py")
    proc = cli(
        "smoke",
        "-q",
        "--device",
        "cpu",
        "--model",
        "user_model:wrong_shape",
        "--route",
        "binary",
        "--no-control",
        "--cache-dir",
        str(tmp_path / "cache"),
        cwd=tmp_path,
    )
    line = one_line_error(proc, 2)
    assert "--model user_model:wrong_shape: the callable must return (module, example_inputs)" in line
    # No half-made cache entry: only the kept log of the failure.
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name != ".locks"] == ["errors"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "no_such_module_xyz:build"], "cannot import"),
        (["--model", "resnet"], "not a bundled model"),
        (["--model", "os:no_such_attr"], "no attribute"),
        (["--iterations", "0"], "--iterations"),
        (["--threads", "0"], "--threads"),
        (["--json", "/no/such/folder/r.json"], "does not exist"),
        (["--shims", "/no/such/libshim.so"], "no such file"),
        (["--device", "tpu"], "invalid choice"),
        (["--cache-dir", "/proc/no-such/cache"], "cannot create"),
        (["--json", "/tmp"], "--json /tmp: is a directory"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], needle: str) -> None:
    line = one_line_error(cli("smoke", *args), 2)
    assert needle in line


@pytest.mark.parametrize(
    ("given", "suggested"),
    [
        ("resnet18", "aoti_shim.smoke.zoo:resnet18"),  # the zoo's short name
        ("gpt2_bf16", "aoti_shim.smoke.zoo:gpt2_bf16"),
        ("resnt18", "aoti_shim.smoke.zoo:resnet18"),  # misspelt
        ("aoti_shim.smoke.zoo:mobilenet_v3", "aoti_shim.smoke.zoo:mobilenet_v3_small"),  # a zoo spec, misspelt
        ("convnett", "convnet"),  # a bundled one
    ],
)
def test_an_unknown_model_suggests_the_nearest_name_the_zoos_included(given: str, suggested: str) -> None:
    line = one_line_error(cli("smoke", "--model", given), 2)
    assert line.endswith(f"; did you mean {suggested}?"), line


def test_a_name_near_nothing_gets_no_suggestion() -> None:
    line = one_line_error(cli("smoke", "--model", "xyzzy"), 2)
    assert "did you mean" not in line and "not a bundled model (mlp, block, convnet)" in line


def test_every_zoo_model_by_its_short_name_points_at_its_spec() -> None:
    from aoti_shim.smoke import model_names, zoo

    for name in zoo.MODELS:
        for dtype in zoo.DTYPES:
            full = zoo.spec(name, dtype)
            assert model_names.nearest(full.partition(":")[2]) == full
            assert model_names.nearest(full) is None  # a known name needs no suggestion


def test_smoke_help_names_the_zoo() -> None:
    from aoti_shim.smoke import zoo

    text = " ".join(cli("smoke", "--help").stdout.split())
    assert "aoti_shim.smoke.zoo:NAME" in text
    assert f"NAME one of {', '.join(zoo.MODELS)}" in text


def test_smoke_without_torch_says_how_to_install_it() -> None:
    # torch made unimportable in this one process, as in an environment without the [torch] extra.
    script = "import sys; sys.modules['torch'] = None; from aoti_shim.cli import main; sys.exit(main(['smoke']))"
    proc = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True, check=False)
    line = one_line_error(proc, 2)
    # The [torch] extra's requirements by name: aoti-shim itself is on no index, so
    # 'pip install "aoti-shim[torch]"' would fail where this line is read.
    assert line.endswith("which is not installed: pip install torch==2.13.0 numpy 'cmake>=3.25' ninja"), line
    assert "aoti-shim[" not in line


def test_users_module_that_fails_at_import_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken_at_import.py").write_text('raise RuntimeError("no GPU here\\nsecond line")\n')
    line = one_line_error(cli("smoke", "--device", "cpu", "--model", "broken_at_import:make", cwd=tmp_path), 2)
    assert "--model broken_at_import:make: cannot import 'broken_at_import': RuntimeError: no GPU here" in line


def test_shims_without_a_prefix_need_an_explicit_prefix(checker_libs, tmp_path: Path) -> None:
    lib = checker_libs["unprefixed_shim"]
    proc = cli(
        "smoke", "--device", "cpu", "--model", "mlp", "--shims", str(lib), "--cache-dir", str(tmp_path / "cache")
    )
    line = one_line_error(proc, 2)
    assert f"--shims {lib} exports no prefixed aoti_torch names; pass --prefix" in line


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif("not _cuda()", reason="needs a CUDA GPU")
def test_smoke_on_cuda(smoke_cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = cli("smoke", "--device", "cuda", "--model", "mlp", "--iterations", "5",
                     "--cache-dir", str(smoke_cache), "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rows = {r["route"]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["binary"]["binding"] == rows["source"]["binding"] == "shims"
    assert rows["control"]["binding"] == "libtorch"
    # On CUDA the runs pass a stream of their own, made current (what real runtimes expect), and say so.
    assert json.loads(out.read_text())["stream"] == "new"
    assert proc.stdout.splitlines()[0].endswith(", stream new (a stream of its own, made current)"), proc.stdout
    legacy = cli("smoke", "--device", "cuda", "--model", "mlp", "--iterations", "5", "--stream", "default",
                       "--no-control", "--route", "binary", "--cache-dir", str(smoke_cache), "--json", str(out))
    # The reference shims take the legacy default stream (a null pointer) too.
    assert legacy.returncode == 0, legacy.stdout + legacy.stderr[-3000:]
    assert json.loads(out.read_text())["stream"] == "default"


@pytest.mark.skipif("_cuda()", reason="a GPU is visible")
def test_cuda_without_a_gpu_is_a_usage_error() -> None:
    line = one_line_error(cli("smoke", "--device", "cuda", "--model", "mlp"), 2)
    assert "no CUDA device" in line


def test_installed_package_ships_the_shim_library() -> None:
    assert reference_library().is_file()


BAD_MODELS = """
import torch


class Raises(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("no GPU here\\nsecond line")


class DataDependent(torch.nn.Module):
    def forward(self, x):
        return x * 2 if x.sum() > 0 else x


def raises(device):
    return Raises(), (torch.randn(2, 3),)


def wrong_type(device):
    return 42


def unexportable(device):
    return DataDependent(), (torch.randn(2, 3),)
"""


@pytest.mark.slow  # a torch import and an export per case
@pytest.mark.parametrize(
    ("callable_", "message"),
    [
        ("raises", "--model bad_models:raises: running it eagerly failed: RuntimeError: no GPU here"),
        ("wrong_type", "--model bad_models:wrong_type: the callable must return (module, example_inputs)"),
        ("unexportable", "--model bad_models:unexportable: torch.export.export failed: GuardOnDataDependentSymNode"),
    ],
)
def test_a_users_model_that_fails_is_one_line_once_with_the_log(tmp_path: Path, callable_: str, message: str) -> None:
    # At f562a93 each such model was a FAIL row per route and again for the control, exit 8.
    (tmp_path / "bad_models.py").write_text(BAD_MODELS)
    done = cli(
        "smoke",
        "-q",
        "--device",
        "cpu",
        "--model",
        f"bad_models:{callable_}",
        "--cache-dir",
        str(tmp_path / "cache"),
        cwd=tmp_path,
    )
    line = one_line_error(done, 2)
    assert line.startswith(f"aoti-shim: error: {message}"), line
    logged = re.fullmatch(r".* \(the full error: (\S+\.log)\)", line)
    assert logged, line
    log = Path(logged.group(1))
    assert log.parent == tmp_path / "cache" / "errors" and "Traceback" in log.read_text()
    assert done.stdout == ""  # no table of failed rows


def test_the_timed_runs_use_one_thread_unless_told_otherwise() -> None:
    from aoti_shim.smoke.command import _threads

    # At f562a93 the default was whatever OpenMP chose: 18,314 us and 34 us for the same kernels in one table.
    assert _threads(None, {}) == (1, "the default; --threads N for more")
    assert _threads(3, {"OMP_NUM_THREADS": "8"}) == (3, "--threads")
    assert _threads(None, {"OMP_NUM_THREADS": "8"}) == (None, "$OMP_NUM_THREADS=8")


def test_a_second_compile_of_one_key_waits_for_the_first_and_reuses_it(tmp_path: Path) -> None:
    """Two runs sharing a cache (or the suite's early compiles and a test): while one holds a
    key's lock, another compile of that key waits, then takes the entry the first published,
    compiling nothing itself."""
    from aoti_shim.smoke.compile import CompileRequest, _compiling, cache_key

    cache = tmp_path / "cache"
    cache.mkdir()
    key = cache_key(CompileRequest("mlp", "cpu", "binary"))
    with _compiling(cache, key):
        child = subprocess.Popen(
            [sys.executable, "-c",
             "import sys; from pathlib import Path; "
             "from aoti_shim.smoke.compile import CompileRequest, compile_cached; "
             "print(compile_cached(CompileRequest('mlp', 'cpu', 'binary'), Path(sys.argv[1])).directory)", str(cache)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        try:
            time.sleep(1.5)
            assert child.poll() is None, child.communicate()
            assert not _staging(cache), "the second compile started beside the first"
            (cache / key).mkdir()
            (cache / key / "result.json").write_text('{"model": "mlp"}')
        except BaseException:
            os.killpg(child.pid, signal.SIGKILL)
            raise
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out.strip() == str(cache / key) and not _staging(cache)


def _staging(cache: Path) -> list[Path]:
    """The staging folders in a compile cache (beside them: the compiles' lock files, ``.locks``)."""
    return [p for p in cache.iterdir() if p.name.startswith(".") and p.name != ".locks"]


def test_a_killed_runs_staging_folder_is_removed_by_a_later_run(tmp_path: Path) -> None:
    """A compile killed with SIGKILL (no cleanup runs) leaves its staging folder in the cache;
    the sweep that every compile_cached runs first removes it, and leaves a live process's
    folder alone."""
    from aoti_shim.smoke.compile import remove_abandoned_staging

    cache = tmp_path / "cache"
    cache.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from aoti_shim.smoke.compile import CompileRequest, compile_cached; "
         "compile_cached(CompileRequest('mlp', 'cpu', 'binary'), Path(sys.argv[1]))", str(cache)],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not _staging(cache) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the run and its compile worker, as a kill of the job does
        child.wait()
    left = _staging(cache)
    assert left, "the killed compile left no staging folder: nothing was tested"
    ours = cache / f".mlp-cpu-binary-x.{os.getpid()}.live"  # a compile of this (live) process
    ours.mkdir()
    assert sorted(remove_abandoned_staging(cache)) == sorted(left)
    assert [p.name for p in cache.iterdir() if p.name != ".locks"] == [ours.name]
