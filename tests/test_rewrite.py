"""``aoti-shim rewrite-imports``: the binary route, on real ELF files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aoti_shim.checks.elf.image import ElfImage
from cli_support import cli, one_line_error
from shims_support import imported_shim_names
from smoke_support import PREFIX, compiled_mlp


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def _load_and_call(blob: Path, *globals_: Path) -> int:
    """Load ``globals_`` RTLD_GLOBAL and then ``blob``, in a child; the blob's answer."""
    script = textwrap.dedent(
        """
        import ctypes, os, sys
        for lib in sys.argv[2:]:
            ctypes.CDLL(lib, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        blob = ctypes.CDLL(sys.argv[1], mode=os.RTLD_LOCAL | os.RTLD_NOW)
        blob.smoke_model_run.restype = ctypes.c_int64
        print(blob.smoke_model_run())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(blob), *map(str, globals_)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.strip())


# Exports a model entry point, imports one shim and one libc function, and holds a shim's
# name as data: only the shim import may change.
_ONLY_IMPORTS_BLOB = """
#include <stdio.h>
extern int aoti_torch_get_dim(void*, long*);
const char aoti_shim_test_note[] = "calls aoti_torch_get_dim";
__attribute__((visibility("default"))) int AOTInductorModelContainerRun(void) {
  long d; puts(aoti_shim_test_note); return aoti_torch_get_dim(0, &d);
}
"""


def test_rewrite_renames_only_the_shim_imports(tmp_path: Path) -> None:
    from compile_support import compile_shared

    source = tmp_path / "blob.c"
    source.write_text(_ONLY_IMPORTS_BLOB)
    blob, out = tmp_path / "libblob.so", tmp_path / "out.so"
    compile_shared(source, blob)
    done = cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out))
    assert done.returncode == 0, done.stderr
    with ElfImage(blob) as before, ElfImage(out) as after:
        assert dict(after.exports().items()) == dict(before.exports().items())
        renamed = {(f"{PREFIX}{n}" if n.startswith("aoti_torch_") else n): s for n, s in before.imports().items()}
        assert set(after.imports()) == set(renamed) and any(n.startswith("puts") for n in after.imports())
        assert f"{PREFIX}aoti_torch_get_dim" in after.imports() and "aoti_torch_get_dim" not in after.imports()
    # The name as data (a string the blob prints) is left as it was.
    assert (
        out.read_bytes().count(b"calls aoti_torch_get_dim\0")
        == blob.read_bytes().count(b"calls aoti_torch_get_dim\0")
        == 1
    )


@pytest.mark.parametrize("mode", [0o755, 0o640])
def test_rewrite_renames_imports_and_keeps_the_mode(fake, tmp_path: Path, mode: int) -> None:
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    blob.chmod(mode)
    out = tmp_path / "model.prefixed.so"
    proc = cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "renamed 2 imports" in proc.stdout
    assert imported_shim_names(out) == {f"{PREFIX}aoti_torch_get_dim", f"{PREFIX}aoti_torch_dtype_float32"}
    assert imported_shim_names(blob) == {"aoti_torch_get_dim", "aoti_torch_dtype_float32"}  # input untouched
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert _leftovers(tmp_path) == []


def test_rewritten_blob_binds_to_the_shims_not_to_a_global_libtorch(fake, tmp_path: Path) -> None:
    out = tmp_path / "model.prefixed.so"
    assert cli("rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", str(out)).returncode == 0
    # libtorch stand-in (answers 2) global first, then the shims (answer 1): the collision set-up.
    assert _load_and_call(fake.blob, fake.torch, fake.shims) == 2 * 100 + 6  # unprefixed: libtorch wins
    assert _load_and_call(out, fake.torch, fake.shims) == 1 * 100 + 6  # prefixed: the shims


def test_rewrite_in_place_replaces_the_file(fake, tmp_path: Path) -> None:
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    blob.chmod(0o700)
    inode = blob.stat().st_ino
    proc = cli("rewrite-imports", str(blob), "--prefix", "myrt_")
    assert proc.returncode == 0, proc.stderr
    assert imported_shim_names(blob) == {"myrt_aoti_torch_get_dim", "myrt_aoti_torch_dtype_float32"}
    assert blob.stat().st_ino != inode  # renamed into place, never rewritten in place
    assert stat.S_IMODE(blob.stat().st_mode) == 0o700
    assert _leftovers(tmp_path) == []


def test_already_prefixed_blob_is_refused_and_nothing_is_written(fake, tmp_path: Path) -> None:
    once = tmp_path / "once.so"
    assert cli("rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", str(once)).returncode == 0
    twice = tmp_path / "twice.so"
    line = one_line_error(cli("rewrite-imports", str(once), "--prefix", PREFIX, "-o", str(twice)), 1)
    assert "nothing to rename" in line
    assert not twice.exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("case", "exit_code", "needle"),
    [
        ("missing", 1, "no such file"),
        ("not-elf", 1, "not an ELF file"),
        ("truncated-elf", 1, ""),
        ("bad-prefix", 2, "not a C identifier prefix"),
        ("torch-prefix", 2, "aoti_torch_"),
        ("no-prefix", 2, "--prefix"),
        ("out-dir-missing", 1, "cannot write: No such file or directory"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(fake, tmp_path: Path, case: str, exit_code: int, needle: str) -> None:
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    out = tmp_path / "out.so"
    args = ["rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out)]
    if case == "missing":
        args[1] = str(tmp_path / "absent.so")
    elif case == "not-elf":
        blob.write_text("hello")
    elif case == "truncated-elf":
        blob.write_bytes(fake.blob.read_bytes()[:200])
    elif case == "bad-prefix":
        args[3] = "1bad-"
    elif case == "torch-prefix":
        args[3] = "aoti_torch_x"
    elif case == "no-prefix":
        args = ["rewrite-imports", str(blob)]
    elif case == "out-dir-missing":
        out = tmp_path / "nowhere" / "out.so"
        args[-1] = str(out)
    line = one_line_error(cli(*args), exit_code)
    assert needle in line
    assert not out.exists()
    assert _leftovers(tmp_path) == []


def test_unwritable_output_folder_is_one_line(fake, tmp_path: Path) -> None:
    # /proc takes no new files, even from root: mkstemp fails there.
    line = one_line_error(cli("rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", "/proc/aoti-shim-out.so"), 1)
    assert "-o /proc/aoti-shim-out.so: cannot write: " in line and "(in /proc)" in line


def test_worker_that_answers_nothing_is_one_line(fake, tmp_path: Path) -> None:
    # A worker that dies without a word (here: exits 0 at startup) must not become a TypeError.
    hook = tmp_path / "hook"
    hook.mkdir()
    # A LIEF that ends the worker at import: on PYTHONPATH, the worker gets the caller's own path.
    (hook / "lief.py").write_text("import os\nos._exit(0)\n")
    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    out = tmp_path / "out.so"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))}
    line = one_line_error(cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out), env=env), 1)
    assert "the LIEF worker reported no result (exit status 0)" in line
    assert not out.exists() and _leftovers(tmp_path) == []


@pytest.mark.compiles(("mlp", "binary"))
def test_rewritten_compiled_model_passes_the_checker(smoke_cache: Path, tmp_path: Path) -> None:
    """The real thing: torch's compiled MLP, every aoti_torch_* import renamed."""
    artefact = compiled_mlp(smoke_cache)
    before = imported_shim_names(artefact.blob)
    assert len(before) >= 15 and all(n.startswith("aoti_torch_") for n in before)
    out = tmp_path / "mlp.so"
    proc = cli("rewrite-imports", str(artefact.blob), "--prefix", PREFIX, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert imported_shim_names(out) == {PREFIX + n for n in before}
    check = cli("check", "--model", str(out), "--against", "torch", "--prefix", PREFIX)
    assert "UNPREFIXED_IMPORT" not in check.stdout
    assert check.returncode & 8 == 0, check.stdout
    unchecked = cli("check", "--model", str(artefact.blob), "--against", "torch", "--prefix", PREFIX)
    assert "UNPREFIXED_IMPORT" in unchecked.stdout and unchecked.returncode & 8
    # Still the model: its entry points are exported as before.
    with ElfImage(out) as image:
        assert image.find_export("AOTInductorModelContainerCreateWithDevice") is not None


# -- what the rename touches: imports of libtorch's shim names, nothing else ------------------

# A shim library whose aoti_torch_get_dim is versioned (a blob linked to it needs SHIM_1).
_VERSIONED_SHIM = "int aoti_torch_get_dim(void* t, long* d) { (void)t; *d = 2; return 0; }\n"
_VERSION_SCRIPT = "SHIM_1 { global: aoti_torch_get_dim; local: *; };\n"

# Imports of every shape: versioned, weak, libtorch's other shim name, names that only
# contain the marker or start like it, one already prefixed, a mangled one; exports a model
# entry point.
_SHAPES_BLOB = """
extern int aoti_torch_get_dim(void*, long*);
extern int aoti_record_function_start(void);
__attribute__((weak)) extern int aoti_torch_weak_one(void);
extern int my_aoti_torch_helper(void);
extern int aoti_torchx_other(void);
extern int aoti_torc_h(void);
extern int myrt_aoti_torch_clone(void);
extern int _ZN3foo14aoti_torch_barEv(void);
__attribute__((visibility("default"))) int AOTInductorModelContainerRun(void) {
  long d;
  return aoti_torch_get_dim(0, &d) + aoti_record_function_start() + (aoti_torch_weak_one ? aoti_torch_weak_one() : 0)
         + my_aoti_torch_helper() + aoti_torchx_other() + aoti_torc_h() + myrt_aoti_torch_clone()
         + _ZN3foo14aoti_torch_barEv();
}
""".replace("myrt_", PREFIX)
_RENAMED = ("aoti_record_function_start", "aoti_torch_get_dim", "aoti_torch_weak_one")
_KEPT = (
    "my_aoti_torch_helper",
    "aoti_torchx_other",
    "aoti_torc_h",
    f"{PREFIX}aoti_torch_clone",
    "_ZN3foo14aoti_torch_barEv",
)


@pytest.fixture(scope="module")
def shapes_blob(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from compile_support import compile_shared

    folder = tmp_path_factory.mktemp("rewrite-shapes")
    (folder / "shim.c").write_text(_VERSIONED_SHIM)
    (folder / "shim.map").write_text(_VERSION_SCRIPT)
    compile_shared(folder / "shim.c", folder / "libvshim.so", (f"-Wl,--version-script={folder / 'shim.map'}",))
    (folder / "blob.c").write_text(_SHAPES_BLOB)
    blob = folder / "libblob.so"
    compile_shared(folder / "blob.c", blob, (f"-L{folder}", "-lvshim"))
    return blob


def _import_versions(path: Path) -> dict[str, str | None]:
    with ElfImage(path) as image:
        versions = image.versions()
        return {name: image.imports().entry(name, versions).version for name in image.imports()}


def test_rewrite_renames_versioned_and_weak_imports_and_leaves_look_alikes(shapes_blob: Path, tmp_path: Path) -> None:
    from aoti_shim.smoke.rewrite import RewriteSettings, rewrite_imports

    before = _import_versions(shapes_blob)
    assert before["aoti_torch_get_dim"] == "SHIM_1" and set(_RENAMED + _KEPT) <= set(before)
    out = tmp_path / "out.so"
    result = rewrite_imports(RewriteSettings(blob=shapes_blob, prefix=PREFIX, output=out))
    assert result.renamed == _RENAMED and result.output == out  # sorted, each once
    after = _import_versions(out)
    # Each renamed import keeps the version it needs (and the file it needs it from).
    assert after == {(PREFIX + n if n in _RENAMED else n): v for n, v in before.items()}
    with ElfImage(shapes_blob) as b, ElfImage(out) as a:
        assert dict(a.exports().items()) == dict(b.exports().items())
        weak, was = a.imports()[f"{PREFIX}aoti_torch_weak_one"], b.imports()["aoti_torch_weak_one"]
        assert (
            (weak.bind_name, weak.type, weak.versioned)
            == (was.bind_name, was.type, was.versioned)
            == ("WEAK", was.type, False)
        )
        assert a.needed == b.needed


def test_the_worker_renames_no_definition_and_writes_nothing_without_a_rename(tmp_path: Path) -> None:
    from aoti_shim.smoke.rewrite_worker import rename_imports
    from compile_support import compile_shared

    (tmp_path / "m.c").write_text(
        "extern int aoti_torch_b(void); extern int aoti_torch_a(void);\n"
        "int aoti_torch_defined(void) { return aoti_torch_b() + aoti_torch_a(); }\n"
    )
    blob = tmp_path / "libm.so"
    compile_shared(tmp_path / "m.c", blob)
    target = tmp_path / "out.so"
    assert rename_imports(str(blob), str(target), "p_") == ["aoti_torch_a", "aoti_torch_b"]
    with ElfImage(target) as image:
        assert {"p_aoti_torch_a", "p_aoti_torch_b"} <= set(image.imports()) and "aoti_torch_a" not in image.imports()
        assert "aoti_torch_defined" in image.exports() and "p_aoti_torch_defined" not in image.exports()
    # Nothing to rename: no file written.
    again = tmp_path / "again.so"
    assert rename_imports(str(target), str(again), "p_") == [] and not again.exists()
    with pytest.raises(ValueError, match="LIEF cannot parse"):
        (tmp_path / "junk").write_bytes(b"junk")
        rename_imports(str(tmp_path / "junk"), str(again), "p_")


def test_a_blob_that_defines_a_shim_name_is_refused_after_the_rename(tmp_path: Path) -> None:
    from compile_support import compile_shared

    (tmp_path / "m.c").write_text(
        "extern int aoti_torch_b(void);\nint aoti_torch_defined(void) { return aoti_torch_b(); }\n"
    )
    blob = tmp_path / "libm.so"
    compile_shared(tmp_path / "m.c", blob)
    out = tmp_path / "out.so"
    line = one_line_error(cli("rewrite-imports", str(blob), "--prefix", PREFIX, "-o", str(out)), 1)
    assert line.endswith(f"{out}: still MODEL_DEFINES_SHIM after the rewrite: aoti_torch_defined"), line
    assert not out.exists() and _leftovers(tmp_path) == []


def test_the_workers_answer_and_exit_status_in_words() -> None:
    from aoti_shim.smoke.rewrite import _last_json, _signal_text

    assert _last_json('{"renamed": ["a"]}\nnoise\n{"renamed": ["b"]}\ntrailer\n') == {"renamed": ["b"]}
    assert _last_json("no json here\n") is None
    assert _last_json('{"renamed": [\n') is None
    assert _signal_text(-11) == "LIEF crashed (signal 11)"
    assert _signal_text(3) == "exit status 3" and _signal_text(0) == "exit status 0"


@pytest.mark.parametrize("count", [0, 1, 3, 4])
def test_a_pt2_package_hint_names_up_to_three_blobs(tmp_path: Path, count: int) -> None:
    import zipfile

    from aoti_shim.smoke.rewrite import _package_hint

    package = tmp_path / "m.pt2"
    with zipfile.ZipFile(package, "w") as zf:
        zf.writestr("m/data.json", "{}")
        for i in range(count):
            zf.writestr(f"m/b{i}.so", b"x")
    hint = _package_hint(package)
    inside = {0: "", 1: " (it holds m/b0.so)", 3: " (it holds m/b0.so, m/b1.so, m/b2.so)",
              4: " (it holds m/b0.so, m/b1.so, m/b2.so, ...)"}[count]
    assert hint == (
        f"{package}: a zip archive (an AOTInductor .pt2 package?), not a blob{inside}: rewrite the blob inside it, "
        f"extracted with python -m zipfile -e {package} DIR, or build the package's sources with the prefix "
        "(aoti_shim_add_model(<name> PACKAGE <pt2> PREFIX <p>))"
    )


# -- in process: each refusal's exact words, the output's checks, the command's note ---------


def _rewrite(blob: Path, out: Path, prefix: str = PREFIX):
    from aoti_shim.smoke.rewrite import RewriteSettings, rewrite_imports

    return rewrite_imports(RewriteSettings(blob=blob, prefix=prefix, output=out))


def test_each_refusal_in_its_words(fake, tmp_path: Path) -> None:
    import zipfile

    from aoti_shim.errors import AotiShimError, InputError
    from compile_support import compile_object

    out = tmp_path / "out.so"
    cases: list[tuple[Path, str]] = []
    cases.append((tmp_path / "absent.so", f"{tmp_path / 'absent.so'}: no such file"))
    (tmp_path / "text.so").write_text("hello")
    cases.append((tmp_path / "text.so", f"{tmp_path / 'text.so'}: not an ELF file"))
    package = tmp_path / "m.pt2"
    with zipfile.ZipFile(package, "w") as zf:
        zf.writestr("m/b.so", b"x")
    cases.append((package, f"{package}: a zip archive (an AOTInductor .pt2 package?), not a blob (it holds m/b.so): "))
    (tmp_path / "o.c").write_text("int aoti_torch_x(void); int f(void) { return aoti_torch_x(); }\n")
    compile_object(tmp_path / "o.c", tmp_path / "o.o", ("-fPIC",))
    cases.append((tmp_path / "o.o", f"{tmp_path / 'o.o'}: has no dynamic symbol table (not a shared library)"))
    once = _rewrite(fake.blob, tmp_path / "once.so").output
    cases.append((once, f"{once}: imports no unprefixed aoti_torch_* symbol; nothing to rename"))
    for blob, words in cases:
        with pytest.raises(InputError) as raised:
            _rewrite(blob, out)
        assert str(raised.value).startswith(words), (str(raised.value), words)
    (tmp_path / "d.c").write_text(
        "extern int aoti_torch_b(void);\nint aoti_torch_defined(void) { return aoti_torch_b(); }\n"
    )
    from compile_support import compile_shared

    compile_shared(tmp_path / "d.c", tmp_path / "libd.so")
    with pytest.raises(AotiShimError) as raised:
        _rewrite(tmp_path / "libd.so", out)
    assert str(raised.value) == f"{out}: still MODEL_DEFINES_SHIM after the rewrite: aoti_torch_defined"
    assert not out.exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("lief", "words"),
    [
        ("import os\nos._exit(0)\n", "the LIEF worker reported no result (exit status 0)"),
        ("import os\nos._exit(3)\n", "LIEF could not rewrite it: exit status 3"),
        (
            "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
            "LIEF could not rewrite it: LIEF crashed (signal 9)",
        ),
        ("raise RuntimeError('no LIEF today')\n", "LIEF could not rewrite it: RuntimeError: no LIEF today"),
    ],
)
def test_a_worker_that_fails_is_said_in_words(
    fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lief: str, words: str
) -> None:
    from aoti_shim.errors import InputError

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "lief.py").write_text(lief)
    monkeypatch.syspath_prepend(str(hook))  # the worker runs on the caller's path
    out = tmp_path / "out.so"
    with pytest.raises(InputError) as raised:
        _rewrite(fake.blob, out)
    assert str(raised.value) == f"{fake.blob}: {words}"
    assert not out.exists() and _leftovers(tmp_path) == []


def test_the_output_may_be_the_blob_but_not_a_link_to_it(fake, tmp_path: Path) -> None:
    from aoti_shim.errors import AotiShimError

    blob = tmp_path / "model.so"
    blob.write_bytes(fake.blob.read_bytes())
    blob.chmod(0o640)
    link = tmp_path / "link.so"
    link.symlink_to(blob)
    with pytest.raises(AotiShimError, match=r"^-o .*link\.so: is also an input"):
        _rewrite(blob, link)
    result = _rewrite(blob, blob)  # in place
    assert result.output == blob and imported_shim_names(blob) == {f"{PREFIX}{n}" for n in result.renamed}
    assert stat.S_IMODE(blob.stat().st_mode) == 0o640


def test_the_command_says_what_it_renamed_on_stdout_or_stderr(
    fake, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from aoti_shim.smoke import rewrite

    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers()
    rewrite.register(commands)
    out = tmp_path / "out.so"
    args = parser.parse_args(["rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", str(out)])
    assert args.run(args) == 0
    note = f"rewrite-imports: renamed {len(imported_shim_names(out))} imports to {PREFIX}aoti_torch_*; wrote {out}\n"
    assert capsys.readouterr() == (note, "")
    blob = tmp_path / "in-place.so"
    blob.write_bytes(fake.blob.read_bytes())
    args = parser.parse_args(["rewrite-imports", str(blob), "--prefix", PREFIX])
    assert args.output is None and args.run(args) == 0
    assert capsys.readouterr().out.endswith(f"; wrote {blob}\n") and imported_shim_names(blob) == imported_shim_names(
        out
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["rewrite-imports", str(blob)])  # --prefix is required
    assert "--prefix" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["rewrite-imports", str(blob), "--prefix", PREFIX, "-o", ""])  # an empty path
    assert "an empty path" in capsys.readouterr().err
    command = commands.choices["rewrite-imports"]
    assert command.description == (
        "Rename a compiled AOTInductor blob's imported aoti_torch_* symbols (and the stable C ABI's torch_* ones) to "
        "<prefix>aoti_torch_* (<prefix>torch_*), so that they can no longer bind to libtorch. The result is checked, "
        "then renamed into place: a failed run writes nothing and leaves OUTPUT (or BLOB) untouched."
    )
    options = {a.dest: (a.option_strings, a.metavar, a.help) for a in command._actions}
    assert options["blob"] == ([], "BLOB", "the AOTInductor model .so")
    assert options["prefix"] == (["--prefix"], None, "the shim prefix, e.g. myrt_")
    assert options["output"] == (["-o", "--output"], None, "where to write (default: replace BLOB)")
    assert (
        commands._choices_actions[0].help
        == "rename a compiled blob's imported aoti_torch_* (and stable C ABI torch_*) symbols to <prefix>..."
    )


def test_the_worker_answers_in_one_line_of_json(fake, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from aoti_shim.smoke.rewrite_worker import main

    out = tmp_path / "out.so"
    assert main([str(fake.blob), str(out), PREFIX]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer == {"renamed": sorted(n.removeprefix(PREFIX) for n in imported_shim_names(out))} and answer["renamed"]
    (tmp_path / "junk").write_bytes(b"junk")
    assert main([str(tmp_path / "junk"), str(tmp_path / "x.so"), PREFIX]) == 1
    assert json.loads(capsys.readouterr().out) == {"error": f"ValueError: LIEF cannot parse {tmp_path / 'junk'}"}


def test_with_the_blob_on_standard_output_the_note_goes_to_standard_error(
    fake, capfd: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from aoti_shim.smoke import rewrite

    parser = argparse.ArgumentParser()
    rewrite.register(parser.add_subparsers())
    args = parser.parse_args(["rewrite-imports", str(fake.blob), "--prefix", PREFIX, "-o", "/dev/stdout"])
    assert isinstance(args.output, Path) and args.run(args) == 0
    out, err = capfd.readouterr()
    assert (
        out.startswith("\x7fELF")
        and err.startswith("rewrite-imports: renamed ")
        and err.endswith("; wrote /dev/stdout\n")
    )
