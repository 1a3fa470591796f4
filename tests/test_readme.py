"""Every command and code block of the README and of docs/reference.md, run as written.

Each fenced block carries a ``<!-- readme-test: ... -->`` line that says what it is:

- ``file NAME in PROJECT``: written, as it is, into the scratch folder PROJECT;
- ``run in PROJECT``: its lines run, as they are, in PROJECT (bash, stop at the first failure);
- ``run anywhere``: the same, in a copy of the repository and in an empty folder elsewhere;
- ``workflow``: a GitHub Actions job; its steps run in a copy of pip-demo, in a fresh venv, the
  repository's action (action.yml) step by step (tests/actions_support.py);
- ``cibuildwheel``: its ``repair-wheel-command`` runs on pip-demo's wheel, as cibuildwheel runs it;
- ``tool.aoti-shim table``: read by the build backend's settings reader;
- ``output, checked by TEST`` / ``output recorded ...``: a result shown, not a command;
- ``skip: REASON``: the two set-up commands, which CI itself runs.

The blocks run in order, the README's first, then the reference's: a quickstart's files
(``pip-demo``'s wheel among them) exist before the commands that use them run. Every relative
link of the two files leads to a file, and an ``#anchor`` to one of its headings.
The environment is this test environment's (its python, pip, aoti-shim, cmake first on
PATH), which is the set-up commands' venv; pip builds with isolation, as the README's users do
(the build requirements come from pip's configured index, aoti-shim's own wheel from the folder
the README writes); the smoke cache is private and the smoke compiles without autotuning
(``AOTI_SHIM_INDUCTOR_OPTIONS``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
REFERENCE = REPO / "docs" / "reference.md"
DOCS = (README, REFERENCE)

_BLOCK = re.compile(
    r"(?:<!-- readme-test: (?P<tag>[^\n]*?) -->\n)?^```(?P<lang>[^\n]*)\n(?P<body>.*?)^```$", re.S | re.M
)


@dataclass(frozen=True)
class Block:
    file: str
    line: int
    tag: str
    lang: str
    body: str

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}-L{self.line}-{self.tag.split(':')[0].split(',')[0].replace(' ', '-')}"


def readme_blocks(text: str | None = None, path: Path = README) -> list[Block]:
    text = path.read_text(encoding="utf-8") if text is None else text
    name = path.relative_to(REPO).as_posix()
    return [
        Block(name, text.count("\n", 0, m.start("lang")) + 1, m.group("tag") or "", m.group("lang"), m.group("body"))
        for m in _BLOCK.finditer(text)
    ]


BLOCKS = [block for path in DOCS for block in readme_blocks(path=path)]


class Workspace:
    """The scratch projects, a copy of the repository, and the environment the blocks run in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clone = root / "clone"
        self.elsewhere = root / "elsewhere"
        self.elsewhere.mkdir()
        tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False).stdout
        names = [n for n in tracked.decode().split("\0") if n] if tracked else []
        if names:
            for name in names:
                source = REPO / name
                if source.is_file():
                    (self.clone / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, self.clone / name)
        else:  # not a git checkout: the tree, without build outputs
            shutil.copytree(
                REPO, self.clone, ignore=shutil.ignore_patterns(".venv", "build", "dist", ".git", "__pycache__")
            )
        bin_dir = str(Path(sys.executable).parent)
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AOTI_SHIM_", "SKBUILD_", "PIP_")) and k != "CMAKE_ARGS"
        }
        self.env.update(
            PATH=os.pathsep.join([bin_dir, self.env.get("PATH", "")]),
            VIRTUAL_ENV=str(Path(sys.executable).parent.parent),
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            XDG_CACHE_HOME=str(root / "cache"),
            # The smoke example compiles without autotuning: the same chain in a fraction of the
            # time (CPU GEMMs then go to the shims' addmm fallback, which the reference shims have).
            AOTI_SHIM_INDUCTOR_OPTIONS='{"max_autotune": false}',
        )

    def project(self, name: str) -> Path:
        path = self.root / "projects" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def bash(self, script: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("readme"))


def _shown(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-6000:]}"


def test_every_block_says_what_it_is() -> None:
    kinds = ("file ", "run in ", "run anywhere", "workflow", "cibuildwheel", "tool.aoti-shim table", "output", "skip: ")
    assert len(BLOCKS) >= 15
    assert {b.file for b in BLOCKS} == {"README.md", "docs/reference.md"}
    untagged = [f"{b.file}:{b.line}" for b in BLOCKS if not b.tag.startswith(kinds)]
    assert untagged == [], f"blocks without a readme-test line: {untagged}"
    skipped = [b for b in BLOCKS if b.tag.startswith("skip")]
    # Only the set-up commands (CI runs them), the static gates (tests/test_static_gates.py runs
    # each) and the contributing section's runs of this suite and of the mutation tool (which
    # would run this test inside itself) are not run here.
    assert [b.body.splitlines()[0] for b in skipped] == [
        'python3 -m venv .venv && .venv/bin/pip install ".[torch]" && .venv/bin/aoti-shim smoke',
        ".venv/bin/ruff check checks plugin smoke src bench tests     # lint; --fix sorts imports",
        '.venv/bin/pytest -m "not slow"',
        "bash docs/mutation.sh                    # or name modules: bash docs/mutation.sh checks/rules/table.py",
    ]
    assert (
        skipped[0].body.splitlines()[1]
        == 'python3 -m venv .venv && .venv/bin/pip install ".[test]" && .venv/bin/pytest'
    )


def _anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (fenced code has none)."""
    prose = re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", prose, re.M):
        # lowercase, punctuation other than '-' and '_' dropped, each space a '-'
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:  # a repeated heading gets -1, -2, ...
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def broken_links(path: Path, text: str | None = None) -> list[str]:
    """The relative links of a Markdown file that lead to no file, or to no heading of it."""
    text = path.read_text(encoding="utf-8") if text is None else text
    prose = re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and (linked.suffix != ".md" or anchor not in _anchors(linked.read_text(encoding="utf-8"))):
            broken.append(f"{target} (no such heading)")
    return broken


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert len(re.findall(r"\]\((?!https?:)[^)\s]*#", text)) >= 5  # the check below has links to check
    assert broken_links(path) == []
    # The check itself sees a wrong anchor, a missing file and a wrong anchor in another file.
    assert broken_links(path, "[a](#no-such-heading) [b](no/such/file.md) [c](" + path.name + "#nope)") == [
        "#no-such-heading (no such heading)",
        "no/such/file.md (no such file)",
        path.name + "#nope (no such heading)",
    ]


def test_the_slugs_are_githubs() -> None:
    text = ("# The pip backend `aoti_shim.build`\n## Speed against libtorch's own shims, and the GPU run\n### "
        "Options\n### Options\n")
    assert _anchors(text) == {
        "the-pip-backend-aoti_shimbuild",
        "speed-against-libtorchs-own-shims-and-the-gpu-run",
        "options",
        "options-1",
    }


def test_the_readme_lists_every_command() -> None:
    from aoti_shim.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    section = README.read_text(encoding="utf-8").split("\n## CLI reference\n", 1)[1].split("\n## ", 1)[0]
    assert [c for c in commands if f"\n### `aoti-shim {c}`\n" not in section] == []
    globals_ = [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]
    assert globals_ and [o for o in globals_ if f"`aoti-shim {o}`" not in section] == []


def test_the_set_up_commands_come_first_and_ci_runs_the_second() -> None:
    first = BLOCKS[0]
    assert first.file == "README.md" and first.lang == "sh" and first.tag.startswith("skip")
    second = first.body.splitlines()[1]
    assert second in (REPO / ".ci" / "run").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block(block: Block, workspace: Workspace, request: pytest.FixtureRequest) -> None:
    tag = block.tag
    if tag.startswith("skip: "):
        pytest.skip(tag[len("skip: ") :])
    if tag.startswith("output"):
        checked = re.search(r"checked by (tests/\S+\.py)::(\w+)", tag)
        if checked:
            assert f"def {checked.group(2)}(" in (REPO / checked.group(1)).read_text()
        return
    if tag.startswith("file "):
        name, project = re.fullmatch(r"file (\S+) in (\S+)", tag).groups()
        target = workspace.project(project) / name
        target.parent.mkdir(parents=True, exist_ok=True)  # a file in a subfolder (include/myrt/shims.h)
        target.write_text(block.body)
        return
    if tag.startswith("run in "):
        project = workspace.project(tag[len("run in ") :].split()[0])
        proc = workspace.bash(block.body, project)
        assert proc.returncode == 0, _shown(proc)
        return
    if tag == "run anywhere":
        for folder in (workspace.clone, workspace.elsewhere):
            proc = workspace.bash(block.body, folder)
            assert proc.returncode == 0, f"in {folder}:\n{_shown(proc)}"
        return
    if tag.startswith("workflow"):
        _run_workflow(block, workspace, request.getfixturevalue("ci_runner"))
        return
    if tag.startswith("cibuildwheel"):
        _run_repair_command(block, workspace)
        return
    if tag.startswith("tool.aoti-shim table"):
        from aoti_shim.plugin.settings import gate_settings

        settings = gate_settings(tomllib.loads(block.body), {})
        assert settings.prefix == "myrt_"
        if "[[tool.aoti-shim.suppress]]" in block.body:
            assert settings.suppress
        if "force-include = true" in block.body:  # the runtime section's keys, read as the README says
            assert settings.force_include and settings.names_from == ("include/",) and settings.exports == "shims"
        return
    pytest.fail(f"{block.file} line {block.line}: unknown readme-test tag {tag!r}")


def _run_workflow(block: Block, workspace: Workspace, runner) -> None:
    from actions_support import copy_project, load_yaml

    (job,) = load_yaml(block.body)["jobs"].values()
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    # The action installs aoti-shim (nothing else in the job does), then checks the wheels.
    assert not any("pip install" in s.get("run", "") for s in steps), steps
    assert [u for u in uses if u.startswith("OWNER/aoti-shim@")] == ["OWNER/aoti-shim@main"] * 2
    project = copy_project(workspace.project("pip-demo"), workspace.root / "projects" / "ci-demo")
    last = runner.job(steps, project)
    assert last is not None and last.returncode == 0, runner.shown()
    assert "PIP_FIND_LINKS" in runner.env, runner.shown()
    assert list((project / "dist").glob("myrt-0.1.0-*.whl")), runner.shown()
    uploaded = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))["with"][
        "sarif_file"
    ]
    sarif = json.loads((project / uploaded).read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []


def repair_wheel_command(text: str | None = None) -> str:
    """The README's cibuildwheel repair command, joined as cibuildwheel joins a list."""
    block = next(b for b in readme_blocks(text) if b.tag.startswith("cibuildwheel"))
    command = tomllib.loads(block.body)["tool"]["cibuildwheel"]["linux"]["repair-wheel-command"]
    return " && ".join(command) if isinstance(command, list) else command


def _run_repair_command(block: Block, workspace: Workspace) -> None:
    project = workspace.project("pip-demo")
    (wheel,) = sorted((project / "dist").glob("myrt-*.whl"))
    dest = workspace.root / "repaired"
    dest.mkdir()
    command = repair_wheel_command().replace("{wheel}", str(wheel)).replace("{dest_dir}", str(dest))
    proc = workspace.bash(command, project)
    assert proc.returncode == 0, _shown(proc)
    (repaired,) = dest.glob("*.whl")
    assert "manylinux" in repaired.name


@pytest.mark.slow
def test_the_cmake_quickstart_fails_a_model_built_with_another_prefix(workspace: Workspace) -> None:
    # The CMake quickstart as written, but the model built with another prefix than the shims
    # (the recorded package stands in for make_model.py's). At f562a93 its checks both said OK:
    # `check --model` read the prefix from the blob itself.
    blocks = [b for b in BLOCKS if b.file == "README.md" and b.tag.endswith(" in cmake-demo")]
    project = workspace.root / "projects" / "cmake-other-prefix"
    project.mkdir(parents=True)
    package = REPO / "fixtures" / "aoti_packages" / "mlp_cpu"
    for block in blocks:
        if block.tag.startswith("file "):
            name = block.tag.split()[1]
            body = block.body.replace(
                "aoti_shim_add_model(mlp PACKAGE mlp.pt2 PREFIX myrt_)",
                f'aoti_shim_add_model(mlp PACKAGE "{package}" PREFIX other_)',
            )
            if name == "CMakeLists.txt":
                assert body != block.body, "the quickstart's aoti_shim_add_model line changed"
            (project / name).write_text(body)
    (run,) = [b for b in blocks if b.tag.startswith("run in ")]
    script = run.body.replace("python make_model.py\n", "")
    assert script.rstrip().splitlines()[-1].startswith("aoti-shim check --model build/libmlp.so")
    proc = workspace.bash(script, project)
    assert proc.returncode == 8, _shown(proc)
    assert "other_aoti_torch_" in proc.stdout, _shown(proc)
