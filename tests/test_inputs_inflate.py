"""checks/inputs/inflate.py: a member's bytes inflated straight from the wheel file are
zipfile's bytes, end where zipfile's end, and fail where zipfile fails, in its words. The
zips are real ones zipfile writes; zipfile's own reader is the judge."""

from __future__ import annotations

import io
import os
import random
import zipfile
from pathlib import Path

import pytest

from aoti_shim.checks.inputs import inflate
from aoti_shim.checks.inputs.inflate import MemberStream, open_member
from wheel_support import break_crc

_RANDOM = random.Random(38)
# Compressible (repeats), incompressible (random) and mixed, around the chunk size.
_CONTENTS = {
    "empty": b"",
    "one": b"x",
    "magic": b"\x7fELF",
    "text": b"not a library, a note\n" * 40_000,
    "random": _RANDOM.randbytes(inflate.CHUNK + 12_345),
    "mixed": b"".join(_RANDOM.randbytes(3000) + bytes(9000) for _ in range(150)),
}


def _zip(path: Path, compression: int, members: dict[str, bytes] = _CONTENTS) -> Path:
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_every_way_of_reading_gives_zipfiles_bytes(tmp_path, compression) -> None:
    wheel = _zip(tmp_path / "w.zip", compression)
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            want = zf.read(info)
            with open_member(zf, info) as whole:
                assert isinstance(whole, MemberStream)
                assert whole.read() == want, info.filename
            for size in (4093, 65_537, inflate.CHUNK + 1):
                with open_member(zf, info) as stream:
                    parts = [stream.read(1) for _ in range(min(64, len(want)))]  # byte by byte, then by size
                    while part := stream.read(size):
                        assert len(part) == size or stream.tell() == len(want)
                        parts.append(part)
                    assert b"".join(parts) == want, (info.filename, size)
            with open_member(zf, info) as stream:
                at = len(want) // 3
                assert stream.seek(at) == at and stream.read(100) == want[at : at + 100]
                if stream.tell():
                    with pytest.raises(ValueError, match="seeks forward only"):
                        stream.seek(0)




@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_bad_crc_fails_at_the_end_in_zipfiles_words(tmp_path, compression) -> None:
    wheel = _zip(tmp_path / "w.zip", compression)
    break_crc(wheel, "mixed")
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("mixed")
        with zf.open(info) as theirs, pytest.raises(zipfile.BadZipFile) as said:
            theirs.read()
        with open_member(zf, info) as stream:
            assert len(stream.read(len(_CONTENTS["mixed"]) - 1)) == len(_CONTENTS["mixed"]) - 1  # not at the end yet
            with pytest.raises(zipfile.BadZipFile) as raised:
                stream.read()
        assert str(raised.value) == str(said.value) == "Bad CRC-32 for file 'mixed'"
        with open_member(zf, info) as stream:  # a reader that stops before the end is told nothing
            assert stream.read(1000) == _CONTENTS["mixed"][:1000]


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_file_that_ends_inside_a_member_is_an_eof_error_as_in_zipfile(tmp_path, compression) -> None:
    wheel = _zip(tmp_path / "w.zip", compression, {"random": _CONTENTS["random"]})
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("random")
    with open(wheel, "rb") as f:  # the listing is read first; then the file is cut inside the member
        zf = zipfile.ZipFile(f)
        os.truncate(wheel, info.header_offset + 30 + len("random") + info.compress_size // 2)
        with zf.open(info) as theirs, pytest.raises(EOFError):
            theirs.read()
        with open_member(zf, info) as stream, pytest.raises(EOFError):
            stream.read()


def test_what_it_does_not_take_goes_to_zipfile(tmp_path) -> None:
    """Another compression, a zip in memory, and a local header whose name differs from the
    central directory's: zipfile reads them, or refuses them in its own words."""
    data = _CONTENTS["mixed"]
    lzma = _zip(tmp_path / "lzma.zip", zipfile.ZIP_LZMA, {"m": data})
    with zipfile.ZipFile(lzma) as zf, open_member(zf, zf.getinfo("m")) as other:
        assert not isinstance(other, MemberStream) and other.read() == data
    memory = io.BytesIO(_zip(tmp_path / "d.zip", zipfile.ZIP_DEFLATED, {"m": data}).read_bytes())
    with zipfile.ZipFile(memory) as zf, open_member(zf, zf.getinfo("m")) as other:
        assert not isinstance(other, MemberStream) and other.read() == data
    renamed = tmp_path / "renamed.zip"
    raw = bytearray(_zip(tmp_path / "r.zip", zipfile.ZIP_DEFLATED, {"m": data}).read_bytes())
    raw[30:31] = b"n"  # the local header's name: "n"
    renamed.write_bytes(bytes(raw))
    with zipfile.ZipFile(renamed) as zf, pytest.raises(zipfile.BadZipFile) as raised:
        open_member(zf, zf.getinfo("m"))
    assert str(raised.value) == "File name in directory 'm' and header b'n' differ."
