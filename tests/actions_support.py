"""Run a GitHub Actions job's steps here, as the runner would: ``run:`` steps in bash, the
repository's composite action (action.yml) step by step, ``$GITHUB_ENV`` carried between
steps, in a fresh venv (the runner's Python after actions/setup-python, nothing installed).

Only what the README's job and action.yml use is understood; anything else (an unknown
``uses:``, an expression this evaluator does not know) fails the test instead of being
skipped, so a workflow cannot grow a step these tests do not run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
ACTION = REPO / "action.yml"
# The runner's own actions: checkout (the project is the folder the steps run in),
# setup-python (the fresh venv's Python) and the SARIF upload (the test reads the file).
RUNNER_ACTIONS = ("actions/checkout@", "actions/setup-python@", "github/codeql-action/upload-sarif@")
# The README's name for this repository as an action.
THIS_ACTION = re.compile(r"^OWNER/aoti-shim@\S+$")


def load_yaml(path_or_text: Path | str) -> dict[str, Any]:
    text = path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text
    data = yaml.safe_load(text)
    # YAML 1.1 reads the key `on` as True.
    if isinstance(data, dict) and True in data:
        data["on"] = data.pop(True)
    assert isinstance(data, dict), text[:200]
    return data


_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(expr: str, context: Mapping[str, str]) -> str:
    """The few expression forms the action uses: a context value, ``a || b``, ``format(...)``,
    a string literal, and ``x != ''`` / ``x == ''``."""
    expr = expr.strip()
    for op in ("!=", "=="):
        if op in expr:
            left, right = (evaluate(part, context) for part in expr.split(op, 1))
            return "true" if (left != right) == (op == "!=") else ""
    if "||" in expr:
        left, right = expr.split("||", 1)
        return evaluate(left, context) or evaluate(right, context)
    if re.fullmatch(r"'[^']*'", expr):
        return expr[1:-1]
    call = re.fullmatch(r"format\('([^']*)',\s*(.+)\)", expr)
    if call:
        args = [evaluate(a, context) for a in call.group(2).split(",")]
        return call.group(1).format(*args)
    if expr in context:
        return context[expr]
    raise AssertionError(f"an expression these tests do not evaluate: {expr!r}")


def substitute(text: str, context: Mapping[str, str]) -> str:
    return _EXPR.sub(lambda m: evaluate(m.group(1), context), text)


@dataclass
class Runner:
    """One job's environment: a fresh venv first on PATH, a runner temp folder and $GITHUB_ENV."""

    root: Path
    base_env: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    @classmethod
    def fresh(cls, root: Path) -> Runner:
        venv = root / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        temp = root / "temp"
        temp.mkdir(parents=True)
        # No developer or test settings leak in; pip's own configuration (the machine's
        # index) stays, as a runner's would.
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("PIP_", "AOTI_SHIM_", "SKBUILD_", "VIRTUAL_ENV", "PYTHON"))
        }
        base.pop("CMAKE_ARGS", None)
        base.update(
            PATH=os.pathsep.join([str(venv / "bin"), base.get("PATH", "")]),
            VIRTUAL_ENV=str(venv),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            RUNNER_TEMP=str(temp),
            GITHUB_ENV=str(temp / "github_env"),
            XDG_CACHE_HOME=str(root / "cache"),
        )
        return cls(root, base)

    @property
    def temp(self) -> Path:
        return Path(self.base_env["RUNNER_TEMP"])

    def _environment(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = {**self.base_env, **self.env, **extra}
        github_env = Path(self.base_env["GITHUB_ENV"])
        github_env.write_text("")
        return env

    def bash(self, script: str, cwd: Path, extra: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["bash", "-e", "-c", script], cwd=cwd, env=self._environment(extra or {}),
            capture_output=True, text=True, timeout=900, check=False,
        )
        self.log.append(f"$ {script}\nexit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
        # What a step appended to $GITHUB_ENV holds for the steps after it.
        for line in Path(self.base_env["GITHUB_ENV"]).read_text().splitlines():
            key, _, value = line.partition("=")
            self.env[key] = value
        return proc

    def action(
        self, inputs: Mapping[str, str], cwd: Path, action: Path = ACTION
    ) -> subprocess.CompletedProcess[str] | None:
        """action.yml's steps, with its inputs' defaults; the last step's result (None: none ran)."""
        spec = load_yaml(action)
        assert spec["runs"]["using"] == "composite"
        unknown = set(inputs) - set(spec.get("inputs", {}))
        assert not unknown, f"inputs the action does not declare: {unknown}"
        context = {"github.action_path": str(action.parent), "runner.temp": str(self.temp)}
        for name, decl in spec.get("inputs", {}).items():
            context[f"inputs.{name}"] = str(inputs.get(name, decl.get("default", "")))
        last = None
        for step in spec["runs"]["steps"]:
            if "if" in step and not evaluate(step["if"], context):
                continue
            assert step.get("shell") == "bash" and "run" in step, step
            env = {k: substitute(str(v), context) for k, v in step.get("env", {}).items()}
            last = self.bash(substitute(step["run"], context), cwd, env)
            if last.returncode != 0:
                return last
        return last

    def job(self, steps: list[dict[str, Any]], cwd: Path) -> subprocess.CompletedProcess[str] | None:
        """A job's steps, in order, until one fails; the failing (or last) step's result."""
        last = None
        for step in steps:
            uses = step.get("uses")
            if uses is not None:
                if uses.startswith(RUNNER_ACTIONS):
                    continue
                assert THIS_ACTION.match(uses), f"a step these tests cannot run: uses: {uses}"
                last = self.action({k: str(v) for k, v in step.get("with", {}).items()}, cwd)
            else:
                last = self.bash(step["run"], cwd)
            if last is not None and last.returncode != 0:
                return last
        return last

    def shown(self) -> str:
        return "\n".join(self.log)[-12000:]


def copy_project(source: Path, dest: Path) -> Path:
    """A runner's checkout of a scratch project: its files, not what earlier builds left."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("dist", "wheels", "build", "*.sarif"))
    return dest
