"""A Mach-O dylib or a DLL given to ``--against``: a reference that answers by C name.

It keeps the reference protocol of ``checks/references/reference.py`` (``find_export``,
``export_names``, ...), its exports read once by the native readers (every slice of a
universal file), and its load name (install name or DLL name) for the lookup models.
"""

from __future__ import annotations

from collections.abc import Iterator

from aoti_shim.checks.elf.layout import STB_GLOBAL, STT_FUNC
from aoti_shim.checks.elf.symbols import Symbol
from aoti_shim.checks.native.image import read_images

_CHUNK = 4096


class NativeReference:
    """The exports of one Mach-O or PE file, by C name."""

    def __init__(self, path: str, display: str, fmt: str) -> None:
        images = read_images(path, display, "reference", fmt)
        self.path = path
        self.display = display
        self.format = fmt
        self.install_name = images[0].name
        self._names = frozenset(n for image in images for n in image.exports)
        # A DLL's named exports by ordinal: what an import by ordinal from it binds to.
        self.ordinals = images[0].ordinals

    def find_export(self, name: str) -> Symbol | None:
        return Symbol(name, STB_GLOBAL, STT_FUNC, 0, True, False) if name in self._names else None

    def export_names(self) -> set[str]:
        return set(self._names)

    def export_name_chunks(self) -> Iterator[list[str]]:
        names = sorted(self._names)
        for at in range(0, len(names), _CHUNK):
            yield names[at : at + _CHUNK]

    def size_hint(self) -> int:
        return len(self._names)

    def close(self) -> None:
        """Nothing stays open: the readers map and close the file while reading."""
