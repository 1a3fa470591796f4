"""The file search is the loader's (issue 33 §2): where a DT_NEEDED entry leads, the check
says what glibc's ld.so does, and ld.so itself is asked the same question each time.

Each test builds its libraries from C and loads them in a child (the globals RTLD_GLOBAL,
then the blob RTLD_NOW | RTLD_LOCAL), or runs a program that dlopens the blob.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.loader import search
from c_library_support import ENTRY, EXPORT, c_library, defining, loader_platform, using
from compile_support import compile_object, compile_program, compile_shared

LOADER = (
    "import ctypes, os, sys\n"
    "for p in sys.argv[1:-1]: ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)\n"
    "ctypes.CDLL(sys.argv[-1], mode=os.RTLD_NOW | os.RTLD_LOCAL)\n"
)


@pytest.fixture(autouse=True)
def _no_library_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)


def _lib(folder: Path, name: str, text: str, flags: tuple[str, ...] = (), *, soname: str | None = None) -> Path:
    return c_library(folder, name, text, ("-Wl,--no-as-needed", *flags), soname=soname)


def _load(*paths: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    return subprocess.run(
        [sys.executable, "-c", LOADER, *map(str, paths)], capture_output=True, text=True, env=env, check=False, cwd=cwd
    )


def _failures(shims: tuple[Path, ...], models: tuple[Path, ...]) -> list[str]:
    """The check's LOAD_FAILURE messages."""
    report = run_check(CheckSettings(shims=tuple(map(str, shims)), models=tuple(map(str, models))))
    return [f.message for f in report.findings if f.rule == "LOAD_FAILURE"]


def _blocking(shims: tuple[Path, ...], models: tuple[Path, ...]) -> set[tuple[str, str]]:
    report = run_check(CheckSettings(shims=tuple(map(str, shims)), models=tuple(map(str, models))))
    return {(f.rule, f.symbol) for f in report.findings if f.severity == "blocking"}


# -- $ORIGIN is the folder of the path a library was opened by ---------------------------------


def test_origin_is_the_folder_a_symlinked_blob_was_opened_from(tmp_path: Path) -> None:
    """A deployment tree links the blob and its dependency from a build folder: $ORIGIN is
    the tree's folder (its neighbours load), not the target's. 4c8e217 resolved the symlink
    and said the dependency was found nowhere."""
    build, deploy = tmp_path / "build", tmp_path / "deploy"
    dep2 = _lib(deploy, "dep2", defining("helper2"))
    dep = _lib(build / "stage", "dep", defining("helper") + using("helper2"), (str(dep2), "-Wl,-rpath,$ORIGIN"))
    blob = _lib(build, "blob", using("helper") + ENTRY, (str(dep), "-Wl,-rpath,$ORIGIN"))
    # The blob and its dependency are symlinks in deploy/; dep2 is only there.
    (deploy / "libblob.so").symlink_to(blob)
    (deploy / "libdep.so").symlink_to(dep)
    assert _load(deploy / "libblob.so").returncode == 0
    assert _load(blob).returncode != 0  # from the build folder, libdep.so is nowhere
    assert _failures((), (deploy / "libblob.so",)) == []
    assert "needs libdep.so, which the loader finds nowhere" in " ".join(_failures((), (blob,)))


def test_origin_dot_dot_through_a_symlinked_folder_is_the_kernels(tmp_path: Path) -> None:
    """The blob is opened through a symlinked folder and its RUNPATH is $ORIGIN/../deps:
    ld.so opens ``top/link/../deps/libdep.so``, which the kernel resolves from the link's
    target (``other/deps``), not lexically (``top/deps``). The check read the lexical
    file (os.path.abspath) and said OK where the dlopen fails."""
    top, other = tmp_path / "top", tmp_path / "other"
    nowhere = _lib(tmp_path / "scratch", "nowhere", defining("gone"))
    _lib(top / "deps", "dep", defining("helper"))  # the lexical neighbour: loads
    dep = _lib(other / "deps", "dep", defining("helper") + using("gone"), (str(nowhere),))
    _lib(other / "real", "blob", using("helper") + ENTRY, (str(dep), "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../deps"))
    (top / "link").symlink_to(other / "real")
    blob = top / "link" / "libblob.so"
    assert _load(blob).returncode != 0  # other/deps/libdep.so needs libnowhere.so
    assert "needs libnowhere.so" in " ".join(_failures((), (blob,)))


def test_a_dependencys_origin_keeps_the_dot_dot_it_was_opened_by(tmp_path: Path) -> None:
    """As above, one level down: the dependency ld.so opened as ``top/link/../deps/libdep.so``
    has that folder as $ORIGIN, so its ``$ORIGIN/../deps2`` is ``other/deps2`` too."""
    top, other = tmp_path / "top", tmp_path / "other"
    nowhere = _lib(tmp_path / "scratch", "nowhere", defining("gone"))
    _lib(top / "deps2", "dep2", defining("helper2"))  # the lexical neighbour: loads
    dep2 = _lib(other / "deps2", "dep2", defining("helper2") + using("gone"), (str(nowhere),))
    dep = _lib(
        other / "deps",
        "dep",
        defining("helper") + using("helper2"),
        (str(dep2), "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../deps2"),
    )
    _lib(other / "real", "blob", using("helper") + ENTRY, (str(dep), "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../deps"))
    (top / "link").symlink_to(other / "real")
    blob = top / "link" / "libblob.so"
    assert _load(blob).returncode != 0  # other/deps2/libdep2.so needs libnowhere.so
    assert "needs libnowhere.so" in " ".join(_failures((), (blob,)))


@pytest.mark.parametrize("bad", ["loop", "not_a_folder"])
def test_an_unopenable_file_ends_its_search_list(tmp_path: Path, bad: str) -> None:
    """The first RUNPATH folder holds libdep.so as a symlink loop (ELOOP), or one through a
    file (ENOTDIR): glibc's open_path gives up the rest of that list (not ENOENT, not
    EACCES), so the second folder's good copy is never tried and the dlopen fails. The
    check skipped the unopenable file, took the good copy and said OK."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    dep = _lib(second, "dep", defining("helper"))
    if bad == "loop":
        (first / "libdep.so").symlink_to("libdep.so")
    else:
        (first / "file").write_text("")
        (first / "libdep.so").symlink_to("file/libdep.so")
    blob = _lib(
        tmp_path, "blob", using("helper") + ENTRY, (str(dep), f"-Wl,--enable-new-dtags,-rpath,{first}:{second}")
    )
    assert _load(blob).returncode != 0
    assert "needs libdep.so, which the loader finds nowhere" in " ".join(_failures((), (blob,)))
    # The next list is still searched: the RUNPATH after LD_LIBRARY_PATH's ended list.
    other = _lib(
        tmp_path / "o", "blob2", using("helper") + ENTRY, (str(dep), f"-Wl,--enable-new-dtags,-rpath,{second}")
    )
    env = {**os.environ, "LD_LIBRARY_PATH": str(first)}
    assert subprocess.run([sys.executable, "-c", LOADER, str(other)], env=env, check=False).returncode == 0
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom aoti_shim.checks import CheckSettings, run_check\n"
            "r = run_check(CheckSettings(models=(sys.argv[1],)))\nprint([f.rule for f in r.findings if f.severity == "
            "'blocking'])",
            str(other),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "[]", result.stdout


# -- dynamic string tokens, whole tokens only -----------------------------------------------------


@pytest.mark.parametrize("folder", ["$ORIGIN_deps", "$LIBRARY", "$PLATFORMS", "${ORIGIN}x"])
def test_a_token_is_a_whole_token(tmp_path: Path, folder: str) -> None:
    """``$ORIGIN_deps`` names a literal folder (glibc's is_dst: a token ends where no letter,
    digit or underscore follows, or at its closing brace). 4c8e217 expanded the prefix of the
    word. ``${ORIGIN}x`` is $ORIGIN followed by x."""
    literal = tmp_path / "lit"
    origin_expanded = folder.replace("${ORIGIN}", str(tmp_path))
    where = Path(origin_expanded) if origin_expanded.startswith("/") else literal / folder
    dep = _lib(where, "dep", defining("helper"))
    run_path = origin_expanded if origin_expanded.startswith("/") else f"{literal}/{folder}"
    blob = _lib(
        tmp_path, "blob", using("helper") + ENTRY, (str(dep), f"-Wl,-rpath,{folder if '{' in folder else run_path}")
    )
    assert _load(blob).returncode == 0, _load(blob).stderr
    assert _failures((), (blob,)) == []


# -- $PLATFORM is the loader's AT_PLATFORM ----------------------------------------------------------


def test_platform_is_the_loaders_not_uname(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$PLATFORM is AT_PLATFORM (``haswell`` on AVX2 Intel with glibc < 2.37, where ``uname -m``
    says x86_64). The fixture is built under the platform the loader reports; the check must
    agree whatever ``uname -m`` says (4c8e217 took uname's, and missed the dependency)."""
    platform = loader_platform()
    dep = _lib(tmp_path / "p" / platform, "dep", defining("helper"))
    blob = _lib(tmp_path, "blob", using("helper") + ENTRY, (str(dep), "-Wl,-rpath,$ORIGIN/p/$PLATFORM"))
    assert _load(blob).returncode == 0, _load(blob).stderr
    real = os.uname()
    # A machine whose uname differs from its loader's platform (an AVX2 Intel one).
    fake = os.uname_result((real.sysname, real.nodename, real.release, real.version, "not-the-platform"))
    monkeypatch.setattr(os, "uname", lambda: fake)
    assert _failures((), (blob,)) == []
    assert search.loader_facts().platform == platform


# -- a loaded library is matched by its soname or its path, never its file's name --------------------


def test_a_shim_without_soname_is_searched_for(tmp_path: Path) -> None:
    """A shim built without -soname is opened by its path: a blob's DT_NEEDED of its file
    name does not match it, and the loader searches (and here finds nothing). 4c8e217 took
    the base name for a loaded library's name and said nothing."""
    src = tmp_path / "shim.c"
    src.write_text(defining("myrt_aoti_torch_x"))
    shim = tmp_path / "rt" / "libshim.so"
    shim.parent.mkdir()
    compile_shared(src, shim)
    # -L -l: the blob's DT_NEEDED is the file's name (a path given to the linker would be a path).
    link = ("-L", str(shim.parent), "-lshim")
    blob = _lib(tmp_path / "blob", "blob", using("myrt_aoti_torch_x") + ENTRY, link)
    loaded = _load(shim, blob)
    assert loaded.returncode != 0 and "libshim.so: cannot open shared object file" in loaded.stderr, loaded.stderr
    assert any("needs libshim.so, which the loader finds nowhere" in m for m in _failures((shim,), (blob,)))
    # Beside the shim (its RUNPATH finds that very file), it loads, and the check agrees.
    near = _lib(tmp_path / "rt", "blob", using("myrt_aoti_torch_x") + ENTRY, (*link, "-Wl,-rpath,$ORIGIN"))
    assert _load(shim, near).returncode == 0
    assert _failures((shim,), (near,)) == []


# -- the first candidate the loader cannot load stops the search ------------------------------------


def _patched(lib: Path, at: int, value: bytes, out: Path) -> Path:
    data = bytearray(lib.read_bytes())
    data[at : at + len(value)] = value
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(bytes(data))
    return out


def _shadow(kind: str, real: Path, where: Path, tmp_path: Path) -> None:
    target = where / real.name
    if kind == "folder":
        target.mkdir(parents=True)
    elif kind == "text":
        where.mkdir(parents=True, exist_ok=True)
        target.write_text("INPUT(-lfoo)\n")  # a linker script, as /usr/lib's libc.so is
    elif kind == "relocatable":
        src = tmp_path / "obj.c"
        src.write_text(defining("helper"))
        where.mkdir(parents=True, exist_ok=True)
        compile_object(src, target, ("-fPIC",))
    else:
        at, value = {
            "osabi": (7, b"\x61"),
            "abiversion": (8, b"\x07"),
            "padding": (12, b"\x01"),
            "encoding": (5, b"\x02"),
            "machine": (18, (183).to_bytes(2, "little")),
            "class": (4, b"\x01"),
        }[kind]
        _patched(real, at, value, target)


@pytest.mark.parametrize(
    "kind", ["text", "folder", "relocatable", "osabi", "abiversion", "padding", "encoding", "machine", "class"]
)
def test_the_first_candidate_decides(tmp_path: Path, kind: str) -> None:
    """A file by the needed name earlier in the path that the loader cannot load (not ELF, a
    folder, ET_REL, a foreign OSABI or ABI version, identification padding, another data encoding)
    fails the load; one of another ELF class or machine is skipped. 4c8e217 skipped them all."""
    dep = _lib(tmp_path / "second", "dep", defining("helper"))
    _shadow(kind, dep, tmp_path / "first", tmp_path)
    blob = _lib(tmp_path, "blob", using("helper") + ENTRY, (str(dep), "-Wl,-rpath,$ORIGIN/first:$ORIGIN/second"))
    loaded = _load(blob)
    failures = _failures((), (blob,))
    if kind in ("machine", "class"):
        assert loaded.returncode == 0, loaded.stderr
        assert failures == []
    else:
        assert loaded.returncode != 0, f"ld.so loaded past a {kind} shadow"
        why = re.search(r"libdep\.so: (.*)$", loaded.stderr.strip().splitlines()[-1]).group(1)
        (message,) = failures
        first = str(tmp_path / "first" / "libdep.so")
        assert (
            f"needs libdep.so, which the loader cannot load: the first file by that name it finds, {first}:" in message
        )
        # The check names the loader's own error.
        assert message.split(f"{first}: ", 1)[1].split(" (the search")[0] in why, (message, why)


# -- the program's DT_RPATH -------------------------------------------------------------------------


def test_the_programs_rpath_serves_a_library_without_runpath(tmp_path: Path) -> None:
    """glibc searches the program's DT_RPATH for any library without DT_RUNPATH, after its
    loaders'. 4c8e217 said the blob's dependency was found nowhere."""
    dep = _lib(tmp_path / "progdeps", "dep", defining("helper"))
    blob = _lib(tmp_path / "blobs", "blob", using("helper") + ENTRY, (str(dep),))
    src = tmp_path / "prog.c"
    src.write_text(
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        f"{EXPORT} int prog_marker(void) {{ return 1; }}\n"
        'int main(int argc, char **argv) { if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) { puts(dlerror()); return 1; '
        '} return 0; }\n'
    )
    prog = tmp_path / "bin" / "prog"
    prog.parent.mkdir()
    for dtags, loads in (("--disable-new-dtags", True), ("--enable-new-dtags", False)):
        compile_program(src, prog, ("-rdynamic", f"-Wl,{dtags}", f"-Wl,-rpath,{tmp_path / 'progdeps'}", "-ldl"))
        ran = subprocess.run([str(prog), str(blob)], capture_output=True, text=True, check=False)
        assert (ran.returncode == 0) == loads, ran.stdout
        failures = _failures((), (prog, blob))
        # (A program's DT_RUNPATH is its own: the blob's dependency is nowhere then.)
        assert (failures == []) == loads, failures


# -- glibc-hwcaps subfolders ------------------------------------------------------------------------


def _first_hwcaps_level() -> str:
    """The first glibc-hwcaps level this machine's loader searches, as its ``--help`` says."""
    with open(os.path.realpath(sys.executable), "rb") as f:
        interp = next(seg for seg in ELFFile(f).iter_segments() if seg["p_type"] == "PT_INTERP").get_interp_name()
    helped = subprocess.run([interp, "--help"], capture_output=True, text=True, check=False).stdout
    levels = re.findall(
        r"^  (\S+) \(supported, searched\)$", helped.split("glibc-hwcaps directories", 1)[-1].split("\n\n", 1)[0], re.M
    )
    if not levels:
        pytest.skip("this loader searches no glibc-hwcaps level")
    return str(levels[0])


def test_hwcaps_subfolders_are_searched_first(tmp_path: Path) -> None:
    """A folder's glibc-hwcaps/<level> subfolder, for a level the loader searches, comes
    before the folder. 4c8e217 took the folder's copy, which lacks the blob's import."""
    level = _first_hwcaps_level()
    deps = tmp_path / "deps"
    plain = _lib(deps, "dep", defining("other"))
    tuned = _lib(deps / "glibc-hwcaps" / level, "dep", defining("helper", "other"))
    blob = _lib(tmp_path, "blob", using("helper") + ENTRY, (str(tuned), "-Wl,-rpath,$ORIGIN/deps"))
    assert plain.exists() and _load(blob).returncode == 0, _load(blob).stderr
    assert _blocking((), (blob,)) == set()
    # Without the subfolder, the folder's copy loads and the import binds to nothing.
    tuned.unlink()
    assert _load(blob).returncode != 0
    assert ("LOAD_FAILURE", "helper") in _blocking((), (blob,))


def test_a_foreign_librarys_needs_are_looked_up_as_the_loaders(tmp_path: Path) -> None:
    """The loader takes a file of its own machine, whatever the needer's: a foreign shim (it
    cannot load) whose run path holds a copy of its dependency built for its machine first
    reaches no further library. Before, the check looked the need up as the shim's machine,
    took that copy, and said it too failed to load (the differential's 100-batch run found it)."""
    dep = _lib(tmp_path / "second", "dep", defining("helper"))
    shim = _lib(
        tmp_path,
        "shim",
        defining("myrt_aoti_torch_x") + using("helper"),
        (str(dep), "-Wl,-rpath,$ORIGIN/first:$ORIGIN/second"),
    )
    aarch64 = (183).to_bytes(2, "little")
    _patched(dep, 18, aarch64, tmp_path / "first" / "libdep.so")
    _patched(shim, 18, aarch64, shim)
    blob = _lib(tmp_path / "blob", "blob", using("myrt_aoti_torch_x") + ENTRY)
    loaded = _load(shim, blob)
    assert loaded.returncode != 0 and "libshim.so" in loaded.stderr.strip().splitlines()[-1], loaded.stderr
    report = run_check(CheckSettings(shims=(str(shim),), models=(str(blob),)))
    assert {Path(f.artifact).name for f in report.findings if f.rule == "LOAD_FAILURE"} == {"libshim.so"}


# -- the report names the loader facts taken from this machine --------------------------------------


def test_the_report_names_the_loader_facts_it_took_from_this_machine(tmp_path: Path) -> None:
    """Issue 33 §2: checked on another machine than the deployment's (a wheel in CI), the
    report says which loader facts were this machine's. A blob whose RUNPATH names
    ``$PLATFORM`` finds its dependency by this machine's platform: the text names it in one
    line, JSON (valid by the shipped schema) and SARIF mark it used. A blob needing only
    glibc uses no fact but libc, which every process has: no line, libc used in JSON."""
    import json
    from importlib import resources

    import jsonschema

    from aoti_shim.checks.formats import render

    platform = loader_platform()
    dep = _lib(tmp_path / platform, "dep", defining("helper"))
    blob = _lib(tmp_path, "blob", using("helper") + ENTRY, (str(dep), "-Wl,-rpath,$ORIGIN/$PLATFORM"))
    assert _load(blob).returncode == 0, _load(blob).stderr
    report = run_check(CheckSettings(models=(str(blob),)))
    facts = {f.fact: f for f in report.machine_facts}
    assert facts["platform"].value == platform and facts["platform"].used
    assert facts["libc"].used and os.path.basename(facts["libc"].value) == "libc.so.6"
    assert not facts["hwcaps"].used and not facts["ld_so_cache"].used and not facts["system_folders"].used
    said = [x for x in render(report).splitlines() if x.startswith("loader facts")]
    assert said == [
        f"loader facts from this machine: $PLATFORM {platform}, libc {facts['libc'].value} (another machine's "
        "loader may differ)"
    ]
    doc = json.loads(render(report, "json"))
    schema = resources.files("aoti_shim.checks").joinpath("schemas/report-v1.schema.json").read_text()
    jsonschema.validate(doc, json.loads(schema))
    assert {"fact": "platform", "value": platform, "used": True} in doc["machine_facts"]
    sarif = json.loads(render(report, "sarif"))["runs"][0]["properties"]["machineFacts"]
    assert sarif == doc["machine_facts"]
    # The same blob beside its dependency, found by $ORIGIN: only libc is this machine's.
    (tmp_path / "plain").mkdir()
    plain = _lib(tmp_path / "plain", "blob", using("helper") + ENTRY, (str(dep), "-Wl,-rpath,$ORIGIN"))
    (tmp_path / "plain" / "libdep.so").symlink_to(dep)
    report = run_check(CheckSettings(models=(str(plain),)))
    assert [f.fact for f in report.machine_facts if f.used] == ["libc"]
    assert not any(x.startswith("loader facts") for x in render(report).splitlines())
    assert any(x.startswith("loader facts") for x in render(report, verbose=True).splitlines())


def test_a_library_path_of_any_bytes_is_no_traceback(tmp_path: Path) -> None:
    """LD_LIBRARY_PATH may hold any bytes, and `ld.so --help`, asked for the platform, echoes it:
    at 4299e25 a folder named in Latin-1 made every check a UnicodeDecodeError's traceback. The
    folder finds the blob's dependency, so the facts name it, escaped."""
    import json

    from cli_support import cli

    folder = os.fsencode(tmp_path) + b"/d\xe9p"
    dep = _lib(Path(os.fsdecode(folder)), "dep", defining("helper"))
    blob = _lib(tmp_path, "blob", using("helper") + ENTRY, (str(dep),))
    env = {**os.environb, b"LD_LIBRARY_PATH": folder}
    done = cli("check", "--model", str(blob), "--format", "json", env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    facts = {f["fact"]: f for f in json.loads(done.stdout)["machine_facts"]}
    assert facts["LD_LIBRARY_PATH"]["used"] and facts["LD_LIBRARY_PATH"]["value"].endswith("/d\\xe9p")
