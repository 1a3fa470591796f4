"""Probe (issue 25): what torch 2.11 on the H200 emits and returns for conv and SDPA."""
import glob
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
import nvidia

for root in nvidia.__path__:
    for pat in ("cudnn/lib/libcudnn.so*", "cu13/lib/libcublas.so*", "cu13/lib/libcudnn*", "cublas/lib/libcublas.so*"):
        print("lib:", sorted(glob.glob(os.path.join(root, pat))))
with open("/proc/self/maps") as f:
    pass
h = os.path.join(os.path.dirname(torch.__file__), "include/torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h")
for line in open(h):
    for n in ("cuda_convolution(", "flash_attention(", "efficient_attention(", "cudnn_attention("):
        if "aoti_torch_cuda_" + n in line or "aoti_torch_cuda__scaled_dot_product_" + n in line:
            print("sig:", line.strip())


def show(tag, outs):
    parts = []
    for o in outs:
        if isinstance(o, torch.Tensor):
            parts.append(f"{o.dtype}{list(o.shape)}s{list(o.stride())}@{o.device}")
        else:
            parts.append(repr(o))
    print(tag, " | ".join(parts))


B, H, L, S, E = 2, 4, 40, 40, 64
for dt in (torch.float32, torch.bfloat16):
    for layout in ("bhle", "blhe"):
        def mk(h, n):
            if layout == "bhle":
                return torch.randn(B, h, n, E, device="cuda", dtype=dt)
            return torch.randn(B, n, h, E, device="cuda", dtype=dt).transpose(1, 2)
        q, k, v = mk(H, L), mk(H, S), mk(H, S)
        bias = torch.randn(B, 1, L, S, device="cuda", dtype=dt)
        for name, call in (
            ("eff", lambda: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, False)),
            ("eff+lse", lambda: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True)),
            ("eff+bias", lambda: torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0, False)),
            ("flash", lambda: torch.ops.aten._scaled_dot_product_flash_attention(q, k, v)),
            ("cudnn", lambda: torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True)),
        ):
            try:
                show(f"{dt} {layout} {name}:", call())
            except Exception as e:  # noqa: BLE001
                print(f"{dt} {layout} {name}: ERR {str(e).splitlines()[0][:150]}")
x = torch.randn(2, 16, 9, 9, device="cuda")
w = torch.randn(16, 1, 3, 3, device="cuda")
for tag, xx, ww in (("dw nchw", x, w), ("dw cl", x.to(memory_format=torch.channels_last), w),
                    ("dw wcl", x, w.to(memory_format=torch.channels_last))):
    show(f"conv {tag}:", [F.conv2d(xx, ww, groups=16)])
x1 = torch.randn(2, 9, 16, device="cuda").transpose(1, 2)
show("conv1d transposed-in:", [F.conv1d(x1, torch.randn(8, 16, 3, device="cuda"))])
x3 = torch.randn(1, 4, 5, 6, 7, device="cuda").to(memory_format=torch.channels_last_3d)
show("conv3d cl3d:", [F.conv3d(x3, torch.randn(8, 4, 3, 3, 3, device="cuda"))])
show("convT2d cl:", [F.conv_transpose2d(x.to(memory_format=torch.channels_last), torch.randn(16, 4, 3, 3, device="cuda"), stride=2, output_padding=1)])
show("conv2d bf16 cl:", [F.conv2d(x.bfloat16().to(memory_format=torch.channels_last), torch.randn(8, 16, 3, 3, device="cuda").bfloat16())])
sys.stdout.flush()

import transformers


def wrap(m, field):
    class W(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = m

        def forward(self, ids):
            return getattr(self.model(input_ids=ids), field)
    return W()


def models():
    import timm
    ids = torch.randint(0, 1000, (2, 16), device="cuda")
    yield "gpt2", wrap(transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=1000, n_positions=64, n_embd=128, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")), "logits"), (ids,)
    yield "bert", wrap(transformers.BertModel(transformers.BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256, max_position_embeddings=64, attn_implementation="sdpa")), "last_hidden_state"), (ids,)
    yield "llama", wrap(transformers.LlamaForCausalLM(transformers.LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa")), "logits"), (ids,)
    yield "vit_tiny", timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, num_classes=10), (torch.randn(2, 3, 64, 64, device="cuda"),)


for name, m, inp in models():
    for dt in (torch.float32, torch.bfloat16):
        mm = m.to("cuda").to(dt).eval()
        ii = tuple(t.to(dt) if t.is_floating_point() else t for t in inp)
        t0 = time.time()
        try:
            with torch.no_grad():
                ep = torch.export.export(mm, ii)
                ops = sorted({str(n.target) for n in ep.run_decompositions().graph.nodes
                              if n.op == "call_function" and ("scaled_dot" in str(n.target) or "conv" in str(n.target))})
            print(f"model {name} {dt}: {ops} ({time.time() - t0:.1f}s)")
        except Exception as e:  # noqa: BLE001
            print(f"model {name} {dt}: ERR {str(e).splitlines()[0][:200]}")
        sys.stdout.flush()

# One real default compile (no autotuning, default attention) of the llama in float32 and bfloat16.
for dt in (torch.float32, torch.bfloat16):
    name, m, inp = [x for x in models() if x[0] == "llama"][0]
    m = m.to("cuda").to(dt).eval()
    t0 = time.time()
    with torch.no_grad():
        ep = torch.export.export(m, inp)
        pt2 = torch._inductor.aoti_compile_and_package(ep, package_path=f"/tmp/llama_{dt}.pt2", inductor_configs={"aot_inductor.link_libtorch": False, "aot_inductor.package_constants_in_so": True})
    subprocess.run(["bash", "-c", f"cd /tmp && rm -rf pk && mkdir pk && cd pk && unzip -q {pt2} && nm -D --undefined-only $(find . -name '*.so') | grep -o 'aoti_torch_cuda_[a-z_0-9]*' | sort -u"])
    print(f"llama {dt} default compile {time.time() - t0:.1f}s")
