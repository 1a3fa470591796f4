"""The release workflow and the composite action: read against a schema of what GitHub accepts
(actionlint is no PyPI or Debian package that installs without a download), and the action's
steps run here, as a runner runs them (tests/actions_support.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

from actions_support import ACTION, REPO, load_yaml
from compile_support import compile_shared
from wheel_support import make_wheel

RELEASE = REPO / ".github" / "workflows" / "release.yml"

_STEP = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "id": {"type": "string"},
        "if": {"type": "string"},
        # An action pinned to a release (a tag or a branch), never a bare name.
        "uses": {"type": "string", "pattern": r"^[\w.-]+/[\w./-]+@[\w./-]+$"},
        "with": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "env": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        "run": {"type": "string", "minLength": 1},
        "shell": {"type": "string"},
    },
    "additionalProperties": False,
    "oneOf": [{"required": ["uses"]}, {"required": ["run"]}],
}
_PERMISSIONS = {
    "type": "object",
    "additionalProperties": {"enum": ["read", "write", "none"]},
    "propertyNames": {"enum": ["actions", "contents", "id-token", "security-events", "packages", "attestations"]},
}
WORKFLOW_SCHEMA = {
    "type": "object",
    "required": ["name", "on", "jobs"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "on": {"type": ["object", "array", "string"]},
        "permissions": _PERMISSIONS,
        "jobs": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "type": "object",
                "required": ["runs-on", "steps"],
                "additionalProperties": False,
                "properties": {
                    "runs-on": {"type": "string"},
                    "needs": {"type": ["string", "array"]},
                    "if": {"type": "string"},
                    "environment": {"type": ["string", "object"]},
                    "permissions": _PERMISSIONS,
                    "steps": {"type": "array", "minItems": 1, "items": _STEP},
                },
            },
        },
    },
}
ACTION_SCHEMA = {
    "type": "object",
    "required": ["name", "description", "inputs", "runs"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "branding": {"type": "object"},
        "inputs": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["description"],
                "properties": {
                    "description": {"type": "string"},
                    "required": {"type": "boolean"},
                    "default": {"type": "string"},
                },
                "additionalProperties": False,
            },
        },
        "outputs": {"type": "object"},
        "runs": {
            "type": "object",
            "required": ["using", "steps"],
            "properties": {
                "using": {"const": "composite"},
                # A composite action's run steps must name their shell.
                "steps": {
                    "type": "array",
                    "items": {**_STEP, "if": {"required": ["run"]}, "then": {"required": ["shell"]}},
                },
            },
        },
    },
}


def test_the_release_workflow_is_a_valid_workflow() -> None:
    jsonschema.validate(load_yaml(RELEASE), WORKFLOW_SCHEMA)
    # The schema itself sees a step with both `uses` and `run`, and a job without steps.
    bad = load_yaml(RELEASE)
    bad["jobs"]["wheel"]["steps"][0]["run"] = "true"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, WORKFLOW_SCHEMA)
    del bad["jobs"]["wheel"]["steps"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, WORKFLOW_SCHEMA)


def test_the_release_builds_tests_and_then_publishes_by_trusted_publishing() -> None:
    flow = load_yaml(RELEASE)
    jobs = flow["jobs"]
    assert flow["on"]["push"]["tags"] == ["v*"]
    assert flow["permissions"] == {"contents": "read"}
    publish = jobs["publish"]
    # Publishing waits for the tested wheel; only it may ask for an OIDC token, and it uses no secret.
    assert set(publish["needs"]) == {"wheel", "sdist", "test"} and jobs["test"]["needs"] == "wheel"
    assert publish["permissions"] == {"id-token": "write"}
    assert [j for j, spec in jobs.items() if "id-token" in spec.get("permissions", {})] == ["publish"]
    assert publish["environment"]["name"] == "pypi"
    assert publish["steps"][-1]["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert "secrets." not in RELEASE.read_text()
    # PyPI takes no linux_x86_64 wheel: the wheel is repaired into a manylinux one, without cudart.
    repair = jobs["wheel"]["steps"][1]["env"]["CIBW_REPAIR_WHEEL_COMMAND"]
    assert repair.startswith("auditwheel repair --exclude libcudart.so.13 ")
    runs = [s["run"] for s in jobs["test"]["steps"] if "run" in s]
    assert any(r.startswith("aoti-shim check --wheel dist/aoti_shim-") for r in runs), runs
    assert any(r.startswith("python -m pytest") for r in runs), runs


def test_the_action_is_a_valid_composite_action_with_the_gates_inputs() -> None:
    action = load_yaml(ACTION)
    jsonschema.validate(action, ACTION_SCHEMA)
    assert {"wheels", "against", "sarif"} <= set(action["inputs"])
    text = ACTION.read_text()
    used = set(re.findall(r"inputs\.([\w-]+)", text))
    assert used <= set(action["inputs"]), used - set(action["inputs"])
    # Inputs reach the scripts through env: only, never pasted into a script (an input holding
    # `"; curl ... #` would run).
    for step in action["runs"]["steps"]:
        assert "${{" not in step["run"], step["run"]


def _blob_wheel(tmp_path: Path, checker_libs: dict[str, Path]) -> Path:
    source = tmp_path / "blob.c"
    source.write_text(
        "extern int aoti_torch_get_data_ptr(void);\n"
        '__attribute__((visibility("default"))) int AOTInductorModelContainerRun(void) { return '
        'aoti_torch_get_data_ptr(); }\n'
    )
    blob = tmp_path / "libblob.so"
    compile_shared(source, blob, ())
    wheel = tmp_path / "dist" / "myrt-0.1.0-py3-none-linux_x86_64.whl"
    return make_wheel(wheel, {"myrt/libmyrt_shims.so": checker_libs["clean_shim"], "myrt/libblob.so": blob})


def test_the_actions_check_fails_a_wheel_whose_blob_imports_unprefixed_names(
    ci_runner, tmp_path: Path, checker_libs
) -> None:
    _blob_wheel(tmp_path, checker_libs)
    done = ci_runner.action({"wheels": "dist/*.whl", "against": "torch-2.14.1+cu130", "sarif": "out.sarif"}, tmp_path)
    assert done is not None and done.returncode == 8, ci_runner.shown()
    results = json.loads((tmp_path / "out.sarif").read_text())["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"UNPREFIXED_IMPORT"}
    # The first step put aoti-shim's wheel where the job's later pip builds look.
    assert ci_runner.env["PIP_FIND_LINKS"].endswith("aoti-shim-wheelhouse"), ci_runner.env
    # A glob that matches nothing is a usage error, not a pass over no wheel.
    done = ci_runner.action({"wheels": "nothing/*.whl"}, tmp_path)
    assert done is not None and done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == "aoti-shim: error: no wheel matches 'nothing/*.whl'"


def test_the_action_without_wheels_only_installs(ci_runner, tmp_path: Path) -> None:
    done = ci_runner.action({}, tmp_path)
    assert done is not None and done.returncode == 0, ci_runner.shown()
    assert re.fullmatch(r"aoti-shim \S+", done.stdout.strip().splitlines()[-1])
    assert not list(tmp_path.glob("*.sarif"))
    version = subprocess.run(
        [str(Path(ci_runner.base_env["VIRTUAL_ENV"]) / "bin" / "aoti-shim"), "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert version.returncode == 0
