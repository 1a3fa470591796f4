"""The one way the tests (and bench/) compile C and C++: the system compiler, for real.

C goes to ``$CC`` or gcc, C++ to ``$CXX`` or g++; the language follows the source's
suffix unless ``language`` says otherwise (``/dev/null`` as an empty C file).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

CXX_SUFFIXES = frozenset({".cpp", ".cc", ".cxx", ".C"})


def compiler(language: str) -> str:
    """The C (``"c"``) or C++ (``"c++"``) compiler; fails the test when there is none."""
    env, names = ("CXX", ("g++", "c++")) if language == "c++" else ("CC", ("gcc", "cc"))
    found = os.environ.get(env) or next((p for p in map(shutil.which, names) if p), None)
    assert found, f"no {language} compiler (${env}, {' or '.join(names)}): the tests build their fixtures from source"
    return found


def compile_shared(
    source: Path,
    target: Path,
    flags: tuple[str, ...] = (),
    *,
    language: str | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``-shared -fPIC -O1`` ``source`` into ``target``.

    With ``check`` a failure fails the test with the compiler's output; without, the
    caller decides what a failure means (a 32-bit build on a machine without multilib).
    """
    language = language or ("c++" if Path(source).suffix in CXX_SUFFIXES else "c")
    lang_flags = ("-x", language) if str(source) == os.devnull else ()
    target.parent.mkdir(parents=True, exist_ok=True)
    args = [compiler(language), "-shared", "-fPIC", "-O1", *lang_flags, "-o", str(target), str(source), *flags]
    cached = _cached(args, source)
    if cached is not None and cached.is_file():
        shutil.copyfile(cached, target)
        return subprocess.CompletedProcess(args, 0, "", "")
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    if check:
        assert done.returncode == 0, f"compiling {source} failed:\n{done.stdout}{done.stderr}"
    if cached is not None and done.returncode == 0:
        part = cached.with_name(f"{cached.name}.{os.getpid()}.part")
        shutil.copyfile(target, part)
        os.replace(part, cached)
    return done


def _cached(args: list[str], source: Path) -> Path | None:
    """Where $AOTI_SHIM_COMPILE_CACHE keeps this compile's output, if it is set.

    For runs that start many test sessions on unchanged fixtures (docs/mutation.sh): the
    key is the command line less the output path, plus the source's bytes; libraries
    linked with -l are not part of it, so leave it unset for ordinary runs.
    """
    folder = os.environ.get("AOTI_SHIM_COMPILE_CACHE")
    if not folder:
        return None
    key = hashlib.sha256("\0".join(a for a in args if a != args[args.index("-o") + 1]).encode())
    key.update(Path(source).read_bytes())
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) / f"{key.hexdigest()}.so"


def compile_program(source: Path, target: Path, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """An executable from ``source``; fails the test with the compiler's output."""
    language = "c++" if Path(source).suffix in CXX_SUFFIXES else "c"
    done = subprocess.run(
        [compiler(language), *flags, "-o", str(target), str(source)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"compiling {source} failed:\n{done.stdout}{done.stderr}"
    return done


def compile_object(
    source: Path, target: Path, flags: tuple[str, ...] = (), *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``-c`` ``source`` into an object file; fails the test with the compiler's output."""
    language = "c++" if Path(source).suffix in CXX_SUFFIXES else "c"
    done = subprocess.run(
        [compiler(language), "-c", *flags, str(source), "-o", str(target)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert done.returncode == 0, f"compiling {source} failed:\n{done.stdout}{done.stderr}"
    return done
