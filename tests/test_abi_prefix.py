"""The prefix rules (checks/abi/prefix.py) as functions: what each accepts, refuses and says.

Their messages are what a user reads on a failed build, so they are compared whole.
"""

from __future__ import annotations

import pytest

from aoti_shim.checks.abi import prefix
from aoti_shim.errors import AotiShimError, UsageError


@pytest.mark.parametrize("good", ["myrt_", "m", "_", "A9_", "x" * 200])
def test_validate_returns_a_good_prefix(good: str) -> None:
    assert prefix.validate(good) == good
    assert prefix.validate(good, "CMAKE_ARGS") == good


@pytest.mark.parametrize(
    ("bad", "source", "message"),
    [
        ("9bad", None, "--prefix '9bad' is not a C identifier prefix (letters, digits, '_'; not empty)"),
        ("", None, "--prefix '' is not a C identifier prefix (letters, digits, '_'; not empty)"),
        (
            "my-rt_",
            "CMAKE_ARGS",
            "prefix 'my-rt_' from CMAKE_ARGS is not a C identifier prefix (letters, digits, '_'; not empty)",
        ),
        ("myrt_\n", None, "--prefix 'myrt_\\n' is not a C identifier prefix (letters, digits, '_'; not empty)"),
        ("aoti_torch_x_", None, "--prefix 'aoti_torch_x_' starts with 'aoti_torch_', which libtorch uses itself"),
        (
            "aoti_torch_",
            "-C aoti-shim.prefix",
            "prefix 'aoti_torch_' from -C aoti-shim.prefix starts with 'aoti_torch_', which libtorch uses itself",
        ),
    ],
)
def test_validate_refuses_with_one_line_naming_the_source(bad: str, source: str | None, message: str) -> None:
    with pytest.raises(UsageError) as err:
        prefix.validate(bad, source)
    assert str(err.value) == message
    assert isinstance(err.value, AotiShimError) and err.value.exit_code == 2


def test_validate_refuses_what_is_not_a_string() -> None:
    with pytest.raises(UsageError, match="is not a C identifier prefix"):
        prefix.validate(None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("aoti_torch_empty", ""),
        ("myrt_aoti_torch_empty", "myrt_"),
        ("a_aoti_torch_b_aoti_torch_c", "a_"),  # the first marker
        ("_aoti_torch_x", "_"),
        ("9x_aoti_torch_y", None),  # no identifier in front
        ("my-rt_aoti_torch_y", None),
        ("memcpy", None),
        ("xaoti_torch", None),
    ],
)
def test_prefix_of(name: str, expected: str | None) -> None:
    assert prefix.prefix_of(name) == expected


def test_shim_names_and_libtorchs_spelling() -> None:
    assert prefix.SHIM_MARK == "aoti_torch_"
    assert prefix.is_shim_name("aoti_torch_x") and prefix.is_shim_name("myrt_aoti_torch_x")
    assert prefix.is_shim_name("_ZN4myrt11aoti_torch_xEv")  # anywhere in the name
    assert not prefix.is_shim_name("aoti_torchx") and not prefix.is_shim_name("memcpy")
    assert prefix.is_unprefixed("aoti_torch_x") and not prefix.is_unprefixed("myrt_aoti_torch_x")


def test_shim_names_picks_what_is_shim_name_picks_in_order() -> None:
    names = [
        "memcpy", "myrt_aoti_torch_x", "aoti_torch_y", "_ZN5torch3jitE", "torch_from_blob", "xtorch_from_blob",
        "aoti_record_function_start", "aoti_torchx", "_Z20myrt_aoti_torch_xv", "myrt_torch_from_blob", "9_aoti_torch_q",
    ]
    assert prefix.shim_names(names) == [n for n in names if prefix.is_shim_name(n)]
    assert prefix.shim_names(names)[:2] == ["myrt_aoti_torch_x", "aoti_torch_y"]


def test_carried_counts_each_non_empty_prefix() -> None:
    names = ["a_aoti_torch_x", "a_aoti_torch_y", "b_aoti_torch_x", "aoti_torch_z", "memcpy", "9_aoti_torch_q"]
    assert prefix.carried(names) == {"a_": 2, "b_": 1}
    assert prefix.carried([]) == {}


def test_describe_lists_sorted_quoted_prefixes() -> None:
    assert prefix.describe({"b_", "a_"}) == "'a_', 'b_'"
    assert prefix.describe(["only_"]) == "'only_'"
    assert prefix.describe([]) == ""


def test_infer() -> None:
    assert prefix.infer(["memcpy", "aoti_torch_x"]) is None
    assert prefix.infer(["myrt_aoti_torch_x", "myrt_aoti_torch_y", "memcpy"]) == "myrt_"
    with pytest.raises(UsageError) as err:
        prefix.infer(["a_aoti_torch_x", "b_aoti_torch_x", "b_aoti_torch_y"])
    # The commoner prefix first (not the alphabetical order), with its count.
    assert str(err.value) == "the shims use more than one prefix: 'b_' (2), 'a_' (1); pass --prefix"


@pytest.mark.parametrize(
    ("given", "lacks"), [("myrt", True), ("myrt_", False), ("_", False), ("a_b", True), ("", False)]
)
def test_lacks_separator(given: str, lacks: bool) -> None:
    assert prefix.lacks_separator(given) is lacks


def test_separator_warning_names_the_name_it_gives_and_the_fix() -> None:
    assert prefix.separator_warning("myrt_") is None
    assert prefix.separator_warning("myrt") == (
        "--prefix 'myrt' does not end in '_': shim names become myrtaoti_torch_x; did you mean 'myrt_'?"
    )
    assert prefix.separator_warning("myrt", "-C aoti-shim.prefix") == (
        "prefix 'myrt' from -C aoti-shim.prefix does not end in '_': shim names become myrtaoti_torch_x; did you mean "
        "'myrt_'?"
    )
