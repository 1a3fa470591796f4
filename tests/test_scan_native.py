"""scan on a macOS and a Windows venv's site-packages, copied here as folder environments:
Mach-O dylibs and bundles and PE DLLs built by zig (tests/torch_native_fixtures.py's
builders), each listed in its distribution's RECORD. A runtime's dylib exporting libtorch's
shim names unprefixed captures another distribution's flat lookups of them (HIJACK, judged
by checks/native/dyld.py), never its two-level imports; an unprefixed shim dylib or DLL is an
UNPREFIXED_PROVIDER. About 3 s of zig.
"""

from __future__ import annotations

import json
import struct
import subprocess
import zipfile
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from cli_support import CLI
from torch_native_fixtures import dll, dylib

FLAT = "-Wl,-undefined,dynamic_lookup"


def _distribution(site: Path, name: str, version: str, files: dict[str, Path]) -> None:
    """A dist-info folder whose RECORD lists each file (its path under ``site`` -> the built file, moved there)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    rows = [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    for relative, built in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        built.rename(site / relative)
        rows.append(f"{relative},,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def macos_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """torch (libtorch_cpu exports aoti_torch_a and _b); rtx, whose shims export aoti_torch_a
    unprefixed; ext, a bundle importing aoti_torch_a by flat lookup; good, a bundle importing it
    two-level from libtorch_cpu.dylib; rty, a prefixed shim and a blob of its own (flat, prefixed)."""
    out = tmp_path_factory.mktemp("mac-build")
    site = tmp_path_factory.mktemp("mac-env") / "site-packages"
    torch = dylib(out, "libtorch_cpu.dylib", "int aoti_torch_a(int x) { return x; }\n"
                  "int aoti_torch_b(int x) { return x; }\n")
    _distribution(site, "torch", "9.9.0", {"torch/lib/libtorch_cpu.dylib": torch})
    shims = dylib(out, "librtx_shims.dylib", "int aoti_torch_a(int x) { return x + 1; }\n"
                  "int rtx_aoti_torch_b(int x) { return x; }\n")
    _distribution(site, "rtx", "1.0", {"rtx/lib/librtx_shims.dylib": shims})
    use = "extern int aoti_torch_a(int);\nint PyInit__ext(void) { return aoti_torch_a(0); }\n"
    ext = dylib(out, "_ext.cpython-311-darwin.so", use, FLAT)
    _distribution(site, "ext", "2.0", {"ext/_ext.cpython-311-darwin.so": ext})
    good = dylib(out, "_good.cpython-311-darwin.so", use.replace("_ext", "_good"),
                 str(site / "torch/lib/libtorch_cpu.dylib"))  # two-level: bound to libtorch by its install name
    _distribution(site, "good", "3.0", {"good/_good.cpython-311-darwin.so": good})
    rty = dylib(out, "librty_shims.dylib", "int rty_aoti_torch_a(int x) { return x; }\n")
    blob = dylib(out, "librty_blob.dylib", "extern int rty_aoti_torch_a(int);\n"
                 "int AOTInductorModelContainerCreate(int x) { return rty_aoti_torch_a(x); }\n", FLAT)
    _distribution(site, "rty", "1.0", {"rty/librty_shims.dylib": rty, "rty/librty_blob.dylib": blob})
    # A bundle no RECORD lists, named as a macOS extension: read as outside any distribution.
    (site / "loose").mkdir()
    (site / "loose" / "_loose.cpython-311-darwin.so").write_bytes((site / "rty/librty_blob.dylib").read_bytes())
    return site


def _scan(site: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "scan", str(site), "--format", fmt], capture_output=True, text=True, timeout=120)


def test_an_unprefixed_dylib_captures_another_distributions_flat_lookups(macos_site: Path) -> None:
    done = _scan(macos_site, "json")
    assert done.returncode == 8, done.stderr
    doc = json.loads(done.stdout)
    schema = resources.files("aoti_shim.checks").joinpath("schemas/scan-v1.schema.json").read_text()
    jsonschema.validate(doc, json.loads(schema))
    found = {(f["rule"], f["artifact"], f["symbol"], f["related"]) for f in doc["findings"]}
    assert found == {
        ("HIJACK", "rtx/lib/librtx_shims.dylib", "aoti_torch_a", "ext/_ext.cpython-311-darwin.so"),
        ("UNPREFIXED_PROVIDER", "rtx/lib/librtx_shims.dylib", "aoti_torch_a", None),
    }, done.stdout


def test_the_text_report_groups_the_hijack_and_lists_the_native_libraries(macos_site: Path) -> None:
    done = subprocess.run([*CLI, "scan", str(macos_site), "-v"], capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 8, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].endswith(": 5 distributions, 0 ELF libraries, 7 Mach-O or PE libraries"), lines[1]
    findings = done.stdout.split("shim providers:")[0]
    assert "HIJACK (1 blocking): rtx 1.0 captures stable-ABI imports" in findings, done.stdout
    assert "ext 2.0: ext/_ext.cpython-311-darwin.so (1)" in findings and "good" not in findings
    assert "the same libraries export 1 unprefixed shim name" in findings
    assert "  rtx 1.0       rtx/lib/librtx_shims.dylib    (unprefixed)  1" in lines
    assert "  rty/librty_blob.dylib: Mach-O: AOTInductor blob" in lines
    assert "  good/_good.cpython-311-darwin.so: Mach-O: stable-ABI consumer" in lines
    loose = lines.index("(no distribution):")
    assert lines[loose + 1].endswith("loose/_loose.cpython-311-darwin.so: Mach-O: AOTInductor blob"), lines[loose:]


def test_an_unprefixed_shim_dll_is_an_unprefixed_provider(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    built = dll(tmp_path, "rtw_shims.dll", ["aoti_torch_a", "rtw_aoti_torch_b"], {})
    _distribution(site, "rtw", "1.0", {"rtw/rtw_shims.dll": built})
    done = _scan(site, "json")
    assert done.returncode == 0, done.stderr  # a warning
    (finding,) = json.loads(done.stdout)["findings"]
    assert (finding["rule"], finding["artifact"], finding["symbol"]) == (
        "UNPREFIXED_PROVIDER", "rtw/rtw_shims.dll", "aoti_torch_a")
    assert "whichever DLL its import directory names" in finding["message"]


@pytest.mark.parametrize(("member", "head", "said"), [
    # A dylib's header whose load commands lie past the end: the Mach-O reader's one line.
    ("p/_x.so", struct.pack("<8I", 0xFEEDFACF, 0x0100000C, 0, 6, 1, 0x1000, 0x85, 0), "p/_x.so: the load commands"),
    # MZ and no PE header behind it, named as a DLL: broken, never skipped.
    ("p/y.dll", b"MZ" + bytes(100), "p/y.dll: named like a Mach-O or PE library but not one"),
])
def test_a_broken_native_library_is_one_line_and_exit_1(tmp_path: Path, member: str, head: bytes, said: str) -> None:
    site = tmp_path / "site-packages"
    site.mkdir()
    (tmp_path / "lib").write_bytes(head)
    _distribution(site, "p", "1.0", {member: tmp_path / "lib"})
    done = _scan(site, "text")
    (line,) = done.stderr.splitlines()
    assert done.returncode == 1 and said in line, done.stderr


def _wheel(out: Path, name: str, tag: str, files: dict[str, Path]) -> Path:
    """A wheel of ``name`` 1.0 for platform ``tag`` holding ``files`` (member -> built file)."""
    wheel = out / f"{name}-1.0-cp311-cp311-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"{name}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        for member, built in files.items():
            zf.write(built, member)
    return wheel


def test_scan_reads_the_mach_o_members_of_macos_wheels(tmp_path: Path) -> None:
    """As the folder above: rtx's wheel captures ext's flat lookup; a .so bundle is no broken ELF."""
    torch = dylib(tmp_path, "libtorch_cpu.dylib", "int aoti_torch_a(int x) { return x; }\n")
    shims = dylib(tmp_path, "librtx_shims.dylib", "int aoti_torch_a(int x) { return x + 1; }\n"
                  "int rtx_aoti_torch_b(int x) { return x; }\n")
    ext = dylib(tmp_path, "_ext.cpython-311-darwin.so",
                "extern int aoti_torch_a(int);\nint PyInit__ext(void) { return aoti_torch_a(0); }\n", FLAT)
    tag = "macosx_11_0_arm64"
    wheels = [_wheel(tmp_path, "torch", tag, {"torch/lib/libtorch_cpu.dylib": torch}),
              _wheel(tmp_path, "rtx", tag, {"rtx/lib/librtx_shims.dylib": shims}),
              _wheel(tmp_path, "ext", tag, {"ext/_ext.cpython-311-darwin.so": ext})]
    done = subprocess.run([*CLI, "scan", *map(str, wheels), "--format", "json"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 8, done.stdout + done.stderr
    found = {(f["rule"], f["artifact"].split("!")[-1], f["symbol"]) for f in json.loads(done.stdout)["findings"]}
    assert found == {("HIJACK", "rtx/lib/librtx_shims.dylib", "aoti_torch_a"),
                     ("UNPREFIXED_PROVIDER", "rtx/lib/librtx_shims.dylib", "aoti_torch_a")}, done.stdout


def test_scan_reads_the_dlls_of_windows_wheels_and_not_of_linux_ones(tmp_path: Path) -> None:
    built = dll(tmp_path, "rtw_shims.dll", ["aoti_torch_a", "rtw_aoti_torch_b"], {})
    win = _wheel(tmp_path, "rtw", "win_amd64", {"rtw/rtw_shims.dll": built})
    done = subprocess.run([*CLI, "scan", str(win), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = [(f["rule"], f["artifact"].split("!")[-1]) for f in json.loads(done.stdout)["findings"]]
    assert found == [("UNPREFIXED_PROVIDER", "rtw/rtw_shims.dll")], done.stdout
    # Another distribution's wheel shipping a DLL of that base name (in other case): one module.
    other = _wheel(tmp_path, "rtv", "win_amd64", {"rtv/bin/RTW_Shims.DLL": built})
    done = subprocess.run([*CLI, "scan", str(win), str(other), "--format", "json"], capture_output=True, text=True,
                          timeout=120)
    rules = {f["rule"] for f in json.loads(done.stdout)["findings"]}
    assert "DLL_COLLISION" in rules, done.stdout + done.stderr
    # The same DLL in a Linux wheel is no library the wheel's platform loads.
    linux = _wheel(tmp_path / "..", "rtw", "manylinux2014_x86_64", {"rtw/rtw_shims.dll": built})
    done = subprocess.run([*CLI, "scan", str(linux), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout)["findings"] == [], done.stdout + done.stderr
