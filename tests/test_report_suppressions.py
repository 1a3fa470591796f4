"""checks/report/suppressions.py: a suppressions file (or inline [[tool.aoti-shim.suppress]] tables)
waives findings, each with a reason; a file that cannot be read safely, or whose entries
would hide everything, is a usage error (one line, exit 2). How suppressions meet the other
parts (the gate, the formats, finding batches, the rule matrix) is tested with those."""

from __future__ import annotations

import os
import subprocess

import pytest

from aoti_shim.checks import CheckSettings, run_check
from aoti_shim.checks.report.model import BLOCKING, Finding
from aoti_shim.checks.report.suppressions import Suppression, parse
from aoti_shim.errors import AotiShimError, UsageError
from cli_support import cli, one_line_error

# -- applied and reported --------------------------------------------------------------------


def test_suppressions_apply_and_unused_ones_are_reported(checker_libs, tmp_path):
    sup = tmp_path / "sup.toml"
    sup.write_text(
        '[[suppress]]\nrule = "UNPREFIXED_EXPORT"\nsymbol = "aoti_torch_delete_*"\nartifact = "libhalf_*"\n'
        'reason = "kept for an old loader"\n\n'
        '[[suppress]]\nrule = "COLLISION"\nsymbol = "nothing_*"\nreason = "never matches"\n'
    )
    report = run_check(CheckSettings(shims=(str(checker_libs["half_prefixed_shim"]),), suppressions=str(sup)))
    assert report.findings == ()
    assert [s.reason for s in report.suppressed] == ["kept for an old loader"]
    assert len(report.unused_suppressions) == 1 and "nothing_*" in report.unused_suppressions[0]


@pytest.mark.parametrize(
    "content, message",
    [
        ('[[suppress]]\nrule = "COLLISION"\nsymbol = "x"\n', "reason"),
        ('[[suppress]]\nrule = "NOPE"\nreason = "r"\n', "rule"),
        ("not toml [", "invalid TOML"),
    ],
)
def test_bad_suppressions_are_usage_errors(checker_libs, tmp_path, content, message):
    sup = tmp_path / "sup.toml"
    sup.write_text(content)
    with pytest.raises(AotiShimError) as err:
        run_check(CheckSettings(shims=(str(checker_libs["clean_shim"]),), suppressions=str(sup)))
    assert err.value.exit_code == 2 and message in str(err.value)


def test_non_utf8_suppressions_file_is_a_usage_error(checker_libs, tmp_path):
    sup = tmp_path / "sup.toml"
    sup.write_bytes(b'[[suppress]]\nrule = "COLLISION"\nreason = "caf\xe9"\n')
    result = cli("check", "--shim", str(checker_libs["clean_shim"]), "--suppressions", str(sup))
    assert result.returncode == 2 and "not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


# -- 12.11 / 12.12: suppressions files that cannot be read safely or would hide everything --


def _check_with(checker_libs, suppressions: str) -> subprocess.CompletedProcess[str]:
    return cli("check", "--shim", str(checker_libs["clean_shim"]), "--suppressions", suppressions, timeout=30)


def test_a_fifo_as_suppressions_file_does_not_hang(checker_libs, tmp_path):
    fifo = tmp_path / "sup.toml"
    os.mkfifo(fifo)
    assert "regular file" in one_line_error(_check_with(checker_libs, str(fifo)), 2)


def test_dev_zero_as_suppressions_file_is_refused(checker_libs):
    assert "regular file" in one_line_error(_check_with(checker_libs, "/dev/zero"), 2)


def test_a_huge_suppressions_file_is_refused(checker_libs, tmp_path):
    big = tmp_path / "sup.toml"
    big.write_text("# padding\n" * 200_000)
    assert "larger than" in one_line_error(_check_with(checker_libs, str(big)), 2)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[[supress]]\nrule = "COLLISION"\nreason = "x"\n', "unknown table 'supress' (did you mean 'suppress'?)"),
        ('[[suppress]]\nrul = "COLLISION"\nreason = "x"\n', "unknown key 'rul' (did you mean 'rule'?)"),
        ('[[suppress]]\nrule = "*"\nreason = "silence everything"\n', "needs a 'symbol' or an 'artifact' pattern"),
        (
            '[[suppress]]\nrule = "*"\nsymbol = "**"\nreason = "still everything"\n',
            "needs a 'symbol' or an 'artifact' pattern",
        ),
        # Globs other than stars that still match every name (issue 23 §4).
        (
            '[[suppress]]\nrule = "*"\nsymbol = "?*"\nartifact = "*?*"\nreason = "x"\n',
            "needs a 'symbol' or an 'artifact' pattern",
        ),
        ('[[suppress]]\nrule = "*"\nsymbol = "*[!]]*"\nreason = "x"\n', "needs a 'symbol' or an 'artifact' pattern"),
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "invalid TOML"),
    ],
)
def test_suppressions_that_would_hide_findings_are_usage_errors(checker_libs, tmp_path, content, message):
    path = tmp_path / "sup.toml"
    path.write_text(content)
    assert message in one_line_error(_check_with(checker_libs, str(path)), 2)


def test_a_wildcard_rule_with_a_pattern_is_fine(checker_libs, tmp_path):
    path = tmp_path / "sup.toml"
    path.write_text('[[suppress]]\nrule = "*"\nartifact = "libvendored.so"\nreason = "vendored, reviewed"\n')
    done = _check_with(checker_libs, str(path))
    assert done.returncode == 0, done.stderr


# -- the entries, as functions ----------------------------------------------------------------


def _one(rule: str = "COLLISION", symbol: str = "*", artifact: str = "*") -> Suppression:
    return Suppression(rule, symbol, artifact, "why")


def test_an_entry_matches_by_rule_symbol_glob_and_path_or_file_name() -> None:
    found = Finding("COLLISION", BLOCKING, "pkg/lib/libshim.so", "aoti_torch_empty", "m")
    assert _one().matches(found)
    assert _one("*", symbol="aoti_*").matches(found)
    assert not _one("UNPREFIXED_EXPORT").matches(found)
    assert not _one(symbol="aoti_torch_zeros").matches(found)
    # The artifact glob is tried on the whole path, then on the file name alone.
    assert _one(artifact="pkg/*/libshim.so").matches(found)
    assert _one(artifact="libshim.so").matches(found)
    assert not _one(artifact="lib/libshim.so").matches(found)
    assert _one(symbol="aoti_torch_empty", artifact="lib*.so").describe() == (
        "COLLISION aoti_torch_empty in lib*.so (why)"
    )


def test_parse_fills_the_globs_and_strips_the_reason() -> None:
    (entry,) = parse([{"rule": "COLLISION", "reason": "  known, issue 9 \n"}], "f.toml", ["COLLISION"])
    assert entry == Suppression("COLLISION", "*", "*", "known, issue 9")


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("COLLISION", "f.toml: suppression 1: must be a table"),
        ({"rule": "COLLISION", "reason": "r", "symbl": "x"}, "f.toml: suppression 1: unknown key 'symbl' (did you "
         "mean 'symbol'?)"),
        ({"rule": "COLLISON", "reason": "r"}, "f.toml: suppression 1: 'rule' must be one of *, COLLISION, NOT_A_SHIM"),
        ({"rule": "COLLISION", "reason": " "}, "f.toml: suppression 1: a non-empty 'reason' is required"),
        ({"rule": "COLLISION", "reason": "r", "symbol": 3}, "'symbol' and 'artifact' must be strings (globs)"),
        ({"rule": "*", "reason": "r", "symbol": "**"}, "rule = \"*\" needs a 'symbol' or an 'artifact' pattern"),
    ],
)
def test_parse_refuses_an_entry_in_one_line_naming_it(entry: object, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse([entry], "f.toml", ["COLLISION", "NOT_A_SHIM"])
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_wildcard_rule_may_name_a_pattern_that_some_name_escapes() -> None:
    (entry,) = parse([{"rule": "*", "reason": "r", "symbol": "aoti_*"}], "f.toml", [])
    assert entry.rule == "*"
    # The second entry is numbered so.
    with pytest.raises(UsageError, match=r"^f\.toml: suppression 2: "):
        parse([{"rule": "*", "reason": "r", "artifact": "x"}, {"rule": "*", "reason": "r"}], "f.toml", [])
