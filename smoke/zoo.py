"""A model zoo for the smoke: real architectures from torchvision, timm and transformers.

    aoti-shim smoke --model aoti_shim.smoke.zoo:resnet18 --model aoti_shim.smoke.zoo:gpt2

Each callable takes the device and returns (module, example inputs), the smoke's
``--model MODULE:CALLABLE`` form. Weights are random (seeded by the smoke), nothing is
downloaded: every model is built from its configuration. Inputs are small, so that a
CPU compile stays in seconds; the architectures are the real ones. The libraries are
not dependencies of aoti-shim: ``pip install "aoti-shim[zoo]"`` (or the one you need).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aoti_shim.errors import UsageError

if TYPE_CHECKING:
    import torch

# Names of the zoo's callables, in the order the GPU run script compiles them.
MODELS = ("resnet18", "mobilenet_v3_small", "vit_tiny", "gpt2", "bert", "llama")
DTYPES = ("float32", "bfloat16")


def _need(module: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise UsageError(f"the zoo model needs {package}, which cannot be imported ({e}): pip install {package}") from None


def _image(device: str, size: int = 64) -> tuple[torch.Tensor, ...]:
    import torch

    return (torch.randn(2, 3, size, size, device=device),)


def _tokens(device: str, vocab: int, length: int = 16) -> tuple[torch.Tensor, ...]:
    import torch

    return (torch.randint(0, vocab, (2, length), device=device),)


def resnet18(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """torchvision's ResNet-18, 10 classes, 64x64 images."""
    models = _need("torchvision.models", "torchvision")
    return models.resnet18(weights=None, num_classes=10), _image(device)


def mobilenet_v3_small(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """torchvision's MobileNetV3-Small (depthwise convolutions, squeeze-excite, hardswish)."""
    models = _need("torchvision.models", "torchvision")
    return models.mobilenet_v3_small(weights=None, num_classes=10), _image(device)


def vit_tiny(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """timm's ViT-Tiny/16 (12 blocks, 3 heads, width 192) on 64x64 images: 17 tokens."""
    timm = _need("timm", "timm")
    module = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, num_classes=10)
    return module, _image(device)


def _token_model(module: Any, field: str) -> Any:
    """A transformers model behind a module that returns one tensor, not a ModelOutput."""
    import torch

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = module

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            return getattr(self.model(input_ids=input_ids), field)

    return Wrapped()


def gpt2(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """transformers' GPT-2 LM, 2 layers of width 128 (4 heads), vocabulary 1000: logits."""
    transformers = _need("transformers", "transformers")
    config = transformers.GPT2Config(
        vocab_size=1000, n_positions=64, n_embd=128, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0,
        attn_implementation="sdpa",
    )  # fmt: skip
    return _token_model(transformers.GPT2LMHeadModel(config), "logits"), _tokens(device, 1000)


def bert(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """transformers' BERT encoder, 2 layers of width 128 (2 heads), vocabulary 1000."""
    transformers = _need("transformers", "transformers")
    config = transformers.BertConfig(
        vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=256, max_position_embeddings=64, attn_implementation="sdpa",
    )  # fmt: skip
    return _token_model(transformers.BertModel(config), "last_hidden_state"), _tokens(device, 1000)


def llama(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """transformers' Llama LM (RoPE, RMSNorm, SwiGLU), 2 layers of width 128, 4 query heads
    over 2 key/value heads (grouped-query attention), vocabulary 1000: logits."""
    transformers = _need("transformers", "transformers")
    config = transformers.LlamaConfig(
        vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa",
    )  # fmt: skip
    return _token_model(transformers.LlamaForCausalLM(config), "logits"), _tokens(device, 1000)


def _bfloat16(build: Any, device: str) -> tuple[Any, tuple[Any, ...]]:
    """The model and its floating inputs in bfloat16 (token ids stay integers)."""
    import torch

    module, inputs = build(device)
    return module.to(torch.bfloat16), tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in inputs)


def resnet18_bf16(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    return _bfloat16(resnet18, device)


def mobilenet_v3_small_bf16(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    return _bfloat16(mobilenet_v3_small, device)


def vit_tiny_bf16(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    return _bfloat16(vit_tiny, device)


def gpt2_bf16(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    return _bfloat16(gpt2, device)


def bert_bf16(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    return _bfloat16(bert, device)


def llama_bf16(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    return _bfloat16(llama, device)


def spec(name: str, dtype: str = "float32") -> str:
    """The smoke's --model value for a zoo model in a dtype."""
    return f"aoti_shim.smoke.zoo:{name}" + ("_bf16" if dtype == "bfloat16" else "")
