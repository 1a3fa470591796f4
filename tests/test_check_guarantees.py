"""What OK means: no silent empty reference set, the torch named in every format, any name
printed safely, bounded reads of every input kind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import cli_support
from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.checks.references.reference import find_torch
from aoti_shim.errors import InputError
from cli_support import one_line_error

FORMATS = ("text", "json", "sarif", "github", "junit")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # A UTF-8 locale without Python's UTF-8 mode: names that are not UTF-8 reach the child as they are.
    return cli_support.cli(
        *args, env={**os.environ, "LC_ALL": "C.UTF-8", "PYTHONUTF8": "0", **(env or {})}, errors="surrogateescape"
    )


# -- 12.4: no silent empty reference set -------------------------------------------


def _fake_site(tmp: Path, files: dict[str, bytes]) -> Path:
    lib = tmp / "site" / "torch" / "lib"
    lib.mkdir(parents=True)
    (lib.parent / "version.py").write_text("__version__ = '9.9.9'\n")
    for name, data in files.items():
        (lib / name).write_bytes(data)
    return tmp / "site"


@pytest.mark.parametrize("files", [{}, {"libc10.so": b"not an ELF", "libtorch_cpu.so": b"stub"}], ids=["empty", "stub"])
def test_aoti_shim_torch_naming_no_library_is_an_error(checker_libs, tmp_path, files):
    site = _fake_site(tmp_path, files)
    done = cli(
        "check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch", env={"AOTI_SHIM_TORCH": str(site)}
    )
    line = one_line_error(done, 1)
    assert "no readable library" in line and "$AOTI_SHIM_TORCH" in line


def test_an_empty_against_folder_is_an_error(checker_libs, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no readable library"):
        run_check(CheckSettings(shims=(str(checker_libs["clean_shim"]),), against=(str(tmp_path / "empty"),)))


@pytest.mark.parametrize("kind", ["dangling", "loop"])
@pytest.mark.parametrize("role", ["shim", "model", "against"])
def test_an_unreadable_file_inside_a_folder_is_an_error(checker_libs, tmp_path, kind, role):
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(checker_libs["clean_shim" if role != "model" else "good_model"], folder / "liba.so")
    bad = folder / "libb.so"
    os.symlink(tmp_path / "nowhere.so" if kind == "dangling" else bad, bad)
    settings = {
        "shim": CheckSettings(shims=(str(folder),)),
        "model": CheckSettings(shims=(str(checker_libs["clean_shim"]),), models=(str(folder),)),
        "against": CheckSettings(shims=(str(checker_libs["clean_shim"]),), against=(str(folder),)),
    }[role]
    with pytest.raises(InputError, match="libb.so: cannot read"):
        run_check(settings)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_a_file_without_read_permission_inside_a_folder_is_an_error(checker_libs, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(checker_libs["clean_shim"], folder / "liba.so")
    shutil.copy(checker_libs["clean_shim"], folder / "libb.so")
    (folder / "libb.so").chmod(0)
    with pytest.raises(InputError, match="libb.so: cannot read"):
        run_check(CheckSettings(shims=(str(folder),)))


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_names_the_torch_it_checked_against(checker_libs, fmt):
    lib = find_torch().lib
    done = cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch", "--format", fmt)
    assert done.returncode == 0, done.stderr
    import torch.version

    version = torch.version.__version__
    out = done.stdout
    assert version in out and str(lib) in out and "installed torch" in out, out[:2000]
    if fmt == "json":
        from importlib import resources

        import jsonschema

        doc = json.loads(out)
        schema = resources.files("aoti_shim.checks").joinpath("schemas/report-v1.schema.json").read_text()
        jsonschema.validate(doc, json.loads(schema))
        (source,) = doc["against"]
        assert source["item"] == "torch" and source["torch_version"] == version and source["libraries"] > 1


def test_an_aoti_shim_torch_override_is_announced(checker_libs):
    site = find_torch().lib.parent.parent
    done = cli(
        "check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch", env={"AOTI_SHIM_TORCH": str(site)}
    )
    assert done.returncode == 0, done.stderr
    assert "$AOTI_SHIM_TORCH overrides the installed torch" in done.stderr
    assert "from $AOTI_SHIM_TORCH" in done.stdout


# -- 12.10: any name gives valid, safe output ---------------------------------------

HOSTILE = b"\x1b[2K\r\x1b[8m"


def _patched_shim(checker_libs, tmp_path: Path) -> Path:
    """The unprefixed shim with one export renamed in place to hold terminal escapes."""
    data = bytearray(checker_libs["unprefixed_shim"].read_bytes())
    old = b"aoti_torch_get_data_ptr\x00"
    new = b"aoti_torch_" + HOSTILE + b"x" * (len(old) - len(b"aoti_torch_") - len(HOSTILE) - 1) + b"\x00"
    assert len(new) == len(old) and data.count(old) >= 1  # .dynstr, and .strtab when not stripped
    out = tmp_path / "libhostile.so"
    out.write_bytes(bytes(data).replace(old, new))
    return out


def _hostile_path(checker_libs, tmp_path: Path) -> str:
    folder = os.fsencode(tmp_path) + b"/dir\xff\xfe\x1b[8m\n"
    os.mkdir(folder)
    target = folder + b"/lib\xff\r.so"
    shutil.copy(_patched_shim(checker_libs, tmp_path), target)
    return os.fsdecode(target)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "file"])
def test_any_symbol_or_file_name_gives_valid_safe_output(checker_libs, tmp_path, fmt, to_file):
    shim = _hostile_path(checker_libs, tmp_path)
    out_file = tmp_path / f"report.{fmt}"
    args = ["check", "--shim", shim, "--format", fmt] + (["-o", str(out_file)] if to_file else [])
    done = cli(*args)
    assert done.returncode == 8, done.stderr
    assert "Traceback" not in done.stderr
    raw = out_file.read_bytes() if to_file else done.stdout.encode("utf-8", "surrogateescape")
    text = raw.decode("utf-8")  # valid UTF-8 whatever the file name's bytes
    if fmt in ("text", "github", "junit"):
        assert "\x1b" not in text and "\r" not in text
        assert "\\x1b[2K\\x0d\\x1b[8m" in text
    if fmt == "text":
        assert text.rstrip("\n").splitlines()[-1].startswith("FAILED:")
        assert all(not line.startswith("[") for line in text.splitlines())
    if fmt in ("json", "sarif"):
        doc = json.loads(text)
        shown = json.dumps(doc, ensure_ascii=False)
        # SARIF's artifact URI holds the escaped name percent-encoded (\\ as %5C).
        assert "\\xff" in (shown if fmt == "json" else urllib.parse.unquote(shown))
    if fmt == "junit":
        ET.fromstring(raw)


def test_a_hostile_name_in_an_error_stays_on_one_line(tmp_path):
    missing = os.fsdecode(os.fsencode(tmp_path) + b"/no\nsuch\x1b[2K\xff.so")
    line = one_line_error(cli("check", "--shim", missing), 1)
    assert "\x1b" not in line


def test_render_escapes_without_the_cli(checker_libs, tmp_path):
    report = run_check(CheckSettings(shims=(_hostile_path(checker_libs, tmp_path),)))
    for fmt in FORMATS:
        rendered = render(report, fmt)
        rendered.encode("utf-8")  # no lone surrogate left
        if fmt != "json" and fmt != "sarif":
            assert "\x1b" not in rendered


def test_every_whole_report_says_where_a_models_prefix_came_from(tmp_path: Path) -> None:
    """The GitHub summary is rendered from a Report assembled out of the stream; a prefix read
    from the models' imports must not be told as read from the shims' exports there."""
    from compile_support import compile_shared

    source = tmp_path / "model.c"
    source.write_text(
        "extern int myrt_aoti_torch_dtype_float32(void);\n"
        "int AOTInductorModelContainerRun(void) { return myrt_aoti_torch_dtype_float32(); }\n"
    )
    model = tmp_path / "libmodel.so"
    compile_shared(source, model)
    report = run_check(CheckSettings(models=(str(model),), against=()))
    assert report.prefix == "myrt_" and report.prefix_origin == "inferred from the models' imports"
    assert "inferred from the models' imports" in render(report, "github")
