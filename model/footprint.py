"""Expected weight memory per precision, from a config alone (the model is built on the meta device: no weights).

It walks the same modules and applies the same rules as quantize_model, so the figure is what a quantized
model really holds (packed weights + fp16 scales), not a params x bits estimate. Embeddings, norms and the
router stay in the model dtype (bf16: 2 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from diffill.kernels.qformat import SCALE_DTYPE

from .config import DiffusionGemmaConfig
from .diffusion_gemma import DiffusionGemma
from .modules import Experts
from .quant import QuantSpec, is_target, qweight_dtype, qweight_shape, storable

PRECISIONS = ("bf16", "int8", "int4", "fp8")
DENSE_BYTES = 2  # bf16


@dataclass
class Footprint:
    precision: str
    quantized_bytes: int  # packed weights + scales of the quantized modules
    dense_bytes: int  # everything kept in bf16 (embeddings, norms, router, and unquantizable weights)

    @property
    def total_bytes(self) -> int:
        return self.quantized_bytes + self.dense_bytes


def _nbytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * torch.empty((), dtype=dtype).element_size()


def quantized_bytes(shape: tuple[int, ...], spec: QuantSpec) -> int:
    """Packed weight + scale bytes of one dense weight of `shape` stored in `spec`."""
    q_shape, s_shape = qweight_shape(shape, spec, spec.group_for(shape[-1]))
    return _nbytes(q_shape, qweight_dtype(spec)) + _nbytes(s_shape, SCALE_DTYPE)


def weight_footprint(config: DiffusionGemmaConfig, precision: str | QuantSpec = "bf16") -> Footprint:
    """Weight bytes of the text stack at `precision` ("bf16", or a quantization scheme / spec)."""
    with torch.device("meta"):
        net = DiffusionGemma(config)
    spec = None if precision == "bf16" else QuantSpec.of(precision)
    quantized = 0
    handled: set[str] = set()
    if spec is not None:
        for name, module in net.named_modules():
            if not is_target(name, module) or not storable(module, spec):
                continue
            tensors = ("gate_up_proj", "down_proj") if isinstance(module, Experts) else ("weight",)
            for t in tensors:
                quantized += quantized_bytes(tuple(getattr(module, t).shape), spec)
                handled.add(f"{name}.{t}")
    dense = sum(p.numel() * DENSE_BYTES for n, p in net.named_parameters() if n not in handled)
    dense += sum(b.numel() * DENSE_BYTES for n, b in net.named_buffers() if not n.startswith("inv_freq_"))
    return Footprint(str(precision if spec is None else spec.scheme), quantized, dense)


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def footprint_lines(config: DiffusionGemmaConfig) -> list[str]:
    """Human-readable lines for `diffill doctor` (GB = 1e9 bytes)."""
    lines = []
    for p in PRECISIONS:
        if p == "fp8" and getattr(torch, "float8_e4m3fn", None) is None:
            lines.append("  fp8: not supported by this torch")
            continue
        f = weight_footprint(config, p)
        detail = "" if p == "bf16" else f" ({_size(f.quantized_bytes)} quantized + {_size(f.dense_bytes)} bf16)"
        lines.append(f"  {p}: {_size(f.total_bytes)}{detail}")
    return lines
