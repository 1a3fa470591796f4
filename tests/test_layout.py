"""The clone is not a package: standing in it, Python finds the installed aoti_shim."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_importing_from_the_clone_root_gives_the_installed_package() -> None:
    # -c puts the current folder first on sys.path, as a user's script in the clone would.
    found = subprocess.run(
        [sys.executable, "-c", "import aoti_shim, aoti_shim.checks, aoti_shim.cmake; "
         "print(aoti_shim.__file__); print(list(aoti_shim.cmake.__path__)[0])"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    assert found.returncode == 0, found.stderr
    package_file, cmake_folder = found.stdout.split()
    assert "site-packages" in Path(package_file).resolve().parts
    assert (Path(cmake_folder) / "AotiShimConfig.cmake").is_file()


def test_cmake_dir_from_the_clone_root() -> None:
    asked = subprocess.run([sys.executable, "-m", "aoti_shim", "--cmake-dir"], cwd=REPO,
                           capture_output=True, text=True, check=False)
    assert asked.returncode == 0, asked.stderr
    assert (Path(asked.stdout.strip()) / "AotiShimConfig.cmake").is_file()


def test_nothing_but_the_installed_package_answers_to_aoti_shim_subpackages() -> None:
    # The old __path__ extension made aoti_shim.tests and aoti_shim.docs importable.
    probe = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; "
         "print(u.find_spec('aoti_shim.tests'), u.find_spec('aoti_shim.docs'), u.find_spec('aoti_shim.fixtures'))"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["None", "None", "None"]


def test_fixture_data_has_one_home() -> None:
    # Projects, sources and recorded packages the tests build from live under fixtures/;
    # tests/ holds tests and their helper modules only.
    assert not (REPO / "tests" / "packages").exists()
    tracked = subprocess.run(
        ["git", "ls-files", "tests"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout.split()
    strays = [name for name in tracked if not name.endswith(".py")]
    assert strays == [], "fixture data belongs under fixtures/"
