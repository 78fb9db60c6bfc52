"""Random weights of the real shapes, made on the device: what the GPU benchmarks and the `random:<scheme>` model
source (model/runtime.py) run, to measure speed with no checkpoint to download or write (52 GB in bf16).

Quantized modules get random packed values directly (never a dense copy of their weights anywhere); the answers of
such a model mean nothing, its timings are the real model's.
"""

from __future__ import annotations

import torch
from torch import nn

from .config import DiffusionGemmaConfig
from .diffusion_gemma import DiffusionGemma
from .quant import QuantExperts, QuantLinear, QuantSpec, lay_out_for_kernels
from .quant_io import convert_empty


@torch.no_grad()
def random_quantized_model(
    config: DiffusionGemmaConfig, spec: QuantSpec | str | None, device: str | torch.device, dtype: torch.dtype
) -> DiffusionGemma:
    """Random weights allocated directly on `device`, quantized modules (spec None: none) filled with random packed
    values (weight std about 0.02): never a dense copy of the quantized weights anywhere."""
    spec = QuantSpec.of(spec) if spec is not None else None
    with torch.device("meta"):
        net = DiffusionGemma(config)
    if spec is not None:
        convert_empty(net, spec)
    for module in net.modules():
        for k, p in list(module._parameters.items()):
            if p is None:
                continue
            value = torch.ones(p.shape, device=device, dtype=dtype) if p.dim() == 1 else None
            if value is None:
                value = torch.randn(p.shape, device=device, dtype=dtype) * 0.02
            module._parameters[k] = nn.Parameter(value, requires_grad=False)
        if isinstance(module, (QuantLinear, QuantExperts)):
            fill_quantized(module, spec, device)
            continue
        for k, b in list(module._buffers.items()):
            if b is not None:
                module._buffers[k] = torch.ones(
                    b.shape, device=device, dtype=dtype if b.is_floating_point() else b.dtype
                )
    net.reset_rope(device)
    return lay_out_for_kernels(net).eval()  # as the loader lays them out


def fill_quantized(module: nn.Module, spec: QuantSpec, device) -> None:
    """Random packed weights and scales of a dequantized std about 0.02, made on `device` (for speed only)."""
    for k, b in list(module._buffers.items()):
        if b is None:
            continue
        if "qweight" in k:
            module._buffers[k] = _random_packed(b.shape, b.dtype, device)
        else:
            scale = 0.02 / (4.6 if spec.scheme == "int4" else 73.0)
            module._buffers[k] = torch.full(b.shape, scale, dtype=b.dtype, device=device)


def _random_packed(shape: torch.Size, dtype: torch.dtype, device) -> torch.Tensor:
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=torch.uint8, device=device)
    if dtype == torch.int8:
        return torch.randint(-127, 128, shape, dtype=torch.int8, device=device)
    return (torch.randn(shape, device=device) * 100).clamp(-448, 448).to(dtype)


# ----- timing -----
