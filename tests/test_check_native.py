"""``aoti-shim check`` on Mach-O and PE inputs, end to end: the command line, its exit codes
and every report format, on triples built by tests/native_fixtures.py (about 5 s)."""

from __future__ import annotations

import json
import re
import struct
import zipfile
from importlib import resources
from pathlib import Path

import jsonschema
import lief
import pytest

from aoti_shim.checks.check.native import one_format
from aoti_shim.checks.inputs.collect import Artifact
from aoti_shim.errors import UsageError
from cli_support import cli
from compile_support import compile_shared
from native_fixtures import PREFIX, Triple, build, draw, expected
from torch_native_fixtures import dll, dylib

# Seeds whose draw holds a finding of each kind the command must carry (a flat unprefixed
# import, an absolute load; a torch_cpu.dll import).
MACHO_SEED, PE_SEED = 3700, 3700


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Triple, dict[str, Path]]]:
    out = tmp_path_factory.mktemp("native-check")
    clean = Triple("macho", "arm64", (f"{PREFIX}aoti_torch_c",), None, (("aoti_torch_c", "ok"),), False, False, None,
                   ("aoti_torch_c",))
    drawn = {"macho": draw(MACHO_SEED, "macho"), "pe": draw(PE_SEED, "pe"), "clean": clean}
    return {key: (t, build(t, out / key)) for key, t in drawn.items()}


def _args(files: dict[str, Path]) -> list[str]:
    shims = [a for k in ("shim", "shim2") if k in files for a in ("--shim", str(files[k]))]
    return [*shims, "--model", str(files["blob"]), "--against", str(files["torch"])]


@pytest.mark.parametrize("fmt", ["macho", "pe"])
def test_json_report_holds_the_findings_the_triple_was_built_to_hold(built, fmt: str) -> None:
    t, files = built[fmt]
    done = cli("check", *_args(files), "--format", "json")
    assert done.returncode == 8, done.stderr
    doc = json.loads(done.stdout)
    schema = json.loads(resources.files("aoti_shim.checks").joinpath("schemas/report-v1.schema.json").read_text())
    jsonschema.validate(doc, schema)
    role = {str(p): k for k, p in files.items()}
    assert {(f["rule"], role[f["artifact"]], f["symbol"]) for f in doc["findings"]} == expected(t)
    assert doc["prefix"] == PREFIX


def test_a_clean_macho_triple_passes(built) -> None:
    _, files = built["clean"]
    done = cli("check", *_args(files))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout


@pytest.mark.parametrize("form", ["text", "sarif", "junit", "github"])
def test_every_format_reports_a_native_check(built, form: str, tmp_path: Path) -> None:
    _, files = built["pe"]
    done = cli("check", *_args(files), "--format", form, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "s.md"),
                                                              "PATH": "/usr/bin:/bin"})
    assert done.returncode == 8 and "BINDS_OUTSIDE_SHIMS" in done.stdout, done.stdout + done.stderr


def test_a_mix_of_formats_is_one_usage_line_naming_the_files(built, tmp_path: Path) -> None:
    source = tmp_path / "s.c"
    source.write_text("int myrt_aoti_torch_e(void) { return 0; }\n")
    elf = tmp_path / "libe.so"
    compile_shared(source, elf)
    _, files = built["macho"]
    done = cli("check", "--shim", str(elf), "--model", str(files["blob"]))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert "one format at a time" in line and f"ELF: {elf}" in line and f"Mach-O: {files['blob']}" in line
    with pytest.raises(UsageError, match=r"ELF: a.so; Mach-O: b, c, d and 1 more; PE: e.dll"):
        one_format([Artifact("a.so", "a.so"), *(Artifact(n, n, format="macho") for n in "bcdf"),
                    Artifact("e.dll", "e.dll", format="pe")])


@pytest.mark.parametrize("cut", [3, 40, 300])
def test_a_truncated_image_is_one_error_line(built, tmp_path: Path, cut: int) -> None:
    for fmt in ("macho", "pe"):
        data = built[fmt][1]["shim"].read_bytes()
        bad = tmp_path / f"bad-{fmt}{built[fmt][1]['shim'].suffix}"
        bad.write_bytes(data[:cut])
        done = cli("check", "--shim", str(bad))
        assert done.returncode in (1, 2) and len(done.stderr.splitlines()) == 1, (fmt, cut, done.stderr)
        assert "Traceback" not in done.stderr


def test_wheel_members_and_a_reference_folder_are_read(built, tmp_path: Path) -> None:
    t, files = built["macho"]
    wheels = {"shim": tmp_path / "myrt-1.0-py3-none-macosx_11_0_arm64.whl",
              "blob": tmp_path / "model-1.0-py3-none-macosx_11_0_arm64.whl"}
    member = {"shim": "myrt/libmyrt_shims.dylib", "blob": "model/model.so"}  # a bundle's name: read by its magic
    for key, wheel in wheels.items():
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.write(files[key], member[key])
            zf.writestr(f"{member[key].split('/')[0]}/__init__.py", "")
    refs = tmp_path / "torch-lib"
    refs.mkdir()
    (refs / "libtorch_cpu.dylib").write_bytes(files["torch"].read_bytes())
    (refs / "README").write_text("not a library\n")
    done = cli("check", "--shim", str(wheels["shim"]), "--model", str(wheels["blob"]), "--against", str(refs),
               "--format", "json")
    assert done.returncode == 8, done.stderr
    by_wheel = {str(w): k for k, w in wheels.items()}
    findings = json.loads(done.stdout)["findings"]
    found = {(f["rule"], by_wheel[f["artifact"].split("!")[0]], f["symbol"]) for f in findings}
    # The triple's findings, less what its second shim library (not in the wheel) adds.
    assert found == {f for f in expected(t) if f[1] != "shim2"}


def test_the_check_docs_name_every_rule_the_native_model_judges() -> None:
    from aoti_shim.checks.rules.table import RULES

    docs = (Path(__file__).parents[1] / "docs" / "reference.md").read_text(encoding="utf-8")
    paragraph = docs[docs.index("**Mach-O and PE.**") :].split("\n\n", 1)[0]
    assert {r.id for r in RULES if r.native is not None} == set(re.findall(r"`([A-Z_]{5,})`", paragraph))


def test_check_wheel_gives_each_native_member_its_role(built, tmp_path: Path) -> None:
    t, files = built["macho"]
    wheel = tmp_path / "myrt-1.0-py3-none-macosx_11_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(files["shim"], "myrt/libmyrt_shims.dylib")
        zf.write(files["blob"], "myrt/model.so")
        zf.write(files["torch"], "myrt/tool.dylib")  # exports libtorch's names: a shim by its symbols
        # A dylib's header whose load commands lie past the end.
        zf.writestr("myrt/fake.so", struct.pack("<8I", 0xFEEDFACF, 0x0100000C, 0, 6, 1, 0x1000, 0x85, 0))
        zf.writestr("myrt/__init__.py", "")
    done = cli("check", "--wheel", str(wheel), "--format", "json")
    (line,) = done.stderr.splitlines()  # the truncated member is one error line
    assert done.returncode == 1 and "fake.so" in line, done.stderr
    clean = tmp_path / "clean" / wheel.name
    clean.parent.mkdir()
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(clean, "w") as zf:
        for info in src.infolist():
            if not info.filename.endswith(("fake.so", "tool.dylib")):
                zf.writestr(info, src.read(info))
    done = cli("check", "--wheel", str(clean), "--format", "json")
    doc = json.loads(done.stdout)
    roles = {a["path"].rsplit("/", 1)[-1]: a["role"] for a in doc["artifacts"]}
    assert roles == {"libmyrt_shims.dylib": "shim", "model.so": "model"}, doc["artifacts"]
    member = {"shim": "libmyrt_shims.dylib", "blob": "model.so"}
    found = {(f["rule"], f["artifact"].rsplit("/", 1)[-1], f["symbol"]) for f in doc["findings"]}
    # Without --against: no COLLISION, and libtorch's install name is torch's by its name alone.
    want = {(r, member[k], s) for r, k, s in expected(t) if k != "shim2" and r != "COLLISION"}
    assert found == want


def test_mutated_images_are_judged_or_refused_in_one_line(built, tmp_path: Path) -> None:
    """Whatever the readers let through, the model judges without a crash: each mutant is a
    report or an InputError (about 1 s for 60 mutants in process)."""
    import random

    import macho_fixtures
    import pe_fixtures
    from aoti_shim.checks import CheckSettings, run_check
    from aoti_shim.errors import InputError

    rng = random.Random(3702)
    outcomes = {"report": 0, "refused": 0}
    for fmt, mutate in (("macho", macho_fixtures.mutate), ("pe", pe_fixtures.mutate)):
        files = built[fmt][1]
        for i in range(30):
            role = rng.choice(("shim", "blob", "torch"))
            data = files[role].read_bytes()
            mutant = tmp_path / f"{fmt}{i}{files[role].suffix}"
            mutant.write_bytes(mutate(data, rng, []))
            paths = {k: str(mutant if k == role else files[k]) for k in ("shim", "blob", "torch")}
            try:
                run_check(CheckSettings(shims=(paths["shim"],), models=(paths["blob"],), against=(paths["torch"],)))
                outcomes["report"] += 1
            except InputError as e:
                assert "\n" not in str(e)
                outcomes["refused"] += 1
    assert outcomes["report"] and outcomes["refused"], outcomes


def test_sarif_and_junit_list_the_rules_a_native_check_can_find(built) -> None:
    import xml.etree.ElementTree as ET

    from aoti_shim.checks.rules.table import ELF_RULES, NATIVE_RULES

    _, files = built["macho"]
    sarif = json.loads(cli("check", *_args(files), "--format", "sarif").stdout)
    described = {r["id"]: r["shortDescription"]["text"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert list(described) == [r.id for r in NATIVE_RULES] and "ABSOLUTE_DEPENDENCY" in described
    assert "LOAD_FAILURE" not in described and described["DUPLICATE_DEFINER"].endswith("to the first loaded copy.")
    assert "ABSOLUTE_DEPENDENCY" not in {r.id for r in ELF_RULES}
    suite = ET.fromstring(cli("check", *_args(files), "--format", "junit").stdout).find("testsuite")
    assert suite is not None and suite.get("tests") == str(len(NATIVE_RULES) * len(files.keys() - {"torch"}))


def test_a_macos_torch_wheel_is_a_reference(built, tmp_path: Path) -> None:
    t, files = built["macho"]
    wheel = tmp_path / "torch-2.13.0-cp311-none-macosx_11_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(files["torch"], "torch/lib/libtorch_cpu.dylib")
        zf.writestr("torch/lib/libtorch_global_deps.dylib", b"not a library")
        zf.writestr("torch/__init__.py", "")
    args = _args(files)
    args[args.index("--against") + 1] = str(wheel)
    doc = json.loads(cli("check", *args, "--format", "json").stdout)
    role = {str(p): k for k, p in files.items()}
    assert {(f["rule"], role[f["artifact"]], f["symbol"]) for f in doc["findings"]} == expected(t)
    (source,) = doc["against"]
    assert (source["torch_version"], source["libraries"]) == ("2.13.0", 1)


@pytest.mark.parametrize("platform", ["macos", "windows"])
def test_a_recorded_macos_or_windows_torch_judges_as_its_wheel_does(native_torches, platform: str,
                                                                   tmp_path: Path) -> None:
    """The snapshot of tests/torch_native_fixtures.py's miniature torch (C names, its format)
    and the wheel itself are one reference: a blob importing libtorch's
    aoti_torch_empty_strided is caught by both, a shim exporting it collides with both."""
    fmt, arch = ("macho", "arm64") if platform == "macos" else ("pe", "x86_64")
    uses = (("aoti_torch_empty_strided", "unprefixed"), ("aoti_torch_k", "ok"))
    t = Triple(fmt, arch, (f"{PREFIX}aoti_torch_k", "aoti_torch_empty_strided"), None, uses, False, False, None,
               ("aoti_torch_empty_strided",))
    files = build(t, tmp_path / "triple")
    _, wheel = native_torches[platform]
    snapshot = tmp_path / "torch.json.gz"
    recorded = cli("snapshot", str(wheel), "-o", str(snapshot))
    assert recorded.returncode == 0, recorded.stderr
    found = {}
    for against in (wheel, snapshot):
        done = cli("check", "--shim", str(files["shim"]), "--model", str(files["blob"]), "--against", str(against),
                   "--format", "json")
        role = {str(p): k for k, p in files.items()}
        found[against.suffix] = {(f["rule"], role[f["artifact"]], f["symbol"])
                                 for f in json.loads(done.stdout)["findings"]}
    assert found[".whl"] == found[".gz"] == expected(t)


def test_a_shim_without_shim_names_keeps_the_prefix_from_the_models(tmp_path: Path) -> None:
    """Given a --shim, the prefix is the shims' to say (none here), never the models': the
    prefix rule the native route shares with ELF keeps main's answer for ELF."""
    from aoti_shim.checks import CheckSettings, run_check

    source = tmp_path / "s.c"
    source.write_text("int helper(void) { return 0; }\n")
    model = tmp_path / "m.c"
    model.write_text("extern int myrt_aoti_torch_q(void);\nint f(void) { return myrt_aoti_torch_q(); }\n")
    compile_shared(source, tmp_path / "libs.so")
    compile_shared(model, tmp_path / "libm.so")
    elf = run_check(CheckSettings(shims=(str(tmp_path / "libs.so"),), models=(str(tmp_path / "libm.so"),)))
    assert elf.prefix_source == "none"
    assert "NOT_A_SHIM" in {f.rule for f in elf.findings}


def test_a_dll_in_a_linux_or_macos_wheel_is_not_of_its_platform(built, tmp_path: Path) -> None:
    from aoti_shim.checks.inputs.collect import Workspace, collect, wheel_platform_format

    source = tmp_path / "s.c"
    source.write_text("int myrt_aoti_torch_e(void) { return 0; }\n")
    compile_shared(source, tmp_path / "libs.so")
    dll, dylib = built["pe"][1]["shim"], built["macho"][1]["shim"]
    wheels = {"myrt-1.0-py3-none-manylinux_2_28_x86_64.whl": ("libs.so", "elf"),
              "myrt-1.0-py3-none-macosx_11_0_arm64.whl": ("libmyrt_shims.dylib", "macho")}
    for name, (kept, fmt) in wheels.items():
        wheel = tmp_path / name
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.write(tmp_path / "libs.so" if fmt == "elf" else dylib, f"myrt/{kept}")
            zf.write(dll, "myrt/tools/helper.dll")
        with Workspace() as ws:
            arts = collect([str(wheel)], ws)
            assert [(a.display.rsplit("/", 1)[-1], a.format) for a in arts] == [(kept, fmt)]
            assert ws.ignored == [(f"{wheel}!myrt/tools/helper.dll", "pe library, not of the wheel's platform")]
    assert [wheel_platform_format(f"x-1-py3-none-{t}.whl") for t in ("win_amd64", "macosx_14_0_arm64", "any")] == [
        "pe", "macho", None]
    # check --wheel too: the Linux wheel's DLL (it exports shim names) takes no role.
    done = cli("check", "--wheel", str(tmp_path / "myrt-1.0-py3-none-manylinux_2_28_x86_64.whl"), "--format", "json")
    assert [a["path"].rsplit("/", 1)[-1] for a in json.loads(done.stdout)["artifacts"]] == ["libs.so"], done.stderr


@pytest.fixture(scope="module")
def forwarding(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """torch_cpu.dll (aoti_torch_a, aoti_torch_c); myrt_shims.dll defining myrt_aoti_torch_b and
    forwarding myrt_aoti_torch_a to torch_cpu.aoti_torch_a, myrt_aoti_torch_c to torch_cpu's
    ordinal 2 and myrt_aoti_torch_d to myrt_more.dll's own; a blob importing all four."""
    out = tmp_path_factory.mktemp("forwarders")
    dll(out, "torch_cpu.dll", ["aoti_torch_a", "aoti_torch_c"], {})
    dll(out, "myrt_more.dll", ["myrt_aoti_torch_d"], {})
    forwards = {"myrt_aoti_torch_a": "torch_cpu.aoti_torch_a", "myrt_aoti_torch_c": "torch_cpu.#2",
                "myrt_aoti_torch_d": "myrt_more.myrt_aoti_torch_d"}
    dll(out, "myrt_shims.dll", ["myrt_aoti_torch_b"], {}, forwards=forwards)
    dll(out, "blob.dll", ["AOTInductorModelContainerCreate"], {"myrt_shims.dll": [
        "myrt_aoti_torch_a", "myrt_aoti_torch_b", "myrt_aoti_torch_c", "myrt_aoti_torch_d"]})
    return out


@pytest.mark.parametrize("against", [True, False])
def test_a_shim_dll_forwarding_a_shim_name_into_torch_binds_outside_the_shims(forwarding: Path, against: bool) -> None:
    """The loader resolves a forwarder in the DLL it names ("PE Format", Export Address Table:
    a forwarder RVA): an import of myrt_aoti_torch_a from the shims binds to torch_cpu.dll's
    aoti_torch_a. A forward into another checked shim DLL (myrt_more.dll) is no finding."""
    shims = ["--shim", str(forwarding / "myrt_shims.dll"), "--shim", str(forwarding / "myrt_more.dll")]
    reference = ["--against", str(forwarding / "torch_cpu.dll")] if against else []
    done = cli("check", *shims, "--model", str(forwarding / "blob.dll"), *reference, "--format", "json")
    assert done.returncode == 8, done.stdout + done.stderr
    found = {(f["rule"], Path(f["artifact"]).name, f["symbol"]) for f in json.loads(done.stdout)["findings"]}
    assert found == {("BINDS_OUTSIDE_SHIMS", "myrt_shims.dll", "aoti_torch_a"),
                     ("BINDS_OUTSIDE_SHIMS", "myrt_shims.dll", "myrt_aoti_torch_c")}, done.stdout
    assert "forwarded export 'myrt_aoti_torch_a'" in done.stdout


@pytest.fixture(scope="module")
def reexporting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A blob linked against a stand-in libmyrt_shims.dylib defining aoti_torch_a and
    myrt_aoti_torch_b (both two-level imports from @rpath/libmyrt_shims.dylib), and the shim
    dylib shipped in its place: it defines myrt_aoti_torch_b alone and re-exports
    @rpath/libtorch_cpu.dylib (an LC_REEXPORT_DYLIB, added by LIEF: zig's linker has no
    -reexport_library). About 1 s of zig."""
    out = tmp_path_factory.mktemp("reexports")
    dylib(out, "libtorch_cpu.dylib", "int aoti_torch_a(int x) { return x; }\n")
    (out / "stand").mkdir()
    stand = dylib(out / "stand", "libmyrt_shims.dylib",
                  "int aoti_torch_a(int x) { return x; }\nint myrt_aoti_torch_b(int x) { return x; }\n")
    dylib(out, "blob.dylib", "extern int aoti_torch_a(int);\nextern int myrt_aoti_torch_b(int);\n"
          "int AOTInductorModelContainerCreate(int x) { return aoti_torch_a(x) + myrt_aoti_torch_b(x); }\n", str(stand))
    shim = dylib(out, "libmyrt_shims.dylib", "int myrt_aoti_torch_b(int x) { return x; }\n")
    binary = lief.MachO.parse(str(shim)).at(0)
    binary.add(lief.MachO.DylibCommand.reexport_dylib("@rpath/libtorch_cpu.dylib"))
    binary.write(str(shim))
    return out


@pytest.mark.parametrize("against", [True, False])
def test_a_two_level_import_reaches_what_the_shim_dylib_re_exports(reexporting: Path, against: bool) -> None:
    """dyld looks a two-level name up in the image of its install name "and in what it
    re-exports" (LC_REEXPORT_DYLIB, <mach-o/loader.h>): the blob's aoti_torch_a, bound to
    @rpath/libmyrt_shims.dylib, binds to libtorch_cpu's through the shim's re-export."""
    reference = ["--against", str(reexporting / "libtorch_cpu.dylib")] if against else []
    done = cli("check", "--shim", str(reexporting / "libmyrt_shims.dylib"), "--model", str(reexporting / "blob.dylib"),
               *reference, "--format", "json")
    assert done.returncode == 8, done.stdout + done.stderr
    found = {(f["rule"], Path(f["artifact"]).name, f["symbol"]) for f in json.loads(done.stdout)["findings"]}
    assert found == {("BINDS_OUTSIDE_SHIMS", "blob.dylib", "aoti_torch_a")}, done.stdout
    assert "re-exports" in done.stdout


def test_a_shim_dll_is_loaded_by_its_file_name_not_its_export_directorys(tmp_path: Path) -> None:
    """The loader finds a DLL by file name and knows a loaded module by its base name ("Dynamic-
    link library search order"); the export directory's Name is the link-time name, read by no
    loader. A shim linked as myrt_shims.dll and shipped as other_shims.dll does not serve a
    blob importing from myrt_shims.dll (another file of that name does, or none), and the
    shipped name is the one that serves."""
    (tmp_path / "ship").mkdir()
    dll(tmp_path, "myrt_shims.dll", ["myrt_aoti_torch_b"], {})
    shipped = (tmp_path / "myrt_shims.dll").rename(tmp_path / "ship" / "other_shims.dll")
    dll(tmp_path, "blob.dll", ["AOTInductorModelContainerCreate"], {"myrt_shims.dll": ["myrt_aoti_torch_b"]})
    dll(tmp_path, "blob2.dll", ["AOTInductorModelContainerCreate"], {"other_shims.dll": ["myrt_aoti_torch_b"]})
    done = cli("check", "--shim", str(shipped), "--model", str(tmp_path / "blob.dll"), "--format", "json")
    assert done.returncode == 8, done.stdout + done.stderr
    found = {(f["rule"], f["symbol"]) for f in json.loads(done.stdout)["findings"]}
    assert found == {("UNSATISFIED_IMPORT", "myrt_aoti_torch_b")}, done.stdout
    done = cli("check", "--shim", str(shipped), "--model", str(tmp_path / "blob2.dll"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_import_by_ordinal_binds_to_the_name_of_that_ordinal(tmp_path: Path) -> None:
    """An import by ordinal binds to the export address of that ordinal in the DLL it names
    ("PE Format", the Import Lookup Table's ordinal bit): ordinal 1 of this torch_cpu.dll is
    aoti_torch_a, so the blob takes libtorch's shim with no name in its import table."""
    dll(tmp_path, "torch_cpu.dll", ["aoti_torch_a", "at_cpu"], {})
    dll(tmp_path, "myrt_shims.dll", ["myrt_aoti_torch_b"], {})
    dll(tmp_path, "blob.dll", ["AOTInductorModelContainerCreate"],
        {"torch_cpu.dll": ["aoti_torch_a"], "myrt_shims.dll": ["myrt_aoti_torch_b"]}, ordinals={"aoti_torch_a": 1})
    done = cli("check", "--shim", str(tmp_path / "myrt_shims.dll"), "--model", str(tmp_path / "blob.dll"),
               "--against", str(tmp_path / "torch_cpu.dll"), "--format", "json")
    assert done.returncode == 8, done.stdout + done.stderr
    found = {(f["rule"], f["symbol"]) for f in json.loads(done.stdout)["findings"]}
    assert found == {("BINDS_OUTSIDE_SHIMS", "aoti_torch_a")}, done.stdout
    assert "by ordinal 1" in done.stdout


@pytest.mark.parametrize(("dll_name", "said"), [
    ("myrt_shims.dll", "which does not export it"),
    ("other_rt.dll", "which is no checked shim library nor torch's"),
])
def test_an_unprefixed_import_named_in_no_torch_dll_is_still_unprefixed(tmp_path: Path, dll_name: str,
                                                                         said: str) -> None:
    """Every PE import names its DLL ("PE Format", the import directory): a blob's unprefixed
    aoti_torch_a from the shim DLL that lacks it fails the load; from another runtime's DLL it
    binds to that runtime's unprefixed shims. Neither is the prefixed build the check proves."""
    dll(tmp_path, "myrt_shims.dll", ["myrt_aoti_torch_b"], {})
    imports = {"myrt_shims.dll": ["myrt_aoti_torch_b"]}
    imports.setdefault(dll_name, []).append("aoti_torch_a")
    dll(tmp_path, "blob.dll", ["AOTInductorModelContainerCreate"], imports)
    done = cli("check", "--shim", str(tmp_path / "myrt_shims.dll"), "--model", str(tmp_path / "blob.dll"),
               "--format", "json")
    assert done.returncode == 8, done.stdout + done.stderr
    (finding,) = json.loads(done.stdout)["findings"]
    assert (finding["rule"], finding["symbol"]) == ("UNPREFIXED_IMPORT", "aoti_torch_a")
    assert said in finding["message"], finding["message"]
