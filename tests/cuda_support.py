"""CUDA builds without a toolkit: PATH without nvcc, the test env's nvcc wheels, fatbin contents."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from plugin_support import repack_installed

# The distributions `[tool.aoti-shim] cuda = true` asks for (aoti_shim.plugin.cuda.CUDA_WHEELS).
CUDA_DISTRIBUTIONS = ("nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-cuda-cccl")

FATBIN_MAGIC = 0xBA55ED50
FATBIN_PTX = 1
FATBIN_ELF = 2


def path_without_nvcc(path: str | None = None) -> str:
    """PATH less every folder holding an nvcc: what CMake sees on a machine with no toolkit."""
    folders = (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep)
    return os.pathsep.join(f for f in folders if f and not os.access(os.path.join(f, "nvcc"), os.X_OK))


def wheels_root() -> Path:
    """The test env's nvidia/cu13 folder with bin/nvcc (the test extra installs the wheels)."""
    from aoti_shim.plugin.cuda import wheels_root as find

    root = find()
    assert root is not None, "the nvcc wheels are not installed (pip install '.[test]' brings them)"
    return root


def add_cuda_wheels(wheelhouse: Path) -> None:
    """The CUDA compiler wheels, repacked from the test env, uncompressed (hundreds of MB: speed)."""
    for name in CUDA_DISTRIBUTIONS:
        if not any(wheelhouse.glob(f"{name.replace('-', '_')}-*.whl")):  # the runtime is aoti-shim's own dependency
            repack_installed(name, wheelhouse, compress=False)


@dataclass(frozen=True)
class FatbinImage:
    kind: int  # FATBIN_PTX or FATBIN_ELF
    arch: int  # 90 for sm_90 / compute_90
    compressed: bool
    head: bytes  # the payload's first bytes


def fatbin_images(library: Path) -> list[FatbinImage]:
    """The images in a library's .nv_fatbin section (fatbin containers of nvcc's layout)."""
    from elftools.elf.elffile import ELFFile

    with library.open("rb") as f:
        section = ELFFile(f).get_section_by_name(".nv_fatbin")
        data = section.data() if section is not None else b""
    images: list[FatbinImage] = []
    offset = 0
    while offset + 16 <= len(data):
        magic, _version, header_size, body_size = struct.unpack_from("<IHHQ", data, offset)
        if magic != FATBIN_MAGIC:
            offset += 8  # containers are 8-byte aligned
            continue
        entry, end = offset + header_size, offset + header_size + body_size
        while entry + 48 <= end:
            kind, _, entry_header, size = struct.unpack_from("<HHIQ", data, entry)
            compressed_size, _, _minor, _major, arch = struct.unpack_from("<IIHHI", data, entry + 16)
            head = data[entry + entry_header : entry + entry_header + 4]
            images.append(FatbinImage(kind, arch, compressed_size != 0, head))
            entry += entry_header + size
        offset = end
    return images


def has_sm90_code(library: Path) -> bool:
    """An sm_90 cubin (an ELF image) and compute_90 PTX in the library's fatbin."""
    images = fatbin_images(library)
    elf = [i for i in images if i.kind == FATBIN_ELF and i.arch == 90 and (i.compressed or i.head == b"\x7fELF")]
    ptx = [i for i in images if i.kind == FATBIN_PTX and i.arch == 90]
    return bool(elf) and bool(ptx)
