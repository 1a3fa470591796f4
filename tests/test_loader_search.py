"""checks/loader/search.py as functions: dynamic string tokens, the loader's own facts read
from its help and trace, driver library names, the folder split of LD_LIBRARY_PATH. Where
a DT_NEEDED entry leads, asked of ld.so itself, is tests/test_check_search.py's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aoti_shim.checks.loader import search


def test_tokens_expand_as_the_loader_expands_them() -> None:
    paths = search.SearchPaths(lib="lib64", platform="haswell")
    assert search.expand("$ORIGIN/a:${ORIGIN}/b", "/o", paths) == "/o/a:/o/b"
    assert search.expand("/x/$LIB/$PLATFORM/${LIB}_${PLATFORM}", "/o", paths) == "/x/lib64/haswell/lib64_haswell"
    assert (
        search.expand("/x/$ORIGIN_deps/$LIBX/$ORIGIN1/${ORIGIN", "/o", paths)
        == "/x/$ORIGIN_deps/$LIBX/$ORIGIN1/${ORIGIN"
    )
    assert search.expand("/x/$$ORIGIN", "/o", paths) == "/x/$/o"
    # A token whose value is unknown drops the folder, as the loader drops it.
    assert search.expand("$ORIGIN/a", None, paths) is None
    assert search.expand("/a/$PLATFORM", "/o", search.SearchPaths()) is None


def test_the_loader_facts_are_read_from_its_help_and_trace() -> None:
    helped = (
        "Subdirectories of glibc-hwcaps directories, in priority order:\n  x86-64-v4\n  x86-64-v3 (supported, "
        "searched)\n"
        "  x86-64-v2 (supported, searched)\n\nLegacy HWCAP subdirectories under library search path directories:\n"
        "  haswell (AT_PLATFORM; supported, searched)\n  tls (supported, searched)\n  avx512_1\n  x86_64 (supported, "
        "searched)\n"
    )
    assert search.parse_loader_help(helped) == ("haswell", ("x86-64-v3", "x86-64-v2"))
    m = "/nonexistent-aoti-shim-search"
    trace = f"  1:\t search path={m}/glibc-hwcaps/x86-64-v2:{m}/tls:{m}/tls:{m}\t\t(LD_LIBRARY_PATH)\n"
    assert search.parse_search_trace(trace) == ("glibc-hwcaps/x86-64-v2", "tls", "")



@pytest.mark.parametrize(("text", "token", "found"), [
    ("$ORIGIN/lib", "ORIGIN", True),
    ("${ORIGIN}/lib", "ORIGIN", True),
    ("${ORIGIN}x", "ORIGIN", True),  # the brace ends the token
    ("$ORIGIN_deps", "ORIGIN", False),  # a letter, digit or underscore continues the word
    ("$ORIGIN1", "ORIGIN", False),
    ("/a/$LIB:/b", "LIB", True),
    ("/a/$LIB:/b", "ORIGIN", False),
    ("/a/$LIBX", "LIB", False),
    ("${PLATFORM", "PLATFORM", False),  # no closing brace
    ("/x/$$PLATFORM", "PLATFORM", True),
])
def test_a_token_is_found_only_whole(text: str, token: str, found: bool) -> None:
    assert search.has_token(text, token) is found


@pytest.mark.parametrize(("name", "driver"), [
    ("libcuda.so.1", True),
    ("/usr/lib/x86_64-linux-gnu/libcuda.so", True),
    ("libnvidia-ml.so.1", True),
    ("libnvidia_foo.so", True),
    ("libcudart.so.12", False),  # the runtime ships in wheels; the driver never does
    ("libcuda.so.1.bak", False),
    ("libcudnn.so.9", False),
])
def test_driver_libraries_are_the_drivers_own_names(name: str, driver: bool) -> None:
    assert search.is_driver_library(name) is driver


def test_ld_library_path_splits_at_colons_and_semicolons_an_empty_entry_the_working_folder() -> None:
    assert search._split_env("") == []
    assert search._split_env("/a:/b;/c") == ["/a", "/b", "/c"]
    assert search._split_env(":/a::") == [".", "/a", ".", "."]


def test_a_relative_path_is_joined_to_the_working_folder_and_never_normalised(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert search.absolute("/abs/../x.so") == "/abs/../x.so"
    assert search.absolute("link/../deps/x.so") == os.path.join(os.getcwd(), "link/../deps/x.so")


def test_a_trace_without_the_library_path_line_says_nothing() -> None:
    m = "/nonexistent-aoti-shim-search"
    assert search.parse_search_trace("") is None
    # A search path of another origin (a RUNPATH) is not the LD_LIBRARY_PATH line asked for.
    assert search.parse_search_trace(f"  1:\t search path={m}/tls:{m}\t\t(RUNPATH from file x)\n") is None
    # Folders other than the marker's are left out.
    assert search.parse_search_trace(f" search path=/usr/lib:{m}/x86_64:{m}x\t\t(LD_LIBRARY_PATH)\n") == ("x86_64",)


def test_a_help_without_hwcaps_has_no_platform_and_no_levels() -> None:
    assert search.parse_loader_help("Usage: ld.so [OPTION]... EXECUTABLE-FILE\n  --list\n") == ("", ())
    # A subfolder not searched is not a level.
    helped = "Subdirectories of glibc-hwcaps directories, in priority order:\n  x86-64-v4\n"
    assert search.parse_loader_help(helped) == ("", ())


def test_a_library_found_nowhere_depended_on_every_place_of_this_machine_it_looked(tmp_path: Path) -> None:
    # Before review-fixes a MISSING answer named no fact: "found nowhere" read as no machine's.
    paths = search.SearchPaths(
        env=(str(tmp_path / "env"),), system=(str(tmp_path),), subfolders=("glibc-hwcaps/x86-64-v3", "")
    )
    finder = search.Search(paths)
    missing = finder.find("libnone.so", search.Needer(str(tmp_path)))
    assert missing.how == search.MISSING
    assert missing.facts == {search.HWCAPS_FACT, search.ENV_FACT, search.CACHE_FACT, search.SYSTEM_FACT}
    # -z nodefaultlib: neither the cache nor the system folders were read; nor any folder for a path.
    nodeflib = finder.find("libnone.so", search.Needer(str(tmp_path), nodeflib=True))
    assert nodeflib.facts == {search.HWCAPS_FACT, search.ENV_FACT}
    assert finder.find(str(tmp_path / "libnone.so"), search.Needer(str(tmp_path))).facts == frozenset()
    bare = search.Search(search.SearchPaths()).find("libnone.so", search.Needer(str(tmp_path)))
    assert bare.facts == {search.CACHE_FACT, search.SYSTEM_FACT}
