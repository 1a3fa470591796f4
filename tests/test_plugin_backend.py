"""aoti_shim.build in-process: config-settings, the gate, clean failures (which prefix is
requested: test_plugin_prefix.py).

The prefix rules are checked against scikit-build-core's own settings reader, and two
fixture projects are built in-process through the PEP 517 hooks (about a second each).
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from aoti_shim.errors import EXIT_BLOCKING, EXIT_USAGE, UsageError
from aoti_shim.plugin import config_settings, prefix, settings, target_env
from plugin_support import DECLARED_PREFIX, pyproject_tables
from shims_support import exported_shim_names

ENV_FREE = (
    "AOTI_SHIM_PREFIX",
    "AOTI_SHIM_TORCH",
    "PDECL_PREFIX",
    "CMAKE_ARGS",
    "SKBUILD_CMAKE_DEFINE",
    "SKBUILD_CMAKE_ARGS",
)


@pytest.fixture(autouse=True)
def _clean_build_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_FREE:
        monkeypatch.delenv(name, raising=False)


# --- what scikit-build-core is handed ---------------------------------------------------


def test_prepare_takes_out_own_keys_and_injects_the_defines() -> None:
    prepared = config_settings.prepare(
        pyproject_tables({"prefix": "tbl_"}),
        {"aoti-shim.prefix": "cs_", "aoti-shim.fail-on": "any", "cmake.build-type": "Debug"},
        {},
    )
    out = prepared.skbuild_settings
    assert out["cmake.define.AOTI_SHIM_SYMBOL_PREFIX"] == "cs_"
    assert Path(out["cmake.define.AotiShim_DIR"], "AotiShimConfig.cmake").is_file()
    assert out["cmake.build-type"] == "Debug"
    assert not any(k.startswith("aoti-shim.") for k in out)
    assert prepared.gate.fail_on == "any"


def test_prepare_keeps_declared_settings_and_respects_raw_defines() -> None:
    pyproject = pyproject_tables(skb={**DECLARED_PREFIX, "cmake": {"define": {"AotiShim_DIR": "/opt/aotishim"}}})
    prepared = config_settings.prepare(
        pyproject, {"aoti-shim.prefix": "cs_", "cmake.define.AOTI_SHIM_SYMBOL_PREFIX": "raw_"}, {}
    )
    out = prepared.skbuild_settings
    assert out["aoti-shim.prefix"] == "cs_"  # declared: scikit-build-core resolves it too
    assert out["cmake.define.AOTI_SHIM_SYMBOL_PREFIX"] == "raw_"  # the raw define is left alone
    assert "cmake.define.AotiShim_DIR" not in out  # the project points at its own
    assert prepared.raw_define_source == "-C cmake.define.AOTI_SHIM_SYMBOL_PREFIX"
    env_raw = config_settings.prepare(
        pyproject_tables(), {}, {"SKBUILD_CMAKE_DEFINE": "X=1;AOTI_SHIM_SYMBOL_PREFIX=e_"}
    )
    assert env_raw.raw_define_source == "SKBUILD_CMAKE_DEFINE"


def test_unknown_own_config_setting_and_table_key_are_usage_errors() -> None:
    with pytest.raises(
        UsageError, match="^config-setting: unknown 'aoti-shim.prefx' .*did you mean 'aoti-shim.prefix'"
    ):
        config_settings.prepare(pyproject_tables(), {"aoti-shim.prefx": "a_"}, {})
    with pytest.raises(
        UsageError, match=r"^\[tool.aoti-shim\] key: unknown 'prefx' \('prefx': did you mean 'prefix'\?\)"
    ):
        config_settings.prepare({"tool": {"aoti-shim": {"prefx": "a_"}}}, {}, {})
    with pytest.raises(UsageError, match="fail-on must be one of"):
        settings.gate_settings(pyproject_tables({"fail-on": "sometimes"}), {})


def test_gate_settings_against_forms() -> None:
    assert settings.gate_settings(pyproject_tables(), {}).against == ("torch",)
    assert settings.gate_settings(pyproject_tables({"against": []}), {}).against == ()
    assert settings.gate_settings(pyproject_tables({"against": "libs/ref.so"}), {}).against == ("libs/ref.so",)
    given = settings.resolve(pyproject_tables(), {"aoti-shim.against": "torch; /x/lib.so"}, {})
    assert (given.settings.against, given.source("against")) == (("torch", "/x/lib.so"), "-C aoti-shim.against")


# --- the effective prefix, as scikit-build-core's reader resolves the settings ----------


def _effective(project: Path, given: dict[str, Any], monkeypatch: pytest.MonkeyPatch, state: str = "wheel"):
    from aoti_shim.plugin import wheel

    monkeypatch.chdir(project)
    prepared = config_settings.prepare(config_settings.load_pyproject(), given)
    plan = wheel.plan(prepared, state)
    return plan.prefix, plan.editable_mode


def test_declared_setting_env_reaches_cmake_define(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = plugin_project("plugin_declared")
    effective, mode = _effective(project, {}, monkeypatch)
    assert (effective.choice.value, mode) == ("pdecl_", "redirect")
    monkeypatch.setenv("PDECL_PREFIX", "pdenv_")
    effective, _ = _effective(project, {"aoti-shim.prefix": "pdcs_"}, monkeypatch)
    assert (effective.choice.value, effective.choice.source) == ("pdenv_", "environment variable PDECL_PREFIX")
    assert effective.warnings == ()


def test_overrides_are_warned_about(plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = plugin_project("plugin_clean")
    effective, _ = _effective(project, {"cmake.define.AOTI_SHIM_SYMBOL_PREFIX": "raw_"}, monkeypatch)
    assert (effective.choice.value, effective.choice.source) == (
        "raw_",
        "a raw -C cmake.define.AOTI_SHIM_SYMBOL_PREFIX",
    )
    assert effective.warnings == (
        "a raw -C cmake.define.AOTI_SHIM_SYMBOL_PREFIX sets AOTI_SHIM_SYMBOL_PREFIX=raw_, overriding "
        "aoti-shim.prefix=pclean_ (from [tool.aoti-shim] prefix); the library gets 'raw_'",
    )
    monkeypatch.setenv("SKBUILD_CMAKE_ARGS", "-DAOTI_SHIM_SYMBOL_PREFIX=args_")
    effective, _ = _effective(project, {}, monkeypatch)
    assert (effective.choice.value, effective.choice.source) == ("args_", "cmake.args")
    assert len(effective.warnings) == 1 and "cmake.args sets AOTI_SHIM_SYMBOL_PREFIX=args_" in effective.warnings[0]
    _, mode = _effective(project, {"editable.mode": "inplace"}, monkeypatch, "editable")
    assert mode == "inplace"


# --- finding torch for an isolated build ----------------------------------------------


def test_explicit_torch_location_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site-packages"
    (site / "torch" / "lib").mkdir(parents=True)
    for given in (site, site / "torch", site / "torch" / "lib"):
        where = target_env.find_torch({"AOTI_SHIM_TORCH": str(given)})
        assert (where.site, where.how) == (site, "$AOTI_SHIM_TORCH")
    with pytest.raises(UsageError, match="AOTI_SHIM_TORCH=.*no torch/lib there"):
        target_env.find_torch({"AOTI_SHIM_TORCH": str(tmp_path)})


def test_relative_aoti_shim_torch_survives_the_gates_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checker_libs, capsys
) -> None:
    # The gate runs the checker from a temp folder; a relative $AOTI_SHIM_TORCH must still
    # name the torch it named when the build started.
    from aoti_shim.checks.references.reference import find_torch
    from aoti_shim.plugin import gate

    site = find_torch().lib.resolve().parent.parent
    monkeypatch.chdir(site.parent)
    monkeypatch.setenv("AOTI_SHIM_TORCH", site.name)
    where = target_env.find_torch()
    assert where.site.is_absolute() and where.site == site
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(checker_libs["clean_shim"], "demo/libclean_shim.so")
    gate.check_wheel(wheel, prefix.PrefixChoice(None, "not set"), settings.GateSettings(), tmp_path, where)
    printed = capsys.readouterr().out
    assert "shims: demo/libclean_shim.so" in printed
    assert re.search(r"against [1-9][0-9]* reference", printed), printed


def test_gate_leaves_a_stable_abi_extension_next_to_the_shims_alone(tmp_path: Path, checker_libs, capsys) -> None:
    from aoti_shim.plugin import gate

    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(checker_libs["clean_shim"], "demo/libclean_shim.so")
        zf.write(checker_libs["good_model"], "demo/model.so")
        zf.write(checker_libs["stable_abi_extension"], "demo/_ext.so")
    # No BuildRejected: the extension's unprefixed imports are libtorch's, on purpose.
    gate.check_wheel(wheel, prefix.PrefixChoice(None, "not set"), settings.GateSettings(against=()), tmp_path)
    printed = capsys.readouterr().out
    assert "models and other shim-ABI consumers: demo/model.so" in printed
    assert "stable-ABI extensions" in printed and "demo/_ext.so" in printed
    assert "UNPREFIXED_IMPORT" not in printed


@pytest.mark.parametrize(
    "member", ["../escape.so", "/tmp/aoti-shim-gate-escape.so", "pkg\\..\\..\\escape.so", "C:/escape.so"]
)
def test_gate_refuses_a_wheel_with_an_unsafe_member_name(tmp_path: Path, checker_libs, member: str) -> None:
    # The unsafe member is an unprefixed shim: skipped, it would be installed unchecked.
    from aoti_shim.errors import InputError
    from aoti_shim.plugin import gate

    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(checker_libs["clean_shim"], "demo/libclean_shim.so")
        zf.writestr(member, checker_libs["unprefixed_shim"].read_bytes())  # writestr keeps the name as given
    with pytest.raises(InputError) as caught:
        gate.check_wheel(wheel, prefix.PrefixChoice(None, "not set"), settings.GateSettings(against=()), tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{wheel.name}: unsafe member name {member!r}") and "\n" not in message
    assert not (tmp_path / "escape.so").exists() and not Path("/tmp/aoti-shim-gate-escape.so").exists()


def test_backend_deletes_a_built_wheel_with_an_unsafe_member_name(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, checker_libs
) -> None:
    from scikit_build_core import build as skbuild

    import aoti_shim.build as backend

    def hostile_build(wheel_directory: str, *args: object) -> str:
        # What a CMake install() to a path outside the package would hand the gate.
        name = "plugin_clean-0.1.0-py3-none-any.whl"
        with zipfile.ZipFile(Path(wheel_directory) / name, "w") as zf:
            zf.write(checker_libs["unprefixed_shim"], "../libescape.so")
        return name

    monkeypatch.setattr(skbuild, "build_wheel", hostile_build)
    monkeypatch.chdir(plugin_project("plugin_clean"))
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(out_dir), {"aoti-shim.against": "torch-2.13.0+cpu"})
    assert done.value.code == 1 and list(out_dir.iterdir()) == []
    errors = [line for line in capsys.readouterr().err.splitlines() if "aoti-shim: error:" in line]
    assert errors == [
        "aoti-shim: error: plugin_clean-0.1.0-py3-none-any.whl: unsafe member name '../libescape.so' in wheel; it is "
        "not installed"
    ]


def test_torch_found_through_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    where = target_env.find_torch({})
    assert (where.lib / "libtorch_cpu.so").is_file()
    assert where.how.startswith("the interpreter pip installs for")


# --- in-process builds through the PEP 517 hooks ----------------------------------------


def _members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def test_build_wheel_in_process_with_declared_env_prefix(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import aoti_shim.build as backend

    project = plugin_project("plugin_declared")
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("PDECL_PREFIX", "pdenv_")
    name = backend.build_wheel(str(out_dir))
    printed = capsys.readouterr().out
    assert "aoti-shim: prefix: pdenv_ (from environment variable PDECL_PREFIX)" in printed
    # torch is found before CMake runs (a missing one fails fast), and handed to CMake's
    # own aoti_shim_check through $AOTI_SHIM_TORCH for this build only.
    assert printed.index("aoti-shim: against: torch at") < printed.index("Configuring CMake")
    assert "AOTI_SHIM_TORCH" not in os.environ
    wheel = out_dir / name
    with zipfile.ZipFile(wheel) as zf:
        zf.extract("plugin_declared/libpdecl_shims.so", tmp_path / "x")
    assert exported_shim_names(tmp_path / "x" / "plugin_declared" / "libpdecl_shims.so") == {
        "pdenv_aoti_torch_dtype_float32"
    }


def test_blocking_build_deletes_the_wheel_and_exits_cleanly(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import aoti_shim.build as backend

    project = plugin_project("plugin_forgot")
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(out_dir))
    assert done.value.code == EXIT_BLOCKING
    assert list(out_dir.iterdir()) == []
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if "aoti-shim: error:" in line]
    assert len(errors) == 1 and "2 blocking finding(s)" in errors[0]

    # fail-on = never keeps the wheel; the findings are still printed.
    name = backend.build_wheel(str(out_dir), {"aoti-shim.fail-on": "never"})
    assert "plugin_forgot/libpforgot_extra.so" in _members(out_dir / name)
    assert "COLLISION" in capsys.readouterr().out


def test_config_error_is_one_line_not_a_traceback(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import aoti_shim.build as backend

    monkeypatch.chdir(plugin_project("plugin_clean"))
    with pytest.raises(SystemExit) as done:
        backend.get_requires_for_build_wheel({"aoti-shim.prefix": "1bad"})
    assert done.value.code == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "aoti-shim: error: prefix '1bad' from -C aoti-shim.prefix is not a C identifier prefix (letters, digits, '_'; "
        "not empty)"
    ]


@pytest.mark.parametrize("broken", ["not-utf8", "folder"])
def test_unreadable_pyproject_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, broken: str
) -> None:
    import aoti_shim.build as backend

    if broken == "folder":
        (tmp_path / "pyproject.toml").mkdir()
        message = "aoti-shim: error: pyproject.toml: cannot read: Is a directory"
    else:
        (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "caf\xe9"\n')
        message = "aoti-shim: error: pyproject.toml: invalid TOML: not UTF-8 text (byte 21)"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        backend.get_requires_for_build_wheel({})
    assert done.value.code == 1
    assert capsys.readouterr().err.strip().splitlines() == [message]


def test_role_globs_replace_classification(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import aoti_shim.build as backend

    project = plugin_project("plugin_clean")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + 'shims = ["*/libpclean_shims.so"]\nmodels = ["*/libpclean_backend.so"]\n'
    )
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    backend.build_wheel(str(out_dir))
    printed = capsys.readouterr().out
    assert "shims: plugin_clean/libpclean_shims.so\n" in printed
    assert "models and other shim-ABI consumers: plugin_clean/libpclean_backend.so" in printed
    assert "checked: 1 shim library, 1 model(s)" in printed


def test_shims_glob_matching_nothing_rejects_the_build(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import aoti_shim.build as backend

    project = plugin_project("plugin_clean")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'shims = ["*/libnothere.so"]\n')
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    monkeypatch.chdir(project)
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(out_dir))
    assert done.value.code == EXIT_USAGE
    assert list(out_dir.iterdir()) == []
    assert "'*/libnothere.so' matches no ELF member of the wheel" in capsys.readouterr().err


def test_backend_offers_every_scikit_build_core_hook() -> None:
    from scikit_build_core import build as skbuild

    import aoti_shim.build as backend

    assert set(skbuild.__all__) <= set(backend.__all__)
    for hook in skbuild.__all__:
        assert callable(getattr(backend, hook))


def test_editable_plans_that_bypass_the_gate_are_named(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aoti_shim.plugin import wheel

    project = plugin_project("plugin_clean")
    monkeypatch.chdir(project)
    given = {"editable.rebuild": "true", "build-dir": "build"}
    plan = wheel.plan(config_settings.prepare(config_settings.load_pyproject(), given), "editable")
    assert (plan.rebuild_on_import, plan.editable_mode) == (True, "redirect")
    plan = wheel.plan(config_settings.prepare(config_settings.load_pyproject(), {}), "editable")
    assert (plan.rebuild_on_import, plan.rebuild_dir) == (False, "")


def test_shipped_snapshot_reference_needs_no_torch(
    plugin_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import aoti_shim.build as backend

    # The wheel ships this snapshot (test_snapshot asserts it): its absence fails, it does not skip.
    assert "torch-2.13.0+cpu" in target_env.shipped_snapshots()
    monkeypatch.chdir(plugin_project("plugin_forgot"))
    out_dir = tmp_path / "dist"
    out_dir.mkdir()
    with pytest.raises(SystemExit) as done:
        backend.build_wheel(str(out_dir), {"aoti-shim.against": "torch-2.13.0+cpu"})
    assert done.value.code == EXIT_BLOCKING
    printed = capsys.readouterr().out
    assert "against: the shipped snapshot torch-2.13.0+cpu" in printed
    assert "COLLISION" in printed and "aoti_torch_empty_strided" in printed and "libtorch_cpu.so" in printed


def test_inplace_build_without_cmake_check_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from aoti_shim.plugin import wheel

    (tmp_path / "build.ninja").write_text("build libx.so: C_SHARED_LIBRARY_LINKER x.o\n")
    wheel.note_inplace(tmp_path)
    out = capsys.readouterr().out
    assert "this inplace build does not run aoti_shim_check(): nothing checks it" in out
    # What CMake writes for aoti_shim_check(): the POST_BUILD command line.
    (tmp_path / "build.ninja").write_text(
        "  COMMAND = cd /p && /venv/bin/python -m aoti_shim check --shim /p/libx.so --against torch\n"
    )
    wheel.note_inplace(tmp_path)
    out = capsys.readouterr().out
    assert "this build runs aoti_shim_check() in CMake" in out and "warning" not in out
    # A check with no reference finds no collision: the build is not said to be gated
    # (at f562a93 any check command was "that gates it").
    (tmp_path / "build.ninja").write_text(
        "  COMMAND = cd /p && /venv/bin/python -m aoti_shim check --shim /p/libx.so --format text\n"
    )
    wheel.note_inplace(tmp_path)
    out = capsys.readouterr().out
    assert "gates it" not in out
    assert "warning: this inplace build runs aoti_shim_check() with no reference" in out


def test_the_backend_without_scikit_build_core_is_one_line_naming_the_fix() -> None:
    # As pip's in-process hook runner imports the backend in an environment without
    # scikit-build-core (an install with --no-deps): before, a ModuleNotFoundError traceback.
    import subprocess
    import sys

    script = "import sys; sys.modules['scikit_build_core'] = None; import aoti_shim.build"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "aoti-shim: error: the build backend aoti_shim.build needs scikit-build-core, which is not installed: "
        'add "scikit-build-core>=1.1,<2" to [build-system] requires, or pip install "scikit-build-core>=1.1,<2" '
        "into the environment of a --no-build-isolation build"
    ]


def test_scikit_build_core_is_a_dependency_of_aoti_shim() -> None:
    # The backend reads scikit-build-core's settings internals: aoti-shim's metadata pins the range.
    from importlib.metadata import requires

    assert "scikit-build-core<2,>=1.1" in (requires("aoti-shim") or [])


def test_cmake_checks_get_the_backends_references(tmp_path: Path) -> None:
    # aoti_shim_check() without AGAINST takes these from $AOTI_SHIM_AGAINST under pip.
    from aoti_shim.plugin import wheel

    (tmp_path / "refs").mkdir()
    (tmp_path / "refs" / "libold.so").write_bytes(b"")
    got = wheel.children_against(("torch", "torch-2.14.1+cu130", "refs/libold.so"), tmp_path)
    assert got == f"torch;torch-2.14.1+cu130;{tmp_path / 'refs' / 'libold.so'}"
    assert wheel.children_against((), tmp_path) == ""  # against = []: the CMake check has no reference either
