"""plugin/console.py: the backend's lines, tagged, to the stream pip reads, coloured only
where FORCE_COLOR asks (pip captures the output: no terminal). The lines in a real pip
build: tests/test_plugin_backend.py."""

from __future__ import annotations

import pytest

from aoti_shim.plugin import console


@pytest.fixture(autouse=True)
def _no_color_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def test_info_warn_and_block_go_to_stdout_the_error_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    console.info("checking x.whl")
    console.warn("no shim")
    console.block("table\n  row\n\n")
    console.error("2 blocking finding(s)")
    out, err = capsys.readouterr()
    assert out == "aoti-shim: checking x.whl\naoti-shim: warning: no shim\ntable\n  row\n"
    assert err == "aoti-shim: error: 2 blocking finding(s)\n"


def test_force_color_paints_the_warning_yellow_and_the_error_bold_red(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert console.use_color()
    console.info("plain")
    console.warn("w")
    console.error("e")
    out, err = capsys.readouterr()
    assert out == "aoti-shim: plain\n\033[33maoti-shim: warning: w\033[0m\n"
    assert err == "\033[1m\033[31maoti-shim: error: e\033[0m\n"


def test_no_color_wins_over_force_color(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not console.use_color()
    console.error("e")
    assert capsys.readouterr().err == "aoti-shim: error: e\n"
