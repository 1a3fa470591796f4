"""A real AOTInductor blob runs on the reference shims, next to a global libtorch.

The recorded link_libtorch=False package (fixtures/aoti_packages/mlp_cpu) is built
with the reference library's prefix. A fresh process imports torch, promotes
libtorch_cpu.so to the global scope (the collision setup), loads the shims and the
blob, runs the model on tensors made by the shims, and compares with eager torch
running the same seeded model.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cmake_support import PACKAGES, RECORDED_PACKAGE, CMakeProject, log

REPO = Path(__file__).resolve().parents[1]

RUN_BLOB = r"""
import ctypes, os, sys
import torch
sys.path.insert(0, sys.argv[4])
from make_cpu_package import PackageSettings

blob_path, shim_path, prefix = sys.argv[1:4]
# libtorch's aoti_torch_* in the global scope, first: an unprefixed blob would bind to them.
libtorch = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
ctypes.CDLL(libtorch, mode=ctypes.RTLD_GLOBAL | os.RTLD_NOLOAD)
shims = ctypes.CDLL(shim_path, mode=ctypes.RTLD_GLOBAL)
blob = ctypes.CDLL(blob_path, mode=ctypes.RTLD_LOCAL | os.RTLD_NOW)
P = ctypes.c_void_p

def fn(lib, name, *argtypes):
    f = getattr(lib, name)
    f.restype = ctypes.c_int32
    f.argtypes = list(argtypes)
    return f

# The recorded model (fixtures/make_cpu_package.py), rebuilt from the same seed.
settings = PackageSettings(output=None)
class TinyMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(settings.in_features, settings.hidden)
        self.fc2 = torch.nn.Linear(settings.hidden, settings.out_features)
    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)
torch.manual_seed(0)
model = TinyMLP().eval()
x = torch.randn(settings.batch, settings.in_features)
with torch.no_grad():
    want = model(x)

container = P()
create = fn(blob, "AOTInductorModelContainerCreateWithDevice", P, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p)
assert create(ctypes.byref(container), 1, b"cpu", None) == 0
sizes = (ctypes.c_int64 * 2)(settings.batch, settings.in_features)
from_blob = fn(shims, prefix + "aoti_torch_create_tensor_from_blob", P, ctypes.c_int64, P, P, ctypes.c_int64,
               ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, P)
get_data = fn(shims, prefix + "aoti_torch_get_data_ptr", P, P)
get_sizes = fn(shims, prefix + "aoti_torch_get_sizes", P, P)
delete = fn(shims, prefix + "aoti_torch_delete_tensor_object", P)
run = fn(blob, "AOTInductorModelContainerRun", P, P, ctypes.c_size_t, P, ctypes.c_size_t, P, P)
for attempt in range(3):  # repeated runs reuse the container's buffers
    handle = P()
    assert from_blob(x.data_ptr(), 2, sizes, None, 0, 6, 0, 0, ctypes.byref(handle)) == 0
    inputs = (P * 1)(handle)  # the run takes ownership of its input handles
    outputs = (P * 1)()
    assert run(container, inputs, 1, outputs, 1, None, None) == 0
    data, shape = P(), ctypes.POINTER(ctypes.c_int64)()
    assert get_data(outputs[0], ctypes.byref(data)) == 0 and get_sizes(outputs[0], ctypes.byref(shape)) == 0
    got = torch.tensor(list((ctypes.c_float * want.numel()).from_address(data.value))).reshape(want.shape)
    assert [shape[0], shape[1]] == list(want.shape)
    assert delete(outputs[0]) == 0
    print("max_abs_diff", float((got - want).abs().max()))
fn(blob, "AOTInductorModelContainerDelete", P)(container)
"""


@pytest.fixture(scope="module")
def prefixed_blob(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    from shims_support import reference_library, reference_prefix

    prefix = reference_prefix()
    project = CMakeProject(
        PACKAGES / "cmake_model",
        tmp_path_factory.mktemp("shim-blob") / "build",
        {"AOTI_SHIM_SYMBOL_PREFIX": prefix, "FIXTURE_PACKAGE": str(RECORDED_PACKAGE), "FIXTURE_CHECK": "OFF"},
    )
    built = project.configure_and_build()
    assert built.returncode == 0, log(built)
    return project.build / "libmlp_blob.so", reference_library(), prefix


def test_blob_runs_on_the_shims_beside_a_global_libtorch(prefixed_blob: tuple[Path, Path, str]) -> None:
    blob, library, prefix = prefixed_blob
    done = subprocess.run(
        [sys.executable, "-c", RUN_BLOB, str(blob), str(library), prefix, str(REPO / "fixtures")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    diffs = [float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("max_abs_diff")]
    assert len(diffs) == 3 and max(diffs) < 1e-5, done.stdout


# The same blob, run with the shim profile: through its C ABI (off, then on for 2 and
# for 4 runs) and through the environment (the table written at exit).
RUN_PROFILED = r"""
import ctypes, os, sys
import torch
blob_path, shim_path, prefix, mode = sys.argv[1:5]
libtorch = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
ctypes.CDLL(libtorch, mode=ctypes.RTLD_GLOBAL | os.RTLD_NOLOAD)
shims = ctypes.CDLL(shim_path, mode=ctypes.RTLD_GLOBAL)
blob = ctypes.CDLL(blob_path, mode=ctypes.RTLD_LOCAL | os.RTLD_NOW)
P = ctypes.c_void_p

def fn(lib, name, *argtypes):
    f = getattr(lib, name)
    f.restype = ctypes.c_int32
    f.argtypes = list(argtypes)
    return f

container = P()
create = fn(blob, "AOTInductorModelContainerCreateWithDevice", P, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p)
assert create(ctypes.byref(container), 1, b"cpu", None) == 0
x = torch.randn(2, 8)
sizes = (ctypes.c_int64 * 2)(2, 8)
from_blob = fn(shims, prefix + "aoti_torch_create_tensor_from_blob", P, ctypes.c_int64, P, P, ctypes.c_int64,
               ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, P)
delete = fn(shims, prefix + "aoti_torch_delete_tensor_object", P)
run = fn(blob, "AOTInductorModelContainerRun", P, P, ctypes.c_size_t, P, ctypes.c_size_t, P, P)
enable = fn(shims, prefix + "aoti_shim_profile_enable", ctypes.c_int32, P)
reset = fn(shims, prefix + "aoti_shim_profile_reset")
read = fn(shims, prefix + "aoti_shim_profile_read", ctypes.c_char_p, ctypes.c_size_t, P)

def runs(n, profiled):
    for _ in range(n):
        handle = P()
        assert from_blob(x.data_ptr(), 2, sizes, None, 0, 6, 0, 0, ctypes.byref(handle)) == 0
        inputs, outputs = (P * 1)(handle), (P * 1)()
        if mode == "api" and profiled:  # only what the blob calls inside the run
            assert enable(1, None) == 0
        assert run(container, inputs, 1, outputs, 1, None, None) == 0
        if mode == "api":
            assert enable(0, None) == 0
        assert delete(outputs[0]) == 0

def table():
    needed = ctypes.c_size_t()
    assert read(None, 0, ctypes.byref(needed)) == 0
    buf = ctypes.create_string_buffer(needed.value)
    assert read(buf, len(buf), ctypes.byref(needed)) == 0
    rows = [line.rsplit("\t", 2) for line in buf.value.decode().splitlines()]
    return {name: (int(calls), int(ns)) for name, calls, ns in rows}

if mode == "api":
    runs(1, False)  # first-run work out of the counts
    assert reset() == 0
    runs(3, False)
    print("off", table())
    runs(2, True)
    two = table()
    assert reset() == 0
    runs(4, True)
    four = table()
    print("two", two)
    print("four", four)
else:
    runs(3, False)  # the environment switched counting on as the library loaded
fn(blob, "AOTInductorModelContainerDelete", P)(container)
"""


def test_shim_profile_counts_the_blobs_calls(prefixed_blob: tuple[Path, Path, str]) -> None:
    import ast

    blob, library, prefix = prefixed_blob
    done = subprocess.run(
        [sys.executable, "-c", RUN_PROFILED, str(blob), str(library), prefix, "api"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    tables = {line.split(" ", 1)[0]: ast.literal_eval(line.split(" ", 1)[1]) for line in done.stdout.splitlines()}
    assert tables["off"] == {}, "calls were counted with the profile off"
    two, four = tables["two"], tables["four"]
    total = "(shim total: outermost entry points)"
    assert total in two and "aoti_torch_delete_tensor_object" in two, two
    # Every row counts exactly per run: twice the runs, twice the calls.
    assert set(two) == set(four)
    assert all(four[name][0] == 2 * two[name][0] for name in two), (two, four)
    assert all(ns >= 0 for _, ns in four.values())
    # The total is outermost calls only: no more calls than all entry points together.
    entry_calls = sum(calls for name, (calls, _) in four.items() if name.startswith("aoti_torch_"))
    assert 0 < four[total][0] <= entry_calls


def test_shim_profile_from_the_environment_writes_a_table_at_exit(
    prefixed_blob: tuple[Path, Path, str], tmp_path: Path
) -> None:
    blob, library, prefix = prefixed_blob
    out = tmp_path / "profile.txt"
    env = {**os.environ, "AOTI_SHIM_PROFILE": "1", "AOTI_SHIM_PROFILE_FILE": str(out)}
    done = subprocess.run(
        [sys.executable, "-c", RUN_PROFILED, str(blob), str(library), prefix, "env"],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = out.read_text()
    assert text.startswith("# aoti_shim profile"), text
    rows = {line.split()[0]: line.split() for line in text.splitlines()[2:]}
    # The script made three input handles itself: counted from the library's load on.
    assert rows["aoti_torch_create_tensor_from_blob"][1] == "3", text
    assert "aoti_torch_delete_tensor_object" in rows
