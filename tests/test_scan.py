"""``aoti-shim scan`` over real venvs filled by pip with fixture distributions of our own.

Ground truth is not ours: ``nm -D`` for what each library exports and imports, and a real
coalesced load in a child (``LD_DEBUG=bindings``) for what a finding claims the loader does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import pytest

from aoti_shim.checks.abi.prefix import is_shim_name
from aoti_shim.checks.formats.scan import render_scan
from aoti_shim.checks.scan.judge import Scanned, captures
from aoti_shim.checks.scan.run import ScanReport, ScanSettings, run_scan
from cli_support import cli, one_line_error
from scan_support import ScanEnvs, tree_state
from torch_support import torch_package


def _scan(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return cli("scan", *args, env={**os.environ, **(env or {})}, cwd=cwd, timeout=300)


def _json(*args: str) -> dict:
    done = _scan(*args, "--format", "json")
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def dirty(scan_envs: ScanEnvs) -> ScanReport:
    return run_scan(ScanSettings(paths=(str(scan_envs.dirty.root),)))


@pytest.fixture(scope="module")
def clean(scan_envs: ScanEnvs) -> ScanReport:
    return run_scan(ScanSettings(paths=(str(scan_envs.clean.root),)))


def _library(scanned: Scanned, suffix: str):
    found = [lib for lib in scanned.libraries if lib.display.endswith(suffix)]
    assert len(found) == 1, (suffix, [lib.display for lib in scanned.libraries])
    return found[0]


def _by_rule(report: ScanReport) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.rule, []).append(f)
    return out


# -- what the environment holds -----------------------------------------------------------------


def test_distributions_libraries_and_roles(dirty: ScanReport, scan_envs: ScanEnvs) -> None:
    s = dirty.scanned
    dists = {d.name: d for d in s.distributions}
    assert {n: d.version for n, d in dists.items()} == {
        "edit-z": "0.3",
        "ext-y": "1.2",
        "rt-a": "1.0",
        "rt-b": "2.1",
        "vendor-x": "0.9",
    }
    assert [d.name for d in s.distributions if d.editable] == ["edit-z"]
    # The editable install's library lives in its source tree, found through the .pth pip wrote.
    (edit_lib,) = dists["edit-z"].libraries
    assert Path(edit_lib.display).parent == scan_envs.editable_source / "edit_z"
    # A library in a folder a .pth adds, which no RECORD lists, is listed as nobody's.
    assert [lib.display for lib in s.unowned] == [str(scan_envs.stray_folder / "libstray.so")]
    roles = {lib.display.rsplit("/", 1)[-1]: lib.describe_roles() for lib in s.libraries}
    assert roles["librta_shims.so"] == "shim provider ('rta_')"
    assert roles["librtb_shims.so"] == "shim provider ('rta_')"
    assert roles["libvendor_shims.so"] == "shim provider (unprefixed)"
    assert roles["model.so"] == "AOTInductor blob"
    assert roles["libstray.so"] == roles["_ops.cpython-311-x86_64-linux-gnu.so"] == "stable-ABI consumer"
    assert [(r.distribution, r.prefix, r.names) for r in dirty.providers] == [
        ("rt-a 1.0", "rta_", 2), ("rt-b 2.1", "rta_", 3), ("vendor-x 0.9", "", 3)]


def test_findings_hijack_collision_prefix_clash(dirty: ScanReport, scan_envs: ScanEnvs) -> None:
    rules = _by_rule(dirty)
    assert sorted(rules) == ["COLLISION", "HIJACK", "PREFIX_CLASH", "UNPREFIXED_PROVIDER"]
    # The unprefixed runtime captures every stable-ABI consumer of the environment, the
    # editable one and the one nobody installed included; not its own names nobody imports.
    assert {f.related for f in rules["HIJACK"]} == {
        "ext_y/_ops.cpython-311-x86_64-linux-gnu.so",
        str(scan_envs.editable_source / "edit_z" / "_core.cpython-311-x86_64-linux-gnu.so"),
        str(scan_envs.stray_folder / "libstray.so"),
    }
    assert {f.artifact for f in rules["HIJACK"]} == {"vendor_x/libvendor_shims.so"}
    assert all("captures 2 shim import(s)" in f.message for f in rules["HIJACK"])
    assert sorted(f.symbol for f in rules["COLLISION"]) == [
        "rta_aoti_torch_empty_strided",
        "rta_aoti_torch_get_data_ptr",
    ]
    assert {(f.artifact, f.related) for f in rules["COLLISION"]} == {("rt_b/librtb_shims.so", "rt_a/librta_shims.so")}
    (clash,) = rules["PREFIX_CLASH"]
    assert (clash.artifact, clash.symbol, clash.related) == (
        "rt_b/librtb_shims.so",
        "rta_aoti_torch_*",
        "rt_a/librta_shims.so",
    )
    assert [f.severity for f in rules["UNPREFIXED_PROVIDER"]] == ["warning"]
    assert (dirty.blocking, dirty.warnings, dirty.exit_code(), dirty.exit_code("any")) == (6, 1, 8, 12)


def test_torch_and_its_companions_are_clean(clean: ScanReport) -> None:
    """The test environment itself (torch 2.13 and everything it installs), seen through a
    .pth, with a prefixed runtime and a stable-ABI extension: nothing blocks, nothing warns."""
    assert clean.findings == (), render_scan(clean)
    assert clean.exit_code("any") == 0
    torch = next(d for d in clean.scanned.distributions if d.name == "torch")
    assert torch.version.startswith("2.13") and Path(torch.location) == torch_package().parent
    providers = {(r.library, r.prefix): r.names for r in clean.providers}
    # NOTES: 329 exported aoti_torch_* in 2.13.0, shim.h's aoti_record_function_start/_end, and
    # the 50 torch_* functions of the stable C ABI that libtorch_cpu.so exports (issue 33 §5).
    assert providers[("torch/lib/libtorch_cpu.so", "")] == 381
    assert providers[("rt_a/librta_shims.so", "rta_")] == 2


# -- ground truth: nm -D and the loader ----------------------------------------------------------


def _nm(path: str, *flags: str) -> set[str]:
    """nm's names that are shim ABI (by the checker's one definition of shim ABI)."""
    out = subprocess.run(["nm", "-D", *flags, "-P", path], capture_output=True, text=True, check=True).stdout
    names = {line.split()[0].split("@", 1)[0] for line in out.splitlines()}
    return {n for n in names if is_shim_name(n)}


def test_shim_names_are_nm_s(dirty: ScanReport, clean: ScanReport, scan_envs: ScanEnvs, torch_lib: Path) -> None:
    site = scan_envs.dirty.site
    libraries = [(lib, site / lib.display) for lib in dirty.scanned.libraries]  # an absolute display stays itself
    libraries.append((_library(clean.scanned, "torch/lib/libtorch_cpu.so"), torch_lib / "libtorch_cpu.so"))
    for lib, path in libraries:
        assert set(lib.shim_exports) == _nm(str(path), "--defined-only"), lib.display
        assert set(lib.shim_imports) == _nm(str(path), "--undefined-only"), lib.display
    assert len(libraries) == 8


_BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")


def _bindings(order: list[tuple[str, bool]]) -> dict[tuple[str, str], str]:
    """Load ``order`` ((path, global?), ...) in a child as a process would, RTLD_NOW, under
    LD_DEBUG=bindings: (library's file name, symbol) -> the file name of the library it bound to."""
    code = (
        "import ctypes, os, sys\n"
        "for path, glob in zip(sys.argv[1::2], sys.argv[2::2]):\n"
        "    ctypes.CDLL(path, mode=os.RTLD_NOW | (os.RTLD_GLOBAL if glob == '1' else os.RTLD_LOCAL))\n"
    )
    args = [a for path, glob in order for a in (path, "1" if glob else "0")]
    env = {**os.environ, "LD_DEBUG": "bindings", "LD_BIND_NOW": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = {}
    for user, definer, name in _BINDING.findall(done.stderr):
        if "aoti_" in name:
            out[(os.path.basename(user), name)] = os.path.basename(definer)
    return out


def test_a_hijack_is_what_the_loader_does(dirty: ScanReport, scan_envs: ScanEnvs, torch_lib: Path) -> None:
    """The unprefixed runtime loaded global before libtorch: the extension's imports that the
    scan says it captures bind to it, and only those; the rest still bind to libtorch."""
    site = scan_envs.dirty.site
    vendor, ext = site / "vendor_x" / "libvendor_shims.so", site / "ext_y" / "_ops.cpython-311-x86_64-linux-gnu.so"
    said = {c.display: names for p, c, names in captures(dirty.scanned) if p.display == "vendor_x/libvendor_shims.so"}
    bound = _bindings([(str(vendor), True), (str(torch_lib / "libtorch_cpu.so"), True), (str(ext), False)])
    mine = {name: definer for (user, name), definer in bound.items() if user == ext.name}
    assert sorted(n for n, d in mine.items() if d == vendor.name) == sorted(
        said["ext_y/_ops.cpython-311-x86_64-linux-gnu.so"]
    )
    assert {d for d in mine.values()} == {vendor.name, "libtorch_cpu.so"} and len(mine) == 3


def test_a_prefix_clash_is_what_the_loader_does(dirty: ScanReport, scan_envs: ScanEnvs) -> None:
    """Two runtimes with one prefix: rt-a's blob binds to whichever runtime is global first,
    as many imports as the finding says (the binding model's count)."""
    site = scan_envs.dirty.site
    rta, rtb, model = site / "rt_a" / "librta_shims.so", site / "rt_b" / "librtb_shims.so", site / "rt_a" / "model.so"
    bound = _bindings([(str(rtb), True), (str(rta), True), (str(model), False)])
    to_rtb = [n for (u, n), d in bound.items() if u == "model.so" and d == "librtb_shims.so"]
    assert {d for (u, n), d in bound.items() if u == "model.so"} == {"librtb_shims.so"}
    (clash,) = [f for f in dirty.findings if f.rule == "PREFIX_CLASH"]
    assert (
        f"with rt-b 2.1's shims global first, {len(to_rtb)} shim import(s) of rt-a 1.0's blobs bind to them"
        in clash.message
    )


def test_the_clean_environment_loads_right(scan_envs: ScanEnvs, torch_lib: Path) -> None:
    """What OK means for the clean venv: with the prefixed runtime and libtorch both global,
    the extension binds to libtorch and the blob to its runtime."""
    site = scan_envs.clean.site
    rta, model = site / "rt_a" / "librta_shims.so", site / "rt_a" / "model.so"
    ext = site / "ext_y" / "_ops.cpython-311-x86_64-linux-gnu.so"
    bound = _bindings(
        [(str(rta), True), (str(torch_lib / "libtorch_cpu.so"), True), (str(ext), False), (str(model), False)]
    )
    assert {d for (u, n), d in bound.items() if u == ext.name} == {"libtorch_cpu.so"}
    assert {d for (u, n), d in bound.items() if u == "model.so"} == {"librta_shims.so"}


# -- the ways to name an environment -----------------------------------------------------------------


def _keys(doc: dict) -> set[tuple[str, str, str]]:
    return {(f["rule"], f["symbol"], f["artifact"].rsplit("!", 1)[-1].rsplit("/", 1)[-1]) for f in doc["findings"]}


def test_interpreter_venv_and_site_folder_agree(scan_envs: ScanEnvs) -> None:
    venv = scan_envs.dirty
    by_python = _json("--python", str(venv.python))
    by_venv = _json(str(venv.root))
    by_site = _json(str(venv.site))
    assert by_python["findings"] == by_venv["findings"] == by_site["findings"]
    assert by_python["distributions"] == by_venv["distributions"] == by_site["distributions"]
    assert "interpreter" in by_python["environment"]["description"]


def test_wheels_stand_for_their_distributions(scan_envs: ScanEnvs) -> None:
    wheels = scan_envs.wheels
    doc = _json(*(str(wheels[n]) for n in ("rt-a", "rt-b", "vendor-x", "ext-y")))
    assert {d["name"]: d["source"] for d in doc["distributions"]} == {
        "rt-a": "wheel",
        "rt-b": "wheel",
        "vendor-x": "wheel",
        "ext-y": "wheel",
    }
    installed = _json(str(scan_envs.dirty.root))
    # The same findings as installed, less those about the editable and the stray library.
    extra = {k for k in _keys(installed) if k[0] == "HIJACK" and k[2] not in ("libvendor_shims.so",)}
    assert _keys(doc) == _keys(installed) - extra
    # A wheel with an installed environment: what installing it would do. vendor-x into the clean venv.
    done = _scan(str(scan_envs.clean.site), str(wheels["vendor-x"]), "--format", "json")
    assert done.returncode == 8, done.stderr
    hijacks = [f for f in json.loads(done.stdout)["findings"] if f["rule"] == "HIJACK"]
    assert {f["related"] for f in hijacks} >= {"ext_y/_ops.cpython-311-x86_64-linux-gnu.so"}


# -- formats, suppressions, --fail-on ---------------------------------------------------------------


def test_every_format(dirty: ScanReport, scan_envs: ScanEnvs, tmp_path: Path) -> None:
    import jsonschema  # in the test extra
    import sarif_pydantic

    doc = json.loads(render_scan(dirty, "json"))
    schema = json.loads(resources.files("aoti_shim.checks").joinpath("schemas/scan-v1.schema.json").read_text())
    jsonschema.validate(doc, schema)
    broken = {**doc, "findings": [{**doc["findings"][0], "rule": "NOT_A_RULE"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
    assert doc["summary"] == {"blocking": 6, "warning": 1}

    sarif = render_scan(dirty, "sarif")
    sarif_pydantic.Sarif.model_validate_json(sarif)
    results = json.loads(sarif)["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == sorted(f["rule"] for f in doc["findings"])

    suite = ET.fromstring(render_scan(dirty, "junit")).find("testsuite")
    assert suite is not None and int(suite.get("failures", "0")) == 3  # HIJACK, COLLISION, PREFIX_CLASH cases

    text = render_scan(dirty, "text")
    assert "shim providers:" in text and "vendor-x 0.9  vendor_x/libvendor_shims.so  (unprefixed)" in text
    assert text.startswith("FAILED: 6 blocking, 1 warning(s), 0 suppressed\n")

    summary = tmp_path / "summary.md"
    done = _scan(str(scan_envs.dirty.root), "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 8
    assert done.stdout.count("::error ") == 6 and done.stdout.count("::warning ") == 1
    assert "## aoti-shim scan" in summary.read_text() and "| vendor-x 0.9 |" in summary.read_text()


def _dirty_findings(envs: ScanEnvs) -> list[tuple[str, str, str, str, str | None, str]]:
    """(rule, severity, library, symbol, related, message) of the dirty environment's findings,
    in the report's order: what every format must say about each."""
    vendor, rt_a, rt_b = "vendor_x/libvendor_shims.so", "rt_a/librta_shims.so", "rt_b/librtb_shims.so"

    def hijack(consumer: str, whose: str) -> tuple[str, str, str, str, str | None, str]:
        return ("HIJACK", "blocking", vendor, "aoti_torch_get_data_ptr", consumer,
                "exports 2 of libtorch's shim names unprefixed; loaded RTLD_GLOBAL before libtorch it captures 2 shim "
                f"import(s) of {consumer}, a stable-ABI consumer {whose} (e.g. 'aoti_torch_get_data_ptr'), which then "
                "runs against its tensors, not libtorch's")

    def collision(name: str) -> tuple[str, str, str, str, str | None, str]:
        return ("COLLISION", "blocking", rt_b, name, rt_a,
                f"exports shim name '{name}', which {rt_a} (rt-a 1.0) also exports: one process binds one of them")

    return [
        hijack(str(envs.editable_source / "edit_z" / "_core.cpython-311-x86_64-linux-gnu.so"), "of edit-z 0.3"),
        hijack("ext_y/_ops.cpython-311-x86_64-linux-gnu.so", "of ext-y 1.2"),
        hijack(str(envs.stray_folder / "libstray.so"), "outside any distribution"),
        collision("rta_aoti_torch_empty_strided"),
        collision("rta_aoti_torch_get_data_ptr"),
        ("PREFIX_CLASH", "blocking", rt_b, "rta_aoti_torch_*", rt_a,
         f"carries the private prefix 'rta_', which {rt_a} (rt-a 1.0) carries too: two runtimes with one prefix bind "
         "each other's blobs to each other's shims (with rt-b 2.1's shims global first, 2 shim import(s) of rt-a 1.0's "
         "blobs bind to them)"),
        ("UNPREFIXED_PROVIDER", "warning", vendor, "aoti_torch_get_data_ptr", None,
         "a shim provider other than torch exporting 3 unprefixed shim name(s) (2 of them libtorch's), e.g. "
         "'aoti_torch_get_data_ptr': every stable-ABI extension and unprefixed blob installed beside it binds to "
         "whichever definer is global first; build it with a private prefix"),
    ]


def _library_facts(
    path: str, roles: list[str], prefixes: list[str], exports: int, imports: int, unprefixed: int, symbols: int
) -> dict:
    return {"path": path, "kind": "shared", "roles": roles, "export_prefixes": prefixes, "shim_exports": exports,
            "shim_imports": imports, "unprefixed_shim_imports": unprefixed, "runtime_exports": 0,
            "cuda_runtime_exports": 0, "symbols": symbols}


def test_scan_json_says_every_field(dirty: ScanReport, scan_envs: ScanEnvs) -> None:
    from aoti_shim import __version__
    from aoti_shim.checks.report.model import fingerprint

    doc = json.loads(render_scan(dirty, "json"))
    site = str(scan_envs.dirty.site)
    assert doc["schema_version"] == 1 and doc["tool"] == {
        "name": "aoti-shim",
        "version": __version__,
        "command": "scan",
    }
    assert doc["environment"] == {
        "description": f"virtual environment {scan_envs.dirty.root}",
        "site_folders": [site, str(scan_envs.editable_source), str(scan_envs.stray_folder)],
    }
    consumer = ["stable-ABI consumer"]
    assert doc["distributions"] == [
        {
            "name": "edit-z",
            "version": "0.3",
            "location": site,
            "editable": True,
            "source": "RECORD",
            "libraries": [
                _library_facts(
                    str(scan_envs.editable_source / "edit_z" / "_core.cpython-311-x86_64-linux-gnu.so"),
                    consumer,
                    [],
                    0,
                    3,
                    3,
                    9,
                )
            ],
        },
        {
            "name": "ext-y",
            "version": "1.2",
            "location": site,
            "editable": False,
            "source": "RECORD",
            "libraries": [_library_facts("ext_y/_ops.cpython-311-x86_64-linux-gnu.so", consumer, [], 0, 3, 3, 9)],
        },
        {
            "name": "rt-a",
            "version": "1.0",
            "location": site,
            "editable": False,
            "source": "RECORD",
            "libraries": [
                _library_facts("rt_a/librta_shims.so", ["shim provider"], ["rta_"], 2, 0, 0, 7),
                _library_facts("rt_a/model.so", ["AOTInductor blob"], [], 0, 2, 0, 8),
            ],
        },
        {
            "name": "rt-b",
            "version": "2.1",
            "location": site,
            "editable": False,
            "source": "RECORD",
            "libraries": [_library_facts("rt_b/librtb_shims.so", ["shim provider"], ["rta_"], 3, 0, 0, 8)],
        },
        {
            "name": "vendor-x",
            "version": "0.9",
            "location": site,
            "editable": False,
            "source": "RECORD",
            "libraries": [_library_facts("vendor_x/libvendor_shims.so", ["shim provider"], [""], 3, 0, 0, 8)],
        },
    ]
    assert doc["unowned"] == [_library_facts(str(scan_envs.stray_folder / "libstray.so"), consumer, [], 0, 3, 3, 9)]
    assert doc["ignored"] == []
    assert doc["providers"] == [
        {"distribution": "rt-a 1.0", "library": "rt_a/librta_shims.so", "prefix": "rta_", "names": 2},
        {"distribution": "rt-b 2.1", "library": "rt_b/librtb_shims.so", "prefix": "rta_", "names": 3},
        {"distribution": "vendor-x 0.9", "library": "vendor_x/libvendor_shims.so", "prefix": "", "names": 3},
    ]
    assert doc["findings"] == [
        {"rule": rule, "severity": severity, "artifact": lib, "symbol": symbol, "message": message, "related": related,
         "fingerprint": fingerprint(rule, lib, symbol, related)}
        for rule, severity, lib, symbol, related, message in _dirty_findings(scan_envs)
    ]
    # One id a finding: the three HIJACKs of one provider, one per consumer, share their
    # rule, library and first captured name (code scanning would merge them into one alert).
    assert len({f["fingerprint"] for f in doc["findings"]}) == len(doc["findings"])
    assert (doc["suppressed"], doc["unused_suppressions"], doc["summary"]) == ([], [], {"blocking": 6, "warning": 1})


def test_scan_sarif_says_each_result(dirty: ScanReport, scan_envs: ScanEnvs) -> None:
    from aoti_shim.checks.report.model import fingerprint
    from aoti_shim.checks.scan.judge import SCAN_RULES

    run = json.loads(render_scan(dirty, "sarif"))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [(r["id"], r["name"], r["defaultConfiguration"]["level"]) for r in rules] == [
        ("HIJACK", "Hijack", "error"), ("COLLISION", "Collision", "error"), ("PREFIX_CLASH", "PrefixClash", "error"),
        ("UNPREFIXED_PROVIDER", "UnprefixedProvider", "warning"), ("RUNTIME_COLLISION", "RuntimeCollision", "warning"),
        ("DLL_COLLISION", "DllCollision", "error")]
    assert [r["shortDescription"]["text"] for r in rules] == [rule.doc for rule in SCAN_RULES]
    assert run["properties"] == {"environment": f"virtual environment {scan_envs.dirty.root}"}
    index = {"HIJACK": 0, "COLLISION": 1, "PREFIX_CLASH": 2, "UNPREFIXED_PROVIDER": 3}
    assert run["results"] == [
        {"ruleId": rule, "ruleIndex": index[rule], "level": "error" if severity == "blocking" else "warning",
         "message": {"text": message},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": lib}},
                        "logicalLocations": [{"name": symbol, "kind": "function"}]}],
         "partialFingerprints": {"aotiShimFinding/v1": fingerprint(rule, lib, symbol, related)}}
        for rule, severity, lib, symbol, related, message in _dirty_findings(scan_envs)
    ]
    assert len({r["partialFingerprints"]["aotiShimFinding/v1"] for r in run["results"]}) == len(run["results"])


def test_scan_github_annotations_and_summary_say_each_finding(dirty: ScanReport, scan_envs: ScanEnvs) -> None:
    out = render_scan(dirty, "github")
    found = _dirty_findings(scan_envs)
    lines = out.splitlines()
    assert lines[: len(found)] == [
        f"::{'error' if severity == 'blocking' else 'warning'} file={lib},title={rule}::{symbol}: {message}"
        for rule, severity, lib, symbol, _, message in found
    ]

    def md(text: str) -> str:  # the names here hold no Markdown syntax but _
        return text.replace("_", "\\_")

    assert lines[len(found) :] == [
        "## aoti-shim scan",
        "",
        f"virtual environment {md(str(scan_envs.dirty.root))}: 5 distribution(s), 5 with ELF libraries (6 libraries), "
        "1 library outside any distribution. FAILED: 6 blocking, 1 warning(s), 0 suppressed.",
        "",
        "| distribution | library | prefix | shim names |",
        "| --- | --- | --- | --- |",
        "| rt-a 1.0 | rt\\_a/librta\\_shims.so | `rta_` | 2 |",
        "| rt-b 2.1 | rt\\_b/librtb\\_shims.so | `rta_` | 3 |",
        "| vendor-x 0.9 | vendor\\_x/libvendor\\_shims.so | `(unprefixed)` | 3 |",
        "",
        "| severity | rule | library | symbol | detail |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {severity} | {rule} | {md(lib)} | `{symbol}` | {md(message)} |"
            for rule, severity, lib, symbol, _, message in found
        ),
        "",  # the summary's own newline, then the annotations' last one
    ]


def test_scan_junit_has_a_case_per_rule_and_library(dirty: ScanReport, scan_envs: ScanEnvs) -> None:
    from aoti_shim.checks.scan.judge import SCAN_RULES

    suite = ET.fromstring(render_scan(dirty, "junit")).find("testsuite")
    assert suite is not None and suite.attrib == {
        "name": "aoti-shim scan",
        "tests": str(6 * 7),
        "failures": "3",
        "errors": "0",
    }
    assert [(p.get("name"), p.get("value")) for p in suite.iter("property")] == [
        ("environment", f"virtual environment {scan_envs.dirty.root}")]
    libraries = [lib.display for lib in dirty.scanned.libraries]
    assert [(c.get("classname"), c.get("name")) for c in suite.iter("testcase")] == [
        (f"aoti-shim.scan.{rule.id}", lib) for rule in SCAN_RULES for lib in libraries]
    said = {}
    for case in suite.iter("testcase"):
        failure, out = case.find("failure"), case.find("system-out")
        if failure is not None:
            said[(case.get("classname"), case.get("name"))] = (
                failure.get("type"),
                failure.get("message"),
                failure.text,
            )
        elif out is not None:
            said[(case.get("classname"), case.get("name"))] = ("warning", None, out.text)
    found = _dirty_findings(scan_envs)

    def lines(rule: str, lead: str = "") -> str:
        return "\n".join(f"{lead}{symbol}: {message}" for r, _, _, symbol, _, message in found if r == rule)

    assert said == {
        ("aoti-shim.scan.HIJACK", "vendor_x/libvendor_shims.so"): ("HIJACK", "3 finding(s)", lines("HIJACK")),
        ("aoti-shim.scan.COLLISION", "rt_b/librtb_shims.so"): ("COLLISION", "2 finding(s)", lines("COLLISION")),
        ("aoti-shim.scan.PREFIX_CLASH", "rt_b/librtb_shims.so"): (
            "PREFIX_CLASH",
            "1 finding(s)",
            lines("PREFIX_CLASH"),
        ),
        ("aoti-shim.scan.UNPREFIXED_PROVIDER", "vendor_x/libvendor_shims.so"): (
            "warning",
            None,
            lines("UNPREFIXED_PROVIDER", "warning: "),
        ),
    }


def test_suppressions_and_fail_on(scan_envs: ScanEnvs, tmp_path: Path) -> None:
    root = str(scan_envs.dirty.root)
    sups = tmp_path / "sups.toml"
    sups.write_text(
        '[[suppress]]\nrule = "HIJACK"\nartifact = "libvendor_shims.so"\nreason = "vendor-x is loaded RTLD_LOCAL"\n'
        '[[suppress]]\nrule = "COLLISION"\nartifact = "rt_b/*"\nreason = "rt-b is never loaded with rt-a"\n'
        '[[suppress]]\nrule = "PREFIX_CLASH"\nreason = "same"\n'
    )
    done = _scan(root, "--suppressions", str(sups))
    assert done.returncode == 0, done.stdout
    assert "WARNINGS: 0 blocking, 1 warning(s), 6 suppressed" in done.stdout
    assert _scan(root, "--suppressions", str(sups), "--fail-on", "any").returncode == 4
    assert _scan(root, "--fail-on", "never").returncode == 0
    assert _scan(root, "--fail-on", "any").returncode == 12
    sups.write_text('[[suppress]]\nrule = "UNPREFIXED_EXPORT"\nreason = "a check rule"\n')
    # scan's rules are its own: a check rule is a usage error naming scan's.
    line = one_line_error(_scan(root, "--suppressions", str(sups)), 2)
    assert "'rule' must be one of" in line and "HIJACK" in line


def test_nothing_is_written_into_the_environment(scan_envs: ScanEnvs, tmp_path: Path) -> None:
    root = scan_envs.dirty.root
    before = tree_state(root)
    target = scan_envs.dirty.site / "report.json"
    line = one_line_error(_scan(str(root), "-o", str(target)), 2)
    assert "lies in the scanned environment" in line and not target.exists()
    out = tmp_path / "report.json"
    assert (
        _scan(str(root), "--format", "json", "-o", str(out)).returncode == 8 and json.loads(out.read_text())["findings"]
    )
    assert tree_state(root) == before


@pytest.mark.parametrize("where", ["report.txt", "bin/report.txt", "lib/report.txt"])
def test_nothing_is_written_into_the_venv_root_either(tmp_path: Path, where: str) -> None:
    # The venv's own folder is the environment too, not only its site-packages.
    from scan_support import make_venv

    venv = make_venv(tmp_path / "venv")
    target = venv.root / where
    for scanned in (venv.root, venv.site):
        line = one_line_error(_scan(str(scanned), "-o", str(target)), 2)
        assert f"lies in the scanned environment ({os.path.realpath(venv.root)})" in line and not target.exists()
    beside = tmp_path / "report.txt"
    assert _scan(str(venv.root), "-o", str(beside)).returncode == 0 and beside.is_file()


def test_the_default_is_the_running_interpreter(tmp_path: Path) -> None:
    """No PATH: the interpreter aoti-shim runs under, i.e. the test environment (clean)."""
    done = _scan("--fail-on", "any", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert done.stdout.startswith(
        f"OK: 0 blocking, 0 warning(s), 0 suppressed\nscanned interpreter {sys.executable} (Python "
    )
    assert "torch 2.13" in done.stdout


def test_help_lists_scan() -> None:
    done = cli("--help")
    assert re.search(r"^\s+scan\s+check that a Python environment", done.stdout, re.M), done.stdout


def test_an_interpreter_is_asked_without_running_its_pth_files(scan_envs: ScanEnvs, tmp_path: Path) -> None:
    """A .pth import line is anyone's code (and may write bytecode into the environment):
    --python asks the interpreter for its site folders with site.py off, and reads the .pth
    files itself."""
    marker = tmp_path / "ran"
    pth = scan_envs.dirty.site / "zz_hostile.pth"
    pth.write_text(f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n")
    try:
        before = tree_state(scan_envs.dirty.root)
        doc = _json("--python", str(scan_envs.dirty.python))
        assert not marker.exists()
        assert tree_state(scan_envs.dirty.root) == before
        assert {d["name"] for d in doc["distributions"]} == {"edit-z", "ext-y", "rt-a", "rt-b", "vendor-x"}
    finally:
        pth.unlink()
