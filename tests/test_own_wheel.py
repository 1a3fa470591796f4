"""``aoti-shim wheelhouse``: the installed aoti-shim written back as the wheel pip installed."""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys
import zipfile
from pathlib import Path

from cli_support import one_line_error


def test_the_wheel_holds_what_pip_installed_and_nothing_of_the_installation(
    own_wheelhouse: Path, tmp_path: Path
) -> None:
    (wheel,) = own_wheelhouse.glob("aoti_shim-*.whl")
    dist = metadata.distribution("aoti-shim")
    assert wheel.name.startswith(f"aoti_shim-{dist.version}-py3-none-")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert zf.testzip() is None
    installed = {str(f) for f in dist.files or () if not str(f).startswith("..") and "__pycache__" not in str(f)}
    info = next(n for n in installed if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
    expected = installed - {f"{info}/{n}" for n in ("INSTALLER", "REQUESTED", "direct_url.json")}
    assert names == expected
    assert "aoti_shim/lib/libaoti_shim.so" in names and "aoti_shim/cmake/AotiShimConfig.cmake" in names
    # The same installation gives the same bytes (fixed member times).
    again = subprocess.run(
        [sys.executable, "-m", "aoti_shim", "wheelhouse", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert again.returncode == 0 and again.stdout.strip() == str(tmp_path / wheel.name)
    assert (tmp_path / wheel.name).read_bytes() == wheel.read_bytes()


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "aoti_shim", "wheelhouse", str(tmp_path / "file" / "sub")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (
        one_line_error(done, 1)
        == f"aoti-shim: error: wheelhouse {tmp_path / 'file' / 'sub'}: cannot write: Not a directory"
    )
