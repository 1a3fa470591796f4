"""A check of Mach-O or PE inputs: one format per check, the images read, the process built.

The rules judge a :class:`NativeProcess` (``checks/native``) through the same table and
report as ELF; what differs is the lookup model (dyld's, the Windows loader's), never the
report.
"""

from __future__ import annotations

from collections.abc import Sequence

from aoti_shim.checks.abi import prefix as prefix_rules
from aoti_shim.checks.inputs.collect import Artifact
from aoti_shim.checks.native.image import NativeImage, read_images
from aoti_shim.checks.native.process import NativeProcess
from aoti_shim.checks.references.reference import Reference
from aoti_shim.errors import UsageError

FORMAT_NAMES = {"elf": "ELF", "macho": "Mach-O", "pe": "PE"}
# Files a mixed-format error names per format.
_SHOWN = 3


def one_format(arts: Sequence[Artifact]) -> str:
    """The format all of ``arts`` share ("elf" when there are none); a mix is a one-line
    usage error naming the files of each format (one process loads one format)."""
    by_format: dict[str, list[str]] = {}
    for art in arts:
        by_format.setdefault(art.format, []).append(art.display)
    if len(by_format) <= 1:
        return next(iter(by_format), "elf")
    said = "; ".join(f"{FORMAT_NAMES[fmt]}: {_some(names)}" for fmt, names in sorted(by_format.items()))
    raise UsageError(f"check reads one format at a time (one process loads one), but got {said}")


def _some(names: list[str]) -> str:
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def images(arts: Sequence[Artifact], role: str) -> list[NativeImage]:
    """Every image of ``arts`` (a universal file's slices each), in the order given."""
    return [image for art in arts for image in read_images(art.path, art.display, role, art.format)]


def shim_names(shims: Sequence[NativeImage]) -> list[str]:
    """The shims' shim-ABI exports, sorted: what the prefix is read from."""
    return sorted(n for shim in shims for n in shim.exports if prefix_rules.is_shim_name(n))


def model_imports(models: Sequence[NativeImage]) -> list[str]:
    return [i.name for m in models for i in m.imports if prefix_rules.is_shim_name(i.name)]


def process(
    fmt: str, shims: list[NativeImage], models: list[NativeImage], refs: list[Reference], prefix: str | None
) -> NativeProcess:
    return NativeProcess(
        format=fmt, shims=shims, models=models, references=refs, prefix=prefix,
        shim_prefixes=frozenset(prefix_rules.carried(shim_names(shims))),
    )
