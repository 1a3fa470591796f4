"""The installed reference shim library: its names, its signatures, and how it loads.

It must export exactly the manifest's names with its private prefix (and its own
aoti_shim_* ABI), share no name with libtorch, declare every function with torch's
exact signature, agree with libtorch on every constant, and load and fail cleanly
on a machine (or in a process) without a GPU.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

from shims_support import manifest_names, reference_library, reference_prefix
from torch_support import torch_lib, torch_package

OWN_ABI = {
    "aoti_shim_last_error",
    "aoti_shim_caller_stream_select",
    "aoti_shim_caller_stream_restore",
    "aoti_shim_caller_stream_get",
    "aoti_shim_cuda_device_count",
    "aoti_shim_is_pinned",
    "aoti_shim_profile_enable",
    "aoti_shim_profile_reset",
    "aoti_shim_profile_read",
    "aoti_shim_profile_probe",
}
# aoti_shim.h's error codes used below.
E_UNSUPPORTED_DEVICE = 12
E_NEGATIVE_DEVICE_INDEX = 13
E_CUDA_UNAVAILABLE = 21


def test_manifest_is_well_formed() -> None:
    names = manifest_names()
    assert len(names) == len(set(names)), "duplicate names in shims/manifest.txt"
    assert all(re.fullmatch(r"aoti_torch_\w+", name) for name in names)
    # The smoke blobs' fallbacks on CPU.
    assert {"aoti_torch_cpu_addmm_out", "aoti_torch_cpu_convolution"} <= set(names)


def test_exports_are_exactly_the_prefixed_manifest() -> None:
    from aoti_shim.checks.elf.image import ElfImage

    prefix = reference_prefix()
    assert prefix and not prefix.startswith("aoti_torch")
    with ElfImage(reference_library()) as image:
        exported = set(image.exports())
        imported = set(image.imports())
    expected = {prefix + name for name in manifest_names()} | {prefix + name for name in OWN_ABI}
    assert exported == expected
    assert not [name for name in imported if "aoti_torch_" in name or "aoti_shim_" in name]


def test_no_name_shared_with_libtorch() -> None:
    from aoti_shim.checks import CheckSettings, render, run_check
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(torch_lib() / "libtorch_cpu.so") as torch_image, ElfImage(reference_library()) as ours:
        torch_names = set(torch_image.exports())
        our_names = set(ours.exports())
    assert len([name for name in torch_names if name.startswith("aoti_torch_")]) > 300
    assert not (our_names & torch_names)
    # The checker agrees, including DUPLICATE_DEFINER over the whole installed lib/ folder.
    report = run_check(
        CheckSettings(shims=(str(reference_library().parent),), against=("torch",), prefix=reference_prefix())
    )
    assert report.exit_code("any") == 0, render(report, "text")


def test_signatures_match_torch(tmp_path: Path) -> None:
    """Redeclaring a C function with another signature is a compile error, so one
    translation unit holding torch's declarations and ours proves they agree."""
    include = reference_library().parent.parent / "include"
    # The library's own names (torch declares none of them) are declared in its own header,
    # shims/src/ops_sort.h, and renamed through NAMES_FROM as a runtime's are; every other
    # manifest name is torch's and must have torch's signature.
    from aoti_shim.torch_names import declared_functions

    own = declared_functions(
        (Path(__file__).resolve().parents[1] / "shims" / "src" / "ops_sort.h").read_text(encoding="utf-8")
    )
    assert own == {"aoti_torch_cuda_radix_sort_u32"} and own <= set(manifest_names())
    names = [name for name in manifest_names() if name not in own]
    shim_dir = torch_package() / "include" / "torch" / "csrc" / "inductor" / "aoti_torch"
    torch_text = "".join(p.read_text(encoding="utf-8") for p in sorted(shim_dir.glob("*/*shim*.h")))
    assert [name for name in names if not re.search(rf"\b{name}\s*\(", torch_text)] == []
    header = (include / "aoti_shim" / "shim.h").read_text(encoding="utf-8")
    assert [name for name in names if not re.search(rf"\b{name}\s*\(", header)] == []

    def compile_unit(body: str) -> subprocess.CompletedProcess[str]:
        unit = tmp_path / "signatures.cpp"
        unit.write_text(
            "#define USE_CUDA 1\n"
            "#include <torch/csrc/inductor/aoti_torch/c/shim.h>\n"
            "#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>\n" + body,
            encoding="utf-8",
        )
        command = [
            os.environ.get("CXX", "c++"),
            "-std=c++17",
            "-fsyntax-only",
            "-DAOTI_SHIM_SYMBOL_PREFIX=sigcheck_",
            "-include",
            "aoti_shim_rename.h",  # renames torch's declarations as well as ours
            f"-I{torch_package() / 'include'}",
            f"-I{include}",
            str(unit),
        ]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    ours = compile_unit('#include "aoti_shim/shim.h"\n')
    assert ours.returncode == 0, ours.stderr
    # The same unit notices a wrong signature.
    wrong = compile_unit('extern "C" AOTITorchError aoti_torch_get_dim(AtenTensorHandle, int32_t*);\n')
    assert wrong.returncode != 0 and "conflicting declaration" in wrong.stderr


def test_constants_match_libtorch() -> None:
    import torch  # noqa: F401  (loads libtorch_cpu's dependencies)

    theirs = ctypes.CDLL(str(torch_lib() / "libtorch_cpu.so"))
    ours = ctypes.CDLL(str(reference_library()))
    prefix = reference_prefix()
    constant = re.compile(r"aoti_torch_(dtype|device_type|layout|memory_format)_\w+")
    compared = 0
    for name in manifest_names():
        if not constant.fullmatch(name) or name == "aoti_torch_dtype_element_size":
            continue
        if not hasattr(theirs, name):
            continue
        mine_fn = getattr(ours, prefix + name)
        torch_fn = getattr(theirs, name)
        mine_fn.restype = torch_fn.restype = ctypes.c_int32
        assert mine_fn() == torch_fn(), name
        compared += 1
    assert compared >= 35
    mine_size = getattr(ours, prefix + "aoti_torch_dtype_element_size")
    torch_size = theirs.aoti_torch_dtype_element_size
    for fn in (mine_size, torch_size):
        fn.restype = ctypes.c_size_t
        fn.argtypes = [ctypes.c_int32]
    for dtype in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 23, 24, 25, 26, 27, 28, 29):
        assert mine_size(dtype) == torch_size(dtype), dtype


LOAD_WITHOUT_GPU = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
prefix = sys.argv[2]
def fn(name, *argtypes):
    f = getattr(lib, prefix + name)
    f.restype = ctypes.c_int32
    f.argtypes = list(argtypes)
    return f
P = ctypes.c_void_p
sizes = (ctypes.c_int64 * 2)(2, 3)
out = P()
empty = fn("aoti_torch_empty_strided", ctypes.c_int64, P, P, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, P)
numel = ctypes.c_int64()
get_numel = fn("aoti_torch_get_numel", P, P)
delete = fn("aoti_torch_delete_tensor_object", P)
last_error = getattr(lib, prefix + "aoti_shim_last_error")
last_error.restype = ctypes.c_char_p
cpu = empty(2, sizes, None, 6, 0, 0, ctypes.byref(out))
cpu_numel = get_numel(out, ctypes.byref(numel))
delete(out)
out = P()  # the failing calls below must leave it untouched
cuda = empty(2, sizes, None, 6, 1, 0, ctypes.byref(out))
cuda_message = last_error().decode()
negative = empty(2, sizes, None, 6, 1, -1, ctypes.byref(out))
pinned = fn("aoti_torch_empty_strided_pinned", ctypes.c_int64, P, P, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, P)
pinned_code = pinned(2, sizes, None, 6, 0, 0, ctypes.byref(out))
print(cpu, cpu_numel, numel.value, cuda, negative, pinned_code, out.value is None)
print(cuda_message)
"""


def test_loads_and_fails_cleanly_without_gpu() -> None:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no device for CUDA, GPU machine or not
    done = subprocess.run(
        [sys.executable, "-c", LOAD_WITHOUT_GPU, str(reference_library()), reference_prefix()],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, message = done.stdout.splitlines()[:2]
    # CPU tensor ok with 6 elements; CUDA tensor unavailable; negative index rejected first;
    # pinned memory unavailable; the output handle untouched by the failures.
    cuda, negative = str(E_CUDA_UNAVAILABLE), str(E_NEGATIVE_DEVICE_INDEX)
    assert first.split() == ["0", "0", "6", cuda, negative, cuda, "True"]
    assert "CUDA" in message


def test_finds_cudart_from_the_installed_location() -> None:
    from aoti_shim.checks.elf.image import ElfImage

    library = reference_library()
    with ElfImage(library) as image:
        needed = list(image.needed)
    assert "libcudart.so.13" in needed
    assert not [name for name in needed if "torch" in name or "c10" in name]
    # RUNPATH $ORIGIN/../../nvidia/cu13/lib: the nvidia-cuda-runtime wheel beside aoti_shim/.
    wheel_cudart = (library.parent / ".." / ".." / "nvidia" / "cu13" / "lib" / "libcudart.so.13").resolve()
    assert wheel_cudart.is_file()
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    loaded = subprocess.run(
        [sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(library)!r}); print(open('/proc/self/maps').read())"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    paths = {line.split()[-1] for line in loaded.stdout.splitlines() if line.endswith("libcudart.so.13")}
    assert {str(Path(p).resolve()) for p in paths} == {str(wheel_cudart)}


def test_error_codes_are_distinct_and_documented() -> None:
    header = (reference_library().parent.parent / "include" / "aoti_shim" / "shim.h").read_text(encoding="utf-8")
    codes = dict(re.findall(r"#define AOTI_SHIM_(E_\w+|OK) (\d+)", header))
    assert codes["OK"] == "0" and codes["E_FAILURE"] == "1"
    assert len(set(codes.values())) == len(codes) >= 20
    assert codes["E_UNSUPPORTED_DEVICE"] == str(E_UNSUPPORTED_DEVICE)
    assert codes["E_NEGATIVE_DEVICE_INDEX"] == str(E_NEGATIVE_DEVICE_INDEX)
    assert codes["E_CUDA_UNAVAILABLE"] == str(E_CUDA_UNAVAILABLE)


STATIC_USER = r"""
#include "aoti_shim/shim.h"
#include <cstdio>
int main() {
  int64_t sizes[] = {2, 3};
  AtenTensorHandle t = nullptr;
  if (aoti_torch_empty_strided(2, sizes, nullptr, aoti_torch_dtype_float32(), aoti_torch_device_type_cpu(), 0, &t)) {
    std::puts(aoti_shim_last_error());
    return 1;
  }
  int64_t numel = 0;
  int32_t code = aoti_torch_get_numel(t, &numel);
  aoti_torch_delete_tensor_object(t);
  std::printf("%d %lld\n", code, static_cast<long long>(numel));
  return 0;
}
"""


def test_static_archive_links_whole(tmp_path: Path) -> None:
    """The .a linked whole into a program built against the installed header (prefix from config.h)."""
    library = reference_library()
    include = library.parent.parent / "include"
    cudart = (library.parent / ".." / ".." / "nvidia" / "cu13" / "lib" / "libcudart.so.13").resolve()
    source = tmp_path / "user.cpp"
    source.write_text(STATIC_USER, encoding="utf-8")
    program = tmp_path / "user"
    command = [
        os.environ.get("CXX", "c++"),
        "-std=c++17",
        f"-I{include}",
        str(source),
        "-o",
        str(program),
        "-Wl,--whole-archive",
        str(library.parent / "libaoti_shim.a"),
        "-Wl,--no-whole-archive",
        str(cudart),
        f"-Wl,-rpath,{cudart.parent}",
        "-pthread",
    ]
    compiled = subprocess.run(command, capture_output=True, text=True, check=False)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([str(program)], capture_output=True, text=True, timeout=60, check=False)
    assert (ran.returncode, ran.stdout.split()) == (0, ["0", "6"]), ran.stdout + ran.stderr
    # Every shim is in the program, under the prefixed name only.
    nm = subprocess.run(["nm", "--defined-only", str(program)], capture_output=True, text=True, check=False)
    assert nm.returncode == 0, nm.stderr
    defined = {line.split()[-1] for line in nm.stdout.splitlines() if line.strip()}
    assert {reference_prefix() + name for name in manifest_names()} <= defined
    assert not [name for name in defined if name.startswith("aoti_torch_")]
