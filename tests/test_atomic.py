"""aoti_shim.atomic: the one writer every report, snapshot and header goes through."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from aoti_shim.atomic import write_bytes_atomically, write_text_atomically
from aoti_shim.errors import AotiShimError


def test_writes_replaces_and_sets_the_mode(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    out.write_text("old")
    write_text_atomically(out, "new ü\n", what="--output", fsync=True)
    assert out.read_bytes() == "new ü\n".encode()
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    write_bytes_atomically(str(out), b"\x00\x01", what="snapshot", mode=0o600)
    assert out.read_bytes() == b"\x00\x01" and stat.S_IMODE(out.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_device_node_is_refused_and_left_alone() -> None:
    with pytest.raises(AotiShimError, match=r"^--output /dev/null: not a regular file; name a file to write$"):
        write_text_atomically("/dev/null", "x", what="--output")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(AotiShimError, match="not a regular file"):
        write_text_atomically(fifo, "x", what="--json")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and [p.name for p in tmp_path.iterdir()] == ["pipe"]


@pytest.mark.parametrize("case", ["folder target", "missing folder", "file as folder"])
def test_every_os_error_is_one_line_naming_what_and_leaves_nothing(tmp_path: Path, case: str) -> None:
    (tmp_path / "plain").write_text("keep")
    (tmp_path / "sub").mkdir()
    target = {
        "folder target": tmp_path / "sub",
        "missing folder": tmp_path / "no" / "such" / "r.json",
        "file as folder": tmp_path / "plain" / "r.json",
    }[case]
    with pytest.raises(AotiShimError) as caught:
        write_text_atomically(target, "x", what="rename header")
    message = str(caught.value)
    assert message.startswith(f"rename header {target}: cannot write: ") and "\n" not in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain", "sub"]
    assert list((tmp_path / "sub").iterdir()) == [] and (tmp_path / "plain").read_text() == "keep"


def test_an_interrupted_write_removes_the_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomically(tmp_path / "r.json", "x", what="--output")
    assert list(tmp_path.iterdir()) == []
