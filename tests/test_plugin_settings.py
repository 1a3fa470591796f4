"""The backend's settings: declared once, derived everywhere, and safe with any input.

The known keys, -C names, precedence, unknown-key errors and the settings table of docs/reference.md all
come from the one declaration (plugin/settings.py). Hypothesis throws arbitrary
``[tool.aoti-shim]`` tables, ``-C`` settings and pyproject bytes at the backend: each
ends in settings or in one AotiShimError line with a distinct exit, never a traceback.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from aoti_shim.errors import EXIT_USAGE, AotiShimError
from aoti_shim.plugin import config_settings, settings

REPO = Path(__file__).resolve().parents[1]
ENV_FREE = ("AOTI_SHIM_PREFIX", "AOTI_SHIM_TORCH", "CMAKE_ARGS", "SKBUILD_CMAKE_DEFINE", "SKBUILD_CMAKE_ARGS")


@pytest.fixture(autouse=True)
def _clean_build_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_FREE:
        monkeypatch.delenv(name, raising=False)


def _reference_table() -> str:
    text = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    start = text.index("<!-- settings table:")
    start = text.index("\n", start) + 1
    return text[start : text.index("<!-- end of settings table -->", start)]


def test_reference_settings_table_is_the_declaration() -> None:
    # Regenerate with: python -c "from aoti_shim.plugin.settings import markdown_table; print(markdown_table())"
    assert _reference_table() == settings.markdown_table()


def test_every_field_is_a_documented_setting() -> None:
    for field in dataclasses.fields(settings.GateSettings):
        assert field.metadata.get("doc"), f"{field.name} has no docstring"
        assert isinstance(field.metadata.get("kind"), settings.Kind)
    assert settings.TABLE_KEYS == {f.name.replace("_", "-") for f in dataclasses.fields(settings.GateSettings)}
    assert settings.CONFIG_KEYS == {
        "aoti-shim.prefix", "aoti-shim.against", "aoti-shim.fail-on", "aoti-shim.report", "aoti-shim.cuda",
        "aoti-shim.force-include", "aoti-shim.exports",
    }


def test_a_new_field_is_known_everywhere() -> None:
    # What a new setting costs: one field. Its key, -C name, precedence and reference row follow.
    @dataclasses.dataclass(frozen=True)
    class Extended:
        cuda: bool = settings.setting(False, kind=settings.BOOL, config=True, doc="build the CUDA shims")

    field = dataclasses.fields(Extended)[0]
    assert settings.BOOL.from_config("yes", "-C aoti-shim.cuda") is True
    assert field.metadata["config"] and field.metadata["doc"] == "build the CUDA shims"
    with pytest.raises(AotiShimError, match="^-C aoti-shim.cuda must be true or false, not 'maybe'$"):
        settings.BOOL.from_config("maybe", "-C aoti-shim.cuda")


@pytest.mark.parametrize(
    ("table", "given", "environ", "name", "value", "source"),
    [
        ({}, {}, {}, "fail_on", "blocking", "default"),
        ({"fail-on": "any"}, {}, {}, "fail_on", "any", "[tool.aoti-shim] fail-on"),
        ({"fail-on": "any"}, {"aoti-shim.fail-on": "never"}, {}, "fail_on", "never", "-C aoti-shim.fail-on"),
        (
            {"prefix": "t_"},
            {"aoti-shim.prefix": "c_"},
            {"AOTI_SHIM_PREFIX": "e_"},
            "prefix",
            "e_",
            "environment variable AOTI_SHIM_PREFIX",
        ),
        ({"against": []}, {}, {}, "against", (), "[tool.aoti-shim] against"),
        ({"against": "torch"}, {"aoti-shim.against": "a;b"}, {}, "against", ("a", "b"), "-C aoti-shim.against"),
        ({"shims": "*/libx.so"}, {}, {}, "shims", ("*/libx.so",), "[tool.aoti-shim] shims"),
    ],
)
def test_one_precedence_for_every_setting(table, given, environ, name, value, source) -> None:
    resolved = settings.resolve({"tool": {"aoti-shim": table}}, given, environ)
    assert (getattr(resolved.settings, name), resolved.source(name)) == (value, source)


@pytest.mark.parametrize(
    ("pyproject", "given", "message"),
    [
        (
            {"tool": {"aoti-shim": {"failon": "any"}}},
            {},
            "[tool.aoti-shim] key: unknown 'failon' ('failon': did you mean 'fail-on'?)",
        ),
        (
            {"tool": {"aoti-shim": {"zzz": 1}}},
            {},
            "[tool.aoti-shim] key: unknown 'zzz'; known: against, cuda, cuda-libraries, export-names",
        ),
        (
            {},
            {"aoti-shim.agaimst": "torch"},
            "config-setting: unknown 'aoti-shim.agaimst' ('aoti-shim.agaimst': did you mean 'aoti-shim.against'?)",
        ),
        ({"tool": {"aoti-shim": "x"}}, {}, "[tool.aoti-shim] must be a table"),
        (
            {"tool": {"aoti-shim": {"shims": []}}},
            {},
            "[tool.aoti-shim] shims must be a non-empty string or a list of non-empty strings",
        ),
        ({"tool": {"aoti-shim": {"prefix": 3}}}, {}, "[tool.aoti-shim] prefix must be a string"),
        (
            {"tool": {"aoti-shim": {"suppress": {"rule": "X"}}}},
            {},
            "[tool.aoti-shim] suppress must be an array of tables",
        ),
        ({"tool": {"aoti-shim": {"fail-on": True}}}, {}, "[tool.aoti-shim] fail-on must be one of"),
        ({}, {"aoti-shim.prefix": ["a_", "b_"]}, "-C aoti-shim.prefix was given 2 times; give it once"),
        ({}, {"aoti-shim.fail-on": "a\0"}, "-C aoti-shim.fail-on must not contain a NUL character"),
        (
            {"tool": {"scikit-build": "x", "aoti-shim": {"prefix": "ok_"}}},
            {3: "x"},
            "config-setting name 3 is not a string",
        ),
        # An empty reference is refused in every channel (at f562a93 the empty -C turned
        # COLLISION off and the wheel was published); against = [] stays the explicit opt-out.
        ({}, {"aoti-shim.against": ""}, '-C aoti-shim.against is empty: name a reference ("torch", a shipped snapshot'),
        ({}, {"aoti-shim.against": " ; "}, "-C aoti-shim.against is empty: name a reference"),
        ({"tool": {"aoti-shim": {"against": ""}}}, {}, "[tool.aoti-shim] against is empty: name a reference"),
        (
            {"tool": {"aoti-shim": {"against": ["torch", ""]}}},
            {},
            "[tool.aoti-shim] against is empty: name a reference",
        ),
    ],
)
def test_bad_settings_are_one_line_usage_errors(pyproject, given, message) -> None:
    with pytest.raises(AotiShimError) as caught:
        config_settings.prepare(pyproject, given, {})
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert caught.value.exit_code == EXIT_USAGE


# --- hostile input: any table, any -C, any bytes --------------------------------------------

_KEYS = st.one_of(st.sampled_from(sorted(settings.TABLE_KEYS)), st.text(max_size=12))
_SCALARS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["torch", "myrt_", "any", "never", "blocking", "", "aoti_torch_", "a;b", "x\n", "*/lib*.so"]),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.datetimes().map(lambda d: d.replace(tzinfo=datetime.timezone.utc)),
)
_TOML = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
_CS_KEYS = st.one_of(
    st.sampled_from(sorted(settings.CONFIG_KEYS)),
    st.sampled_from(
        ["aoti-shim.prefx", "aoti-shim.", "cmake.define.AOTI_SHIM_SYMBOL_PREFIX", "cmake.define.AotiShim_DIR"]
    ),
    st.text(max_size=16).map(lambda t: "aoti-shim." + t),
)
_CS_VALUES = st.one_of(st.text(max_size=20), st.lists(st.text(max_size=8), max_size=3), st.integers(), st.none())


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    table=st.one_of(st.dictionaries(_KEYS, _TOML, max_size=5), _TOML),
    given_settings=st.dictionaries(_CS_KEYS, _CS_VALUES, max_size=4),
    skbuild=st.one_of(
        _TOML,
        st.fixed_dictionaries(
            {}, optional={"config-setting": _TOML, "cmake": st.one_of(_TOML, st.fixed_dictionaries({"define": _TOML}))}
        ),
    ),
    env_prefix=st.one_of(st.none(), st.text(max_size=10)),
)
def test_any_settings_give_settings_or_one_line(
    table: Any, given_settings: dict[str, Any], skbuild: Any, env_prefix: str | None
) -> None:
    environ = {} if env_prefix is None or "\0" in env_prefix else {"AOTI_SHIM_PREFIX": env_prefix}
    try:
        prepared = config_settings.prepare(
            {"tool": {"aoti-shim": table, "scikit-build": skbuild}}, given_settings, environ
        )
    except AotiShimError as e:
        assert e.exit_code in (1, 2)
        assert str(e) and "\n" not in str(e), repr(str(e))
        return
    gate = prepared.gate
    assert gate.fail_on in ("blocking", "any", "never")
    assert all(isinstance(a, str) for a in gate.against)
    assert gate.prefix is None or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", gate.prefix)
    assert not any(k.startswith("aoti-shim.") for k in prepared.skbuild_settings)


@hsettings(max_examples=150, deadline=None)
@given(data=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_any_pyproject_bytes_give_a_table_or_one_line(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("pyproject") / "pyproject.toml"
    path.write_bytes(b"[tool.aoti-shim]\n" + data)
    try:
        pyproject = config_settings.load_pyproject(str(path))
        config_settings.prepare(pyproject, {}, {})
    except AotiShimError as e:
        assert "\n" not in str(e) and e.exit_code in (1, 2)


@pytest.mark.parametrize(
    ("toml", "given", "code", "line"),
    [
        (
            '[tool.aoti-shim]\nprefx = "a_"\n',
            {},
            2,
            "aoti-shim: error: [tool.aoti-shim] key: unknown 'prefx' ('prefx': did you mean 'prefix'?)",
        ),
        (
            "[tool.aoti-shim]\nagainst = 3\n",
            {},
            2,
            "aoti-shim: error: [tool.aoti-shim] against must be a non-empty string or a list",
        ),
        (
            "[tool.aoti-shim]\n",
            {"aoti-shim.fail_on": "any"},
            2,
            "aoti-shim: error: config-setting: unknown 'aoti-shim.fail_on'",
        ),
        ('[tool]\naoti-shim = "on"\n', {}, 2, "aoti-shim: error: [tool.aoti-shim] must be a table"),
        ("[tool.aoti-shim\n", {}, 1, "aoti-shim: error: pyproject.toml: invalid TOML"),
    ],
)
def test_hooks_answer_bad_settings_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    toml: str,
    given: dict[str, str],
    code: int,
    line: str,
) -> None:
    import aoti_shim.build as backend

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n' + toml)
    monkeypatch.chdir(tmp_path)
    for hook in (backend.get_requires_for_build_wheel, backend.get_requires_for_build_sdist):
        with pytest.raises(SystemExit) as done:
            hook(given)
        assert done.value.code == code
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(line), err
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(tmp_path), given)
    assert done.value.code == code and list(tmp_path.glob("*.whl")) == []
