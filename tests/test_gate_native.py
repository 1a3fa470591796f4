"""The backend's gate (plugin/gate.py's check_wheel, as aoti_shim.build calls it after the
build) on macOS and Windows wheels: members are Mach-O dylibs and PE DLLs that zig builds
here (tests/native_fixtures.py), the wheels carry a macosx_* or win_* platform tag, and the
reference is the build environment's torch (a lib/ of dylibs or DLLs) or a snapshot named
in [tool.aoti-shim]. We cannot run dyld or the Windows loader: this is the gate's decision
as it would run there. Four triples, about 3 s of zig in all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aoti_shim.checks.snapshot import record
from aoti_shim.errors import EXIT_BLOCKING
from aoti_shim.plugin import gate
from aoti_shim.plugin.gate import BuildRejected
from aoti_shim.plugin.prefix import PrefixChoice
from aoti_shim.plugin.settings import GateSettings
from aoti_shim.torch_location import TorchLocation
from native_fixtures import PREFIX, Triple, build
from wheel_support import make_wheel

ASKED = PrefixChoice(PREFIX, "[tool.aoti-shim] prefix")  # what the backend passes for `prefix = "myrt_"`
TORCH_NAMES = ("aoti_torch_a", "aoti_torch_b")
PLATFORMS = {
    # platform: (format, arch, wheel tag, shim member, model member, torch's library name)
    "macos": ("macho", "arm64", "macosx_11_0_arm64", "myrt/libmyrt_shims.dylib", "myrt/model.so",
              "libtorch_cpu.dylib"),
    "windows": ("pe", "x86_64", "win_amd64", "myrt/myrt_shims.dll", "myrt/model.pyd", "torch_cpu.dll"),
}


def _triples(fmt: str, arch: str) -> dict[str, Triple]:
    """clean: prefixed shims and a blob importing them; bad: a shim exporting an unprefixed
    name too, and a blob importing aoti_torch_a unprefixed (flat on macOS, from torch_cpu.dll
    on Windows) and, on Windows, the prefixed aoti_torch_b from torch_cpu.dll."""
    prefixed = tuple(PREFIX + n for n in TORCH_NAMES)
    bad_uses = (("aoti_torch_a", "unprefixed"), ("aoti_torch_b", "ok" if fmt == "macho" else "torch_prefixed"))
    return {
        "clean": Triple(fmt, arch, prefixed, None, tuple((n, "ok") for n in TORCH_NAMES), False, False, None,
                        TORCH_NAMES),
        "bad": Triple(fmt, arch, (*prefixed, "aoti_torch_a"), None, bad_uses, False, False, None, TORCH_NAMES),
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Path]]]:
    out = tmp_path_factory.mktemp("gate-native")
    return {
        platform: {key: build(t, out / platform / key) for key, t in _triples(fmt, arch).items()}
        for platform, (fmt, arch, *_) in PLATFORMS.items()
    }


def _wheel(tmp_path: Path, platform: str, shim: Path, model: Path) -> Path:
    _, _, tag, shim_member, model_member, _ = PLATFORMS[platform]
    return make_wheel(tmp_path / f"myrt-0.1.0-cp311-cp311-{tag}.whl",
                      {shim_member: shim, model_member: model, "myrt/__init__.py": b""})


def _torch(site: Path, platform: str, library: Path) -> TorchLocation:
    """A build environment's torch on that platform: torch/lib/ holds its dylibs or DLLs."""
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    shutil.copyfile(library, lib / PLATFORMS[platform][5])
    (site / "torch" / "version.py").write_text("__version__ = '9.9.0'\n")
    return TorchLocation(site, "the test's site")


def _gate(tmp_path: Path, platform: str, shim: Path, model: Path, torch_library: Path,
          against: tuple[str, ...] = ("torch",)) -> tuple[BuildRejected | None, str]:
    """check_wheel's outcome with the settings the backend passes, and the report it kept."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    wheel = _wheel(tmp_path, platform, shim, model)
    torch = _torch(tmp_path / "site", platform, torch_library)
    try:
        gate.check_wheel(wheel, ASKED, GateSettings(against=against), project, torch,
                         against_source="[tool.aoti-shim] against")
        rejected = None
    except BuildRejected as e:
        rejected = e
    return rejected, (project / gate.DEFAULT_REPORT).read_text()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_prefixed_shims_and_blob_pass_against_the_platforms_torch(built, tmp_path: Path, platform: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    files = built[platform]["clean"]
    rejected, report = _gate(tmp_path, platform, files["shim"], files["blob"], files["torch"])
    assert rejected is None, report
    _, _, _, shim_member, model_member, _ = PLATFORMS[platform]
    printed = capsys.readouterr().out
    assert f"shims: {shim_member}" in printed and f"models and other shim-ABI consumers: {model_member}" in printed
    assert "members, by its platform tag" in printed
    assert report.splitlines()[-1].endswith("passed the check of 1 shim library and 1 model against torch 9.9.0")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_unprefixed_shim_export_blocks_the_wheel(built, tmp_path: Path, platform: str) -> None:
    bad, clean = built[platform]["bad"], built[platform]["clean"]
    rejected, report = _gate(tmp_path, platform, bad["shim"], clean["blob"], clean["torch"])
    assert rejected is not None and rejected.exit_code == EXIT_BLOCKING, report
    assert "UNPREFIXED_EXPORT" in report and "COLLISION" in report and "aoti_torch_a" in report
    assert str(rejected).endswith("the wheel was deleted; nothing is installed")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_blob_importing_shim_names_from_torch_blocks_the_wheel(built, tmp_path: Path, platform: str) -> None:
    """macOS: aoti_torch_a by flat lookup (libtorch, loaded first, binds it); Windows: from
    torch_cpu.dll by name, unprefixed and prefixed."""
    bad, clean = built[platform]["bad"], built[platform]["clean"]
    rejected, report = _gate(tmp_path, platform, clean["shim"], bad["blob"], clean["torch"])
    assert rejected is not None and rejected.exit_code == EXIT_BLOCKING, report
    if platform == "macos":
        assert "UNPREFIXED_IMPORT" in report and "BINDS_OUTSIDE_SHIMS" not in report and "'aoti_torch_a'" in report
    else:
        for name in ("aoti_torch_a", f"{PREFIX}aoti_torch_b"):
            assert f"imports {name!r} from torch_cpu.dll" in report
        assert "BINDS_OUTSIDE_SHIMS" in report and "FAILED: 2 blocking" in report
    assert "UNPREFIXED_EXPORT" not in report


def test_a_snapshot_named_in_the_table_is_the_reference(built, tmp_path: Path) -> None:
    """The snapshot of a macOS torch (recorded here as `aoti-shim snapshot` records one), named
    by a path relative to the project, judges the wheel as the torch itself does."""
    clean, bad = built["macos"]["clean"], built["macos"]["bad"]
    torch = tmp_path / "mac-torch" / "lib"
    torch.mkdir(parents=True)
    shutil.copyfile(clean["torch"], torch / "libtorch_cpu.dylib")
    doc = record.capture(torch, "9.9.0", with_tests=True)
    for run in ("ok", "bad"):
        (tmp_path / run / "project").mkdir(parents=True)
        record.write(doc, tmp_path / run / "project" / "torch-mac.json.gz")
    against = ("torch-mac.json.gz",)
    rejected, report = _gate(tmp_path / "ok", "macos", clean["shim"], clean["blob"], clean["torch"], against)
    assert rejected is None, report
    rejected, report = _gate(tmp_path / "bad", "macos", bad["shim"], clean["blob"], clean["torch"], against)
    assert rejected is not None and "COLLISION" in report and "UNPREFIXED_EXPORT" in report


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_prefix_is_read_from_the_native_shims_c_names(built, tmp_path: Path, platform: str) -> None:
    """A Mach-O symbol's leading underscore is no part of the prefix; a prefix the shims do not
    carry rejects the wheel, as for ELF."""
    files = built[platform]["clean"]
    wheel = _wheel(tmp_path, platform, files["shim"], files["blob"])
    root = tmp_path / "root"
    members = gate.extract_members(wheel, root)
    assert members == [PLATFORMS[platform][3], PLATFORMS[platform][4]]
    assert gate.carried_prefix((PLATFORMS[platform][3],), root) == PREFIX
    (tmp_path / "project").mkdir()
    with pytest.raises(BuildRejected, match=r"carry the prefix 'myrt_', not 'zz_'"):
        gate.check_wheel(wheel, PrefixChoice("zz_", "-C aoti-shim.prefix"), GateSettings(against=()),
                         tmp_path / "project")
