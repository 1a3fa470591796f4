"""Hand-made wheels, written one way by every test: no build, the members given.

A member is a file to copy (its mode kept) or the bytes (or text) to store, under the name
as given, unsafe ones included: the readers' refusals are tested with these. Members given
as (name, content) pairs may repeat a name, as a hostile wheel does. With ``name`` the
wheel is one pip installs: METADATA, WHEEL and RECORD follow the members, under the
``.dist-info`` folder the file name says (``{dist}-{version}-{tag}.whl``).
"""

from __future__ import annotations

import base64
import hashlib
import struct
import warnings
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

Content = Path | bytes | str


def record_hash(data: bytes) -> str:
    """A RECORD row's hash field (the wheel spec's urlsafe base64 of sha256, unpadded)."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _dist_info(wheel: Path, name: str) -> tuple[str, dict[str, bytes]]:
    dist, version, tag = wheel.name.removesuffix(".whl").split("-", 2)
    info = f"{dist}-{version}.dist-info"
    return info, {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: aoti-shim tests\nRoot-Is-Purelib: false\nTag: "
            f"{tag}\n".encode(),
    }


def make_wheel(
    path: Path,
    members: Mapping[str, Content] | Iterable[tuple[str, Content]],
    *,
    name: str | None = None,
    compression: int = zipfile.ZIP_STORED,
) -> Path:
    """The wheel ``path`` holding ``members`` (arcname -> file, bytes or text), in their order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pairs = list(members.items() if isinstance(members, Mapping) else members)
    files = [(arc, data.encode() if isinstance(data, str) else data) for arc, data in pairs]
    info, metadata = _dist_info(path, name) if name else ("", {})
    record: list[str] = []
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", compression) as zf:
        warnings.simplefilter("ignore")  # zipfile warns about a repeated name, which a pair list may hold on purpose
        for arcname, content in [*files, *metadata.items()]:
            if isinstance(content, Path):
                zf.write(content, arcname)
                content = content.read_bytes()
            else:
                zf.writestr(arcname, content)
            record.append(f"{arcname},{record_hash(content)},{len(content)}\n")
        if name:
            zf.writestr(f"{info}/RECORD", "".join(record) + f"{info}/RECORD,,\n")
    return path


def break_crc(path: Path, name: str) -> None:
    """Break ``name``'s CRC in the central directory and its local header: a reader that
    inflates the member to its end fails; one that reads only its first bytes does not."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    # The local header's CRC at +14; the central record's at +16 (found by the member's name).
    struct.pack_into("<I", data, info.header_offset + 14, info.CRC ^ 1)
    central = data.find(b"PK\x01\x02")
    while central >= 0:
        (name_len,) = struct.unpack_from("<H", data, central + 28)
        if data[central + 46 : central + 46 + name_len] == name.encode():
            struct.pack_into("<I", data, central + 16, info.CRC ^ 1)
        central = data.find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(data))
