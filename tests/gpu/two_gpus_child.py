"""Child process: one prefixed blob on each of two GPUs, run at the same time from two threads.

    python two_gpus_child.py BLOB IO_FILE KERNEL_DIR SHIM_LIB PREFIX ROUNDS ITERATIONS

The coalesced host (libtorch global, then the shims global). Thread i makes the current
device i, loads its own private copy of the blob, makes a container on cuda:i, selects
its own stream of cuda:i through the caller-stream ABI and runs ITERATIONS times a
round, checking every output (its values, and that the shims put it on cuda:i). Prints
one JSON line: per thread and round, the runs, the failures, the output devices and
whether the two threads' run loops overlapped in time. In a child so that a crash is a
failed test, not a dead pytest.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any


class _Selection(ctypes.Structure):
    _fields_ = [("selected", ctypes.c_int32), ("stream", ctypes.c_void_p)]


def main(argv: list[str]) -> int:
    import torch

    from aoti_shim.smoke.compare import compare
    from aoti_shim.smoke.loader import load_private_copy
    from aoti_shim.smoke.models import bundled
    from aoti_shim.smoke.run_child import promote_libtorch
    from aoti_shim.smoke.runner import Container, ShimApi

    blob, io_file, kernel_dir, shim_lib, prefix = argv[:5]
    rounds, iterations = int(argv[5]), int(argv[6])
    promote_libtorch("cuda")
    shims = ctypes.CDLL(shim_lib, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    api = ShimApi(shims, prefix)
    select = getattr(shims, f"{prefix}aoti_shim_caller_stream_select")
    restore = getattr(shims, f"{prefix}aoti_shim_caller_stream_restore")
    device_index = getattr(shims, f"{prefix}aoti_torch_get_device_index")
    for f in (select, restore, device_index):
        f.restype = ctypes.c_int32

    io = torch.load(io_file)
    x = {d: (io["inputs"][0] * (1.0 + d)).to(f"cuda:{d}").contiguous() for d in (0, 1)}
    expected = {}
    for d in (0, 1):
        module, _ = bundled(("mlp",))[0].build(f"cuda:{d}")
        with torch.no_grad():
            expected[d] = [module(x[d]).cpu()]
    assert not compare(expected[0], expected[1]).within_tolerance
    barrier = threading.Barrier(2, timeout=120)
    spans: dict[tuple[int, int], tuple[float, float]] = {}
    report: list[dict[str, Any]] = []
    lock = threading.Lock()

    def worker(d: int) -> None:
        torch.cuda.set_device(d)
        stream = torch.cuda.Stream(device=d)
        for r in range(rounds):
            entry: dict[str, Any] = {"device": d, "round": r, "runs": 0, "failures": 0, "max_abs": 0.0}
            try:
                barrier.wait()
                with load_private_copy(Path(blob)) as loaded:
                    container = Container(loaded.library, f"cuda:{d}", kernel_dir or None)
                    previous = _Selection()
                    if select(ctypes.c_void_p(stream.cuda_stream), ctypes.byref(previous)) != 0:
                        raise RuntimeError("caller_stream_select failed")
                    devices: set[int] = set()
                    try:
                        barrier.wait()  # both containers exist: run together
                        began = time.perf_counter()
                        for _ in range(iterations):
                            outs = container.run([api.wrap(x[d])], stream.cuda_stream)
                            stream.synchronize()
                            for h in outs:
                                index = ctypes.c_int32()
                                if device_index(h, ctypes.byref(index)) != 0:
                                    raise RuntimeError("get_device_index failed")
                                devices.add(index.value)
                            got = [api.to_torch(h) for h in outs]
                            for h in outs:
                                api.delete(h)
                            c = compare(got, expected[d])
                            entry["runs"] += 1
                            entry["failures"] += 0 if c.within_tolerance else 1
                            entry["max_abs"] = max(entry["max_abs"], c.max_abs)
                        spans[(d, r)] = (began, time.perf_counter())
                    finally:
                        restore(ctypes.byref(previous))
                        stream.synchronize()
                        container.close()
                    entry["output_devices"] = sorted(devices)
            except BaseException as e:  # noqa: BLE001 - reported in the JSON line
                entry["error"] = f"{type(e).__name__}: {e}"
                barrier.abort()
            with lock:
                report.append(entry)
            if "error" in entry:
                return

    threads = [threading.Thread(target=worker, args=(d,)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for entry in report:
        mine, other = spans.get((entry["device"], entry["round"])), spans.get((1 - entry["device"], entry["round"]))
        entry["overlapped"] = bool(mine and other and mine[0] < other[1] and other[0] < mine[1])
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
