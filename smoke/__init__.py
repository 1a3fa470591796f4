"""The end-to-end smoke run: compile models with AOTInductor, prefix their imports,
run them next to a global libtorch through the reference shims, prove the bindings."""

from __future__ import annotations
