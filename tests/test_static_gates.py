"""The static gates, run by CI's one command (`pytest`): lint, types, import layers, sizes.

Each gate is one test that runs the tool from this environment (the `test` extra installs
ruff, mypy and import-linter) and prints the tool's output when it fails. Configuration
lives in pyproject.toml ([tool.ruff], [tool.mypy], [tool.importlinter]); the README's
"Contributing" says how to run each by hand. The AST gates below cover what the tools
do not: which function-level imports of our own modules are allowed, that every
suppression says why, and how long a function or class may grow.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Source folder -> the import name it installs as (pyproject.toml's wheel.packages).
PACKAGE_FOLDERS = {
    "checks": "aoti_shim.checks",
    "plugin": "aoti_shim.plugin",
    "smoke": "aoti_shim.smoke",
    "src/aoti_shim": "aoti_shim",
}
LINTED = ["checks", "plugin", "smoke", "src", "bench", "tests"]


def _run_tool(*argv: str, cwd: Path = REPO, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _report(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def test_ruff_finds_nothing() -> None:
    done = _run_tool("-m", "ruff", "check", "--no-cache", *LINTED)
    print(_report(done))
    assert done.returncode == 0, _report(done)


def test_mypy_finds_nothing_in_the_installed_package(tmp_path: Path) -> None:
    # The installed package, not the source folders: their names are not the import names
    # (checks/ installs as aoti_shim.checks). py.typed marks it typed; -p walks it.
    done = _run_tool(
        "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
        "-p", "aoti_shim", cwd=tmp_path,
    )
    print(_report(done))
    assert done.returncode == 0, _report(done)


def test_the_import_contracts_hold(tmp_path: Path) -> None:
    # lint-imports, the console script beside this interpreter; run from a folder holding no
    # aoti_shim, so the graph is the installed package's. grimp reads every import statement,
    # function-level ones included (the AST gates below list and bound those).
    script = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(script), str(REPO / "pyproject.toml")], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    print(_report(done))
    assert done.returncode == 0 and "0 broken" in done.stdout, _report(done)


# --- function-level imports of the package's own modules ---------------------------------

# (importing module, imported module) -> why it is imported inside a function. Everything
# else imports at the top, where import-linter's layers and acyclic contract see it plainly.
LAZY_IMPORTS: dict[tuple[str, str], str] = {
    ("aoti_shim.cli", "aoti_shim.paths"): "--cmake-dir only; --version stays small",
    ("aoti_shim.cli", "aoti_shim.torch_location"): "--torch-include-dir only",
    ("aoti_shim.cli", "aoti_shim.checks.formats.escape"): "an error's one line; formats load the rules",
    ("aoti_shim.cli", "aoti_shim.checks.abi.prefix"): "a given --prefix only, for its missing-'_' warning",
    ("aoti_shim.cli", "aoti_shim.atomic"): "an error's or a warning's line only; --version stays small",
    ("aoti_shim.stable_abi", "aoti_shim.checks.snapshot"): "the names list's maintainer tool only (--stable-snapshot)",
    ("aoti_shim.build", "aoti_shim.plugin.wheel"): "the checking hooks only; get_requires_* pass settings on",
    (
        "aoti_shim.checks.abi.prefix",
        "aoti_shim.checks.elf.image",
    ): "built_prefix only; the backend's settings use the rule",
    ("aoti_shim.checks.check.command", "aoti_shim.checks.check.run"): "`check --help` needs no checker",
    ("aoti_shim.checks.check.command", "aoti_shim.checks.formats"): "`check --help` needs no formats",
    ("aoti_shim.checks.check.command", "aoti_shim.checks.formats.escape"): "loads the formats package",
    ("aoti_shim.checks.check.command", "aoti_shim.checks.formats.github"): "`check --help` needs no formats",
    ("aoti_shim.checks.check.command", "aoti_shim.checks.inputs.collect"): "--wheel only",
    ("aoti_shim.checks.check.command", "aoti_shim.checks.loader.roles"): "--wheel only",
    ("aoti_shim.checks.scan.command", "aoti_shim.checks.formats.scan"): "`scan --help` needs no formats",
    ("aoti_shim.checks.scan.command", "aoti_shim.checks.scan.environment"): "`scan --help` needs no reader",
    ("aoti_shim.checks.formats", "aoti_shim.checks.formats.json_report"): "a text report loads no other format",
    ("aoti_shim.checks.formats", "aoti_shim.checks.formats.sarif"): "a text report loads no other format",
    ("aoti_shim.checks.formats", "aoti_shim.checks.formats.github"): "a text report loads no other format",
    ("aoti_shim.checks.formats", "aoti_shim.checks.formats.junit"): "a text report loads no xml.etree",
    ("aoti_shim.checks.formats.scan", "aoti_shim.checks.formats.sarif"): "a text report loads no other format",
    ("aoti_shim.checks.formats.scan", "aoti_shim.checks.formats.github"): "a text report loads no other format",
    ("aoti_shim.checks.formats.scan", "aoti_shim.checks.formats.junit"): "a text report loads no xml.etree",
    ("aoti_shim.checks.rules.table", "aoti_shim.checks.native"): "a Mach-O or PE check only; ELF loads no native judge",
    ("aoti_shim.checks.check.run", "aoti_shim.checks.check.native"): "a Mach-O or PE input only; ELF loads no reader",
    ("aoti_shim.checks.references.reference", "aoti_shim.checks.native.reference"): "a dylib or DLL reference only",
    ("aoti_shim.checks.references.reference", "aoti_shim.checks.snapshot.record"): "a snapshot reference only",
    ("aoti_shim.torch_names", "aoti_shim.atomic"): "the list's maintainer tool only; the checker reads the list",
    ("aoti_shim.checks.snapshot.native", "aoti_shim.checks.macho.facts"): "a macOS library recorded only",
    ("aoti_shim.checks.snapshot.native", "aoti_shim.checks.pe.facts"): "a Windows library recorded only",
    ("aoti_shim.checks.scan.judge", "aoti_shim.checks.native"): "a macOS venv's HIJACK only; ELF loads no dyld model",
    ("aoti_shim.checks.scan.judge", "aoti_shim.checks.native.image"): "a Mach-O or PE library read only",
    ("aoti_shim.checks.scan.judge", "aoti_shim.checks.native.binding"): "a macOS venv's HIJACK only",
    ("aoti_shim.checks.scan.command", "aoti_shim.checks.scan.run"): "`scan --help` needs no reader",
    (
        "aoti_shim.plugin.passthrough",
        "aoti_shim.plugin.config_settings",
    ): "after the boundary reports a missing scikit-build-core",
    ("aoti_shim.plugin.passthrough", "aoti_shim.plugin.cuda_wheels"): "get_requires only",
    ("aoti_shim.smoke.compile", "aoti_shim.smoke.models"): "models import torch; the cache check does not",
    ("aoti_shim.smoke.compile_worker", "aoti_shim.smoke.models"): "a child: torch is imported first, then the models",
    ("aoti_shim.smoke.evidence", "aoti_shim.checks.elf.image"): "only after a run, on the evidence path",
    (
        "aoti_shim.smoke.rewrite_worker",
        "aoti_shim.checks.abi.prefix",
    ): "a child: LIEF first, so its crash is this child's",
    ("aoti_shim.smoke.run_child", "aoti_shim.smoke.compare"): "a child: torch's libraries load before ours, on purpose",
    ("aoti_shim.smoke.run_child", "aoti_shim.smoke.loader"): "a child: torch's libraries load before ours, on purpose",
    ("aoti_shim.smoke.run_child", "aoti_shim.smoke.runner"): "a child: torch's libraries load before ours, on purpose",
    ("aoti_shim.smoke.source_route", "aoti_shim.paths"): "the source route only",
}


def _module_name(path: Path) -> str:
    for folder, package in PACKAGE_FOLDERS.items():
        root = REPO / folder
        if path.is_relative_to(root):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join([package, *parts])
    raise AssertionError(path)


def _function_level_imports(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if in_function and isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.append((child.lineno, child.module))
            elif in_function and isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            walk(child, inside)

    walk(tree, False)
    return [(line, name) for line, name in found if name == "aoti_shim" or name.startswith("aoti_shim.")]


def _package_files() -> list[Path]:
    return sorted(p for folder in PACKAGE_FOLDERS for p in (REPO / folder).rglob("*.py"))


def test_function_level_imports_of_our_own_modules_are_the_listed_few() -> None:
    seen: set[tuple[str, str]] = set()
    unlisted: list[str] = []
    for path in _package_files():
        module = _module_name(path)
        for line, imported in _function_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            seen.add((module, imported))
            if (module, imported) not in LAZY_IMPORTS:
                unlisted.append(f"{path.relative_to(REPO)}:{line}: imports {imported} inside a function")
    stale = sorted(f"{a} -> {b}" for a, b in set(LAZY_IMPORTS) - seen)
    assert not unlisted, "import at the top, or list it in LAZY_IMPORTS with why:\n" + "\n".join(unlisted)
    assert not stale, "LAZY_IMPORTS lists imports that are gone:\n" + "\n".join(stale)


def test_no_lazy_import_goes_up_or_back() -> None:
    # A lazy import may only point down: the importing module is not itself imported, at
    # module level, by what it imports lazily (a cycle import-linter reads as a plain edge).
    top_level: dict[str, set[str]] = {}
    for path in _package_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module}
        names |= {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
        top_level[_module_name(path)] = {n for n in names if n.startswith("aoti_shim")}

    def reaches(start: str, goal: str) -> bool:
        todo, done = [start], set()
        while todo:
            current = todo.pop()
            if current == goal:
                return True
            if current not in done:
                done.add(current)
                todo += top_level.get(current, ())
        return False

    back = [f"{a} -> {b}" for a, b in LAZY_IMPORTS if reaches(b, a)]
    assert not back, "a lazy import that closes a cycle:\n" + "\n".join(back)


def test_bench_imports_the_package_never_the_tests_helpers() -> None:
    # Issue 34 §5: bench/ reached tests/ through sys.path; a helper it needs belongs in the package.
    helpers = {p.stem for p in (REPO / "tests").rglob("*.py")}
    found = []
    for path in sorted((REPO / "bench").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.name}: imports {n}" for n in names if n.split(".")[0] in helpers]
        if '"tests"' in text:
            found.append(f"{path.name}: names the tests folder")
    assert not found, found


# --- suppressions -------------------------------------------------------------------------

# Spelled in two pieces so this file holds no such directive itself.
_FORMATTER = re.compile("# fmt" + r":\s*(skip|off)")
_DIRECTIVE = re.compile(r"#\s*(type:\s*ignore(\[[^\]]*\])?|noqa(:\s*[A-Z]+[0-9]+(,\s*[A-Z]+[0-9]+)*)?)")


def _suppressions() -> list[tuple[Path, int, str]]:
    found = []
    for folder in LINTED:
        for path in sorted((REPO / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _FORMATTER.search(line) or _DIRECTIVE.search(line):
                    found.append((path, number, line))
    return found


def test_every_suppression_names_its_code_and_says_why() -> None:
    bad = []
    for path, number, line in _suppressions():
        where = f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        if _FORMATTER.search(line):
            bad.append(f"{where}  (no formatter runs here: drop it)")
            continue
        match = _DIRECTIVE.search(line)
        assert match is not None
        directive = match.group(1)
        if directive.startswith("type") and match.group(2) is None or directive == "noqa":
            bad.append(f"{where}  (name the code)")
        elif len(line[match.end():].strip(" #-(:)")) < 4:
            bad.append(f"{where}  (say why after it, on the same line)")
    assert not bad, "\n".join(bad)


# --- sizes --------------------------------------------------------------------------------

MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 400
# "path:qualified name" -> why it may be longer.
LONG_ALLOWED: dict[str, str] = {}


def _long_definitions() -> list[str]:
    """Each definition over its limit, unless LONG_ALLOWED lists it; a listed one that is no
    longer long is reported too, so the list only shrinks."""
    long = []
    seen: set[str] = set()
    for folder in ("checks", "plugin"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))

            def visit(node: ast.AST, outer: str, path: Path = path) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        name = f"{outer}{child.name}"
                        size = (child.end_lineno or child.lineno) - child.lineno + 1
                        limit = MAX_CLASS_LINES if isinstance(child, ast.ClassDef) else MAX_FUNCTION_LINES
                        key = f"{path.relative_to(REPO)}:{name}"
                        if size > limit:
                            seen.add(key)
                            if key not in LONG_ALLOWED:
                                long.append(f"{key}: {size} lines (limit {limit})")
                        visit(child, f"{name}.", path)

            visit(tree, "")
    return long + [f"{key}: listed in LONG_ALLOWED but no longer long" for key in sorted(set(LONG_ALLOWED) - seen)]


def test_no_function_over_80_lines_nor_class_over_400_in_checks_and_plugin() -> None:
    long = _long_definitions()
    assert not long, "split it, or list it in LONG_ALLOWED with why:\n" + "\n".join(long)


# --- tests mirror the rooms ---------------------------------------------------------------

# Each module of checks/ and plugin/ has a unit-test file of its name that imports it:
# checks/<room>/<module>.py -> tests/test_<room>_<module>.py, plugin/<module>.py ->
# tests/test_plugin_<module>.py, and a package's own code (checks/formats/__init__.py) ->
# tests/test_<room>.py. A file that defines no function or class (re-exports, constants)
# needs none. Otherwise the module is listed here: path -> why it has no unit file, and where its
# behaviour is tested (behaviour tests stay where they are).
NO_UNIT_FILE: dict[str, str] = {
    "checks/__init__.py": "lazy re-exports (PEP 562); tests/test_import_budget.py holds what importing it loads",
    "checks/check/command.py": "argparse wiring, tested through the CLI in tests/test_cli_texts.py, test_check.py",
    "checks/check/run.py": "the run over real libraries: tests/test_check*.py, tests/test_bindings_differential.py",
    "checks/formats/scan.py": "scan's reports from a record: tests/test_scan.py, tests/test_formats_scan_text.py",
    "checks/inputs/collect.py": "the wheel reader's bounds on real zips: tests/test_inputs.py, test_check_bounds.py",
    "checks/loader/closure.py": "the closure of real libraries: tests/test_check_dependencies.py, test_check_search.py",
    "checks/loader/roles.py": "classification of real members: tests/test_gate.py, tests/test_inputs.py",
    "checks/macho/binds.py": "against llvm-objdump on generated fixtures: tests/test_macho_reader.py",
    "checks/macho/commands.py": "against llvm-objdump on generated fixtures: tests/test_macho_reader.py",
    "checks/macho/exports.py": "against llvm-objdump on generated fixtures: tests/test_macho_reader.py",
    "checks/macho/facts.py": "against llvm-objdump on generated fixtures: tests/test_macho_reader.py",
    "checks/macho/fat.py": "against llvm-objdump on generated fixtures: tests/test_macho_reader.py",
    "checks/native/binding.py": "the lookups' shared part: tests/test_native_dyld.py, tests/test_native_winload.py",
    "checks/native/process.py": "the process of generated triples: tests/test_native_judge.py, test_check_native.py",
    "checks/pe/exports.py": "against llvm-readobj and LIEF on generated DLLs: tests/test_pe_reader.py",
    "checks/pe/facts.py": "against llvm-readobj and LIEF on generated DLLs: tests/test_pe_reader.py",
    "checks/pe/headers.py": "against llvm-readobj and LIEF on generated DLLs: tests/test_pe_reader.py",
    "checks/pe/imports.py": "against llvm-readobj and LIEF on generated DLLs: tests/test_pe_reader.py",
    "checks/references/reference.py": "torch's lib/, wheels, snapshots: tests/test_check_references.py, test_check.py",
    "checks/rules/table.py": "every rule on real libraries: tests/test_rule_matrix.py, tests/test_check*.py",
    "checks/scan/command.py": "argparse wiring, tested through the CLI in tests/test_cli_texts.py, test_scan.py",
    "checks/scan/judge.py": "the judgement of real environments: tests/test_scan.py, tests/test_scan_inputs.py, "
        "tests/test_scan_native.py (macOS and Windows ones)",
    "checks/scan/run.py": "the run and its reports: tests/test_scan.py",
    "checks/snapshot/command.py": "argparse wiring, tested through the CLI in tests/test_snapshot.py",
    "checks/snapshot/record.py": "the shipped snapshots and hostile ones: tests/test_snapshot.py, test_check_bounds.py",
    "checks/snapshot/torch_libraries.py": "what `import torch` loads, asked of torch: tests/test_check_references.py",
    "plugin/boundary.py": "the backend without scikit-build-core: tests/test_plugin_backend.py",
    "plugin/config_settings.py": "what pip hands the backend: tests/test_plugin_backend.py, test_plugin_settings.py",
    "plugin/cuda.py": "CUDA from NVIDIA's wheels through pip: tests/test_cuda_wheels.py",
    "plugin/gate.py": "the gate of real built wheels: tests/test_gate.py, tests/test_gate_says.py, "
        "tests/test_gate_native.py (macOS and Windows wheels)",
    "plugin/passthrough.py": "the hooks that build no binary, through pip: tests/test_plugin_backend.py",
    "plugin/target_env.py": "the target environment of real builds: tests/test_plugin_backend.py",
    "plugin/wheel.py": "build, check and publish through pip: tests/test_plugin_backend.py, test_plugin_publish.py",
}


def _has_code(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in ast.walk(tree))


def _unit_file(path: Path) -> Path:
    """tests/test_<room>_<module>.py for checks/<room>/<module>.py (the test file a module's
    unit tests live in); see NO_UNIT_FILE's comment."""
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts[1:] if rel.parts[0] == "checks" else rel.parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return REPO / "tests" / f"test_{'_'.join(parts) or rel.parts[0]}.py"


def _imports(test: Path, module: str) -> bool:
    parent, _, leaf = module.rpartition(".")
    for node in ast.walk(ast.parse(test.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name == module for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == module:
            return True
        if isinstance(node, ast.ImportFrom) and node.module == parent and any(a.name == leaf for a in node.names):
            return True
    return False


def test_every_module_has_a_unit_test_file_of_its_name_or_says_why_not() -> None:
    modules = {
        str(p.relative_to(REPO)): p
        for folder in ("checks", "plugin")
        for p in sorted((REPO / folder).rglob("*.py"))
        if _has_code(p)
    }
    lacking, not_importing, stale = [], [], []
    for rel, path in modules.items():
        test = _unit_file(path)
        if rel in NO_UNIT_FILE:
            if test.exists():
                stale.append(f"{rel}: has {test.relative_to(REPO)} now; take it out of NO_UNIT_FILE")
        elif not test.exists():
            lacking.append(f"{rel}: no {test.relative_to(REPO)}")
        elif not _imports(test, _module_name(path)):
            not_importing.append(f"{test.relative_to(REPO)} does not import {_module_name(path)}")
    gone = sorted(set(NO_UNIT_FILE) - set(modules))
    stale += [f"{rel}: listed in NO_UNIT_FILE, but no such module (or it defines nothing)" for rel in gone]
    assert not lacking, "write its unit tests, or list it in NO_UNIT_FILE with why:\n" + "\n".join(lacking)
    assert not not_importing, "a unit file of another module's name:\n" + "\n".join(not_importing)
    assert not stale, "\n".join(stale)


def test_every_test_file_the_docs_name_exists() -> None:
    """The README's example of the naming rule named tests/test_plugin_gate.py (ec85d20),
    a file no one wrote: plugin/gate.py is in NO_UNIT_FILE."""
    named = {
        m for doc in (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
        for m in re.findall(r"\btests/[\w/]+\.py\b", doc.read_text(encoding="utf-8"))
    }
    assert named and not sorted(t for t in named if not (REPO / t).exists())
