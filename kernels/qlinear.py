"""Weight-only quantized linear layer: y = x @ dequant(W).T. Triton on CUDA, torch reference elsewhere."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._triton import use_triton
from .qformat import BITS, dequantize, in_features, weight_strides
from .tiles import Tiles, k_block, paired, qlinear_tiles


def qlinear_reference(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, scheme: str) -> torch.Tensor:
    """Dequantize to the activation dtype, then a plain matmul (the CPU path, and the kernels' oracle)."""
    return F.linear(x, dequantize(qweight, scales, scheme, x.dtype))


def qlinear_triton(
    x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, scheme: str, tiles: Tiles | None = None
) -> torch.Tensor:
    """The Triton kernel (int4 / int8); fp8 and odd group sizes fall back to the reference. `tiles`: the
    launch shape (default qlinear_tiles(M)), for benchmarks that compare them; bm = 1 takes the matrix-vector
    kernel, one program row per token."""
    k = in_features(qweight, scheme, scales)
    group = k // scales.shape[-1]
    bk = k_block(group, k)
    if scheme == "fp8" or bk is None:
        return qlinear_reference(x, qweight, scales, scheme)
    import triton

    from .triton_qmm import qlinear_kernel

    shape = x.shape
    x2 = x.reshape(-1, k).contiguous()
    m, n = x2.shape[0], scales.shape[0]
    stride_wn, stride_wb = weight_strides(qweight, scales, scheme, bk)
    y = torch.empty(m, n, dtype=x.dtype, device=x.device)
    t = tiles or qlinear_tiles(m)
    if t.bm == 1:  # a matrix-vector product per row (tiny M: the AR token), no tensor-core tile to fill
        from .triton_qmm import qgemv_kernel

        qgemv_kernel[(triton.cdiv(n, t.bn), m)](
            x2, qweight, scales, y, n, k, x2.stride(0), stride_wn, stride_wb, scales.stride(0), y.stride(0),
            BITS=BITS[scheme], GROUP=group, BN=t.bn, BK=bk, num_warps=t.warps, num_stages=t.stages,
        )  # fmt: skip
        return y.reshape(*shape[:-1], n)
    grid = (triton.cdiv(m, t.bm), triton.cdiv(n, t.bn))
    qlinear_kernel[grid](
        x2, qweight, scales, y, m, n, k, x2.stride(0), stride_wn, stride_wb, scales.stride(0), y.stride(0),
        BITS=BITS[scheme], GROUP=group, BM=t.bm, BN=t.bn, BK=bk, PAIRED=paired(BITS[scheme], bk),
        num_warps=t.warps, num_stages=t.stages,
    )  # fmt: skip
    return y.reshape(*shape[:-1], n)


def qlinear(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, scheme: str) -> torch.Tensor:
    if scheme == "fp8":
        from . import grouped_fp8

        if grouped_fp8.fp8_gemms_available(x) and scales.shape[-1] == 1:  # Hopper: torch._scaled_mm
            try:
                return grouped_fp8.fp8_linear(x, qweight, scales).to(x.dtype)
            except RuntimeError as exc:
                grouped_fp8.refuse(exc)
        return qlinear_reference(x, qweight, scales, scheme)
    if use_triton(x, qweight):
        return qlinear_triton(x, qweight, scales, scheme)
    return qlinear_reference(x, qweight, scales, scheme)
