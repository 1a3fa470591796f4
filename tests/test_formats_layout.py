"""checks/formats/layout.py: wrapping to a width at spaces only, lists wrapped between
items, and the width a report takes from the terminal or $COLUMNS."""

from __future__ import annotations

import pytest

from aoti_shim.checks.formats.layout import DEFAULT_WIDTH, MIN_WIDTH, plural, terminal_width, wrap, wrap_list


def test_wrap_breaks_at_spaces_and_indents_the_rest_two_more() -> None:
    lines = wrap("one two three four five six", 12, indent="  ")
    assert lines == ["  one two", "    three", "    four", "    five six"]
    assert all(len(line) <= 12 for line in lines)


def test_wrap_never_breaks_a_path_nor_at_its_hyphens() -> None:
    path = "/opt/very-long-folder-name/lib/libaoti-shim-runtime.so"
    lines = wrap(f"see {path} now", 20)
    # A line of its own, longer than the width, whole.
    assert lines == ["see", f"  {path}", "  now"]


def test_wrap_of_nothing_is_one_line_of_the_indent_without_its_trailing_space() -> None:
    assert wrap("", 40, indent="  x ") == ["  x"]


def test_wrap_takes_a_hanging_indent_when_given() -> None:
    assert wrap("aa bb cc", 5, indent="", hanging=">") == ["aa bb", ">cc"]


def test_a_list_whose_head_is_longer_than_the_width_wraps_its_head_too() -> None:
    # A COLLISION between two runtimes' libraries heads its list of names with both libraries
    # and a distribution: 84 characters, one unbroken line at COLUMNS=80 before.
    head = "rt_b/librtb_shims.so and rt_a/librta_shims.so (rt-a 1.0) both export 2 shim names:"
    items = ["'rta_aoti_torch_empty_strided'", "'rta_aoti_torch_get_data_ptr'"]
    for width in (60, 80):
        lines = wrap_list(head, items, width, "  ", "    ")
        assert all(len(line) <= width for line in lines), (width, lines)
        assert all(line.startswith("    ") for line in lines[1:]) and lines[0].startswith("  rt_b/")
        assert " ".join(line.strip() for line in lines) == f"{head} {', '.join(items)}"
    assert wrap_list("x:", ["a", "b"], 80, "  ", "    ") == ["  x: a, b"]


def test_wrap_list_breaks_between_items_and_keeps_each_comma_on_its_line() -> None:
    lines = wrap_list("libs:", ["lib/a.so (20)", "lib/b.so (3)", "lib/c.so (1)"], 30, "", "  ")
    assert lines == ["libs: lib/a.so (20),", "  lib/b.so (3), lib/c.so (1)"]
    # An item never splits, even one longer than the width.
    long = "x" * 40
    assert wrap_list("h:", ["a", long], 20, "", "  ") == ["h: a,", "  " + long]


def test_wrap_list_without_a_head_starts_on_the_indent() -> None:
    assert wrap_list("", ["a", "b"], 80, "    ", "      ") == ["    a, b"]
    assert wrap_list("", [], 80, "  ", "    ") == ["  "]


def test_wrap_list_takes_another_separator() -> None:
    assert wrap_list("h:", ["a", "b", "c"], 7, "", "", sep=" | ") == ["h: a |", "b | c"]


@pytest.mark.parametrize(("n", "one", "many", "said"), [
    (1, "file", None, "1 file"),
    (0, "file", None, "0 files"),
    (2, "library", "libraries", "2 libraries"),
    (1, "library", "libraries", "1 library"),
])
def test_plural(n: int, one: str, many: str | None, said: str) -> None:
    assert plural(n, one, many) == said


@pytest.mark.parametrize(("columns", "width"), [("120", 120), ("30", MIN_WIDTH), ("60", 60)])
def test_terminal_width_follows_columns_but_never_below_the_minimum(
    monkeypatch: pytest.MonkeyPatch, columns: str, width: int
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert terminal_width() == width


def test_terminal_width_without_a_terminal_or_columns_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest's output is captured: stdout is no terminal here, so only $COLUMNS could say otherwise.
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width() == max(MIN_WIDTH, DEFAULT_WIDTH)
