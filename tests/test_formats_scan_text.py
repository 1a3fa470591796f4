"""scan's text report reads at a glance: a real environment's findings (torch 2.14.1, an
ExecuTorch runtime shipping unprefixed shims, torchao's and torchaudio's stable-ABI
extensions; recorded in fixtures/scan/real_env.json, see real_env.md) rendered from the record."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aoti_shim.checks.formats.scan import render_scan
from aoti_shim.checks.formats.scan_text import render_text
from scan_record import load

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "scan" / "real_env.json"
HIJACKER = "torch-tensorrt-executorch-runtime 0.1.0"


@pytest.fixture(scope="module")
def text() -> str:
    return render_text(load(RECORD), width=100)


def test_the_verdict_and_the_findings_come_first(text: str) -> None:
    lines = text.splitlines()
    assert lines[0] == "FAILED: 80 blocking, 2 warning(s), 0 suppressed"
    # Its programs (torch's torch_shm_manager...) counted as such since review-fixes, none as a library.
    assert lines[1] == "scanned 4 wheel(s): 4 distributions, 22 ELF libraries, 3 programs"
    first_finding = next(i for i, line in enumerate(lines) if line.startswith("HIJACK"))
    assert first_finding == 3 and lines.index("shim providers:") > first_finding
    # Unrelated libraries are not listed without -v; with it, after the providers.
    assert "torch/lib/libc10.so" not in text and "unrelated" not in text
    verbose = render_text(load(RECORD), width=100, verbose=True)
    assert verbose.index("shim providers:") < verbose.index("  torch/lib/libc10.so: unrelated")
    assert len(lines) <= 40, text  # the report of the unreadable kind: 63 lines


def test_findings_are_grouped_by_the_hijacking_distribution(text: str) -> None:
    assert f"HIJACK (8 blocking): {HIJACKER} captures stable-ABI imports" in text
    assert "it ships libtorch's shim names unprefixed, in 2 libraries" in text
    block = text[text.index("HIJACK") : text.index("  when:")]
    # Each of its libraries with its count of libtorch's names, then what it captures, by distribution.
    portable = "torch_tensorrt_executorch_runtime/_portable_lib.cpython-311-x86_64-linux-gnu.so (25 names):"
    cuda = "torch_tensorrt_executorch_runtime/libaoti_cuda_shims.so (47 names):"
    assert block.index(portable) < block.index(cuda)
    under_portable = block[block.index(portable) : block.index(cuda)]
    assert re.search(r"^    torchao 0\.18\.0: torchao/_C_cutlass_90a\.abi3\.so \(17\),$", under_portable, re.M), (
        under_portable
    )
    assert "torchaudio 2.11.1: torchaudio/lib/libtorchaudio.so (20)," in under_portable
    assert under_portable.count("torchao 0.18.0:") == 1 and under_portable.count("torchaudio 2.11.1:") == 1
    assert "torchao/_C_mxfp8.cpython-310-x86_64-linux-gnu.so (21)" in block[block.index(cuda) :]
    # The findings from the same cause are one line each, not 72 and 2 more.
    assert re.search(
        r"^COLLISION \(72 blocking\): the same libraries export 72 names libtorch exports; the same cause", text, re.M
    )
    assert re.search(
        r"^UNPREFIXED_PROVIDER \(2 warnings\): the same libraries export 76 unprefixed shim names", text, re.M
    )
    assert "exports shim name" not in text


def test_the_hijack_says_what_to_do(text: str) -> None:
    advice = " ".join(line.strip() for line in text[text.index("  when:") : text.index("COLLISION")].splitlines())
    assert advice.startswith(f"when: {HIJACKER}'s shims are loaded RTLD_GLOBAL, or with their dependencies promoted")
    assert "before libtorch" in advice
    assert (
        f"fix: {HIJACKER} ships unprefixed shims: have its runtime rebuilt with a private prefix (aoti-shim is the tool"
        in advice
    )
    assert "or keep it and torchao 0.18.0, torchaudio 2.11.1 out of one process" in advice


@pytest.mark.parametrize("width", [100, 80, 120])
def test_paths_are_short_and_lines_fit_the_width(width: int) -> None:
    for verbose in (False, True):
        text = render_text(load(RECORD), width=width, verbose=verbose)
        # A library is its distribution's member; -v names each wheel once, as the distribution's location.
        assert ".whl!" not in text
        for line in text.splitlines():
            # Only a name longer than the width may overrun it, alone on its line.
            assert len(line) <= width or " " not in line.strip(), (width, line)
        if width >= 100:
            assert max(map(len, text.splitlines())) <= width
    assert ".whl" not in render_text(load(RECORD), width=width)


def test_the_machine_formats_keep_every_path() -> None:
    report = load(RECORD)
    for fmt in ("json", "sarif", "junit"):
        assert "torch_tensorrt_executorch_runtime-0.1.0-cp311-cp311-manylinux_2_28_x86_64.whl" in render_scan(
            report, fmt
        )


def test_editable_and_unlisted_libraries_are_short_too(scan_envs) -> None:
    """A real scan of the fixture venv: an editable install's library (its folder added by a
    .pth) and a library no distribution lists were printed by their whole paths (4299e25:
    "edit-z 0.3: /tmp/.../edit-z-src/edit_z/_core...so"), unlike every other library."""
    from aoti_shim.checks.scan.run import ScanSettings, run_scan

    report = run_scan(ScanSettings(paths=(str(scan_envs.dirty.root),)))
    for verbose in (False, True):
        text = render_text(report, width=100, verbose=verbose)
        body = [line for line in text.splitlines() if not line.startswith(("scanned ", "site folder: "))]
        # The folders appear only where the report names the scan and its site folders (-v).
        assert not [line for line in body if str(scan_envs.editable_source) in line], text
        assert not [line for line in body if str(scan_envs.stray_folder) in line], text
        assert re.search(r"^    edit-z 0\.3: edit_z/_core\.[\w-]+\.so \(2\)", text, re.M), text
        assert re.search(r"^    \(no distribution\): libstray\.so \(2\)", text, re.M), text
    verbose_text = render_text(report, width=100, verbose=True)
    assert re.search(r"^  edit_z/_core\.[\w-]+\.so: stable-ABI consumer$", verbose_text, re.M), verbose_text
    assert "\n  libstray.so: stable-ABI consumer\n" in verbose_text
    # The machine formats keep the whole path.
    assert str(scan_envs.editable_source) in render_scan(report, "json")


def test_a_whole_path_outside_every_scanned_folder_keeps_its_folder_and_name() -> None:
    from aoti_shim.checks.formats.scan_text import short

    # An editable finder's folder (setuptools' MAPPING) is no site folder: the package folder and file.
    assert short("/home/u/proj/src/pkg/_core.so", ("/venv/lib/python3.11/site-packages",)) == "pkg/_core.so"
    assert short("/srv/a/b/libx.so", ("/srv/a", "/srv/a/b")) == "libx.so"  # the deepest folder holding it
    assert short("/srv/ab/libx.so", ("/srv/a",)) == "ab/libx.so"  # a folder's name is no prefix of another's
    assert short("pkg/libx.so", ("/srv",)) == "pkg/libx.so" and short("/w/x.whl!pkg/l.so") == "pkg/l.so"
