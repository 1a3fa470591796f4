"""The checker on real ELF files built from fixtures/checker/, and on the installed libtorch."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from aoti_shim.checks import CheckSettings, render, run_check
from aoti_shim.checks.elf.image import ElfImage
from aoti_shim.checks.elf.layout import STB_GNU_UNIQUE, STT_TLS
from aoti_shim.checks.rules.table import ELF_RULES
from aoti_shim.cli import main
from cli_support import CLI, cli
from compile_support import compile_shared
from elf_fixtures import nm_exports

# -P: never import the source tree that sits in the current folder instead of the installed package.


def findings(report) -> set[tuple[str, str, str]]:
    return {(f.rule, Path(f.artifact.split("!")[-1]).name, f.symbol) for f in report.findings}


def test_clean_shim_and_good_model_pass_against_libtorch(checker_libs):
    report = run_check(
        CheckSettings(
            shims=(str(checker_libs["clean_shim"]),), models=(str(checker_libs["good_model"]),), against=("torch",)
        )
    )
    assert report.prefix == "myrt_" and report.prefix_source == "inferred"
    assert report.findings == ()
    assert report.exit_code() == 0
    assert any(r.endswith("libtorch_cpu.so") for r in report.references)


def test_unprefixed_shim_collides_with_libtorch(checker_libs):
    report = run_check(CheckSettings(shims=(str(checker_libs["unprefixed_shim"]),), against=("torch",), prefix="myrt_"))
    assert findings(report) == {
        ("COLLISION", "libunprefixed_shim.so", "aoti_torch_empty_strided"),
        ("COLLISION", "libunprefixed_shim.so", "aoti_torch_get_data_ptr"),
        # No name carries the given prefix: one finding naming the cause (no source included
        # the rename header), not one per name and a PREFIX_MISMATCH besides.
        ("UNPREFIXED_EXPORT", "libunprefixed_shim.so", "aoti_torch_empty_strided"),
    }
    (told,) = [f for f in report.findings if f.rule == "UNPREFIXED_EXPORT"]
    assert "include <aoti_shim_rename.h> first" in told.message
    collision = next(f for f in report.findings if f.rule == "COLLISION")
    assert collision.related.endswith("libtorch_cpu.so")
    assert report.exit_code() == 8


def test_half_prefixed_shim_is_a_partial_rename(checker_libs):
    report = run_check(CheckSettings(shims=(str(checker_libs["half_prefixed_shim"]),)))
    assert report.prefix == "myrt_"
    assert findings(report) == {("UNPREFIXED_EXPORT", "libhalf_prefixed_shim.so", "aoti_torch_delete_tensor_object")}
    assert ("COLLISION", "no --against reference given") in report.skipped_rules


def test_model_rules(checker_libs):
    report = run_check(CheckSettings(shims=(str(checker_libs["clean_shim"]),), models=(str(checker_libs["model"]),)))
    assert findings(report) == {
        ("UNPREFIXED_IMPORT", "libmodel.so", "aoti_torch_get_data_ptr"),
        ("UNSATISFIED_IMPORT", "libmodel.so", "myrt_aoti_torch_cpu_missing_op"),
        ("MODEL_DEFINES_SHIM", "libmodel.so", "myrt_aoti_torch_grad_mode_is_enabled"),
    }


def test_unsatisfied_import_counts_only_prefixed_shim_names(checker_libs, tmp_path):
    source = tmp_path / "short_prefix_model.c"
    source.write_text(
        "#include <string.h>\n"
        "extern int maoti_torch_missing(void);\n"
        "int run(char *d, const char *s, unsigned long n) { memcpy(d, s, n); return maoti_torch_missing(); }\n"
    )
    model = tmp_path / "libshort_prefix_model.so"
    compile_shared(source, model, ("-fno-builtin",))
    with ElfImage(model) as image:
        assert "memcpy" in image.imports()
    report = run_check(CheckSettings(shims=(str(checker_libs["clean_shim"]),), models=(str(model),), prefix="m"))
    unsatisfied = {f.symbol for f in report.findings if f.rule == "UNSATISFIED_IMPORT"}
    assert unsatisfied == {"maoti_torch_missing"}


def test_duplicate_definer_of_shim_and_thread_local(checker_libs):
    with ElfImage(checker_libs["clean_shim"]) as image:
        assert image.exports()["myrt_caller_stream_registry"].type == STT_TLS
    report = run_check(CheckSettings(shims=(str(checker_libs["clean_shim"]), str(checker_libs["second_registry"]))))
    assert findings(report) == {
        ("DUPLICATE_DEFINER", "libsecond_registry.so", "myrt_caller_stream_registry"),
        ("DUPLICATE_DEFINER", "libsecond_registry.so", "myrt_aoti_torch_empty_strided"),
    }


def test_gnu_unique_export_counts_as_a_collision(checker_libs, tmp_path):
    lib = checker_libs["unique_export"]
    with ElfImage(lib) as image:
        unique = [n for n, s in image.exports().items() if s.bind == STB_GNU_UNIQUE]
    assert unique == ["_ZZ12myrt_countervE5count"]
    reference = tmp_path / "libother.so"
    shutil.copy(lib, reference)
    report = run_check(CheckSettings(shims=(str(lib),), against=(str(reference),)))
    assert ("COLLISION", "libunique_export.so", "_ZZ12myrt_countervE5count") in findings(report)


def test_gnu_unique_thread_local_is_not_a_duplicate_definer(checker_libs):
    first, second = checker_libs["unique_tls_a"], checker_libs["unique_tls_b"]
    name = "_ZZ16myrt_stream_slotvE4slot"
    for lib in (first, second):
        with ElfImage(lib) as image:
            sym = image.exports()[name]
            assert (sym.type, sym.bind) == (STT_TLS, STB_GNU_UNIQUE)
    # The loader keeps one instance per process: both libraries share it.
    report = run_check(CheckSettings(shims=(str(first), str(second)), models=(str(checker_libs["good_model"]),)))
    assert not [f for f in report.findings if f.rule == "DUPLICATE_DEFINER"]
    # A plain (GLOBAL) thread-local defined twice still is one.
    with_global = run_check(
        CheckSettings(shims=(str(checker_libs["clean_shim"]), str(checker_libs["second_registry"])))
    )
    assert {f.rule for f in with_global.findings} == {"DUPLICATE_DEFINER"}


def test_stable_abi_extension_is_not_an_aoti_model(checker_libs):
    ext = checker_libs["stable_abi_extension"]
    with ElfImage(ext) as image:
        assert len([n for n in image.imports() if n.startswith("aoti_torch_")]) == 3
    report = run_check(CheckSettings(models=(str(ext),), against=("torch",)))
    (finding,) = report.findings
    assert finding.rule == "NOT_AN_AOTI_MODEL" and finding.severity == "warning"
    assert "3 unprefixed aoti_torch_* import(s)" in finding.message
    assert report.exit_code() == 0
    # A real blob with the same import is still reported.
    blob = run_check(CheckSettings(models=(str(checker_libs["model"]),), prefix="myrt_"))
    assert ("UNPREFIXED_IMPORT", "libmodel.so", "aoti_torch_get_data_ptr") in findings(blob)


def test_shim_with_no_shim_exports_is_said_to_be_one(checker_libs):
    report = run_check(CheckSettings(shims=(str(checker_libs["good_model"]), str(checker_libs["clean_shim"]))))
    assert [(f.rule, Path(f.artifact).name) for f in report.findings] == [("NOT_A_SHIM", "libgood_model.so")]


def test_reexported_cuda_runtime_is_a_warning_and_fatbin_registration_is_not(checker_libs):
    report = run_check(CheckSettings(shims=(str(checker_libs["cuda_runtime_reexport"]),)))
    assert findings(report) == {("REEXPORTED_CUDA_RUNTIME", "libcuda_runtime_reexport.so", "cudaGetDeviceCount")}
    (warning,) = report.findings
    assert warning.severity == "warning" and "exports 2 CUDA runtime symbol(s)" in warning.message
    assert report.exit_code("blocking") == 0 and report.exit_code("any") == 4


def test_reference_shims_with_kernels_have_no_findings():
    # libaoti_shim.so carries a fatbin and imports nvcc's registration calls from libcudart.
    from aoti_shim.paths import shim_library

    with ElfImage(shim_library()) as image:
        assert "__cudaRegisterFatBinary" in image.imports()
    report = run_check(CheckSettings(shims=(str(shim_library()),)))
    assert list(report.findings) == []


def test_reexported_runtime_is_a_warning(checker_libs):
    report = run_check(CheckSettings(shims=(str(checker_libs["runtime_reexport"]),)))
    assert {f.rule for f in report.findings} == {"REEXPORTED_RUNTIME"}
    (warning,) = report.findings
    assert warning.severity == "warning"
    assert report.exit_code("blocking") == 0
    assert report.exit_code("any") == 4
    assert report.exit_code("never") == 0


def test_weak_std_instantiations_are_not_a_reexported_runtime(checker_libs):
    lib = checker_libs["weak_std_instances"]
    with ElfImage(lib) as image:
        std = [s for n, s in image.exports().items() if n.startswith("_ZNSt")]
    assert std and {s.bind_name for s in std} == {"WEAK"}
    report = run_check(CheckSettings(shims=(str(lib),)))
    assert report.findings == ()


def test_wheel_members_are_checked_without_unpacking(checker_libs):
    report = run_check(CheckSettings(shims=(str(checker_libs["wheel"]),), models=(str(checker_libs["wheel"]),)))
    names = {a.display.split("!")[-1] for a in report.artifacts}
    assert names == {"fixture_pkg/lib/libclean_shim.so", "fixture_pkg/models/model.so"}
    # Both members are read in both roles. The good model, read as a shim, exports no shim
    # (NOT_A_SHIM) and as a model imports only what the shim provides. The clean shim, read as
    # a model too, defines its three shims (MODEL_DEFINES_SHIM); it imports no unprefixed name,
    # so NOT_AN_AOTI_MODEL has nothing to say, and one member in both roles is one definer.
    shim = "libclean_shim.so"
    shims = ("myrt_aoti_torch_delete_tensor_object", "myrt_aoti_torch_empty_strided", "myrt_aoti_torch_get_data_ptr")
    assert findings(report) == {("NOT_A_SHIM", "model.so", ""), *(("MODEL_DEFINES_SHIM", shim, name) for name in shims)}


def test_folder_input_finds_elf_by_magic(checker_libs, tmp_path):
    folder = tmp_path / "tree" / "deep"
    folder.mkdir(parents=True)
    shutil.copy(checker_libs["clean_shim"], folder / "not_named_like_a_library.bin")
    (folder / "README.so").write_text("not ELF")
    os.symlink(tmp_path / "tree", folder / "loop")
    report = run_check(CheckSettings(shims=(str(tmp_path / "tree"),)))
    assert [Path(a.display).name for a in report.artifacts] == ["not_named_like_a_library.bin"]


def test_json_report_validates_against_the_shipped_schema(checker_libs):
    import jsonschema  # in the test extra: missing is a failure, not a skip
    schema = json.loads(resources.files("aoti_shim.checks").joinpath("schemas/report-v1.schema.json").read_text())
    report = run_check(CheckSettings(shims=(str(checker_libs["clean_shim"]),), models=(str(checker_libs["model"]),)))
    doc = json.loads(render(report, "json"))
    jsonschema.validate(doc, schema)
    assert doc["summary"] == {"blocking": 3, "warning": 0}
    broken = dict(doc, findings=[dict(doc["findings"][0], severity="fatal")])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_sarif_report_is_valid_sarif_2_1_0(checker_libs):
    import sarif_pydantic  # in the test extra
    report = run_check(CheckSettings(shims=(str(checker_libs["unprefixed_shim"]),), against=("torch",)))
    text = render(report, "sarif")
    sarif_pydantic.Sarif.model_validate_json(text)
    doc = json.loads(text)
    results = doc["runs"][0]["results"]
    assert len(results) == len(report.findings)
    first = results[0]
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("libunprefixed_shim.so")
    assert first["locations"][0]["logicalLocations"][0]["name"].startswith("aoti_torch_")
    # Fingerprints hold no addresses: a rebuilt library at another path gives the same ones.
    again = run_check(CheckSettings(shims=(str(checker_libs["unprefixed_shim"]),), against=("torch",)))
    assert [f.fingerprint for f in again.findings] == [f.fingerprint for f in report.findings]


def test_github_and_junit_formats(checker_libs, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    report = run_check(CheckSettings(shims=(str(checker_libs["half_prefixed_shim"]),)))
    out = render(report, "github")
    assert out.startswith("::error file=") and "title=UNPREFIXED_EXPORT" in out
    # Rendering is pure: the summary comes inline; only the command writes the step summary.
    assert "| blocking | UNPREFIXED_EXPORT |" in out and not summary.exists()
    ran = cli("check", "--shim", str(checker_libs["half_prefixed_shim"]), "--format", "github")
    assert ran.returncode == 8 and ran.stdout.startswith("::error file=") and "| blocking |" not in ran.stdout
    assert "| blocking | UNPREFIXED_EXPORT |" in summary.read_text()
    import xml.etree.ElementTree as ET

    root = ET.fromstring(render(report, "junit"))
    suite = root.find("testsuite")
    assert suite.get("failures") == "1" and suite.get("tests") == str(len(ELF_RULES))


def test_libtorch_cpu_exports_its_shims_global_and_unversioned(torch_lib):
    from aoti_shim.checks.references.reference import find_torch

    assert find_torch().lib == torch_lib
    lib = torch_lib / "libtorch_cpu.so"
    # The count comes from binutils (nm -D), not from our reader: the function shims, all 'T'.
    expected = {n: kind for n, kind in nm_exports(lib).items() if n.startswith("aoti_torch_")}
    assert set(expected.values()) == {"T"}
    if "'2.13.0" in (torch_lib.parent / "version.py").read_text():
        assert len(expected) == 329  # torch 2.13.0, the test extra's pin (2.11.0 had 318)
    with ElfImage(lib) as image:
        shims = {n: s for n, s in image.exports().items() if n.startswith("aoti_torch_")}
        assert set(shims) == set(expected)
        assert {s.bind_name for s in shims.values()} == {"GLOBAL"}
        assert {s.type_name for s in shims.values()} == {"FUNC"}
        assert not any(s.versioned for s in shims.values())
        assert not any(n.startswith("aoti_torch_") for n in image.imports())
        assert all(image.find_export(n) is not None for n in list(shims)[:50])
        assert image.find_export("aoti_torch_no_such_shim") is None


# -- the command line -------------------------------------------------------------------


def test_blocking_findings_and_warnings_at_once_set_both_exit_bits(checker_libs):
    # 8 (blocking) | 4 (warnings) = 12 with --fail-on any; the warning bit only counts there.
    args = ("check", "--shim", str(checker_libs["half_prefixed_shim"]), "--shim", str(checker_libs["runtime_reexport"]),
            "--against", "torch", "--prefix", "myrt_")
    for fail_on, code in (("any", 12), ("blocking", 8), ("never", 0)):
        done = cli(*args, "--fail-on", fail_on)
        assert done.returncode == code, (fail_on, done.stdout, done.stderr)
        assert "2 blocking, 1 warning(s), 0 suppressed" in done.stdout.splitlines()[-1], done.stdout
        assert "UNPREFIXED_EXPORT" in done.stdout and "REEXPORTED_RUNTIME" in done.stdout


def test_cli_exit_codes(checker_libs, tmp_path):
    clean = cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch")
    assert clean.returncode == 0, clean.stderr
    assert "prefix: myrt_ (inferred from the shims' exports)" in clean.stdout
    bad = cli("check", "--shim", str(checker_libs["unprefixed_shim"]), "--against", "torch", "--prefix", "myrt_")
    assert bad.returncode == 8
    assert "aoti_torch_empty_strided" in bad.stdout and "FAILED: 3 blocking" in bad.stdout
    warn = cli("check", "--shim", str(checker_libs["runtime_reexport"]), "--fail-on", "any")
    assert warn.returncode == 4
    # No --against: the verdict says no collision was judged.
    assert warn.stdout.splitlines()[-1].startswith(
        "WARNINGS: 0 blocking, 1 warning(s), 0 suppressed; no collision with libtorch judged"
    )
    out = tmp_path / "report.json"
    wrote = cli("check", "--shim", str(checker_libs["half_prefixed_shim"]), "--format", "json", "-o", str(out))
    assert wrote.returncode == 8 and wrote.stdout == ""
    assert json.loads(out.read_text())["findings"][0]["rule"] == "UNPREFIXED_EXPORT"


@pytest.mark.parametrize(
    "args, code, message",
    [
        (("check",), 2, "nothing to check"),
        (("check", "--shim", "/nonexistent/lib.so"), 1, "cannot read"),
        (("check", "--shim", "/etc/hostname"), 1, "not an ELF file"),
        (("check", "--shim", "LIB", "--prefix", "9bad"), 2, "not a C identifier prefix"),
        (("check", "--shim", "LIB", "--format", "xml"), 2, "invalid choice"),
        (("check", "--bogus"), 2, "unrecognized arguments"),
    ],
)
def test_cli_bad_input_is_one_line_and_a_distinct_exit(checker_libs, args, code, message):
    args = tuple(str(checker_libs["clean_shim"]) if a == "LIB" else a for a in args)
    result = cli(*args)
    assert result.returncode == code
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    # The program's name once, in front.
    assert result.stderr.startswith("aoti-shim: error: ") and result.stderr.count("aoti-shim") == 1


def _limit_file_size() -> None:
    import resource
    import signal

    # A write past the limit fails with EFBIG, as on a full disk (SIGXFSZ ignored, as the shell would not).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


@pytest.mark.parametrize("target", ["folder", "full"])
def test_cli_unwritable_output_is_one_line_and_leaves_nothing(checker_libs, tmp_path, target):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [*CLI, "check", "--shim", str(checker_libs["half_prefixed_shim"]), "--format", "json"]
    if target == "folder":
        result = subprocess.run([*args, "-o", f"{out_dir}/"], capture_output=True, text=True, timeout=120)
    else:
        result = subprocess.run(
            [*args, "-o", str(out_dir / "report.json")],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_limit_file_size,
        )
    assert result.returncode == 1, result.stderr
    assert "cannot write" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert list(out_dir.iterdir()) == [] and [p.name for p in tmp_path.iterdir()] == ["out"]


def test_cli_in_process_matches_api(checker_libs, capsys):
    lib = str(checker_libs["half_prefixed_shim"])
    code = main(["check", "--shim", lib, "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    report = run_check(CheckSettings(shims=(lib,)))
    assert doc == json.loads(render(report, "json"))
    assert code == report.exit_code() == 8 and doc["summary"]["blocking"] == 1


def test_repeated_options_add_up(checker_libs, capsys):
    # aoti_shim_check in CMake passes one --model/--against per item: every one must be checked.
    code = main(
        [
            "check",
            "--shim", str(checker_libs["unprefixed_shim"]),
            "--shim", str(checker_libs["clean_shim"]),
            "--model", str(checker_libs["model"]),
            "--model", str(checker_libs["good_model"]),
            "--against", "torch",
            "--against", str(checker_libs["half_prefixed_shim"]),
            "--prefix", "myrt_",
            "--format", "json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    seen = {(f["rule"], Path(f["artifact"]).name) for f in doc["findings"]}
    assert ("UNPREFIXED_EXPORT", "libunprefixed_shim.so") in seen
    assert ("UNPREFIXED_IMPORT", "libmodel.so") in seen
    collisions = [f for f in doc["findings"] if f["rule"] == "COLLISION"]
    assert any(str(f.get("related", "")).endswith("libtorch_cpu.so") for f in collisions)
    assert code == 8


def test_wheel_that_is_not_a_zip(tmp_path):
    fake = tmp_path / "broken-1.0-py3-none-any.whl"
    fake.write_bytes(b"PK\x03\x04 this is not really a zip")
    result = cli("check", "--shim", str(fake))
    assert result.returncode == 1 and "not a readable wheel" in result.stderr


def test_wheel_member_with_parent_path_is_rejected(checker_libs, tmp_path):
    evil = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.write(checker_libs["clean_shim"], "../../escape.so")
    result = cli("check", "--shim", str(evil))
    assert result.returncode == 1 and "unsafe member name" in result.stderr
    assert not (tmp_path.parent / "escape.so").exists()


def test_against_torch_follows_the_aoti_shim_torch_variable(checker_libs, tmp_path, monkeypatch):
    from aoti_shim.checks.references.reference import find_torch

    real = find_torch().lib
    for form in (real.parent.parent, real.parent, real):
        monkeypatch.setenv("AOTI_SHIM_TORCH", str(form))
        assert find_torch().lib == real
    monkeypatch.setenv("AOTI_SHIM_TORCH", str(tmp_path))
    result = cli("check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch")
    assert result.returncode == 1 and "AOTI_SHIM_TORCH" in result.stderr and "Traceback" not in result.stderr


def test_a_relative_aoti_shim_torch_is_made_absolute(checker_libs, monkeypatch):
    from aoti_shim.checks.references.reference import find_torch

    real = find_torch().lib.resolve()
    site = real.parent.parent
    monkeypatch.chdir(site.parent)
    for form in (site.name, f"{site.name}/torch", f"./{site.name}/torch/lib"):
        monkeypatch.setenv("AOTI_SHIM_TORCH", form)
        found = find_torch().lib
        assert found.is_absolute() and found == real
    # The CLI from the same folder, with a relative value, checks against that torch.
    result = subprocess.run(
        [*CLI, "check", "--shim", str(checker_libs["clean_shim"]), "--against", "torch"],
        capture_output=True, text=True, timeout=120, cwd=site.parent,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"against [1-9][0-9]* reference", result.stdout), result.stdout


def test_reference_documents_every_check_option_and_shipped_snapshot():
    from aoti_shim.checks.snapshot.record import shipped
    from aoti_shim.cli import build_parser

    readme = (Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text()
    section = readme.split("## `aoti-shim check`", 1)[1].split("\n## ", 1)[0]
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    options = [
        o
        for a in subparsers.choices["check"]._actions
        for o in a.option_strings
        if o.startswith("--") and o != "--help"
    ]
    assert "--color" in options
    missing = [o for o in options if not re.search(rf"^\| `[^|]*{re.escape(o)}\b", section, re.M)]
    assert missing == []
    against_row = next(line for line in section.splitlines() if line.startswith("| `--against"))
    assert "snapshot" in against_row
    names = [p.name for p in shipped()]
    assert len(names) >= 3 and [n for n in names if f"`{n}`" not in section] == []


def test_output_never_replaces_a_device_node(checker_libs):
    result = cli("check", "--shim", str(checker_libs["clean_shim"]), "-o", "/dev/null")
    assert result.returncode == 1 and "not a regular file" in result.stderr
    assert not os.path.isfile("/dev/null")


def test_a_big_librarys_shim_names_from_its_string_table_are_every_name_tested(torch_lib: Path) -> None:
    """check reads a library of more than TABLE_SEARCH_ABOVE exports' shim names from its
    string table (C passes) instead of testing each name: the same names as the test of
    every export, on torch's own libtorch_cpu.so (381 of 74k) and a shim of a few."""
    from aoti_shim.checks.abi import prefix
    from aoti_shim.checks.check.run import TABLE_SEARCH_ABOVE
    from aoti_shim.checks.elf.image import ElfImage

    counts = {}
    for path in (torch_lib / "libtorch_cpu.so", torch_lib / "libc10.so"):
        with ElfImage(path) as image:
            exports = image.exports()
            every = prefix.shim_names(exports)
            picked = prefix.shim_names(image.tables_holding(contains=prefix.SHIM_NAME_NEEDLES)[0])
        assert sorted(picked) == sorted(every), path
        counts[path.name] = (len(exports), len(every))
    assert counts["libtorch_cpu.so"][0] > TABLE_SEARCH_ABOVE and counts["libtorch_cpu.so"][1] > 300, counts
