"""Child process: rename a blob's imported ``aoti_torch_*`` symbols with LIEF.

Run as ``python -m aoti_shim.smoke.rewrite_worker IN OUT PREFIX``; prints the
renamed names as JSON. LIEF runs here, not in the caller, because a LIEF crash
(a segfault on some inputs) must become an error message, not a dead process.
"""

from __future__ import annotations

import json
import sys


def rename_imports(source: str, target: str, prefix: str) -> list[str]:
    import lief

    from aoti_shim.checks.abi.prefix import is_unprefixed

    # Hold the parsed binary in a variable: LIEF 1.0 frees it (and segfaults on
    # the symbols) if only a temporary refers to it.
    binary = lief.ELF.parse(source)
    if binary is None:
        raise ValueError(f"LIEF cannot parse {source}")
    renamed: list[str] = []
    for symbol in binary.dynamic_symbols:
        name = symbol.name if isinstance(symbol.name, str) else symbol.name.decode()
        if symbol.shndx == 0 and is_unprefixed(name):  # undefined: an import
            symbol.name = prefix + name
            renamed.append(name)
    if renamed:
        binary.write(target)
    return sorted(renamed)


def main(argv: list[str]) -> int:
    source, target, prefix = argv
    try:
        renamed = rename_imports(source, target, prefix)
    except Exception as e:  # noqa: BLE001 - reported by the parent as one line
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        return 1
    print(json.dumps({"renamed": renamed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
