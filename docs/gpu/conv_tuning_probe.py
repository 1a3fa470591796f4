"""What a zoo model's convolutions could gain from a tuned engine choice or a graph launch.

    PYTHONPATH=/tmp/site python3 docs/gpu/conv_tuning_probe.py [resnet18] [NHWC,NCHW]

after run_h200.sh's install. float32 with TF32 off, as the smoke runs it. Every ``nn.Conv2d`` of
the model's eager run is kept (input, weight, geometry) and repeated, per layout, as:

- ours: the shims' ``aoti_torch_cuda_convolution``, host and GPU microseconds per call (the GPU
  time between events around calls queued behind a long sleep kernel, as conv_probe.py does);
- torch: ``F.conv2d`` with cuDNN's heuristic choice (``benchmark`` off, torch's default);
- tuned: ``F.conv2d`` with ``torch.backends.cudnn.benchmark`` on (every engine timed once);
- graph: the host microseconds of one replay of a CUDA graph holding torch's call, what a
  launch of a captured call costs the host.

Then the whole model the same ways, per inference. It says whether the zoo's float32
convolutions are bound by the GPU's time (a better engine helps) or by cuDNN's host time per
call (a graph launch helps).
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from conv_probe import P, Shims, host_us, ints

from aoti_shim.smoke import zoo

CALLS = 100


def gpu_us(fn: Callable[[], object], calls: int = CALLS) -> float:
    """GPU microseconds per call: the calls queued behind a sleep kernel, timed by events."""
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(200_000_000)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls * 1e3


def graph_host_us(fn: Callable[[], object], calls: int = CALLS) -> float:
    """Host microseconds of one replay of a CUDA graph that holds one call of ``fn``."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return host_us(graph.replay, calls, warm=3)


def kept_convolutions(
    model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]
) -> list[tuple[torch.Tensor, torch.nn.Conv2d]]:
    kept: list[tuple[torch.Tensor, torch.nn.Conv2d]] = []

    def hook(module: torch.nn.Module, args: tuple[torch.Tensor, ...], _out: object) -> None:
        assert isinstance(module, torch.nn.Conv2d)
        kept.append((args[0].detach().clone(), module))

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(*inputs)
    for h in handles:
        h.remove()
    torch.cuda.synchronize()
    return kept


def per_convolution(name: str, layouts: list[str]) -> None:
    model, inputs = getattr(zoo, name)("cuda")
    model = model.to("cuda").eval()
    kept = kept_convolutions(model, inputs)
    shims = Shims()
    print(f"{name}: {len(kept)} convolutions, float32, TF32 off; us per call, {CALLS} calls each")
    print(
        f"{'layout':6} {'ours host':>9} {'ours gpu':>8} {'torch host':>10} {'torch gpu':>9} {'tuned gpu':>9} {'graph host':>10}  shape"
    )
    for layout in layouts:
        fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
        sums = [0.0] * 6
        for x0, m in kept:
            x = x0.contiguous(memory_format=fmt)
            w = m.weight.detach().contiguous(memory_format=fmt)
            hx, hw = shims.handle(x), shims.handle(w)
            args = (*ints(m.stride), *ints(m.padding), *ints(m.dilation), 0, *ints((0, 0)), m.groups)

            def ours() -> None:
                out = P()
                code = shims.conv(hx, hw, None, *args, ctypes.byref(out))
                assert code == 0, code
                shims.delete(out)

            def theirs() -> torch.Tensor:
                return F.conv2d(x, w, None, m.stride, m.padding, m.dilation, m.groups)

            torch.backends.cudnn.benchmark = False
            row = [host_us(ours, CALLS, warm=3), gpu_us(ours), host_us(theirs, CALLS, warm=3), gpu_us(theirs)]
            torch.backends.cudnn.benchmark = True
            row.append(gpu_us(theirs))
            torch.backends.cudnn.benchmark = False
            row.append(graph_host_us(theirs))
            sums = [a + b for a, b in zip(sums, row)]
            shims.delete(hx), shims.delete(hw)
            shape = f"{tuple(x.shape)} -> {tuple(w.shape)} g{m.groups} s{m.stride[0]}"
            print(
                f"{layout:6} {row[0]:9.1f} {row[1]:8.1f} {row[2]:10.1f} {row[3]:9.1f} {row[4]:9.1f} {row[5]:10.1f}  {shape}"
            )
        print(
            f"{layout:6} {sums[0]:9.1f} {sums[1]:8.1f} {sums[2]:10.1f} {sums[3]:9.1f} {sums[4]:9.1f} {sums[5]:10.1f}  total"
        )
    whole_model(model, inputs)


def whole_model(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    print(
        "whole model, eager, us per inference: host (GPU idle before), GPU (queued behind a sleep), graph replay host"
    )
    for fmt_name, fmt in (("NCHW", torch.contiguous_format), ("NHWC", torch.channels_last)):
        m = model.to(memory_format=fmt)
        x = tuple(t.contiguous(memory_format=fmt) for t in inputs)
        for bench in (False, True):
            torch.backends.cudnn.benchmark = bench

            def run() -> object:
                with torch.no_grad():
                    return m(*x)

            run()
            host = host_us(run, 50, warm=5)
            gpu = gpu_us(run, 50)
            with torch.no_grad():
                replay = graph_host_us(run, 50)
            print(
                f"  {fmt_name} benchmark={bench!s:5}: host {host:8.1f}  gpu {gpu:8.1f}  graph replay host {replay:8.1f}"
            )
    torch.backends.cudnn.benchmark = False


def main() -> None:
    torch.backends.cudnn.allow_tf32 = False
    name = sys.argv[1] if len(sys.argv) > 1 else "resnet18"
    layouts = (sys.argv[2] if len(sys.argv) > 2 else "NHWC,NCHW").split(",")
    t0 = time.perf_counter()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    per_convolution(name, layouts)
    print(f"probe: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
