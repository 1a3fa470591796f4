"""The numbers and promises the docs and help texts repeat, held to the code that makes them.

Before issue 35 a newcomer met 821, 825 and 736 names and "torch 2.11 to 2.14" in four places,
a zero-fallback promise that the CPU does not keep, a README CLI reference that lacked options
--help lists, and a mutation run's time that was a quarter of its modules'. Each claim is read
from its text here and compared with what the code says, so it cannot drift again.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from aoti_shim.cli import COMMANDS, build_parser
from aoti_shim.torch_names import shipped_names

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
REFERENCE = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    """Markdown and help texts wrap lines: compare with whitespace runs as one space."""
    return " ".join(text.split())


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[command]


def _all_help() -> str:
    return _flat(" ".join(_subparser(command).format_help() for command in COMMANDS))


def _releases(listed: str) -> list[str]:
    return [v.strip() for v in re.split(r",|\band\b", listed) if v.strip()]


# --- the rename list: its size and its torch releases ---------------------------------------


def test_the_reference_names_the_rename_lists_releases_and_size() -> None:
    shipped = shipped_names()
    found = re.search(r"the shim headers of torch ([^()]+?) declare, for every device \((\d+) names", _flat(REFERENCE))
    assert found is not None, "docs/reference.md no longer states the rename list's releases and size"
    assert _releases(found.group(1)) == list(shipped.versions)
    assert int(found.group(2)) == len(shipped.names)


def test_every_torch_span_the_texts_give_is_the_lists() -> None:
    # "torch 2.11 to 2.15" wherever the docs or a --help speak of the shim names' releases.
    span = shipped_names().span
    texts = {"README.md": _flat(README), "docs/reference.md": _flat(REFERENCE), "--help": _all_help()}
    spans = {(where, s) for where, text in texts.items() for s in re.findall(r"torch (2\.\d+ to 2\.\d+)", text)}
    assert spans, "no text states the releases any more: this test reads nothing"
    assert {s for _, s in spans} == {span}, sorted(spans)


def test_rename_header_help_states_the_lists_span_and_size() -> None:
    shipped = shipped_names()
    text = _flat(_subparser("rename-header").format_help())
    assert f"torch {shipped.span}'s shim headers declare ({len(shipped.names)} names" in text


def test_every_count_of_names_is_the_code_s() -> None:
    # The only name counts the texts may give: the shipped list's and the reference shims' manifest's.
    manifest = REPO / "shims" / "manifest.txt"
    own = len([line for line in manifest.read_text().splitlines() if line.strip() and not line.startswith("#")])
    allowed = {len(shipped_names().names), own}
    for where, text in {
        "README.md": _flat(README),
        "docs/reference.md": _flat(REFERENCE),
        "--help": _all_help(),
    }.items():
        for count in re.findall(r"\b(\d{3,}) names\b", text):
            assert int(count) in allowed, f"{where}: '{count} names' is neither {sorted(allowed)}"
    assert f"the {own} names in [`shims/manifest.txt`]" in _flat(REFERENCE)


# --- the zero-fallback promise: where it holds --------------------------------------------


def test_the_zero_fallback_promise_says_where_it_holds() -> None:
    from aoti_shim.smoke.compile import ZERO_FALLBACK_LEFT, zero_fallback_scope

    scope = zero_fallback_scope()
    assert ZERO_FALLBACK_LEFT["cpu"] and all(op in scope for op in ZERO_FALLBACK_LEFT["cpu"])
    for where, text in {"smoke --help": _flat(_subparser("smoke").format_help()), "README.md": _flat(README),
                        "docs/reference.md": _flat(REFERENCE)}.items():
        assert scope in text, f"{where} does not say where the zero-fallback promise holds"
    # No text promises "no fallback op" without saying where.
    for where, text in {"README.md": _flat(README), "docs/reference.md": _flat(REFERENCE)}.items():
        unqualified = [m.start() for m in re.finditer(r"imports no fallback op\b(?! on)", text)]
        assert unqualified == [], where


# --- the README's CLI reference against --help ---------------------------------------------


def _readme_sections() -> dict[str, str]:
    return dict(re.findall(r"^### `aoti-shim ([a-z-]+)`\n(.*?)(?=^### |^## )", README, re.S | re.M))


def _options_in(text: str) -> set[str]:
    spans = " ".join(re.findall(r"`([^`]*)`", text))
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", spans))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_readme_names_every_option_help_lists(command: str) -> None:
    section = _readme_sections().get(command)
    assert section is not None, f"README has no '### `aoti-shim {command}`' section"
    named = _options_in(section)
    actions = [
        a.option_strings for a in _subparser(command)._actions if a.option_strings and "-h" not in a.option_strings
    ]
    missing = [strings for strings in actions if not set(strings) & named]
    assert missing == [], f"README's {command} section lacks {missing}"
    # Each bullet's lead (before its first ': ') names only options the command has.
    known = {s for strings in actions for s in strings}
    for bullet in re.findall(r"^- (.*)$", section, re.M):
        lead = bullet.split(": ", 1)[0]
        assert _options_in(lead) <= known, f"README's {command} bullet names an unknown option: {bullet}"
    assert "as for `" not in section, "an option described by pointing at another command"


# --- the mutation run: what the README says it is -------------------------------------------


def test_the_readme_says_how_many_modules_a_default_mutation_run_takes() -> None:
    script = (REPO / "docs" / "mutation.sh").read_text()
    block = re.search(r"MODULES=\((checks/.*?)\)\n", script, re.S)
    assert block is not None
    modules = block.group(1).split()
    assert all(m.endswith(".py") for m in modules)
    text = _flat(README)
    assert f"({len(modules)} modules)" in text and f"The default run is all {len(modules)} modules" in text
    assert "one worker" in text and "about 4 minutes with two workers" not in text


# --- the set-up commands: how long, and how to see progress ---------------------------------


def test_the_setup_section_says_how_long_each_command_takes_and_how_to_see_progress() -> None:
    setup = _flat(README.split("## Set-up: the two commands", 1)[1].split("\n## ", 1)[0])
    assert re.search(r'`pip install "\.\[test\]"` took \d+m\d+s', setup)
    assert re.search(r"`pytest` \d+ s \(a fresh clone's `\.ci/run`, \d{4}-\d\d-\d\d: \d+m\d+s in all", setup)
    assert "minutes per model on 2 cores" in setup  # the smoke's compiles
    assert '`pip install -v ".[torch]"` shows each stage' in setup
    # The first command's time too (issue 35 §4: it was not stated), measured whole with `time`.
    assert re.search(r"the first command took \d+m\d+s in all", setup), setup


def test_the_setup_sections_smoke_step_count_is_the_smokes() -> None:
    """The README's "18 numbered steps" and its sample line are what the default smoke plans."""
    from aoti_shim.smoke.command import planned_steps
    from aoti_shim.smoke.models import BUNDLED
    from aoti_shim.smoke.pipeline import SmokeSettings

    setup = _flat(README.split("## Set-up: the two commands", 1)[1].split("\n## ", 1)[0])
    planned = planned_steps(SmokeSettings("cpu", tuple(BUNDLED), "p_", Path("s.so"), Path("c"), Path("w")))
    stated = re.search(r"whose (\d+) numbered steps", setup)
    assert stated is not None and int(stated.group(1)) == planned, setup
    sample = re.search(r"`smoke \[\d+/(\d+) \d+:\d\d\] compile \w+ \(cpu, binary route\)`", setup)
    assert sample is not None and int(sample.group(1)) == planned, setup
    builds = re.search(r"the (\w+) `aoti_shim_add_model` builds", setup)
    assert builds is not None and builds.group(1) == {3: "three"}.get(len(BUNDLED)), setup


def test_scans_help_says_what_the_readme_says_of_output_and_verbose() -> None:
    # README: -o is "never inside a scanned environment"; -v lists "every distribution, library,
    # site folder and non-library ELF file". --help said neither (no library, no refusal).
    text = _flat(_subparser("scan").format_help())
    assert "never inside a scanned environment" in text
    assert "every distribution, library, site folder and non-library ELF file" in text


def test_the_reference_states_the_scan_texts_narrowest_width() -> None:
    # COLUMNS=20 wraps scan's text to 60 columns (layout.MIN_WIDTH): the reference said only $COLUMNS.
    from aoti_shim.checks.formats.layout import DEFAULT_WIDTH, MIN_WIDTH

    assert f"(`$COLUMNS`, never narrower than {MIN_WIDTH}; {DEFAULT_WIDTH} into a file or pipe)" in _flat(REFERENCE)
