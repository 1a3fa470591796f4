"""Each convolution of one zoo model, timed through the shims and through torch, per call.

    PYTHONPATH=/tmp/site python3 docs/gpu/conv_model_probe.py mobilenet_v3_small_bf16

after run_h200.sh's install. The model runs once in eager torch with a forward hook on every
``nn.Conv2d`` that keeps its input, weight, bias and geometry; each kept call is then repeated
``CALLS`` times through the shims' ``aoti_torch_cuda_convolution`` (bias included, as a blob
passes it) and through ``F.conv2d``, and the host time per call of each is printed, slowest of
ours first, with the totals. The zoo's bench found mobilenet_v3_small's 52 convolutions taking
7.6 ms of host time in bfloat16 against 0.7 ms in float32 (run11), through both shim sets: this
says which shapes.
"""

from __future__ import annotations

import ctypes
import sys

import torch
import torch.nn.functional as F
from conv_probe import DTYPES, I32, I64, P, Shims, host_us, ints

from aoti_shim.smoke import zoo

CALLS = 50


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "mobilenet_v3_small_bf16"
    model, inputs = getattr(zoo, name)("cuda")
    model = model.to("cuda").eval()
    kept: list[tuple[torch.Tensor, torch.nn.Conv2d]] = []

    def hook(module: torch.nn.Module, args: tuple[torch.Tensor, ...], _out: object) -> None:
        assert isinstance(module, torch.nn.Conv2d)
        kept.append((args[0].detach().clone(), module))

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(hook)
    with torch.no_grad():
        model(*inputs)
    torch.cuda.synchronize()
    shims = Shims()
    conv = shims.lib[shims.prefix + "aoti_torch_cuda_convolution"]
    conv.restype, conv.argtypes = I32, [P, P, P, P, I64, P, I64, P, I64, I32, P, I64, I64, P]
    rows = []
    # Both layouts: Inductor hands a convolution-heavy model's convolutions channels-last.
    formats = (torch.contiguous_format, torch.channels_last)
    for (x0, m), fmt in ((k, f) for k in kept for f in formats):
        x = x0.contiguous(memory_format=fmt)
        w = m.weight.detach().contiguous(memory_format=fmt)
        b = m.bias.detach() if m.bias is not None else None
        hx, hw = shims.handle(x), shims.handle(w)
        hb = shims.handle(b) if b is not None else None
        args = (*ints(m.stride), *ints(m.padding), *ints(m.dilation), 0, *ints((0, 0)), m.groups)

        def ours() -> None:
            out = P()
            code = conv(hx, hw, ctypes.byref(hb) if hb is not None else None, *args, ctypes.byref(out))
            assert code == 0, code
            shims.delete(out)

        def theirs() -> None:
            F.conv2d(x, w, b, m.stride, m.padding, m.dilation, m.groups)

        times = [host_us(fn, CALLS, warm=3) for fn in (ours, theirs)]
        layout = "NHWC" if fmt == torch.channels_last else "NCHW"
        with_bias = " +bias" if b is not None else ""
        shape = f"{tuple(x.shape)} -> {tuple(w.shape)} g{m.groups} s{m.stride[0]} {layout}{with_bias}"
        rows.append((times[0], times[1], shape))
        for h in (hx, hw, hb):
            if h is not None:
                shims.delete(h)
    print(f"{name}: {len(kept)} convolutions in 2 layouts, {kept[0][0].dtype}; host us per call, {CALLS} calls each")
    print(f"{'ours':>8} {'torch':>8}  shape")
    for ours_us, torch_us, shape in sorted(rows, reverse=True):
        print(f"{ours_us:8.1f} {torch_us:8.1f}  {shape}")
    for layout in ("NCHW", "NHWC"):
        mine = [r for r in rows if f" {layout}" in r[2]]
        print(f"total {layout}: ours {sum(r[0] for r in mine):.1f} us, torch {sum(r[1] for r in mine):.1f} us")


if __name__ == "__main__":
    assert DTYPES  # the probe's dtype table: the handles' scalar types
    main()
