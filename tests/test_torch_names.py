"""src/aoti_shim/torch_names.py: the shim-ABI functions torch's headers declare, and the
shipped list of them, generated from wheels and include folders."""

from __future__ import annotations

from pathlib import Path

from aoti_shim.torch_names import declared_functions
from torch_support import fake_torch_include


def test_declared_functions_reads_the_profiler_marks_of_shim_h() -> None:
    source = "AOTI_TORCH_EXPORT AOTITorchError aoti_record_function_start(const char* name, int64_t* handle);\n"
    source += "AOTI_TORCH_EXPORT AOTITorchError aoti_record_function_end(int64_t handle);\n"
    assert declared_functions(source) == {"aoti_record_function_start", "aoti_record_function_end"}


def test_declarations_are_found_and_comments_and_types_are_not() -> None:
    source = """
    // aoti_torch_in_a_comment(int);
    /* aoti_torch_in_a_block(
       comment) */
    AOTI_TORCH_EXPORT AOTITorchError
    aoti_torch_split_declaration (AtenTensorHandle t);
    typedef void (*aoti_torch_callback_t)(void*);
    """
    assert declared_functions(source) == {"aoti_torch_split_declaration"}


def test_the_union_holds_what_the_installed_torch_declares(torch_lib: Path) -> None:
    from aoti_shim.torch_location import locate
    from aoti_shim.torch_names import names_in_include, shipped_names

    found = locate()
    assert found is not None, f"no headers found for the installed torch ({torch_lib.parent})"
    assert names_in_include(found.include) <= shipped_names().names


def test_the_name_list_is_generated_from_wheels_and_include_folders(tmp_path: Path) -> None:
    """python -m aoti_shim.torch_names reads a wheel's headers from the archive (here a small
    stand-in wheel: the tests download nothing) and include folders, and records each release."""
    import zipfile

    from aoti_shim.torch_names import main as generate
    from aoti_shim.torch_names import shipped_names

    wheel = tmp_path / "torch-9.1.0-cp312-none-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        base = "torch/include/torch/csrc/inductor/aoti_torch"
        archive.writestr(f"{base}/c/shim.h", "AOTITorchError aoti_torch_a(int);\n// aoti_torch_commented(int);\n")
        archive.writestr(f"{base}/generated/c_shim_cuda.h", "AOTITorchError aoti_torch_cuda_b(int);\n")
        archive.writestr(f"{base}/c/macros.h", "AOTITorchError aoti_torch_not_a_shim_header(int);\n")
    include = fake_torch_include(tmp_path / "site" / "torch" / "include", "AOTITorchError aoti_torch_c(void);\n")
    (tmp_path / "site" / "torch" / "version.py").write_text("__version__ = '9.2.0+cpu'\n")
    out = tmp_path / "names.txt"
    assert generate([str(wheel), str(include), "-o", str(out)]) == 0
    listed = shipped_names(out)
    assert listed.versions == ("9.1.0", "9.2.0+cpu")
    assert listed.names == {"aoti_torch_a", "aoti_torch_cuda_b", "aoti_torch_c"}
