"""aoti_shim_check fails the build of a project that forgot the prefix on one target."""

from __future__ import annotations

from pathlib import Path

from cmake_support import FIXTURE_PREFIX, PACKAGES, log

SOURCE = PACKAGES / "cmake_check"


def test_check_passes_when_every_part_is_prefixed(cmake_project, tmp_path: Path) -> None:
    project = cmake_project(SOURCE, {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX})
    built = project.configure_and_build()
    output = log(built)
    assert built.returncode == 0, output
    # The checker ran after the link, against the installed torch, and said so in the log.
    assert f"prefix: {FIXTURE_PREFIX}" in output
    assert "OK: 0 blocking" in output


def test_check_fails_the_build_when_one_target_forgot_the_prefix(cmake_project, tmp_path: Path) -> None:
    project = cmake_project(SOURCE, {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_FORGET": "ON"})
    built = project.configure_and_build()
    output = log(built)
    assert built.returncode != 0, output
    assert "UNPREFIXED_EXPORT  exports 'aoti_torch_device_type_cpu' without the prefix" in output
    # Unprefixed, the name is also libtorch's.
    assert "COLLISION" in output and "libtorch_cpu.so" in output
    # The prefixed part is fine.
    assert "'aoti_torch_dtype_float32'" not in output
    # A second build reruns the check instead of trusting the already linked library.
    again = project.build_all()
    assert again.returncode != 0
    assert "UNPREFIXED_EXPORT" in log(again)


def test_every_against_item_is_checked(cmake_project, tmp_path: Path, checker_libs) -> None:
    # AGAINST torch <lib> becomes two --against options: torch must not be dropped.
    against = f"torch;{checker_libs['clean_shim']}"
    project = cmake_project(
        SOURCE, {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_FORGET": "ON", "FIXTURE_AGAINST": against}
    )
    built = project.configure_and_build()
    output = log(built)
    assert built.returncode != 0, output
    assert "against 1 reference(s)" not in output
    assert "COLLISION" in output and "libtorch_cpu.so" in output


def test_against_a_shipped_snapshot_by_name_checks_against_it(cmake_project, tmp_path: Path) -> None:
    # AGAINST torch-2.14.1+cu130 reaches the checker as the name, which resolves it (no torch needed).
    project = cmake_project(
        SOURCE,
        {"AOTI_SHIM_SYMBOL_PREFIX": FIXTURE_PREFIX, "FIXTURE_FORGET": "ON", "FIXTURE_AGAINST": "torch-2.14.1+cu130"},
    )
    built = project.configure_and_build()
    output = log(built)
    assert built.returncode != 0, output
    assert "COLLISION" in output and "libtorch_cpu.so" in output
    assert "2.14.1+cu130" in output
