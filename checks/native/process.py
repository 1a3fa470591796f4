"""The process a native check models: the shims, the models and the references, and where
each shim-ABI import binds in it (by :mod:`dyld` or :mod:`winload`, by the images' format)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from aoti_shim.checks.native import dyld, winload
from aoti_shim.checks.native.binding import REFERENCE, Binding, Exporter, Loaded, loaded
from aoti_shim.checks.native.image import NativeImage


@dataclass(frozen=True)
class NativeProcess:
    """The checked images (one format) and the references; each slice of a universal file is
    an image of its architecture, and only images of one architecture load together."""

    format: str  # "macho" or "pe"
    shims: Sequence[NativeImage]
    models: Sequence[NativeImage]
    references: Sequence[Exporter] = ()
    prefix: str | None = None
    # Every prefix the shims' exports carry.
    shim_prefixes: frozenset[str] = field(default=frozenset())

    @property
    def images(self) -> list[NativeImage]:
        return [*self.shims, *self.models]

    @cached_property
    def own_prefixes(self) -> frozenset[str]:
        return frozenset(p for p in (self.prefix, *self.shim_prefixes) if p)

    @cached_property
    def _references(self) -> list[Loaded]:
        return loaded((), (), self.references)

    def loaded_with(self, architecture: str) -> list[Loaded]:
        """The images one process of ``architecture`` loads, in load order."""
        checked = loaded(
            [s for s in self.shims if s.architecture == architecture],
            [m for m in self.models if m.architecture == architecture], (),
        )
        return [*self._references, *checked]

    @cached_property
    def bindings(self) -> list[Binding]:
        """Every shim-ABI import's binding, image by image."""
        bind = dyld.bind if self.format == "macho" else winload.bind
        out: list[Binding] = []
        by_arch: dict[str, list[Loaded]] = {}
        for image in self.images:
            images = by_arch.setdefault(image.architecture, self.loaded_with(image.architecture))
            out.extend(bind(image, images))
        return out

    @cached_property
    def reference_exports(self) -> list[tuple[str, frozenset[str]]]:
        """(display, exported C names) of each reference, in order."""
        return [(r.display, r.exports) for r in self._references if r.kind == REFERENCE]
