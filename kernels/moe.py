"""Fused MoE over quantized experts for canvas-sized batches (16-256 tokens x top-k).

Routing weights come from the model's router (fp32 softmax/top-k stays in torch: it is tiny). Then:
1. `align_slots`: (token, k) slots sorted by expert, each expert's run padded to the M tile, in torch ops
   with no host sync (the padded length is an upper bound; unused blocks exit at once).
2. kernel 1: gather token rows, int4/int8 dequant in registers, gate and up matmuls, GeGLU (gelu tanh).
3. kernel 2: down matmul times the routing weight, per slot; the k slots of a token are summed in fp32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ._triton import use_triton
from .qformat import dequantize, in_features, weight_strides
from .tiles import Tiles, k_block, moe_tiles, paired


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return F.gelu(x, approximate="tanh")


def geglu(gate_up: torch.Tensor) -> torch.Tensor:
    """The experts' activation: gelu(gate) * up over a gate_up product (gate columns first)."""
    gate, up = gate_up.chunk(2, dim=-1)
    return gelu_tanh(gate) * up


@dataclass
class Slots:
    """The (token, k) routing slots sorted by expert: `token[i]` is slot i's token, `counts[e]` expert e's slots."""

    order: torch.Tensor
    token: torch.Tensor
    counts: torch.Tensor


def expert_counts(flat: torch.Tensor, num_experts: int) -> torch.Tensor:
    """Slots per expert. (torch.bincount reads its input's maximum back to the host on CUDA: a sync that a CUDA
    graph cannot capture; scatter_add has none.)"""
    return torch.zeros(num_experts, dtype=torch.long, device=flat.device).scatter_add_(0, flat, torch.ones_like(flat))


def sort_slots(index: torch.Tensor, num_experts: int) -> Slots:
    """Slots of `index` [T, k] in expert order (stable: a token's slots keep their order within an expert)."""
    flat = index.reshape(-1)
    order = torch.argsort(flat, stable=True)
    return Slots(order, order // index.shape[-1], expert_counts(flat, num_experts))


def per_expert(xs: torch.Tensor, counts: list[int], ffn: Callable[[int, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """`ffn(e, rows)` over each expert's run of the sorted rows `xs`, experts without tokens skipped."""
    parts, start = [], 0
    for e, n in enumerate(counts):
        if n:
            parts.append(ffn(e, xs[start : start + n]))
            start += n
    return torch.cat(parts)


def combine(x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor, slots: Slots) -> torch.Tensor:
    """Each token's k expert outputs `y` (in slot order) weighted by the router and summed: [T, H] like `x`."""
    y = y * weights.reshape(-1)[slots.order, None]
    return torch.zeros_like(x).index_add_(0, slots.token, y.to(x.dtype))


@dataclass
class QuantizedExperts:
    """Packed expert weights: gate_up [E, 2*Ie, H] and down [E, H, Ie], each as qweight + scales."""

    gate_up_qweight: torch.Tensor
    gate_up_scales: torch.Tensor
    down_qweight: torch.Tensor
    down_scales: torch.Tensor
    scheme: str


def fused_moe_reference(x: torch.Tensor, weights: torch.Tensor, index: torch.Tensor, w: QuantizedExperts):
    """Torch oracle: per used expert, dequantize and run gate/up, GeGLU, down; weighted sum over the k slots.

    Only the experts that received tokens are dequantized (the CPU path of QuantExperts)."""
    slots = sort_slots(index, w.gate_up_qweight.shape[0])

    def ffn(e: int, rows: torch.Tensor) -> torch.Tensor:
        gate_up = dequantize(w.gate_up_qweight[e], w.gate_up_scales[e], w.scheme, x.dtype)
        down = dequantize(w.down_qweight[e], w.down_scales[e], w.scheme, x.dtype)
        return F.linear(geglu(F.linear(rows, gate_up)), down)

    return combine(x, per_expert(x[slots.token], slots.counts.tolist(), ffn), weights, slots)


def align_slots(index: torch.Tensor, num_experts: int, block_m: int):
    """(sorted_slots [P], block_expert [P // block_m], n_padded [1]) with P an upper bound on the padded length.

    sorted_slots lists slot ids (token * k + j) expert by expert, each run padded with the sentinel T*k."""
    n = index.numel()
    flat = index.reshape(-1)
    counts = expert_counts(flat, num_experts)
    padded = (counts + block_m - 1) // block_m * block_m
    pend = torch.cumsum(padded, 0)
    pstart = pend - padded
    start = torch.cumsum(counts, 0) - counts
    order = torch.argsort(flat, stable=True)
    e_sorted = flat[order]
    pos = pstart[e_sorted] + torch.arange(n, device=index.device) - start[e_sorted]
    bound = n + min(num_experts, n) * (block_m - 1)
    bound = (bound + block_m - 1) // block_m * block_m
    sorted_slots = torch.full((bound,), n, dtype=torch.int32, device=index.device)
    sorted_slots[pos] = order.to(torch.int32)
    block_start = torch.arange(0, bound, block_m, device=index.device)
    block_expert = torch.searchsorted(pend, block_start, right=True).clamp_(max=num_experts - 1).to(torch.int32)
    return sorted_slots, block_expert, pend[-1:].to(torch.int32)


def fused_moe_triton(
    x: torch.Tensor, weights: torch.Tensor, index: torch.Tensor, w: QuantizedExperts, tiles: Tiles | None = None
):
    """The two Triton kernels (int4 / int8); other formats fall back to the reference. `tiles`: the launch
    shape of both (default: kernels.tiles for these tokens), for benchmarks that compare them."""
    e, two_ie = w.gate_up_scales.shape[:2]
    h = in_features(w.gate_up_qweight, w.scheme, w.gate_up_scales)
    ie = two_ie // 2
    g1 = h // w.gate_up_scales.shape[-1]
    g2 = ie // w.down_scales.shape[-1]
    bk1, bk2 = k_block(g1, h), k_block(g2, ie)
    if w.scheme == "fp8" or bk1 is None or bk2 is None:
        return fused_moe_reference(x, weights, index, w)
    import triton

    from .triton_qmm import moe_down_kernel, moe_gate_up_kernel

    bits = 4 if w.scheme == "int4" else 8
    t, k = index.shape
    n_slots = t * k
    launch = tiles or moe_tiles(index.shape[0])
    bm, bn = launch.bm, launch.bn
    sorted_slots, block_expert, n_padded = align_slots(index, e, bm)
    gu_wn, gu_wb = weight_strides(w.gate_up_qweight, w.gate_up_scales, w.scheme, bk1)
    dn_wn, dn_wb = weight_strides(w.down_qweight, w.down_scales, w.scheme, bk2)
    x = x.contiguous()
    hidden = torch.empty(n_slots, ie, dtype=x.dtype, device=x.device)
    grid1 = (sorted_slots.numel() // bm, triton.cdiv(ie, bn))
    moe_gate_up_kernel[grid1](
        x, w.gate_up_qweight, w.gate_up_scales, hidden, sorted_slots, block_expert, n_padded,
        n_slots, h, ie, k, x.stride(0), w.gate_up_qweight.stride(0), gu_wn, gu_wb, w.gate_up_scales.stride(0),
        w.gate_up_scales.stride(1), hidden.stride(0),
        BITS=bits, GROUP=g1, BM=bm, BN=bn, BK=bk1, PAIRED=paired(bits, bk1), num_warps=launch.warps,
        num_stages=launch.stages,
    )  # fmt: skip
    split = max(1, min(launch.split_k, triton.cdiv(ie, bk2)))
    out = (torch.zeros if split > 1 else torch.empty)(n_slots, h, dtype=torch.float32, device=x.device)
    topw = weights.reshape(-1).float().contiguous()
    grid2 = (sorted_slots.numel() // bm, triton.cdiv(h, bn), split)
    moe_down_kernel[grid2](
        hidden, w.down_qweight, w.down_scales, out, topw, sorted_slots, block_expert, n_padded,
        n_slots, ie, h, hidden.stride(0), w.down_qweight.stride(0), dn_wn, dn_wb, w.down_scales.stride(0),
        w.down_scales.stride(1), out.stride(0),
        BITS=bits, GROUP=g2, BM=bm, BN=bn, BK=bk2, PAIRED=paired(bits, bk2), SPLIT_K=split,
        num_warps=launch.warps, num_stages=launch.stages,
    )  # fmt: skip
    return out.view(t, k, h).sum(1).to(x.dtype)


def fused_moe(x: torch.Tensor, weights: torch.Tensor, index: torch.Tensor, w: QuantizedExperts) -> torch.Tensor:
    """out[t] = sum_j weights[t, j] * expert_{index[t, j]}(x[t]); x [T, H], weights/index [T, k]. fp8 experts go
    through PyTorch's grouped GEMM where it runs (Hopper: kernels.grouped_fp8), int4/int8 through Triton."""
    if w.scheme == "fp8":
        from . import grouped_fp8

        if grouped_fp8.fp8_gemms_available(x) and w.gate_up_scales.shape[-1] == 1:
            try:
                return grouped_fp8.fp8_grouped_moe(x, weights, index, w)
            except RuntimeError as exc:  # never measured on every GPU: a failure falls back for good
                grouped_fp8.refuse(exc)
        return fused_moe_reference(x, weights, index, w)
    if use_triton(x, w.gate_up_qweight):
        return fused_moe_triton(x, weights, index, w)
    return fused_moe_reference(x, weights, index, w)
