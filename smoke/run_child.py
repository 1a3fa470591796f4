"""Child process: the coalesced process set-up, then one blob run.

Run as ``python -m aoti_shim.smoke.run_child REQUEST.json RESULT.json``. Order
matters and mirrors a host that links libtorch: libtorch goes to the global scope
first, then the shim library (global, so the blob can find it), then the blob
(local). Without the prefix, the blob's ``aoti_torch_*`` imports now bind to
libtorch: exactly the collision this project prevents.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any


def promote_libtorch(device: str) -> ctypes.CDLL:
    """Put the already-loaded libtorch into the global scope, as a host linking it has it."""
    import torch

    lib = Path(torch.__file__).resolve().parent / "lib"
    flags = os.RTLD_GLOBAL | os.RTLD_NOLOAD | os.RTLD_NOW
    libtorch = ctypes.CDLL(str(lib / "libtorch_cpu.so"), mode=flags)
    if device == "cuda":
        import torch.cuda

        torch.cuda.init()
        ctypes.CDLL(str(lib / "libtorch_cuda.so"), mode=flags)
    return libtorch


def run(request: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """One run, filling ``result``; what it holds when the run fails (the path the blob was
    loaded by) still lets the parent read the loader's bindings as evidence."""
    import torch

    from aoti_shim.smoke.compare import against_control, against_eager, compare
    from aoti_shim.smoke.loader import LoadSettings, load_private_copy
    from aoti_shim.smoke.runner import Container, RunSettings, ShimApi, run_container

    device = request["device"]
    libtorch = promote_libtorch(device)
    # No TF32 in this process: the control's fallback ops are libtorch's (cuDNN convolutions
    # would use TF32 by default), the shims' compute in float32; both checks assume float32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if request.get("shim_library"):
        shims = ctypes.CDLL(request["shim_library"], mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        api = ShimApi(shims, request["prefix"])
    else:
        # The control run: the blob binds to libtorch, so tensors must be libtorch's.
        api = ShimApi(libtorch, "")
    stream = request.get("stream", "none")
    if device == "cuda" and stream == "new":
        # A stream of its own, made current before the container exists: what real runtimes
        # pass (a runtime's stream guard may refuse the legacy default stream, a null pointer).
        torch.cuda.set_stream(torch.cuda.Stream())
    io = torch.load(request["io"])
    inputs = [t.to(device).contiguous() for t in io["inputs"]]
    with load_private_copy(Path(request["blob"]), LoadSettings()) as blob:
        result["dlopen_path"] = blob.path
        container = Container(blob.library, device, request.get("kernel_dir"))
        try:
            with torch.no_grad():
                outcome = run_container(
                    api, container, inputs,
                    RunSettings(device=device, iterations=request.get("iterations", 30), stream=stream),
                )
        finally:
            container.close()
    if request.get("save_outputs"):
        # The control's outputs: the prefixed runs of this model are checked against them.
        torch.save(outcome.outputs, request["save_outputs"])
    reference = io.get("reference")
    if reference is not None:
        eager = against_eager(outcome.outputs, reference)
        result.update(eager=eager.to_json(), eager_reference="float64")
        within, detail = eager.ok, eager.detail
    else:
        # The module does not run in float64: eager in its own dtype, with the fixed tolerances.
        same = compare(outcome.outputs, io["expected"])
        result.update(eager={"max_abs": same.max_abs, "bound": None, "ok": same.within_tolerance, "bitwise": False,
                             "detail": same.detail}, eager_reference="same dtype")
        within, detail = same.within_tolerance, same.detail
    control_file = request.get("control_outputs")
    if control_file:
        control = against_control(outcome.outputs, torch.load(control_file))
        result["control"] = control.to_json()
    comparison = compare(outcome.outputs, io["expected"])
    result.update(
        max_abs=comparison.max_abs,
        max_rel=comparison.max_rel,
        within_tolerance=within,
        detail=detail,
        median_us=outcome.median_us,
        runs=len(outcome.latencies_us),
    )
    return result


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    result: dict[str, Any] = {}
    try:
        run(request, result)
        status = 0
    except Exception as e:  # noqa: BLE001 - reported as the row's status, not a crash
        traceback.print_exc()
        first = (str(e).strip().splitlines() or [""])[0]
        result["error"] = f"{type(e).__name__}: {first}" if not hasattr(e, "exit_code") else first
        status = 1
    Path(argv[1]).write_text(json.dumps(result))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
