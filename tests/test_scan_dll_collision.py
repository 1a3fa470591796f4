"""scan's DLL_COLLISION on a fixture environment of folders: two distributions that ship a
Windows DLL of one base name (compared without regard to case), one of them a shim DLL, built
here by zig's lld-link; two that ship a plain DLL of one name are no finding. A few seconds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cli_support import CLI
from torch_native_fixtures import dll


def _distribution(site: Path, name: str, version: str, dlls: dict[str, list[str]]) -> None:
    """A dist-info folder whose RECORD lists each DLL (path -> its exports), built under ``site``."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    rows = [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    for relative, exports in dlls.items():
        folder = site / relative.rpartition("/")[0]
        folder.mkdir(parents=True, exist_ok=True)
        dll(folder, relative.rpartition("/")[2], exports, {})
        rows.append(f"{relative},,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("dll-env") / "site-packages"
    _distribution(site, "rta", "1.0", {"rta/aoti_cuda_shims.dll": ["rta_aoti_torch_empty_strided"]})
    _distribution(site, "rtb", "2.0", {"rtb/lib/AOTI_CUDA_SHIMS.DLL": ["rtb_aoti_torch_empty_strided"]})
    _distribution(site, "rtc", "3.0", {"rtc/vcruntime140.dll": ["vc_helper"]})
    _distribution(site, "rtd", "4.0", {"rtd/bin/vcruntime140.dll": ["vc_helper"]})
    return site


def _scan(site: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "scan", str(site), "--format", fmt], capture_output=True, text=True, timeout=120)


def test_two_distributions_shipping_one_shim_dll_name_collide(site: Path) -> None:
    done = _scan(site, "json")
    assert done.returncode == 8, done.stderr
    findings = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "DLL_COLLISION"]
    assert [(f["artifact"], f["symbol"], f["related"], f["severity"]) for f in findings] == [
        ("rtb/lib/AOTI_CUDA_SHIMS.DLL", "aoti_cuda_shims.dll", "rta/aoti_cuda_shims.dll", "blocking")
    ]
    assert "rtb_aoti_torch_empty_strided" in findings[0]["message"] and "rta 1.0" in findings[0]["message"]


def test_the_text_report_names_the_distribution_and_the_fix(site: Path) -> None:
    done = _scan(site, "text")
    assert done.returncode == 8, done.stderr
    assert "DLL_COLLISION" in done.stdout and "rtb 2.0" in done.stdout
    assert "name each runtime's shim DLL after the runtime" in done.stdout
    assert "vcruntime140" not in done.stdout  # a plain DLL of one name: no shim, no finding


def test_junit_fails_the_dll_s_case(site: Path) -> None:
    done = _scan(site, "junit")
    assert done.returncode == 8, done.stderr
    assert '<testcase classname="aoti-shim.scan.DLL_COLLISION" name="rtb/lib/AOTI_CUDA_SHIMS.DLL">' in done.stdout
    assert 'type="DLL_COLLISION"' in done.stdout
