"""``scan``'s bad input: each kind is one line on standard error, exit 1 (a tool error: the
environment could not be read whole, so nothing is judged), no traceback, and nothing
written into the environment. Site folders laid out by hand, as pip lays them out."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from cli_support import cli, one_line_error
from compile_support import compile_shared
from scan_support import SOURCES, WHEEL_TAG, tree_state
from wheel_support import make_wheel


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("lib") / "libconsumer.so"
    compile_shared(SOURCES / "stable_abi_consumer.c", target)
    return target


def _site(
    root: Path, files: dict[str, bytes], *, record: str | None = None, name: str = "bad-pkg", version: str = "1.0"
) -> Path:
    """A site folder holding one installed distribution: ``files`` and its dist-info (RECORD
    lists the files unless ``record`` is given)."""
    site = root / "site-packages"
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    rows = [f"{rel},," for rel in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text(record if record is not None else "\n".join(rows) + "\n")
    return site


def _scan(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return cli("scan", *args, prefix=prefix, timeout=120)


def _fails(site: Path, says: str, *, prefix: tuple[str, ...] = ()) -> str:
    before = tree_state(site)
    line = one_line_error(_scan(str(site), prefix=prefix), 1)
    assert says in line, line
    assert tree_state(site) == before
    return line


def test_a_good_site_folder_is_read(tmp_path: Path, consumer: Path) -> None:
    site = _site(tmp_path, {"bad_pkg/_ops.so": consumer.read_bytes(), "bad_pkg/__init__.py": b""})
    done = _scan(str(site), "-v")  # without -v, a clean environment's libraries are not listed
    assert done.returncode == 0, done.stderr
    assert f"bad-pkg 1.0 ({site})\n  bad_pkg/_ops.so: stable-ABI consumer\n" in done.stdout


def test_each_bad_input_is_one_line(tmp_path: Path, consumer: Path) -> None:
    lib = consumer.read_bytes()
    lines = []
    # A RECORD row that is not path,hash,size.
    site = _site(tmp_path / "a", {"bad_pkg/_ops.so": lib}, record="bad_pkg/_ops.so,sha256=x\n")
    lines.append(_fails(site, "broken RECORD: line 1 has 2 field(s)"))
    # A RECORD that is not UTF-8 text.
    site = _site(tmp_path / "b", {"bad_pkg/_ops.so": lib}, record="bad_pkg/_ops.so,,\n")
    (site / "bad_pkg-1.0.dist-info" / "RECORD").write_bytes(b"bad_pkg/\xff.so,,\n")
    lines.append(_fails(site, "broken RECORD: not UTF-8"))
    # A library RECORD lists that is not there.
    site = _site(tmp_path / "c", {"bad_pkg/_ops.so": lib})
    (site / "bad_pkg" / "_ops.so").unlink()
    lines.append(_fails(site, "RECORD lists bad_pkg/_ops.so, which is missing"))
    # A looping symbolic link, listed and not.
    site = _site(tmp_path / "d", {"bad_pkg/__init__.py": b""}, record="bad_pkg/_loop.so,,\n")
    os.symlink("_loop.so", site / "bad_pkg" / "_loop.so")
    lines.append(_fails(site, "Too many levels of symbolic links"))
    site = _site(tmp_path / "e", {"bad_pkg/__init__.py": b""})
    os.symlink("_loop.so", site / "bad_pkg" / "_loop.so")
    _fails(site, "Too many levels of symbolic links")
    # A file named like a shared library that is not ELF: listed, nobody's, or a wheel member.
    site = _site(tmp_path / "f", {"bad_pkg/_ops.so": b"#!/bin/sh\necho not a library\n"})
    lines.append(_fails(site, "bad_pkg/_ops.so: named like a shared library but not an ELF file"))
    site = _site(tmp_path / "g", {"bad_pkg/__init__.py": b""})
    (site / "bad_pkg" / "stray.so.1").write_text("text")
    _fails(site, "stray.so.1: named like a shared library but not an ELF file")
    wheel = make_wheel(
        tmp_path / "w" / f"bad_pkg-1.0-{WHEEL_TAG}.whl",
        {"bad_pkg/_ops.so": b"not ELF at all"},
        name="bad-pkg",
        compression=zipfile.ZIP_DEFLATED,
    )
    line = one_line_error(_scan(str(wheel)), 1)
    assert "!bad_pkg/_ops.so: named like a shared library but not an ELF file" in line
    # A folder that cannot be listed (file modes bind: as root, without CAP_DAC_*).
    site = _site(tmp_path / "h", {"bad_pkg/_ops.so": lib})
    locked = site / "bad_pkg" / "private"
    locked.mkdir()
    prefix = _without_dac_override()
    locked.chmod(0)
    try:
        lines.append(_fails(site, f"{locked}: cannot list folder: Permission denied", prefix=prefix))
    finally:
        locked.chmod(0o755)
    assert len({line.split(": ", 2)[-1] for line in lines}) == len(lines), lines  # each kind says its own thing


def _without_dac_override() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file modes cannot be made to bind")
    drop = "-dac_override,-dac_read_search"
    return (setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}")


def test_what_is_no_library_is_no_error(tmp_path: Path, consumer: Path) -> None:
    """A linker script named libX.so, a program that exports nothing, text files: not errors."""
    program = tmp_path / "prog"
    subprocess.run(
        ["gcc", "-x", "c", "-", "-o", str(program)], input="int main(void){return 0;}\n", text=True, check=True
    )
    site = _site(tmp_path, {
        "pkg/libfoo.so": b"/* GNU ld script */\nINPUT(libfoo.so.1)\n",
        "pkg/bin/tool": program.read_bytes(),
        "pkg/LICENSE": b"text",
        "pkg/data.bin": b"\x7fELF but named .bin: never loaded",
    })
    done = _scan(str(site), "-v")
    assert done.returncode == 0, done.stderr
    assert "not a library (a program with no shim-ABI symbol): pkg/bin/tool" in done.stdout


def test_bad_arguments(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert "not a site folder, a virtual environment or a wheel" in one_line_error(_scan(str(text)), 1)
    assert "cannot read: No such file or directory" in one_line_error(_scan(str(tmp_path / "nope")), 1)
    assert "empty path" in one_line_error(_scan(""), 2)
    assert "exited 1 when asked for its paths" in one_line_error(
        _scan("--python", shutil.which("false") or "/bin/false"), 1
    )
    assert "cannot run" in one_line_error(_scan("--python", str(text)), 1)
    fake = tmp_path / "fakepython"
    fake.write_text("#!/bin/sh\necho not json\n")
    fake.chmod(0o755)
    assert "not a Python interpreter" in one_line_error(_scan("--python", str(fake)), 1)
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"PK\x03\x04 not really")
    assert "not a readable wheel" in one_line_error(_scan(str(broken)), 1)


def _holding(names, contains: tuple[str, ...], starts: tuple[str, ...]) -> set[str]:
    return {n for n in names if any(c in n for c in contains) or n.startswith(starts)}


def test_tables_holding_are_the_tables_filtered(tmp_path: Path, torch_lib: Path) -> None:
    """The scan's reader cuts only the names it asks about; what it answers is the whole
    tables' answer, tail-merged names (aoti_torch_x inside rta_aoti_torch_x) included."""
    from aoti_shim.checks.elf.image import ElfImage
    from aoti_shim.checks.scan.judge import _ASKED_CONTAINS, _ASKED_STARTS

    source = tmp_path / "merged.c"
    source.write_text(
        "int rta_aoti_torch_get_data_ptr(void) { return 1; }\nint aoti_torch_get_data_ptr(void) { return 2; }\n"
        "int torch_get_data_ptr(void) { return 3; }\nextern int aoti_torch_get_numel(void);\n"
        "int cudaMalloc(void) { return aoti_torch_get_numel(); }\nint cudamalloc_not_cuda_api(void) { return 0; }\n"
    )
    merged = tmp_path / "libmerged.so"
    compile_shared(source, merged)
    cases = [merged, torch_lib / "libtorch_cpu.so", torch_lib / "libc10.so", torch_lib / "libtorch_python.so"]
    for path in cases:
        with ElfImage(path) as image:
            exports, imports = image.exports(), image.imports()
            want_e, want_i = (
                _holding(exports, _ASKED_CONTAINS, _ASKED_STARTS),
                _holding(imports, _ASKED_CONTAINS, _ASKED_STARTS),
            )
        with ElfImage(path) as image:
            got_e, got_i = image.tables_holding(_ASKED_CONTAINS, _ASKED_STARTS)
            assert _holding(got_e, _ASKED_CONTAINS, _ASKED_STARTS) == want_e, path
            assert _holding(got_i, _ASKED_CONTAINS, _ASKED_STARTS) == want_i, path
            assert all(got_e[n] == exports[n] for n in got_e) and all(got_i[n] == imports[n] for n in got_i), path
    with ElfImage(merged) as image:
        got_e, got_i = image.tables_holding(("aoti_",), ("cuda",))
    assert {"rta_aoti_torch_get_data_ptr", "aoti_torch_get_data_ptr", "cudaMalloc", "cudamalloc_not_cuda_api"} <= set(
        got_e
    )
    assert "torch_get_data_ptr" not in got_e and set(got_i) == {"aoti_torch_get_numel"}


def test_an_editable_finder_points_at_its_source_tree(tmp_path: Path, consumer: Path) -> None:
    """setuptools' strict editable mode: no .pth folder, a finder module mapping packages to
    their source folders (read as text, never imported); the libraries there are the
    distribution's."""
    source = tmp_path / "src" / "fancy"
    source.mkdir(parents=True)
    (source / "_fancy.so").write_bytes(consumer.read_bytes())
    finder = "__editable___fancy_1_0_finder.py"
    site = _site(
        tmp_path / "env",
        {finder: f"MAPPING = {{'fancy': {str(source)!r}}}\nraise SystemExit('never imported')\n".encode()},
        name="fancy",
        version="1.0",
    )
    (site / "fancy-1.0.dist-info" / "direct_url.json").write_text(
        '{"url": "file:///src", "dir_info": {"editable": true}}'
    )
    done = _scan(str(site), "--format", "json")
    assert done.returncode == 0, done.stderr
    (dist,) = json.loads(done.stdout)["distributions"]
    assert dist["editable"] is True and [lib["path"] for lib in dist["libraries"]] == [str(source / "_fancy.so")]


def test_a_virtual_environment_inside_an_editable_source_tree_is_not_its_libraries(
    tmp_path: Path, consumer: Path
) -> None:
    """A flat-layout editable install's .pth names the project's root, where a developer's
    venv often sits (``project/.venv``): that is another environment, whose libraries are not
    the project's, at any depth below the root (``.venv`` right under it, ``tools/env`` deeper),
    and so is a conda environment (``conda-meta``, ``conda create -p ./conda``)."""
    project = tmp_path / "project"
    (project / "flat").mkdir(parents=True)
    (project / "flat" / "_flat.so").write_bytes(consumer.read_bytes())
    for venv in (project / ".venv", project / "tools" / "env", project / "conda"):
        (venv / "lib" / "site-packages" / "other").mkdir(parents=True)
        if venv.name == "conda":
            (venv / "conda-meta").mkdir()
        else:
            (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / "lib" / "site-packages" / "other" / "_other.so").write_bytes(consumer.read_bytes())
    site = _site(tmp_path / "env", {"__editable__.flat-1.0.pth": f"{project}\n".encode()}, name="flat")
    (site / "flat-1.0.dist-info" / "direct_url.json").write_text(
        '{"url": "file:///project", "dir_info": {"editable": true}}'
    )
    done = _scan(str(site), "--format", "json")
    assert done.returncode == 0, done.stderr
    (dist,) = json.loads(done.stdout)["distributions"]
    assert [lib["path"] for lib in dist["libraries"]] == [str(project / "flat" / "_flat.so")]


def test_hostile_names_are_printed_safely(tmp_path: Path, consumer: Path) -> None:
    """A distribution's name and a library's path are anyone's bytes: escape sequences and
    newlines are shown escaped in text and GitHub output, and JSON stays valid."""
    import jsonschema  # in the test extra

    lib = consumer.read_bytes()
    name = "evil\x1b[31mred"
    site = _site(tmp_path, {}, name=name, version="1.0\x1b[2J", record='"pkg/new\nline.so",,\n')
    (site / "pkg").mkdir()
    (site / "pkg" / "new\nline.so").write_bytes(lib)
    done = _scan(str(site), "-v")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "pkg/new\\x0aline.so: stable-ABI consumer" in done.stdout
    github = _scan(str(site), "--format", "github")
    assert "\x1b" not in github.stdout
    doc = json.loads(_scan(str(site), "--format", "json").stdout)
    schema = json.loads(resources.files("aoti_shim.checks").joinpath("schemas/scan-v1.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert (
        doc["distributions"][0]["name"] == name
        and doc["distributions"][0]["libraries"][0]["path"] == "pkg/new\nline.so"
    )


_DEFINER = (
    "int aoti_torch_get_data_ptr(void *t, void **o) { return 1; }\nint aoti_torch_get_numel(void *t, long *o) { "
    "return 1; }\n"
)
_USER = (
    "extern int aoti_torch_get_data_ptr(void *, void **);\nextern int aoti_torch_get_numel(void *, long *);\n"
    "int user_op(void) { void *p; long n; return aoti_torch_get_data_ptr(0, &p) + aoti_torch_get_numel(0, &n); }\n"
)


def _loader_bindings(*order: tuple[Path, bool]) -> dict[str, str]:
    """(library, global?) loaded in order in a child, RTLD_NOW: the last one's shim imports ->
    the file each bound to."""
    code = (
        "import ctypes, os, sys\n"
        "for path, glob in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    ctypes.CDLL(path, mode=os.RTLD_NOW | (os.RTLD_GLOBAL if glob == '1' else os.RTLD_LOCAL))\n"
    )
    args = [a for path, glob in order for a in (str(path), "1" if glob else "0")]
    env = {**os.environ, "LD_DEBUG": "bindings", "LD_BIND_NOW": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    user = order[-1][0].name
    found = re.findall(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `(aoti_[^']+)'", done.stderr)
    return {name: os.path.basename(definer) for importer, definer, name in found if os.path.basename(importer) == user}


@pytest.mark.parametrize("versioned", [False, True])
def test_a_hijack_is_the_binding_models_answer(tmp_path: Path, versioned: bool) -> None:
    """A vendor's unprefixed runtime whose exports carry a version node of its own, and an
    extension that links its own copy of the names: unversioned, its imports bind to the
    vendor loaded global first (HIJACK); asking for its copy's version (TORCH_1), they bind to
    its copy and the vendor captures nothing, though it exports every name the extension
    imports. The scan says what the loader does either way."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "definer.c").write_text(_DEFINER)
    (src / "user.c").write_text(_USER)
    (src / "vendor.map").write_text("VENDOR_1 { global: aoti_torch_*; local: *; };\n")
    (src / "torch.map").write_text("TORCH_1 { global: aoti_torch_*; local: *; };\n")
    site = _site(tmp_path / "env", {"vendor_v/__init__.py": b""}, name="vendor-v")
    (site / "ext_v").mkdir()
    vendor, own, user = (
        site / "vendor_v" / "libvendorv.so",
        site / "ext_v" / "libownshims.so",
        site / "ext_v" / "libuser.so",
    )
    compile_shared(src / "definer.c", vendor, (f"-Wl,--version-script={src / 'vendor.map'}",))
    own_flags = (f"-Wl,--version-script={src / 'torch.map'}",) if versioned else ()
    compile_shared(src / "definer.c", own, (*own_flags, "-Wl,-soname,libownshims.so"))
    compile_shared(src / "user.c", user, (f"-L{own.parent}", "-lownshims", "-Wl,-rpath,$ORIGIN"))
    info = site / "ext_v-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ext-v\nVersion: 1.0\n")
    (info / "RECORD").write_text("ext_v/libownshims.so,,\next_v/libuser.so,,\n")
    (site / "vendor_v-1.0.dist-info" / "RECORD").write_text("vendor_v/__init__.py,,\nvendor_v/libvendorv.so,,\n")

    bound = _loader_bindings((vendor, True), (user, False))
    doc = json.loads(_scan(str(site), "--format", "json").stdout)
    hijacked = sorted(
        f["symbol"] for f in doc["findings"] if f["rule"] == "HIJACK" and f["related"] == "ext_v/libuser.so"
    )
    if versioned:
        assert set(bound.values()) == {own.name} and hijacked == []
    else:
        assert set(bound.values()) == {vendor.name} and hijacked == [
            "aoti_torch_get_data_ptr"
        ]  # one finding, the first name
        (finding,) = [f for f in doc["findings"] if f["rule"] == "HIJACK" and f["related"] == "ext_v/libuser.so"]
        assert f"captures {len(bound)} shim import(s)" in finding["message"]


def test_libraries_outside_any_distribution_read_plainly(tmp_path: Path, consumer: Path) -> None:
    # Two unprefixed providers and a consumer in a folder no RECORD lists: the COLLISION read
    # "... ((no distribution)) both export" and the fix "keep it and (no distribution) out".
    folder = tmp_path / "loose"
    folder.mkdir()
    compile_shared(SOURCES / "unprefixed_runtime.c", folder / "liba.so")
    shutil.copyfile(folder / "liba.so", folder / "libb.so")
    shutil.copyfile(consumer, folder / "libconsumer.so")
    done = _scan(str(folder), "--color", "never")
    assert done.returncode == 8, done.stderr
    assert "((" not in done.stdout and "keep it and (no distribution)" not in done.stdout, done.stdout
    flat = " ".join(done.stdout.split())
    assert "(outside any distribution) both export" in flat, done.stdout
    assert "keep it and the libraries outside any distribution out of one process" in flat
    # No distribution on either side: the COLLISION's fix named "the two distributions" (review-fixes).
    assert "the two distributions" not in flat
    fix = "give each runtime's shims a private prefix of its own (aoti-shim builds them so), or keep {} and {} out of"
    assert any(fix.format(*pair) + " one process" in flat for pair in (("liba.so", "libb.so"), ("libb.so", "liba.so")))


def test_one_distribution_from_two_wheels_is_no_environment(tmp_path: Path) -> None:
    # A wheel stands for its distribution installed: the same wheel named twice read as two
    # distributions (two provider rows, every finding twice), and two versions of one as both
    # installed at once, which no environment can be.
    provider = tmp_path / "libvendor.so"
    compile_shared(SOURCES / "unprefixed_runtime.c", provider)
    one = make_wheel(tmp_path / f"vendor_x-0.9-{WHEEL_TAG}.whl", {"vendor_x/libvendor.so": provider}, name="vendor-x")
    again = _scan(str(one), str(one), "--format", "json")
    assert again.returncode == 0, again.stderr
    assert len(json.loads(again.stdout)["providers"]) == 1, again.stdout
    other = make_wheel(
        tmp_path / "other" / f"vendor_x-1.0-{WHEEL_TAG}.whl", {"vendor_x/libvendor.so": provider}, name="vendor-x"
    )
    line = one_line_error(_scan(str(one), str(other)), 2)
    assert "vendor-x" in line and "two wheels" in line, line


def test_a_folder_above_a_site_folder_is_pointed_at_it(tmp_path: Path, consumer: Path) -> None:
    # `scan .venv/lib` read torch's libraries as no distribution's, and failed with torch's own
    # libtorch_cpu.so as an unprefixed provider hijacking torch's own test programs.
    site = _site(tmp_path / "lib" / "python3.11", {"pkg/libconsumer.so": consumer.read_bytes()})
    for above in (tmp_path / "lib", tmp_path / "lib" / "python3.11", tmp_path):
        line = one_line_error(_scan(str(above)), 2)
        assert f"{above}: not a site folder: {site} below it is one" in line, line
    assert _scan(str(site)).returncode == 0


def test_a_scan_that_read_no_library_says_nothing_was_judged(tmp_path: Path) -> None:
    # An empty folder or a folder of scripts: exit 0, but the verdict must not read a plain OK.
    (tmp_path / "empty").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.sh").write_text("#!/bin/sh\n")
    for folder in ("empty", "scripts"):
        for fmt in ("text", "github"):
            done = _scan(str(tmp_path / folder), "--format", fmt)
            assert done.returncode == 0, done.stderr
            assert "nothing was judged: no shared library in what was scanned" in done.stdout, done.stdout
