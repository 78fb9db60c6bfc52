"""fp8 (e4m3) weights through PyTorch's own scaled GEMMs (CUTLASS on Hopper, no Triton): the MoE's grouped
product and the plain linear layers.

The slots are sorted by expert (kernels.moe.sort_slots) so that each expert's rows are one contiguous group;
`offs` holds the groups' ends. Activations are quantized to e4m3 per row (absmax / 448), weights are stored
e4m3 per output channel (kernels/qformat.py), and `torch._scaled_grouped_mm` multiplies each group by its expert
with both scales applied in the epilogue, in bf16. Every expert's weights are read once per call.

Where that op cannot run (no CUDA, or a GPU before Hopper), `grouped_scaled_mm_emulated` computes the same
product from the same fp8 operands with `torch._grouped_mm` in fp32 (which runs on CPUs too): the CPU tests hold
the fp8 path's logic to the torch reference with it.
"""

from __future__ import annotations

import functools
import logging

import torch

from .moe import QuantizedExperts, combine, geglu, sort_slots
from .qformat import FP8_DTYPE

FP8_MAX = 448.0


log = logging.getLogger(__name__)
_FAILED: list[str] = []  # the first error of PyTorch's fp8 GEMMs here: then the dequantizing paths serve


@functools.cache
def _hopper(index: int) -> bool:
    return torch.cuda.get_device_capability(index) >= (9, 0)


def refuse(exc: Exception) -> None:
    """Turns the fp8 GEMMs off for this process after they failed (a shape or driver they do not take)."""
    if not _FAILED:
        log.warning("fp8 GEMMs failed (%s: %s); fp8 weights are dequantized from now on", type(exc).__name__, exc)
        _FAILED.append(str(exc))


def fp8_gemms_available(x: torch.Tensor) -> bool:
    """Whether torch._scaled_grouped_mm and torch._scaled_mm serve this device (CUDA, compute capability 9.0 or
    later, a torch with e4m3)."""
    return x.is_cuda and FP8_DTYPE is not None and hasattr(torch, "_scaled_grouped_mm") and _hopper(x.device.index or 0)


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(e4m3 rows, fp32 scale per row) with x ~= rows * scale[:, None]."""
    scale = (x.float().abs().amax(dim=-1) / FP8_MAX).clamp(min=2.0**-24)
    return (x.float() / scale[:, None]).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE), scale


def grouped_scaled_mm_emulated(
    a: torch.Tensor, scale_a: torch.Tensor, b: torch.Tensor, scale_b: torch.Tensor, offs: torch.Tensor
) -> torch.Tensor:
    """What torch._scaled_grouped_mm computes, from the same fp8 operands: rows offs[g-1]:offs[g] of `a` [M, K]
    times b[g] [K, N] (the fp8 values are exact in fp32; fp32 sums as CUTLASS keeps them), then scale_a per row
    and scale_b [G, N] per group, rounded to bf16."""
    out = torch._grouped_mm(a.float(), b.float(), offs=offs)
    counts = torch.diff(offs, prepend=offs.new_zeros(1)).long()
    group = torch.repeat_interleave(torch.arange(len(offs), device=a.device), counts, output_size=a.shape[0])
    return (out * scale_a[:, None] * scale_b[group]).to(torch.bfloat16)


def grouped_linear(rows: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, offs: torch.Tensor):
    """rows [M, K] (sorted by expert; group g ends at offs[g]) @ expert weights [E, N, K] (e4m3, scales [E, N, 1])
    transposed, as bf16 [M, N]."""
    a, scale_a = quantize_rows(rows)
    b = qweight.transpose(-2, -1)  # [E, K, N], column-major as the CUTLASS kernel reads it (no copy)
    scale_b = scales[..., 0].float()
    if fp8_gemms_available(rows):
        return torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16)
    return grouped_scaled_mm_emulated(a, scale_a, b, scale_b, offs)


def scaled_mm_emulated(a: torch.Tensor, scale_a: torch.Tensor, b: torch.Tensor, scale_b: torch.Tensor):
    """What torch._scaled_mm computes with row-wise scales, from the same fp8 operands: (a @ b) * scale_a [M, 1] *
    scale_b [1, N] in fp32 sums, rounded to bf16."""
    return (a.float() @ b.float() * scale_a * scale_b).to(torch.bfloat16)


def fp8_linear(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """x [..., K] @ W.T for an e4m3 weight [N, K] with per-output-channel scales [N, 1], as bf16 [..., N]:
    torch._scaled_mm with row-wise scales on Hopper (the weight read once as fp8, not dequantized per call)."""
    shape = x.shape
    a, scale_a = quantize_rows(x.reshape(-1, shape[-1]))
    b, scale_b = qweight.t(), scales.float().reshape(1, -1)  # column-major [K, N], as the kernel reads it
    if fp8_gemms_available(x):
        out = torch._scaled_mm(a, b, scale_a[:, None], scale_b, out_dtype=torch.bfloat16)
    else:
        out = scaled_mm_emulated(a, scale_a[:, None], b, scale_b)
    return out.reshape(*shape[:-1], -1)


def fp8_grouped_moe(x: torch.Tensor, weights: torch.Tensor, index: torch.Tensor, w: QuantizedExperts) -> torch.Tensor:
    """out[t] = sum_j weights[t, j] * expert_{index[t, j]}(x[t]) for fp8 experts stored per output channel."""
    if w.scheme != "fp8" or w.gate_up_scales.shape[-1] != 1 or w.down_scales.shape[-1] != 1:
        raise ValueError("the grouped GEMM path takes fp8 experts with per-output-channel scales")
    slots = sort_slots(index, w.gate_up_qweight.shape[0])
    offs = torch.cumsum(slots.counts, 0).to(torch.int32)
    hidden = geglu(grouped_linear(x[slots.token], w.gate_up_qweight, w.gate_up_scales, offs).float())
    out = grouped_linear(hidden, w.down_qweight, w.down_scales, offs)
    return combine(x, out.float(), weights, slots)
