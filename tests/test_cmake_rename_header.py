"""One rename header per build tree: a static shim library and the shared library that links
it, each prefixed with NAMES_FROM lists of its own, still agree on every name.

With a header per target (before issue 35), the shared library's sources saw only their own
list and the archive's only theirs: each called the other's names unprefixed, silently.
"""

from __future__ import annotations

from pathlib import Path

from cmake_support import log

CMAKE = """cmake_minimum_required(VERSION 3.21)
project(two_lists LANGUAGES CXX)
find_package(AotiShim CONFIG REQUIRED)
add_library(rt_core STATIC core.cpp)
set_target_properties(rt_core PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_include_directories(rt_core PUBLIC include_core include_ops)
aoti_shim_prefix(rt_core PREFIX rt_ FORCE_INCLUDE NAMES_FROM include_core)
add_library(rt_shims SHARED ops.cpp)
target_link_libraries(rt_shims PRIVATE rt_core)
aoti_shim_prefix(rt_shims PREFIX rt_ FORCE_INCLUDE NAMES_FROM include_ops)
aoti_shim_link_whole(rt_shims rt_core)
"""

FILES = {
    "include_core/core.h": 'extern "C" int aoti_torch_rt_core_count(void);\n',
    "include_ops/ops.h": 'extern "C" int aoti_torch_rt_ops_count(void);\n',
    # The archive calls a name only the shared library's list declares, and the other way round.
    "core.cpp": '#include "core.h"\n#include "ops.h"\n'
    'extern "C" __attribute__((visibility("default"))) int aoti_torch_rt_core_count(void) { return 1; }\n'
    'extern "C" __attribute__((visibility("default"))) int rt_core_calls_ops(void) { return '
    'aoti_torch_rt_ops_count(); }\n',
    "ops.cpp": '#include "core.h"\n#include "ops.h"\n'
    'extern "C" __attribute__((visibility("default"))) int aoti_torch_rt_ops_count(void) { return '
    'aoti_torch_rt_core_count() + 1; }\n',
}


def _project(root: Path) -> Path:
    for name, text in {"CMakeLists.txt": CMAKE, **FILES}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_static_and_a_shared_library_with_two_lists_share_one_header(cmake_project, tmp_path: Path) -> None:
    from aoti_shim.checks.elf.image import ElfImage

    project = cmake_project(_project(tmp_path / "src"))
    built = project.configure_and_build()
    assert built.returncode == 0, log(built)
    with ElfImage(project.build / "librt_shims.so") as image:
        exports, imports = set(image.exports()), set(image.imports())
    assert {"rt_aoti_torch_rt_core_count", "rt_aoti_torch_rt_ops_count"} <= exports
    # Every call across the two lists was renamed: nothing unprefixed is exported or left undefined.
    assert [n for n in exports | imports if n.startswith("aoti_torch_")] == []
    headers = sorted(p.relative_to(project.build).as_posix() for p in project.build.rglob("aoti_shim_rename.h"))
    assert headers == ["aoti_shim_rename/aoti_shim_rename.h"]


def test_a_reconfigure_leaves_the_header_untouched(cmake_project, tmp_path: Path) -> None:
    # Written once, at the end of the configure: a second configure must not rebuild every source.
    project = cmake_project(_project(tmp_path / "src"))
    assert project.configure().returncode == 0
    header = project.build / "aoti_shim_rename" / "aoti_shim_rename.h"
    before = header.stat().st_mtime_ns
    assert "aoti_torch_rt_core_count" in header.read_text() and "aoti_torch_rt_ops_count" in header.read_text()
    again = project.configure()
    assert again.returncode == 0, log(again)
    assert header.stat().st_mtime_ns == before
