"""Quantized checkpoints: quantize while loading a dense one, save a quantized one, and load it back.

Quantize-on-load goes through the loader's `on_tensor` hook: each target tensor is quantized as soon as it is
read (the dense copy is dropped at once), so peak memory is the quantized model plus one dense tensor. The hook
has no module names, so the swap to quantized modules happens in `finish` once loading is done; a Linear the
shape of the router's projection is also kept dense until then, since only its name tells it from a target.
A saved quantized checkpoint is plain safetensors (packed weights and scales) plus a `quantization` entry in
config.json that the loader recognises (`prepare_quantized`).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from .config import CheckpointError, DiffusionGemmaConfig
from .modules import Experts
from .quant import QuantExperts, QuantLinear, QuantSpec, is_target, quantize_tensor, set_submodule, storable

QUANT_KEY = "quantization"


class QuantizeOnLoad:
    """An `on_tensor` hook for load_model: quantizes target weights as they are read; call `finish(net)` after."""

    def __init__(self, spec: str | QuantSpec, config: DiffusionGemmaConfig, device: str | torch.device = "cpu"):
        self.spec = QuantSpec.of(spec)
        self.device = torch.device(device)
        self.router_shape = (config.num_experts, config.hidden_size)
        self.quantized: dict[int, dict[str, tuple[torch.Tensor, torch.Tensor]]] = {}
        self.dense: dict[int, torch.Tensor] = {}

    def __call__(self, module: nn.Module, attr: str, tensor: torch.Tensor) -> bool:
        if isinstance(module, Experts) and storable(module, self.spec):
            group = self.spec.group_for(tensor.shape[-1])
            self.quantized.setdefault(id(module), {})[attr] = self._quantize(tensor, group)
            return True
        if isinstance(module, nn.Linear) and attr == "weight" and storable(module, self.spec):
            if tuple(tensor.shape) == self.router_shape:
                self.dense[id(module)] = tensor.to(self.device, copy=True)  # maybe the router: decided in finish
            self.quantized[id(module)] = {attr: self._quantize(tensor, self.spec.group_for(tensor.shape[-1]))}
            return True
        return False

    def _quantize(self, tensor: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
        # Quantize where the weights will live (fast on a GPU), in fp32, one tensor at a time.
        q, s = quantize_tensor(tensor.to(self.device), self.spec, group)
        return q, s

    def finish(self, net: nn.Module, dtype: torch.dtype) -> nn.Module:
        """Swaps the quantized modules in; non-targets that were held back get their dense weight back."""
        for name, module in list(net.named_modules()):
            parts = self.quantized.pop(id(module), None)
            if parts is None:
                continue
            if is_target(name, module):
                set_submodule(net, name, _build(module, parts, self.spec))
            else:
                weight = self.dense[id(module)].to(dtype)
                module._parameters["weight"] = nn.Parameter(weight, requires_grad=False)
        self.dense.clear()
        net.quantization = self.spec
        return net


def _build(module: nn.Module, parts: dict[str, tuple[torch.Tensor, torch.Tensor]], spec: QuantSpec) -> nn.Module:
    if isinstance(module, Experts):
        e, two_ie, h = module.gate_up_proj.shape
        mod = QuantExperts(e, h, two_ie // 2, spec, device="meta")
        mod.gate_up_qweight, mod.gate_up_scales = parts["gate_up_proj"]
        mod.down_qweight, mod.down_scales = parts["down_proj"]
        return mod
    mod = QuantLinear(module.in_features, module.out_features, spec, device="meta")
    mod.qweight, mod.scales = parts["weight"]
    return mod


def quantization_entry(config_path: Path) -> QuantSpec | None:
    """The spec a saved quantized checkpoint declares in its config.json (None for a dense checkpoint)."""
    try:
        raw = json.loads(Path(config_path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{config_path}: unreadable config ({exc})") from exc
    entry = raw.get(QUANT_KEY) if isinstance(raw, dict) else None
    return QuantSpec.of(entry) if entry else None


def convert_empty(net: nn.Module, spec: QuantSpec) -> None:
    """Replaces the target modules of a (meta) model by empty quantized ones with the same names."""
    for name, module in list(net.named_modules()):
        if not is_target(name, module) or not storable(module, spec):
            continue
        if isinstance(module, Experts):
            e, two_ie, h = module.gate_up_proj.shape
            set_submodule(net, name, QuantExperts(e, h, two_ie // 2, spec, device="meta"))
        else:
            set_submodule(net, name, QuantLinear(module.in_features, module.out_features, spec, device="meta"))
    net.quantization = spec


def prepare_quantized(net: nn.Module, spec: QuantSpec, device: str | torch.device, chain=None):
    """Makes the meta model match a quantized checkpoint; returns the on_tensor hook that places packed
    weights and scales with their stored dtypes (the loader would otherwise cast fp16 scales and fp8 weights)."""
    convert_empty(net, spec)

    def place(module: nn.Module, attr: str, tensor: torch.Tensor) -> bool:
        if isinstance(module, (QuantLinear, QuantExperts)):
            module._buffers[attr] = tensor.to(device=device, copy=True)
            return True
        return chain(module, attr, tensor) if chain is not None else False

    return place
