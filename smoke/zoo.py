"""A model zoo for the smoke: real architectures from torchvision, timm and transformers.

    aoti-shim smoke --model aoti_shim.smoke.zoo:resnet18 --model aoti_shim.smoke.zoo:gpt2

Each callable takes the device and returns (module, example inputs), the smoke's
``--model MODULE:CALLABLE`` form. Weights are random (seeded by the smoke), nothing is
downloaded: every model is built from its configuration. Inputs are small, so that a
CPU compile stays in seconds; the architectures are the real ones. The libraries are
not dependencies of aoti-shim: a missing one is named with the ``pip install`` that works next to
the installed torch (:func:`install_hint`); the ``[zoo]`` extra holds the same pins.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from aoti_shim.errors import UsageError
from aoti_shim.extras import requirements

if TYPE_CHECKING:
    import torch

# Names of the zoo's callables, in the order the GPU run script compiles them.
MODELS = ("resnet18", "mobilenet_v3_small", "vit_tiny", "gpt2", "bert", "llama")
DTYPES = ("float32", "bfloat16")


def install_hint(package: str, torch_version: str | None) -> str:
    """A ``pip install`` of ``package`` pinned to what works next to ``torch_version``.

    torchvision is released in step with torch (torch 2.N pairs with torchvision 0.(N+15)) and
    its PyPI wheel is a CUDA build, whose ops do not load next to a CPU torch: a CPU torch gets
    PyTorch's CPU index. The others take the pins of the [zoo] extra.
    """
    if package == "torchvision" and torch_version:
        major, _, rest = torch_version.partition(".")
        minor = rest.split(".", 1)[0]
        if major == "2" and minor.isdigit():
            line = f"pip install 'torchvision==0.{int(minor) + 15}.*'"
            if torch_version.endswith("+cpu"):
                line += " --index-url https://download.pytorch.org/whl/cpu"
            return f"{line} (the release that loads next to torch {torch_version})"
    pinned = [
        r for r in requirements("zoo") if r.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip() == package
    ]
    return "pip install " + " ".join(shlex.quote(r) for r in (pinned or [package]))


def _torch_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def _need(module: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        hint = install_hint(package, _torch_version())
        raise UsageError(f"the zoo model needs {package}, which cannot be imported ({e}): {hint}") from None


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
    )
    return _token_model(transformers.GPT2LMHeadModel(config), "logits"), _tokens(device, 1000)


def bert(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """transformers' BERT encoder, 2 layers of width 128 (2 heads), vocabulary 1000."""
    transformers = _need("transformers", "transformers")
    config = transformers.BertConfig(
        vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=256, max_position_embeddings=64, attn_implementation="sdpa",
    )
    return _token_model(transformers.BertModel(config), "last_hidden_state"), _tokens(device, 1000)


def llama(device: str = "cpu") -> tuple[Any, tuple[Any, ...]]:
    """transformers' Llama LM (RoPE, RMSNorm, SwiGLU), 2 layers of width 128, 4 query heads
    over 2 key/value heads (grouped-query attention), vocabulary 1000: logits."""
    transformers = _need("transformers", "transformers")
    config = transformers.LlamaConfig(
        vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa",
    )
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
