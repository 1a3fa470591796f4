"""plugin/shim_options.py: the `cmake.define.*` entries that force-include, names-from,
exports and export-names become, and the settings it refuses before CMake runs. What CMake
does with them is tests/test_cmake_model.py's and the pip builds'."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.errors import UsageError
from aoti_shim.plugin.settings import GateSettings
from aoti_shim.plugin.shim_options import (
    EXPORT_NAMES_VAR,
    EXPORTS_VAR,
    FORCE_INCLUDE_VAR,
    NAMES_FROM_VAR,
    cmake_defines,
)


def test_settings_left_at_their_defaults_pass_nothing(tmp_path: Path) -> None:
    # A project without them configures as it did before the settings existed.
    assert cmake_defines(GateSettings(), tmp_path) == {}


def test_each_setting_given_becomes_its_cache_variable(tmp_path: Path) -> None:
    (tmp_path / "names").mkdir()
    (tmp_path / "more").mkdir()
    gate = GateSettings(
        force_include=True, names_from=("names", "more"), exports="shims", export_names=("my_*", "other_fn")
    )
    assert cmake_defines(gate, tmp_path) == {
        f"cmake.define.{FORCE_INCLUDE_VAR}": "ON",
        f"cmake.define.{NAMES_FROM_VAR}": f"{(tmp_path / 'names').resolve()};{(tmp_path / 'more').resolve()}",
        f"cmake.define.{EXPORTS_VAR}": "shims",
        f"cmake.define.{EXPORT_NAMES_VAR}": "my_*;other_fn",
    }


def test_names_from_is_made_absolute_against_the_project(tmp_path: Path) -> None:
    # CMake would resolve a relative folder against each CMakeLists.txt's own folder instead.
    (tmp_path / "a" / "b").mkdir(parents=True)
    got = cmake_defines(GateSettings(names_from=("a/../a/b",)), tmp_path / "a" / "..")
    assert got == {f"cmake.define.{NAMES_FROM_VAR}": str((tmp_path / "a" / "b").resolve())}


@pytest.mark.parametrize(
    ("gate", "said"),
    [
        (GateSettings(cuda_libraries=("cublas",)), "cuda-libraries is given but cuda is false: set cuda = true"),
        (GateSettings(export_names=("f",)), 'export-names is given but exports is "all": set exports = "shims"'),
        (GateSettings(exports="shims", export_names=("a;b",)), "export-names 'a;b' is not a symbol name"),
        (GateSettings(exports="shims", export_names=("a b",)), "export-names 'a b' is not a symbol name"),
        (GateSettings(names_from=("x;y",)), "names-from 'x;y': a ';' in a path is a list separator to CMake"),
        (GateSettings(names_from=("absent",)), "names-from 'absent': "),
    ],
)
def test_settings_cmake_would_misread_are_refused_in_one_line(gate: GateSettings, said: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        cmake_defines(gate, tmp_path)
    message = str(caught.value)
    assert said in message and "\n" not in message, message
    assert message.startswith("[tool.aoti-shim] ")


def test_a_file_is_no_folder_to_take_names_from(tmp_path: Path) -> None:
    (tmp_path / "names.h").write_text("")
    with pytest.raises(UsageError, match=r"names-from 'names.h': .*names.h is not a folder"):
        cmake_defines(GateSettings(names_from=("names.h",)), tmp_path)
