"""``.gnu.hash``: the table's header checked against its section, its extent when only
PT_DYNAMIC names it, the last symbol its chains reach, and the walk a lookup of one name
takes (bloom word, bucket, chain), as glibc's loader walks it."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from aoti_shim.checks.elf.layout import MAX_SYMBOLS, Layout, Section
from aoti_shim.checks.elf.view import ByteView

if TYPE_CHECKING:
    from aoti_shim.checks.elf.symbols import Symbol


class GnuHash(NamedTuple):
    """Where a checked ``.gnu.hash`` table's parts lie in the file."""

    nbuckets: int
    symoffset: int
    bloom_size: int
    bloom_shift: int
    bloom_off: int
    buckets_off: int
    chain_off: int
    end: int


_hash_cache: dict[str, tuple[bytes, int]] = {}


def gnu_hash(name: bytes) -> int:
    """The GNU dynamic linker's symbol hash (djb2, 32-bit)."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def hashed(name: str) -> tuple[bytes, int]:
    # The same few hundred names are looked up in every reference: hash once.
    found = _hash_cache.get(name)
    if found is None:
        key = name.encode("utf-8", "surrogatepass")
        found = (key, gnu_hash(key))
        if len(_hash_cache) < 1 << 16:
            _hash_cache[name] = found
    return found


def read_table(view: ByteView, lay: Layout, sec: Section, symbol_count: int) -> GnuHash:
    """The table in ``sec``, its header checked to fit the section and ``.dynsym``."""
    view.check_range(sec.offset, sec.size, ".gnu.hash")
    if sec.size < 16:
        raise view.fail(".gnu.hash is shorter than its header")
    nbuckets, symoffset, bloom_size, bloom_shift = struct.unpack_from(lay.endian + "IIII", view.map(), sec.offset)
    bloom_off = sec.offset + 16
    buckets_off = bloom_off + bloom_size * lay.bloom_word.size
    chain_off = buckets_off + nbuckets * 4
    end = sec.offset + sec.size
    if nbuckets == 0 or bloom_size == 0 or chain_off > end:
        raise view.fail(".gnu.hash header does not fit its section")
    if symoffset > symbol_count:
        raise view.fail(f".gnu.hash starts at symbol {symoffset}, past .dynsym")
    return GnuHash(nbuckets, symoffset, bloom_size, bloom_shift, bloom_off, buckets_off, chain_off, end)


def extent(view: ByteView, lay: Layout, at: int) -> tuple[int, int]:
    """(symbol count, byte size) of the .gnu.hash table at ``at`` when only PT_DYNAMIC
    names it: one past the last symbol its chains reach, and where its last chain ends."""
    view.check_range(at, 16, "DT_GNU_HASH")
    nbuckets, symoffset, bloom_size, _ = struct.unpack_from(lay.endian + "IIII", view.map(), at)
    buckets_off = at + 16 + bloom_size * lay.bloom_word.size
    chain_off = buckets_off + nbuckets * 4
    view.check_range(buckets_off, nbuckets * 4, "DT_GNU_HASH buckets")
    buckets = array("I", view.bytes(buckets_off, nbuckets * 4, "DT_GNU_HASH buckets"))
    if lay.swapped:
        buckets.byteswap()
    top = max(buckets, default=0)
    if top == 0:
        return symoffset, chain_off - at
    if top < symoffset:
        raise view.fail(f".gnu.hash bucket points below its first symbol ({top})")
    index = top
    while True:
        word_at = chain_off + (index - symoffset) * 4
        view.check_range(word_at, 4, ".gnu.hash chain")
        if lay.word.unpack_from(view.map(), word_at)[0] & 1:
            return index + 1, word_at + 4 - at
        index += 1
        if index > MAX_SYMBOLS:
            raise view.fail(".gnu.hash chain does not end")


def reach(view: ByteView, lay: Layout, t: GnuHash) -> int:
    """One past the last symbol index a .gnu.hash lookup can reach."""
    buckets = array("I", view.bytes(t.buckets_off, t.nbuckets * 4, ".gnu.hash buckets"))
    chains = array("I", view.bytes(t.chain_off, (t.end - t.chain_off) // 4 * 4, ".gnu.hash chains"))
    if lay.swapped:
        buckets.byteswap()
        chains.byteswap()
    top = max(buckets)
    if top == 0:
        return 0
    if top < t.symoffset:
        raise view.fail(f".gnu.hash bucket points below its first symbol ({top})")
    for i in range(top - t.symoffset, len(chains)):
        if chains[i] & 1:
            return t.symoffset + i + 1
    raise view.fail(".gnu.hash chain runs past its section")


def matches(
    view: ByteView, lay: Layout, t: GnuHash, name: str, count: int, read: Callable[[int], Symbol | None]
) -> Iterator[tuple[int, Symbol]]:
    """(index, symbol) of each entry a lookup of ``name`` takes: past the bloom filter,
    along its bucket's chain (indexes below ``count``), ``read(index)`` of each whose hash
    matches, when it is not None. Lazy, so a bad chain fails where the loader's walk would,
    and a caller that takes the first match walks no further."""
    mm = view.map()
    h = hashed(name)[1]
    wsize = lay.bloom_word.size
    bits = wsize * 8
    word = lay.bloom_word.unpack_from(mm, t.bloom_off + ((h // bits) % t.bloom_size) * wsize)[0]
    mask = (1 << (h % bits)) | (1 << ((h >> t.bloom_shift) % bits))
    if word & mask != mask:
        return
    index = lay.word.unpack_from(mm, t.buckets_off + (h % t.nbuckets) * 4)[0]
    if index == 0:
        return
    if index < t.symoffset:
        raise view.fail(f".gnu.hash bucket points below its first symbol ({index})")
    while True:
        at = t.chain_off + (index - t.symoffset) * 4
        if index >= count or at + 4 > t.end:
            raise view.fail(".gnu.hash chain runs past .dynsym")
        h2 = lay.word.unpack_from(mm, at)[0]
        if (h | 1) == (h2 | 1):
            found = read(index)
            if found is not None:
                yield index, found
        if h2 & 1:
            return
        index += 1
