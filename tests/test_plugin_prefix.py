"""Which prefix a build requests and what CMake really gets (plugin/prefix.py), as functions:
no build needed.

The slow pip tests show the same through real builds; these pin every branch of the
effective-prefix logic, which a prefix given as ``-D`` in ``CMAKE_ARGS`` once lacked.
"""

from __future__ import annotations

import pytest

from aoti_shim.errors import UsageError
from aoti_shim.plugin import prefix, settings
from aoti_shim.plugin.prefix import (
    EffectivePrefix,
    PrefixChoice,
    effective_prefix,
    last_cmake_arg_define,
    raw_define_source,
)
from plugin_support import DECLARED_PREFIX, pyproject_tables

ASKED = PrefixChoice("myrt_", "-C aoti-shim.prefix")
NOT_SET = PrefixChoice(None, "not set")


def _effective(
    requested: PrefixChoice = ASKED,
    *,
    define_value: object = None,
    cmake_args: tuple[str, ...] = (),
    environ: dict[str, str] | None = None,
    raw_source: str | None = None,
) -> EffectivePrefix:
    return effective_prefix(
        requested, define_value=define_value, cmake_args=list(cmake_args), environ=environ or {}, raw_source=raw_source
    )


def _warning(by: str, value: str, requested: PrefixChoice = ASKED) -> str:
    return (
        f"{by} sets AOTI_SHIM_SYMBOL_PREFIX={value}, overriding aoti-shim.prefix={requested.value} "
        f"(from {requested.source}); the library gets {value!r}"
    )


@pytest.mark.parametrize(
    ("args", "value"),
    [
        (["-DAOTI_SHIM_SYMBOL_PREFIX=a_"], "a_"),
        (["-D", "AOTI_SHIM_SYMBOL_PREFIX=b_"], "b_"),
        (["-DAOTI_SHIM_SYMBOL_PREFIX:STRING=c_"], "c_"),
        (["-D AOTI_SHIM_SYMBOL_PREFIX =d_"], "d_"),  # as shlex leaves a quoted "-D NAME =v"
        (["-DAOTI_SHIM_SYMBOL_PREFIX=a_", "-DOTHER=1", "-DAOTI_SHIM_SYMBOL_PREFIX=last_"], "last_"),
        (["-DAOTI_SHIM_SYMBOL_PREFIX="], ""),
        (["-DAOTI_SHIM_SYMBOL_PREFIX=a_", "-DAOTI_SHIM_SYMBOL_PREFIX=b_"], "b_"),  # adjacent: each one read
        (["-D", "AOTI_SHIM_SYMBOL_PREFIX=a_", "-DAOTI_SHIM_SYMBOL_PREFIX=b_"], "b_"),
        (["-G", "Ninja", "-D", "AOTI_SHIM_SYMBOL_PREFIX=c_"], "c_"),  # the value after this -D
        (["Ninja", "-DAOTI_SHIM_SYMBOL_PREFIX=x_"], "x_"),  # one plain argument skips one
        (["-DAOTI_SHIM_SYMBOL_PREFIX=a=b"], "a=b"),  # the first '=' ends the name
        (
            ["-DOTHER=1", "-DAOTI_SHIM_SYMBOL_PREFIXX=z_", "-DAOTI_SHIM_SYMBOL_PREFIX"],
            None,
        ),  # no '=': not a define of it
        (["AOTI_SHIM_SYMBOL_PREFIX=x_", "-G", "Ninja"], None),
        (["-D"], None),  # a trailing -D defines nothing
        ([], None),
    ],
)
def test_last_cmake_arg_define(args: list[str], value: str | None) -> None:
    assert last_cmake_arg_define(args) == value


def test_last_cmake_arg_define_of_another_variable() -> None:
    assert last_cmake_arg_define(["-DFOO=1", "-DAOTI_SHIM_SYMBOL_PREFIX=a_"], "FOO") == "1"


def test_nothing_set_anywhere() -> None:
    assert _effective(NOT_SET) == EffectivePrefix(PrefixChoice(None, "not set by the build settings"), ())


def test_the_requested_prefix_reaches_cmake_unchanged() -> None:
    # scikit-build-core resolved our injected define to the requested value: nothing overrides it.
    assert _effective(define_value="myrt_") == EffectivePrefix(ASKED, ())


def test_cmake_args_environment_beats_everything_and_is_warned_about() -> None:
    got = _effective(
        define_value="myrt_",
        cmake_args=("-DAOTI_SHIM_SYMBOL_PREFIX=args_",),
        environ={"CMAKE_ARGS": "-G Ninja -DAOTI_SHIM_SYMBOL_PREFIX=env_"},
        raw_source="SKBUILD_CMAKE_DEFINE",
    )
    assert got == EffectivePrefix(PrefixChoice("env_", "CMAKE_ARGS"), (_warning("CMAKE_ARGS", "env_"),))


def test_cmake_args_environment_equal_to_the_request_is_not_warned_about() -> None:
    got = _effective(environ={"CMAKE_ARGS": "-DAOTI_SHIM_SYMBOL_PREFIX=myrt_"})
    assert got == EffectivePrefix(PrefixChoice("myrt_", "CMAKE_ARGS"), ())


def test_cmake_args_environment_without_a_request_is_not_warned_about() -> None:
    got = _effective(NOT_SET, environ={"CMAKE_ARGS": "-DAOTI_SHIM_SYMBOL_PREFIX=env_"})
    assert got == EffectivePrefix(PrefixChoice("env_", "CMAKE_ARGS"), ())


def test_cmake_args_setting_beats_the_defines() -> None:
    got = _effective(
        define_value="myrt_", cmake_args=("-DAOTI_SHIM_SYMBOL_PREFIX=args_",), raw_source="-C cmake.define.X"
    )
    assert got == EffectivePrefix(PrefixChoice("args_", "cmake.args"), (_warning("cmake.args", "args_"),))


def test_a_raw_define_beats_the_request() -> None:
    got = _effective(define_value="raw_", raw_source="SKBUILD_CMAKE_DEFINE")
    source = "a raw SKBUILD_CMAKE_DEFINE"
    assert got == EffectivePrefix(PrefixChoice("raw_", source), (_warning(source, "raw_"),))


def test_a_raw_define_equal_to_the_request_keeps_its_source_and_no_warning() -> None:
    got = _effective(define_value="myrt_", raw_source="-C cmake.define.AOTI_SHIM_SYMBOL_PREFIX")
    assert got == EffectivePrefix(PrefixChoice("myrt_", "a raw -C cmake.define.AOTI_SHIM_SYMBOL_PREFIX"), ())


def test_pyprojects_own_define_differing_from_the_request() -> None:
    got = _effective(define_value="proj_")
    source = "[tool.scikit-build] cmake.define.AOTI_SHIM_SYMBOL_PREFIX"
    assert got == EffectivePrefix(PrefixChoice("proj_", source), (_warning(source, "proj_"),))


def test_pyprojects_own_define_without_a_request() -> None:
    got = _effective(NOT_SET, define_value="proj_")
    assert got == EffectivePrefix(PrefixChoice("proj_", "[tool.scikit-build] cmake.define.AOTI_SHIM_SYMBOL_PREFIX"), ())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"environ": {"CMAKE_ARGS": "-DAOTI_SHIM_SYMBOL_PREFIX=9x"}},
            "prefix '9x' from CMAKE_ARGS is not a C identifier prefix",
        ),
        (
            {"cmake_args": ("-DAOTI_SHIM_SYMBOL_PREFIX=a-b",)},
            "prefix 'a-b' from cmake.args is not a C identifier prefix",
        ),
        (
            {"define_value": "aoti_torch_x", "raw_source": "SKBUILD_CMAKE_DEFINE"},
            "prefix 'aoti_torch_x' from a raw SKBUILD_CMAKE_DEFINE starts with",
        ),
        (
            {"define_value": "", "raw_source": None},
            "prefix '' from [tool.scikit-build] cmake.define.AOTI_SHIM_SYMBOL_PREFIX is not",
        ),
        ({"environ": {"CMAKE_ARGS": "-DA='b"}}, "CMAKE_ARGS: No closing quotation"),
    ],
)
def test_a_bad_effective_prefix_is_a_usage_error_naming_its_source(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as err:
        _effective(**kwargs)
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(
    ("config_settings", "environ", "source"),
    [
        ({}, {}, None),
        ({}, {"SKBUILD_CMAKE_DEFINE": "A=1; AOTI_SHIM_SYMBOL_PREFIX:STRING = x_"}, "SKBUILD_CMAKE_DEFINE"),
        ({}, {"SKBUILD_CMAKE_DEFINE": "AOTI_SHIM_SYMBOL_PREFIX"}, None),  # no '=': not a define
        ({}, {"SKBUILD_CMAKE_DEFINE": "OTHER=AOTI_SHIM_SYMBOL_PREFIX"}, None),
        (
            {},
            {"SKBUILD_CMAKE_DEFINE": "AOTI_SHIM_SYMBOL_PREFIX=a=b"},
            "SKBUILD_CMAKE_DEFINE",
        ),  # the first '=' ends the name
        ({"cmake.define.AOTI_SHIM_SYMBOL_PREFIX": "x_"}, {}, "-C cmake.define.AOTI_SHIM_SYMBOL_PREFIX"),
        ({"skbuild.cmake.define.AOTI_SHIM_SYMBOL_PREFIX": "x_"}, {}, "-C skbuild.cmake.define.AOTI_SHIM_SYMBOL_PREFIX"),
        ({"cmake.define.OTHER": "x_"}, {}, None),
        # The environment is scikit-build-core's last word, so it is named first.
        (
            {"cmake.define.AOTI_SHIM_SYMBOL_PREFIX": "x_"},
            {"SKBUILD_CMAKE_DEFINE": "AOTI_SHIM_SYMBOL_PREFIX=y_"},
            "SKBUILD_CMAKE_DEFINE",
        ),
    ],
)
def test_raw_define_source(config_settings: dict[str, str], environ: dict[str, str], source: str | None) -> None:
    assert raw_define_source(config_settings, environ) == source


def test_requested_prefix_from_the_declarations_own_env_and_default() -> None:
    declared = {
        "tool": {"scikit-build": {"config-setting": {"aoti-shim.prefix": {"env": "MY_PREFIX", "default": "dflt_"}}}}
    }
    assert prefix.requested_prefix(declared, {}, {"MY_PREFIX": "env_"}) == PrefixChoice(
        "env_", "environment variable MY_PREFIX"
    )
    assert prefix.requested_prefix(declared, {"aoti-shim.prefix": "cs_"}, {}).value == "cs_"
    assert prefix.requested_prefix(declared, {}, {}) == PrefixChoice(
        "dflt_", 'the default of [tool.scikit-build.config-setting."aoti-shim.prefix"]'
    )
    literal = {"tool": {"scikit-build": {"cmake": {"define": {"AOTI_SHIM_SYMBOL_PREFIX": "lit_"}}}}}
    assert prefix.requested_prefix(literal, {}, {}) == PrefixChoice(
        "lit_", "[tool.scikit-build] cmake.define.AOTI_SHIM_SYMBOL_PREFIX"
    )
    assert prefix.requested_prefix({}, {}, {}) == PrefixChoice(None, "not set")
    with pytest.raises(UsageError, match="prefix '9' from environment variable MY_PREFIX is not"):
        prefix.requested_prefix(declared, {}, {"MY_PREFIX": "9"})
    bad_default = {"tool": {"scikit-build": {"config-setting": {"aoti-shim.prefix": {"default": "9"}}}}}
    with pytest.raises(
        UsageError,
        match=r"^prefix '9' from the default of \[tool.scikit-build.config-setting.\"aoti-shim.prefix\"\] is not",
    ):
        prefix.requested_prefix(bad_default, {}, {})
    bad_literal = {"tool": {"scikit-build": {"cmake": {"define": {"AOTI_SHIM_SYMBOL_PREFIX": "9"}}}}}
    with pytest.raises(
        UsageError, match=r"^prefix '9' from \[tool.scikit-build\] cmake.define.AOTI_SHIM_SYMBOL_PREFIX is not"
    ):
        prefix.requested_prefix(bad_literal, {}, {})
    assert settings.declared_settings(declared) == frozenset({"aoti-shim.prefix"})
    assert (
        settings.declaration({"tool": {"scikit-build": {"config-setting": {"aoti-shim.prefix": "not a table"}}}})
        is None
    )


# --- which prefix is requested --------------------------------------------------------


@pytest.mark.parametrize(
    ("pyproject", "given", "environ", "value", "source"),
    [
        (pyproject_tables(), {}, {}, None, "not set"),
        (pyproject_tables({"prefix": "tbl_"}), {}, {}, "tbl_", "[tool.aoti-shim] prefix"),
        (pyproject_tables({"prefix": "tbl_"}), {"aoti-shim.prefix": "cs_"}, {}, "cs_", "-C aoti-shim.prefix"),
        (
            pyproject_tables({"prefix": "tbl_"}),
            {"aoti-shim.prefix": "cs_"},
            {"AOTI_SHIM_PREFIX": "env_"},
            "env_",
            "environment variable AOTI_SHIM_PREFIX",
        ),
        (
            pyproject_tables(skb=DECLARED_PREFIX),
            {},
            {},
            "decl_",
            'the default of [tool.scikit-build.config-setting."aoti-shim.prefix"]',
        ),
        (pyproject_tables({"prefix": "tbl_"}, DECLARED_PREFIX), {}, {}, "tbl_", "[tool.aoti-shim] prefix"),
        (
            pyproject_tables(skb=DECLARED_PREFIX),
            {},
            {"MYRT_PREFIX": "mine_", "AOTI_SHIM_PREFIX": "env_"},
            "mine_",
            "environment variable MYRT_PREFIX",
        ),
        (
            pyproject_tables(skb={"cmake": {"define": {"AOTI_SHIM_SYMBOL_PREFIX": "lit_"}}}),
            {},
            {},
            "lit_",
            "[tool.scikit-build] cmake.define.AOTI_SHIM_SYMBOL_PREFIX",
        ),
    ],
)
def test_requested_prefix_precedence(pyproject, given, environ, value, source) -> None:
    choice = prefix.requested_prefix(pyproject, given, environ)
    assert (choice.value, choice.source) == (value, source)


@pytest.mark.parametrize(
    ("given", "environ", "message"),
    [
        ({"aoti-shim.prefix": "9lives_"}, {}, "prefix '9lives_' from -C aoti-shim.prefix is not a C identifier prefix"),
        ({}, {"AOTI_SHIM_PREFIX": ""}, "prefix '' from environment variable AOTI_SHIM_PREFIX"),
        ({"aoti-shim.prefix": "aoti_torch_x"}, {}, "starts with 'aoti_torch_'"),
        ({"aoti-shim.prefix": ["a_", "b_"]}, {}, "-C aoti-shim.prefix was given 2 times"),
    ],
)
def test_bad_prefix_is_a_usage_error(given, environ, message) -> None:
    with pytest.raises(UsageError) as err:
        prefix.requested_prefix(pyproject_tables(), given, environ)
    assert message in str(err.value)


def test_last_cmake_arg_define_wins() -> None:
    args = ["-DAOTI_SHIM_SYMBOL_PREFIX=a_", "-GNinja", "-D", "AOTI_SHIM_SYMBOL_PREFIX:STRING=b_", "-DOTHER=c_"]
    assert prefix.last_cmake_arg_define(args) == "b_"
    assert prefix.last_cmake_arg_define(["-DOTHER=1"]) is None


def test_unbalanced_quote_in_cmake_args_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="^CMAKE_ARGS: No closing quotation$"):
        prefix.effective_prefix(
            prefix.PrefixChoice(None, "not set"),
            define_value=None,
            cmake_args=[],
            environ={"CMAKE_ARGS": "-DAOTI_SHIM_SYMBOL_PREFIX='a_"},
            raw_source=None,
        )


def test_a_prefix_without_its_underscore_is_warned_of_whichever_source_wins() -> None:
    warned = "does not end in '_': shim names become myrtaoti_torch_x; did you mean 'myrt_'?"
    asked = _effective(PrefixChoice("myrt", "[tool.aoti-shim] prefix"), define_value="myrt")
    assert asked.warnings == (f"prefix 'myrt' from [tool.aoti-shim] prefix {warned}",)
    # An override that drops the '_' is warned of twice: the override, and what the library gets.
    overridden = _effective(cmake_args=("-DAOTI_SHIM_SYMBOL_PREFIX=myrt",), define_value="myrt_")
    assert overridden.warnings == (_warning("cmake.args", "myrt"), f"prefix 'myrt' from cmake.args {warned}")


def test_the_backend_prints_the_warning_where_pip_shows_it(capsys: pytest.CaptureFixture[str]) -> None:
    from aoti_shim.plugin.wheel import _report_prefix

    _report_prefix(_effective(PrefixChoice("myrt", "-C aoti-shim.prefix"), define_value="myrt"))
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "aoti-shim: prefix: myrt (from -C aoti-shim.prefix)",
        "aoti-shim: warning: prefix 'myrt' from -C aoti-shim.prefix does not end in '_': shim names become "
        "myrtaoti_torch_x; did you mean 'myrt_'?",
    ]
