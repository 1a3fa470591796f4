"""The backend's gate (plugin/gate.py) on hand-made wheels: no build, real ELF members.

How members get their roles, which prefix the check uses, and what a rejected wheel
says; the pip and CMake tests show the same end to end, slowly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aoti_shim.errors import InputError, UsageError
from aoti_shim.plugin import gate
from aoti_shim.plugin.gate import BuildRejected, Roles
from aoti_shim.plugin.prefix import PrefixChoice
from aoti_shim.plugin.settings import GateSettings
from aoti_shim.torch_location import TorchLocation
from compile_support import compile_object, compile_shared
from wheel_support import make_wheel

EXPORT = '__attribute__((visibility("default")))'
EXTRA_SOURCES = {
    # Imports libtorch's own names, no AOTInductor entry point: a stable-ABI extension.
    "extension": f"extern int aoti_torch_x(void); {EXPORT} int ext(void) {{ return aoti_torch_x(); }}\n",
    # Imports the private (prefixed) ABI without an entry point: still a consumer to check.
    "consumer": f"extern int myrt_aoti_torch_empty_strided(void); {EXPORT} int use(void) "
        f"{{ return myrt_aoti_torch_empty_strided(); }}\n",
    "plain": f"{EXPORT} int plain_func(void) {{ return 1; }}\n",
    "other_prefix_shim": f"{EXPORT} int zz_aoti_torch_empty_strided(void) {{ return 1; }}\n",
}


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory, checker_libs: dict[str, Path]) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("gate-libs")
    built = dict(checker_libs)
    for name, text in EXTRA_SOURCES.items():
        (out / f"{name}.c").write_text(text)
        built[name] = out / f"lib{name}.so"
        compile_shared(out / f"{name}.c", built[name])
    return built


def test_extract_copies_the_elf_members_byte_for_byte(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {"pkg/lib/libshim.so": libs["clean_shim"], "pkg/README.so": b"not ELF", "pkg/__init__.py": b""},
    )
    dest = tmp_path / "out"
    assert gate.extract_members(wheel, dest) == ["pkg/lib/libshim.so"]
    assert (dest / "pkg/lib/libshim.so").read_bytes() == libs["clean_shim"].read_bytes()
    assert not (dest / "pkg/README.so").exists()


def test_extract_refuses_an_unsafe_member_and_an_unreadable_wheel(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "evil-1.0-py3-none-any.whl", {"../escape.so": libs["clean_shim"]})
    with pytest.raises(InputError) as err:
        gate.extract_members(wheel, tmp_path / "out")
    assert (
        str(err.value) == "evil-1.0-py3-none-any.whl: unsafe member name '../escape.so' in wheel; it is not installed"
    )
    broken = tmp_path / "broken-1.0-py3-none-any.whl"
    broken.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(
        InputError, match=r"^broken-1.0-py3-none-any.whl: not a readable wheel \(zip\): .*; it is not installed$"
    ):
        gate.extract_members(broken, tmp_path / "out")


def _classify(libs: dict[str, Path], tmp_path: Path, settings: GateSettings, names: tuple[str, ...]) -> Roles:
    members = {f"pkg/{name}.so": libs[name] for name in names}
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", members)
    root = tmp_path / "root"
    return gate.classify(gate.extract_members(wheel, root), root, settings)


def test_classify_by_what_each_member_exports_and_imports(libs: dict[str, Path], tmp_path: Path) -> None:
    roles = _classify(
        libs,
        tmp_path,
        GateSettings(),
        ("clean_shim", "good_model", "extension", "consumer", "plain", "unprefixed_shim"),
    )
    assert roles == Roles(
        shims=("pkg/clean_shim.so", "pkg/unprefixed_shim.so"),
        models=("pkg/good_model.so", "pkg/consumer.so"),
        unchecked=("pkg/plain.so",),
        extensions=("pkg/extension.so",),
    )


def test_classify_by_globs(libs: dict[str, Path], tmp_path: Path) -> None:
    settings = GateSettings(shims=("pkg/clean_*",), models=("pkg/*",))
    roles = _classify(libs, tmp_path, settings, ("clean_shim", "good_model", "plain"))
    # A member matching both is a shim; the model globs take the rest they match.
    assert roles == Roles(shims=("pkg/clean_shim.so",), models=("pkg/good_model.so", "pkg/plain.so"), unchecked=())
    # A glob pins the members it matches; every other member is classified by its symbols
    # (at f562a93 a pinned list left the shim below unchecked).
    roles = _classify(libs, tmp_path / "2", GateSettings(models=("pkg/good_*",)), ("clean_shim", "good_model", "plain"))
    assert roles == Roles(shims=("pkg/clean_shim.so",), models=("pkg/good_model.so",), unchecked=("pkg/plain.so",))


def test_a_glob_matching_no_member_is_a_usage_error(libs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        _classify(libs, tmp_path, GateSettings(shims=("pkg/clean_*", "lib/*.so")), ("clean_shim", "plain"))
    assert str(err.value) == (
        "[tool.aoti-shim] shims: 'lib/*.so' matches no ELF member of the wheel (members: pkg/clean_shim.so, "
        "pkg/plain.so)"
    )
    with pytest.raises(
        UsageError, match=r"^\[tool.aoti-shim\] models: 'x' matches no ELF member of the wheel \(members: none\)$"
    ):
        gate.classify([], tmp_path, GateSettings(models=("x",)))


def test_settled_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    asked = PrefixChoice("myrt_", "-C aoti-shim.prefix")
    assert gate._settled_prefix(asked, None, wheel) == "myrt_"  # no shim: nothing to compare
    assert gate._settled_prefix(PrefixChoice(None, "not set"), None, wheel) is None
    assert gate._settled_prefix(PrefixChoice(None, "not set"), "cm_", wheel) == "cm_"
    assert "prefix: cm_ (read from the built shims)" in capsys.readouterr().out
    assert gate._settled_prefix(asked, "myrt_", wheel) == "myrt_"
    assert "prefix: myrt_ (the built shims carry it)" in capsys.readouterr().out
    with pytest.raises(BuildRejected) as err:
        gate._settled_prefix(asked, "cm_", wheel)
    assert str(err.value) == (
        "the built shims in pkg-1.0-py3-none-any.whl carry the prefix 'cm_', not 'myrt_' (from -C aoti-shim.prefix): "
        "CMake got another prefix (a FORCE'd cache entry from CMAKE_ARGS=\"-C ...\", or aoti_shim_prefix(<target> "
        "PREFIX ...) "
        "in CMakeLists.txt); the wheel was deleted; nothing is installed"
    )
    assert err.value.exit_code == 8


def test_carried_prefix(libs: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for name in ("clean_shim", "other_prefix_shim", "plain"):
        (root / f"{name}.so").write_bytes(libs[name].read_bytes())
    assert gate.carried_prefix(("clean_shim.so", "plain.so"), root) == "myrt_"
    assert gate.carried_prefix(("plain.so",), root) is None
    assert gate.carried_prefix((), root) is None
    with pytest.raises(BuildRejected) as err:
        gate.carried_prefix(("clean_shim.so", "other_prefix_shim.so"), root)
    assert str(err.value) == "the built shims: the shims use more than one prefix: 'myrt_' (3), 'zz_' (1)"


def _check(
    wheel: Path, project: Path, prefix: PrefixChoice = PrefixChoice(None, "not set"), **settings: object  # noqa: B008 - frozen
) -> None:
    gate.check_wheel(wheel, prefix, GateSettings(**{"against": (), **settings}), project)


def test_check_wheel_passes_a_clean_wheel_and_says_what_it_checked(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {
            "pkg/lib/libshim.so": libs["clean_shim"],
            "pkg/model.so": libs["good_model"],
            "pkg/ext.so": libs["extension"],
            "pkg/plain.so": libs["plain"],
        },
    )
    _check(wheel, tmp_path)
    out = capsys.readouterr().out
    assert "checking pkg-1.0-py3-none-any.whl" in out
    assert "  shims: pkg/lib/libshim.so" in out
    assert "  models and other shim-ABI consumers: pkg/model.so" in out
    assert (
        "  not checked (stable-ABI extensions: import libtorch's aoti_torch_*, no AOTInductor model): pkg/ext.so" in out
    )
    assert "  not checked (no aoti_torch_* names): pkg/plain.so" in out


def test_check_wheel_rejects_blocking_findings(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libhalf.so": libs["half_prefixed_shim"]})
    with pytest.raises(BuildRejected) as err:
        _check(wheel, tmp_path, PrefixChoice("myrt_", "-C aoti-shim.prefix"))
    assert (
        str(err.value)
        == "1 blocking finding(s) in pkg-1.0-py3-none-any.whl: the wheel was deleted; nothing is installed"
    )
    assert err.value.exit_code == 8


def test_check_wheel_rejects_warnings_only_under_fail_on_any(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {"pkg/libshim.so": libs["clean_shim"], "pkg/librt.so": libs["runtime_reexport"]},
    )
    _check(wheel, tmp_path, shims=("pkg/*",))  # fail-on blocking: a warning passes
    with pytest.raises(BuildRejected) as err:
        _check(wheel, tmp_path, shims=("pkg/*",), fail_on="any")
    assert str(err.value).startswith(
        "1 warning(s) with fail-on = any in pkg-1.0-py3-none-any.whl: the wheel was deleted"
    )
    assert err.value.exit_code == 4


def test_check_wheel_with_nothing_to_check_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/__init__.py": b""})
    _check(wheel, tmp_path)
    assert (
        "no ELF member of pkg-1.0-py3-none-any.whl exports or imports aoti_torch_* names: nothing to check"
        in capsys.readouterr().out
    )


def test_a_shim_library_that_exports_nothing_fails_the_build(tmp_path: Path) -> None:
    # -fvisibility=hidden: the library exports no shim name. At f562a93 the build passed, with a
    # warning shown only under pip -v.
    source = tmp_path / "hidden.c"
    source.write_text("int myrt_aoti_torch_device_type_cpu(void) { return 0; }\n")
    lib = tmp_path / "libhidden.so"
    compile_shared(source, lib, ("-fvisibility=hidden",))
    wheel = make_wheel(tmp_path / "myrt-0.1.0-py3-none-any.whl", {"myrt/libmyrt_shims.so": lib})
    with pytest.raises(BuildRejected) as err:
        _check(wheel, tmp_path)
    assert str(err.value) == (
        "no ELF member of myrt-0.1.0-py3-none-any.whl exports a shim name (myrt/libmyrt_shims.so): a shim library "
        "compiled with -fvisibility=hidden (or limited by a version script) exports nothing; mark each shim function "
        '__attribute__((visibility("default"))); the wheel was deleted; nothing is installed'
    )
    assert err.value.exit_code == 8


def test_references(libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ref").mkdir()
    ref = tmp_path / "ref" / "libref.so"
    ref.write_bytes(libs["unprefixed_shim"].read_bytes())
    got = gate._references(
        GateSettings(against=("ref/libref.so", str(ref))), tmp_path, None, "[tool.aoti-shim] against"
    )
    assert got == (str(ref), str(ref))  # relative to the project, or absolute
    assert f"against: {ref}" in capsys.readouterr().out
    with pytest.raises(UsageError) as err:
        gate._references(GateSettings(against=("nope.so",)), tmp_path, None, "-C aoti-shim.against")
    assert str(err.value) == f"-C aoti-shim.against: reference 'nope.so' does not exist ({tmp_path / 'nope.so'})"
    with pytest.raises(UsageError) as err:
        gate._references(GateSettings(against=("torch",)), tmp_path, None, "x")
    assert str(err.value) == 'against = "torch" but no torch location was resolved before the build'
    shipped = gate._references(GateSettings(against=("torch-2.13.0+cpu",)), tmp_path, None, "x")
    assert len(shipped) == 1 and shipped[0].endswith("torch-2.13.0+cpu.json.gz")
    assert "against: the shipped snapshot torch-2.13.0+cpu" in capsys.readouterr().out


def test_check_wheel_against_a_reference_finds_the_collision(libs: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "libtorchlike.so").write_bytes(libs["unprefixed_shim"].read_bytes())
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libbad.so": libs["unprefixed_shim"]})
    # Two COLLISIONs and one UNPREFIXED_EXPORT naming the rename header (no shim carries the asked-for myrt_).
    with pytest.raises(BuildRejected, match=r"^3 blocking finding\(s\)"):
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"), against=("libtorchlike.so",), shims=("pkg/*",))


def test_references_keep_every_item_in_order(libs: dict[str, Path], tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    (tmp_path / "libref.so").write_bytes(libs["unprefixed_shim"].read_bytes())
    against = ("torch", "torch-2.13.0+cpu", "libref.so")
    got = gate._references(GateSettings(against=against), tmp_path, TorchLocation(site, "test"), "x")
    assert len(got) == 3
    assert got[0] == str(site / "torch" / "lib") and got[1].endswith("torch-2.13.0+cpu.json.gz")
    assert got[2] == str(tmp_path / "libref.so")


def test_a_project_file_named_like_a_snapshot_is_that_file(libs: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "torch-2.13.0+cpu").write_bytes(libs["unprefixed_shim"].read_bytes())
    got = gate._references(GateSettings(against=("torch-2.13.0+cpu",)), tmp_path, None, "x")
    assert got == (str(tmp_path / "torch-2.13.0+cpu"),)


def test_a_broken_member_is_named_by_its_member_path(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "libbad.so").write_bytes(b"\x7fELF" + b"\x02\x01\x01" + b"\0" * 9 + b"junk")
    with pytest.raises(InputError, match=r"^pkg/libbad.so: "):
        gate.carried_prefix(("pkg/libbad.so",), tmp_path)


def test_check_wheel_lists_every_member_of_each_role(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {
            "pkg/a.so": libs["clean_shim"], "pkg/b.so": libs["clean_shim"],
            "pkg/e1.so": libs["extension"], "pkg/e2.so": libs["extension"],
            "pkg/p1.so": libs["plain"], "pkg/p2.so": libs["plain"],
        },
    )
    with pytest.raises(BuildRejected):  # the two copies of the shim are each other's duplicate definers
        _check(wheel, tmp_path)
    out = capsys.readouterr().out
    assert "  shims: pkg/a.so, pkg/b.so\n" in out
    assert "  models and other shim-ABI consumers: -\n" in out
    assert "no AOTInductor model): pkg/e1.so, pkg/e2.so\n" in out
    assert "  not checked (no aoti_torch_* names): pkg/p1.so, pkg/p2.so\n" in out


def test_check_wheel_by_globs_names_what_they_left_out(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {
            "pkg/lib/a.so": libs["clean_shim"],
            "pkg/m1.so": libs["good_model"],
            "pkg/m2.so": libs["good_model"],
            "pkg/x.so": libs["plain"],
        },
    )
    _check(wheel, tmp_path, shims=("pkg/lib/*",), models=("pkg/m*",))
    out = capsys.readouterr().out
    assert "  models and other shim-ABI consumers: pkg/m1.so, pkg/m2.so\n" in out
    assert "  not checked (no aoti_torch_* names): pkg/x.so\n" in out
    # The members a glob does not match are classified by their symbols: the shim is checked.
    _check(wheel, tmp_path, models=("pkg/m*",))
    out = capsys.readouterr().out
    assert "  shims: pkg/lib/a.so\n" in out and "  not checked (no aoti_torch_* names): pkg/x.so\n" in out


def test_a_pinned_shims_list_leaves_no_other_shim_unchecked(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # shims = ["pkg/lib/*"] pins the real shims; an unprefixed shim elsewhere in the wheel still
    # fails the build (at f562a93 it was "not checked" and the wheel was published).
    wheel = make_wheel(
        tmp_path / "pkg-1.0-py3-none-any.whl",
        {"pkg/lib/a.so": libs["clean_shim"], "pkg/other/libsneaky.so": libs["unprefixed_shim"]},
    )
    with pytest.raises(BuildRejected):
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"), shims=("pkg/lib/*",))
    out = capsys.readouterr().out
    assert "  shims: pkg/lib/a.so, pkg/other/libsneaky.so\n" in out
    assert "UNPREFIXED_EXPORT" in out


@pytest.mark.parametrize("where", ["relative", "absolute", "inline"])
def test_check_wheel_applies_the_projects_suppressions(libs: dict[str, Path], tmp_path: Path, where: str) -> None:
    wheel = make_wheel(tmp_path / "dist" / "pkg-1.0-py3-none-any.whl", {"pkg/libhalf.so": libs["half_prefixed_shim"]})
    entry = {
        "rule": "UNPREFIXED_EXPORT",
        "symbol": "aoti_torch_delete_*",
        "artifact": "pkg/libhalf.so",
        "reason": "old loader",
    }
    table = "[[suppress]]\n" + "".join(f'{k} = "{v}"\n' for k, v in entry.items())
    (tmp_path / "sup.toml").write_text(table)
    if where == "inline":
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"), suppress=(entry,))
    else:
        path = "sup.toml" if where == "relative" else str(tmp_path / "sup.toml")
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"), suppressions=path)


def test_check_wheel_names_members_not_temp_files(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libhalf.so": libs["half_prefixed_shim"]})
    with pytest.raises(BuildRejected):
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"))
    out = capsys.readouterr()
    table = out.out + out.err
    assert "pkg/libhalf.so" in table and "aoti-shim-gate-" not in table and "UNPREFIXED_EXPORT" in table


def test_check_wheel_settles_the_prefix_from_the_built_shims(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libzz.so": libs["other_prefix_shim"]})
    with pytest.raises(
        BuildRejected, match=r"^the built shims in pkg-1.0-py3-none-any.whl carry the prefix 'zz_', not 'myrt_'"
    ):
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"))


def test_check_wheel_uses_the_torch_found_before_the_build(libs: dict[str, Path], tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "torch" / "lib" / "libtorch_cpu.so").write_bytes(libs["unprefixed_shim"].read_bytes())
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libbad.so": libs["unprefixed_shim"]})
    with pytest.raises(
        BuildRejected, match=r"^4 blocking finding"
    ):  # 2 COLLISIONs with that torch, 2 UNPREFIXED_EXPORTs
        gate.check_wheel(
            wheel,
            PrefixChoice(None, "not set"),
            GateSettings(against=("torch",)),
            tmp_path,
            TorchLocation(site, "test"),
        )
    with pytest.raises(UsageError, match=r"^-C aoti-shim.against: reference 'nope.so' does not exist"):
        gate.check_wheel(
            wheel,
            PrefixChoice(None, "not set"),
            GateSettings(against=("nope.so",)),
            tmp_path,
            against_source="-C aoti-shim.against",
        )


def test_check_wheel_names_a_broken_member_and_leaves_non_dynamic_members_unchecked(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = make_wheel(
        tmp_path / "a" / "pkg-1.0-py3-none-any.whl", {"pkg/libbad.so": b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"junk"}
    )
    with pytest.raises(InputError, match=r"^pkg/libbad.so: "):
        _check(broken, tmp_path)
    (tmp_path / "obj.c").write_text("int f(void) { return 1; }\n")
    compile_object(tmp_path / "obj.c", tmp_path / "obj.o")
    wheel = make_wheel(
        tmp_path / "b" / "pkg-1.0-py3-none-any.whl", {"pkg/a.o": tmp_path / "obj.o", "pkg/model.so": libs["good_model"]}
    )
    _check(wheel, tmp_path)
    out = capsys.readouterr().out
    assert "  shims: -\n" in out and "  models and other shim-ABI consumers: pkg/model.so\n" in out
    assert "  not checked (no aoti_torch_* names): pkg/a.o\n" in out


def test_check_wheel_colours_its_table_when_asked(
    libs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libhalf.so": libs["half_prefixed_shim"]})
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    with pytest.raises(BuildRejected):
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"))
    out = capsys.readouterr()
    assert "\x1b[" in out.out + out.err
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("NO_COLOR", "1")
    with pytest.raises(BuildRejected):
        _check(wheel, tmp_path, PrefixChoice("myrt_", "x"))
    out = capsys.readouterr()
    assert "\x1b[" not in out.out + out.err


def test_the_report_setting_keeps_the_table_and_the_verdict(libs: dict[str, Path], tmp_path: Path) -> None:
    # pip hides the backend's output on success: the report file is where the verdict stays.
    good = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libshim.so": libs["clean_shim"]})
    _check(good, tmp_path, report="out/report.txt")
    text = (tmp_path / "out" / "report.txt").read_text()
    assert text.endswith(
        "OK: 0 blocking, 0 warning(s), 0 suppressed; no collision with libtorch judged (no --against: add --against "
        "torch or a snapshot)\n"
        "pkg-1.0-py3-none-any.whl: passed the check of 1 shim library and 0 models, against no torch (against = []: "
        "prefixes only)\n"
    ), text
    bad = make_wheel(tmp_path / "bad-1.0-py3-none-any.whl", {"pkg/libhalf.so": libs["half_prefixed_shim"]})
    with pytest.raises(BuildRejected):
        _check(bad, tmp_path, PrefixChoice("myrt_", "x"), report=str(tmp_path / "bad.txt"))
    text = (tmp_path / "bad.txt").read_text()
    assert "UNPREFIXED_EXPORT" in text
    assert text.endswith(
        "1 blocking finding(s) in bad-1.0-py3-none-any.whl: the wheel was deleted; nothing is installed\n"
    )


def test_library_path_is_where_the_deployment_keeps_a_needed_library(libs: dict[str, Path], tmp_path: Path) -> None:
    # A shim needing a library no run path finds cannot load (LOAD_FAILURE) unless the
    # project names the deployment's folder, as check --library-path does.
    (tmp_path / "dep.c").write_text(f"{EXPORT} int helper(void) {{ return 1; }}\n")
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    compile_shared(tmp_path / "dep.c", deploy / "libdeploydep.so")
    (tmp_path / "shim.c").write_text(
        f"extern int helper(void); {EXPORT} int myrt_aoti_torch_device_type_cpu(void) {{ return helper() - 1; }}\n"
    )
    shim = tmp_path / "libneedy.so"
    compile_shared(tmp_path / "shim.c", shim, (f"-L{deploy}", "-ldeploydep"))
    wheel = make_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {"pkg/libneedy.so": shim})
    with pytest.raises(BuildRejected) as err:
        _check(wheel, tmp_path)
    assert err.value.exit_code == 8
    _check(wheel, tmp_path, library_path=("deploy",))
    with pytest.raises(UsageError) as bad:
        _check(wheel, tmp_path, library_path=("nowhere",))
    assert str(bad.value) == f"[tool.aoti-shim] library-path 'nowhere': {tmp_path / 'nowhere'} is not a folder"
