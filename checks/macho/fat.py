"""Fat (universal) files: the slices a fat header lists, each checked to lie inside the file."""

from __future__ import annotations

from aoti_shim.checks.bounded.view import View
from aoti_shim.checks.macho import constants as c

# Apple's tools write a handful; 0xCAFEBABE is also a Java class file's magic, whose
# version would read as a count in the thousands.
_MAX_SLICES = 64


def slices(view: View) -> list[View]:
    """The thin Mach-O slices of ``view``: itself when thin, each listed slice when fat."""
    magic = view.be32(0, "the magic number")
    if magic not in (c.FAT_MAGIC, c.FAT_MAGIC_64):
        return [view]
    wide = magic == c.FAT_MAGIC_64
    count = view.be32(4, "the fat header's slice count")
    if count == 0 or count > _MAX_SLICES:
        raise view.fail(f"a fat header listing {count} slices (a Java class file?)")
    entry = 32 if wide else 20
    found: list[View] = []
    taken: list[tuple[int, int]] = []
    for index in range(count):
        at = 8 + index * entry
        if wide:
            offset, size = view.be64(at + 8, "a fat slice's offset"), view.be64(at + 16, "a fat slice's size")
        else:
            offset, size = view.be32(at + 8, "a fat slice's offset"), view.be32(at + 12, "a fat slice's size")
        if offset < 8 + count * entry:
            raise view.fail(f"fat slice {index} overlaps the fat header")
        if any(offset < end and start < offset + size for start, end in taken):
            raise view.fail(f"fat slice {index} overlaps another slice")
        taken.append((offset, offset + size))
        part = view.sub(offset, size, f"fat slice {index}")
        found.append(View(f"{view.display} (slice {index})", part.data, part.start, part.end))
    return found
