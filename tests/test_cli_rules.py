"""One colour rule for the CLI and the backend; no abbreviated options."""

from __future__ import annotations

import io
import os

import pytest

from aoti_shim.color import wants_color
from cli_support import cli, one_line_error


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "choice", "env", "want"),
    [
        (io.StringIO(), "auto", {}, False),
        (_Tty(), "auto", {}, True),
        (_Tty(), "auto", {"NO_COLOR": "1"}, False),
        (io.StringIO(), "auto", {"FORCE_COLOR": "1"}, True),
        (None, "auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (io.StringIO(), "always", {"NO_COLOR": "1"}, True),
        (_Tty(), "never", {"FORCE_COLOR": "1"}, False),
    ],
)
def test_one_colour_rule(stream, choice, env, want) -> None:
    assert wants_color(stream, choice, env) is want


def test_check_and_backend_agree_on_force_color(checker_libs, monkeypatch: pytest.MonkeyPatch) -> None:
    from aoti_shim.plugin import console

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    forced = cli("check", "--shim", str(checker_libs["unprefixed_shim"]), env={**env, "FORCE_COLOR": "1"})
    plain = cli("check", "--shim", str(checker_libs["unprefixed_shim"]), env=env)
    assert "\x1b[" in forced.stdout and "\x1b[" not in plain.stdout
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert console.use_color()


@pytest.mark.parametrize(
    ("args", "unknown"),
    [
        (["check", "--shim", "x.so", "--pre", "myrt_"], "--pre"),
        (["check", "--shim", "x.so", "--supp", "s.toml"], "--supp"),
        (["rewrite-imports", "x.so", "--pref", "myrt_"], "--pref"),
    ],
)
def test_abbreviated_options_are_refused(args: list[str], unknown: str) -> None:
    line = one_line_error(cli(*args), 2)
    assert f"unrecognized arguments: {unknown}" in line or "the following arguments are required" in line
