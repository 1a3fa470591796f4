"""Child process: two private copies of one prefixed blob, run at the same time.

    python concurrent_blobs_child.py BLOB IO_FILE KERNEL_DIR SHIM_LIB PREFIX DEVICE ROUNDS ITERATIONS

The process is the coalesced host (libtorch global, then the shims global). Each round,
two threads each load their own private copy of the blob, make a container, select
their own CUDA stream through the shims' caller-stream ABI (CPU: no stream) and run it
ITERATIONS times on different inputs, checking every output against eager. Prints one
JSON line: per thread and round, the copy's path, the runs, the failures and the
largest error. Runs in a child so that a crash is a failed test, not a dead pytest.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
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

    blob, io_file, kernel_dir, shim_lib, prefix, device = argv[:6]
    rounds, iterations = int(argv[6]), int(argv[7])
    promote_libtorch(device)
    shims = ctypes.CDLL(shim_lib, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
    api = ShimApi(shims, prefix)
    select = getattr(shims, f"{prefix}aoti_shim_caller_stream_select")
    restore = getattr(shims, f"{prefix}aoti_shim_caller_stream_restore")
    current = getattr(shims, f"{prefix}aoti_torch_get_current_cuda_stream")
    for f in (select, restore, current):
        f.restype = ctypes.c_int32

    io = torch.load(io_file)
    module, _ = bundled(("mlp",))[0].build(device)
    x0 = io["inputs"][0].to(device).contiguous()
    x1 = (torch.randn(x0.shape, generator=torch.Generator().manual_seed(11)) * 2.0).to(device).contiguous()
    with torch.no_grad():
        expected = {0: [module(x0).cpu()], 1: [module(x1).cpu()]}
    if device == "cuda":
        torch.cuda.synchronize()
    inputs = {0: x0, 1: x1}
    barrier = threading.Barrier(2, timeout=120)
    report: list[dict[str, Any]] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        stream = torch.cuda.Stream() if device == "cuda" else None
        handle = stream.cuda_stream if stream is not None else None
        for r in range(rounds):
            entry: dict[str, Any] = {"thread": index, "round": r, "runs": 0, "failures": 0, "max_abs": 0.0}
            try:
                barrier.wait()
                with load_private_copy(Path(blob)) as loaded:
                    entry["path"], entry["handle"] = loaded.path, loaded.library._handle
                    container = Container(loaded.library, device, kernel_dir or None)
                    previous = _Selection()
                    if select(ctypes.c_void_p(handle), ctypes.byref(previous)) != 0:
                        raise RuntimeError("caller_stream_select failed")
                    try:
                        barrier.wait()  # both containers exist: run together
                        for _ in range(iterations):
                            # The runtime's half of the contract: run on the shims' current stream.
                            now = ctypes.c_void_p()
                            if device == "cuda" and current(0, ctypes.byref(now)) != 0:
                                raise RuntimeError("get_current_cuda_stream failed")
                            if now.value != handle:
                                raise RuntimeError(f"thread {index} would run on {now.value}, not its stream {handle}")
                            outs = container.run([api.wrap(inputs[index])], now.value)
                            if stream is not None:
                                stream.synchronize()
                            got = [api.to_torch(h) for h in outs]
                            for h in outs:
                                api.delete(h)
                            c = compare(got, expected[index])
                            entry["runs"] += 1
                            entry["failures"] += 0 if c.within_tolerance else 1
                            entry["max_abs"] = max(entry["max_abs"], c.max_abs)
                    finally:
                        restore(ctypes.byref(previous))
                        if stream is not None:
                            stream.synchronize()
                        container.close()
            except BaseException as e:  # noqa: BLE001 - reported in the JSON line
                entry["error"] = f"{type(e).__name__}: {e}"
                barrier.abort()
            with lock:
                report.append(entry)
            if "error" in entry:
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
