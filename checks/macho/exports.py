"""The export trie: every name a Mach-O image offers other images, walked without recursion.

A node is a terminal part (size, then flags and an address, a re-export or a resolver)
and a list of edges (a label and a child offset). A hostile trie can point a child back
at an ancestor or at a shared node; dyld refuses both, and so does this walk (each node
is visited once), so the work is bounded by the trie's size.
"""

from __future__ import annotations

from dataclasses import dataclass

from aoti_shim.checks.bounded.view import MAX_NAME_LEN, View
from aoti_shim.checks.macho import constants as c

# libtorch_cpu exports ~75k names; far past this is an attack on memory.
_MAX_EXPORTS = 1 << 21


@dataclass(frozen=True)
class Export:
    """One exported name (with its leading underscore, as Mach-O spells C names)."""

    name: str
    kind: str  # regular, thread_local or absolute
    weak_definition: bool
    # A re-export names another image's symbol (ordinal into the dylib list, and the name
    # there, "" when the same); a stub-and-resolver export is resolved lazily by a function.
    reexport_ordinal: int | None = None
    reexport_name: str | None = None
    resolver: bool = False


def read_trie(trie: View) -> tuple[Export, ...]:
    """Every terminal of the trie in ``trie`` (the LC_DYLD_INFO or LC_DYLD_EXPORTS_TRIE range)."""
    if trie.size == 0:
        return ()
    found: list[Export] = []
    visited: set[int] = set()
    stack: list[tuple[int, bytes]] = [(0, b"")]
    while stack:
        node, prefix = stack.pop()
        if node in visited:
            raise trie.fail(f"the export trie reaches node {node:#x} twice (a loop or a shared node)")
        visited.add(node)
        terminal_size, after = trie.uleb(node, "an export trie node")
        children_at = after + terminal_size
        trie.check(after, terminal_size, "an export trie terminal")
        if terminal_size:
            found.append(_terminal(trie, after, children_at, prefix))
            if len(found) > _MAX_EXPORTS:
                raise trie.fail(f"more than {_MAX_EXPORTS} exports")
        count = trie.u8(children_at, "an export trie node's child count")
        at = children_at + 1
        edges: list[tuple[int, bytes]] = []
        for _ in range(count):
            label, at = _label(trie, at)
            child, at = trie.uleb(at, "an export trie edge")
            if child >= trie.size:
                raise trie.fail(f"an export trie edge points past the trie ({child:#x})")
            name = prefix + label
            if len(name) > MAX_NAME_LEN:
                raise trie.fail("an export name is longer than 64 KiB")
            edges.append((child, name))
        stack.extend(reversed(edges))
    return tuple(found)


def _label(trie: View, at: int) -> tuple[bytes, int]:
    end = trie.data.find(b"\0", trie.start + at, trie.end)
    if end < 0:
        raise trie.fail("an export trie edge label has no terminating NUL")
    label = bytes(trie.data[trie.start + at : end])
    if not label:
        raise trie.fail("an export trie edge has an empty label")
    return label, end - trie.start + 1


def _terminal(trie: View, at: int, end: int, prefix: bytes) -> Export:
    flags, at = trie.uleb(at, "an export's flags")
    kind = c.EXPORT_SYMBOL_FLAGS_KINDS.get(flags & c.EXPORT_SYMBOL_FLAGS_KIND_MASK)
    name = prefix.decode("utf-8", "backslashreplace")
    if kind is None:
        raise trie.fail(f"export {name!r} has an unknown kind in flags {flags:#x}")
    weak = bool(flags & c.EXPORT_SYMBOL_FLAGS_WEAK_DEFINITION)
    if flags & c.EXPORT_SYMBOL_FLAGS_REEXPORT:
        ordinal, at = trie.uleb(at, "a re-export's library ordinal")
        imported, at = trie.cstring(at, "a re-export's name", limit=end)
        return Export(name, kind, weak, reexport_ordinal=ordinal, reexport_name=imported)
    _address, at = trie.uleb(at, "an export's address")
    resolver = bool(flags & c.EXPORT_SYMBOL_FLAGS_STUB_AND_RESOLVER)
    if resolver:
        _resolver, at = trie.uleb(at, "an export's resolver")
    if at > end:
        raise trie.fail(f"export {name!r} runs past its terminal's size")
    return Export(name, kind, weak, resolver=resolver)
