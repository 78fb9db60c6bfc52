"""Triton kernels for weight-only quantized matmuls: one dense (QuantLinear) and the two halves of the fused MoE.

Imported only when triton is there (see kernels/_triton.py). Weights stay packed in global memory and are
dequantized in registers tile by tile (int4 nibble -> (v - 8) * scale), so HBM traffic is the packed bytes.
A tile never straddles a quantization group (BK divides the group, or the group is the whole row).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def gelu_tanh(x):
    """gelu(x, approximate='tanh'), with tanh(y) = 2 * sigmoid(2y) - 1."""
    y = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (2.0 * tl.sigmoid(2.0 * y))


@triton.jit
def load_weight_tile(
    w_blk, s_ptr, rows, mask_n, k0, K, stride_wn, stride_sn, BITS: tl.constexpr, GROUP: tl.constexpr, BK: tl.constexpr
):
    """Dequantized, transposed weight tile [BK, BN] (fp32) for output rows `rows` and inputs k0 .. k0 + BK;
    `w_blk` points at the tile's first byte of row 0 (block_ptr: either layout)."""
    local = tl.arange(0, BK)
    mask = ((k0 + local)[:, None] < K) & mask_n[None, :]
    if BITS == 4:
        b = tl.load(w_blk + rows[None, :] * stride_wn + local[:, None] // 2, mask=mask, other=0).to(tl.int32)
        q = ((b >> ((local[:, None] % 2) * 4)) & 0xF) - 8
    else:
        q = tl.load(w_blk + rows[None, :] * stride_wn + local[:, None], mask=mask, other=0).to(tl.int32)
    s = tl.load(s_ptr + rows * stride_sn + k0 // GROUP, mask=mask_n, other=0.0).to(tl.float32)
    return q.to(tl.float32) * s[None, :]


@triton.jit
def block_ptr(w_ptr, k0, stride_wb, BK: tl.constexpr):
    """The first byte of the K tile at k0 (row 0): k0 / BK tiles on. stride_wb is a tile's bytes in a row-major
    weight (BK/2 or BK) and N times that in a tile-major one (kernels/qformat.py tile_major)."""
    return w_ptr + (k0 // BK) * stride_wb


@triton.jit
def load_weight_pairs(w_blk, s_ptr, rows, mask_n, k0, K, stride_wn, stride_sn, GROUP: tl.constexpr, BK: tl.constexpr):
    """The even-K and odd-K halves [BK/2, BN] (fp32) of an int4 tile, from one load of its BK/2 x BN bytes.

    Each byte is read once and the bytes of a row are contiguous along the tile's first axis, so a warp's loads
    coalesce (load_weight_tile's `offs_k // 2` reads each byte twice and hides that contiguity from Triton)."""
    local = tl.arange(0, BK // 2)
    mask = ((k0 // 2 + local)[:, None] < (K + 1) // 2) & mask_n[None, :]
    b = tl.load(w_blk + rows[None, :] * stride_wn + local[:, None], mask=mask, other=0).to(tl.int32)
    s = tl.load(s_ptr + rows * stride_sn + k0 // GROUP, mask=mask_n, other=0.0).to(tl.float32)
    even = ((b & 0xF) - 8).to(tl.float32) * s[None, :]
    odd = (((b >> 4) & 0xF) - 8).to(tl.float32) * s[None, :]
    return even, odd


@triton.jit
def load_rows_pairs(ptr, row_offsets, row_mask, k0, K, BK: tl.constexpr):
    """Activations [BM, BK/2] at the even and at the odd inputs k0, k0+2, ... and k0+1, k0+3, ..."""
    ke = k0 + 2 * tl.arange(0, BK // 2)
    even = tl.load(ptr + row_offsets[:, None] + ke[None, :], mask=row_mask[:, None] & (ke[None, :] < K), other=0.0)
    odd = tl.load(
        ptr + row_offsets[:, None] + ke[None, :] + 1, mask=row_mask[:, None] & (ke[None, :] + 1 < K), other=0.0
    )
    return even, odd


@triton.jit
def load_rows(ptr, row_offsets, row_mask, k0, K, BK: tl.constexpr, PAIRED: tl.constexpr):
    """Activations for inputs k0 .. k0+BK: (even, odd) halves [BM, BK/2] when PAIRED, else the tile [BM, BK] twice
    (the second unused), so that the K loops of every kernel read the same either way."""
    if PAIRED:
        first, second = load_rows_pairs(ptr, row_offsets, row_mask, k0, K, BK)
    else:
        offs_k = k0 + tl.arange(0, BK)
        first = tl.load(
            ptr + row_offsets[:, None] + offs_k[None, :], mask=row_mask[:, None] & (offs_k[None, :] < K), other=0.0
        )
        second = first
    return first, second


@triton.jit
def dot_weights(
    acc, a0, a1, w_ptr, s_ptr, rows, mask_n, k0, K, stride_wn, stride_wb, stride_sn,
    BITS: tl.constexpr, GROUP: tl.constexpr, BK: tl.constexpr, PAIRED: tl.constexpr,
):  # fmt: skip
    """acc + activations (from load_rows) @ the dequantized weight tile of output `rows`, inputs k0 .. k0+BK."""
    w_blk = block_ptr(w_ptr, k0, stride_wb, BK)
    if PAIRED:
        we, wo = load_weight_pairs(w_blk, s_ptr, rows, mask_n, k0, K, stride_wn, stride_sn, GROUP, BK)
        acc += tl.dot(a0, we.to(a0.dtype))
        acc += tl.dot(a1, wo.to(a1.dtype))
    else:
        w = load_weight_tile(w_blk, s_ptr, rows, mask_n, k0, K, stride_wn, stride_sn, BITS, GROUP, BK)
        acc += tl.dot(a0, w.to(a0.dtype))
    return acc


@triton.jit
def qlinear_kernel(
    x_ptr,
    w_ptr,
    s_ptr,
    y_ptr,
    M,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_wb,
    stride_sn,
    stride_ym,
    BITS: tl.constexpr,
    GROUP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    PAIRED: tl.constexpr,
):
    """y[M, N] = x[M, K] @ dequant(W[N, K]).T (PAIRED: int4 with BK >= 32, read by load_weight_pairs)"""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask_m = offs_m < M
    mask_n = offs_n < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a0, a1 = load_rows(x_ptr, offs_m * stride_xm, mask_m, k0, K, BK, PAIRED)
        acc = dot_weights(
            acc, a0, a1, w_ptr, s_ptr, offs_n, mask_n, k0, K, stride_wn, stride_wb, stride_sn, BITS, GROUP, BK, PAIRED
        )
    tl.store(
        y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :],
        acc.to(y_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


@triton.jit
def moe_gate_up_kernel(
    x_ptr,
    w_ptr,
    s_ptr,
    h_ptr,
    sorted_ptr,
    expert_ptr,
    npad_ptr,
    n_slots,
    K,
    IE,
    top_k,
    stride_xm,
    stride_we,
    stride_wn,
    stride_wb,
    stride_se,
    stride_sn,
    stride_hm,
    BITS: tl.constexpr,
    GROUP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    PAIRED: tl.constexpr,
):
    """h[slot, :] = gelu_tanh(x[token] @ gate_e.T) * (x[token] @ up_e.T) for one block of slots of expert e.

    Slots are (token, k) pairs sorted by expert, each expert's run padded to BM (padding slots = n_slots).
    Gate rows are 0 .. IE-1 of gate_up_proj[e], up rows IE .. 2*IE-1."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    if pid_m * BM >= tl.load(npad_ptr):
        return
    slots = tl.load(sorted_ptr + pid_m * BM + tl.arange(0, BM))
    valid = slots < n_slots
    tokens = slots // top_k
    e = tl.load(expert_ptr + pid_m).to(tl.int64)
    w_e = w_ptr + e * stride_we
    s_e = s_ptr + e * stride_se
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask_n = offs_n < IE
    acc_g = tl.zeros((BM, BN), dtype=tl.float32)
    acc_u = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a0, a1 = load_rows(x_ptr, tokens * stride_xm, valid, k0, K, BK, PAIRED)
        acc_g = dot_weights(
            acc_g, a0, a1, w_e, s_e, offs_n, mask_n, k0, K, stride_wn, stride_wb, stride_sn, BITS, GROUP, BK, PAIRED
        )
        acc_u = dot_weights(
            acc_u,
            a0,
            a1,
            w_e,
            s_e,
            offs_n + IE,
            mask_n,
            k0,
            K,
            stride_wn,
            stride_wb,
            stride_sn,
            BITS,
            GROUP,
            BK,
            PAIRED,
        )
    h = gelu_tanh(acc_g) * acc_u
    tl.store(
        h_ptr + slots[:, None] * stride_hm + offs_n[None, :],
        h.to(h_ptr.dtype.element_ty),
        mask=valid[:, None] & mask_n[None, :],
    )


@triton.jit
def moe_down_kernel(
    h_ptr,
    w_ptr,
    s_ptr,
    y_ptr,
    topw_ptr,
    sorted_ptr,
    expert_ptr,
    npad_ptr,
    n_slots,
    K,
    N,
    stride_hm,
    stride_we,
    stride_wn,
    stride_wb,
    stride_se,
    stride_sn,
    stride_ym,
    BITS: tl.constexpr,
    GROUP: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    PAIRED: tl.constexpr,
    SPLIT_K: tl.constexpr,
):
    """y[slot, :] = routing_weight[slot] * (h[slot] @ down_e.T), in fp32 (summed over k by the caller). With
    SPLIT_K > 1 the third grid axis splits the inputs (more programs where a few tokens leave the GPU idle): each
    program adds its part into y, which starts at zero."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    if pid_m * BM >= tl.load(npad_ptr):
        return
    chunk = tl.cdiv(tl.cdiv(K, BK), SPLIT_K) * BK  # whole K tiles per split: a tile never straddles a group
    k_lo = tl.program_id(2) * chunk
    k_hi = tl.minimum(k_lo + chunk, K)
    slots = tl.load(sorted_ptr + pid_m * BM + tl.arange(0, BM))
    valid = slots < n_slots
    e = tl.load(expert_ptr + pid_m).to(tl.int64)
    w_e = w_ptr + e * stride_we
    s_e = s_ptr + e * stride_se
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask_n = offs_n < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BK):
        a0, a1 = load_rows(h_ptr, slots * stride_hm, valid, k0, K, BK, PAIRED)
        acc = dot_weights(
            acc, a0, a1, w_e, s_e, offs_n, mask_n, k0, K, stride_wn, stride_wb, stride_sn, BITS, GROUP, BK, PAIRED
        )
    weight = tl.load(topw_ptr + slots, mask=valid, other=0.0).to(tl.float32)
    acc = acc * weight[:, None]
    y = y_ptr + slots[:, None] * stride_ym + offs_n[None, :]
    if SPLIT_K == 1:
        tl.store(y, acc, mask=valid[:, None] & mask_n[None, :])
    else:
        tl.atomic_add(y, acc, mask=valid[:, None] & mask_n[None, :])


@triton.jit
def qgemv_kernel(
    x_ptr,
    w_ptr,
    s_ptr,
    y_ptr,
    N,
    K,
    stride_xm,
    stride_wn,
    stride_wb,
    stride_sn,
    stride_ym,
    BITS: tl.constexpr,
    GROUP: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    """y[m, N] = x[m, K] @ dequant(W[N, K]).T for one row m per program axis 1, without tl.dot: a matrix-vector
    product on the CUDA cores, whose 16-row minimum would waste 15/16 of a tensor-core tile at M = 1. One program
    streams BN output rows of W once (int4 bytes read whole, both nibbles used)."""
    pid_n = tl.program_id(0)
    m = tl.program_id(1)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask_n = offs_n < N
    acc = tl.zeros((BN,), dtype=tl.float32)
    for k0 in range(0, K, BK):
        w_blk = block_ptr(w_ptr, k0, stride_wb, BK)
        if BITS == 4:  # the weight tile's even and odd inputs, dequantized: [BK/2, BN] each
            we, wo = load_weight_pairs(w_blk, s_ptr, offs_n, mask_n, k0, K, stride_wn, stride_sn, GROUP, BK)
            ke = k0 + 2 * tl.arange(0, BK // 2)
            xe = tl.load(x_ptr + m * stride_xm + ke, mask=ke < K, other=0.0).to(tl.float32)
            xo = tl.load(x_ptr + m * stride_xm + ke + 1, mask=ke + 1 < K, other=0.0).to(tl.float32)
            acc += tl.sum(we * xe[:, None] + wo * xo[:, None], axis=0)
        else:
            w = load_weight_tile(w_blk, s_ptr, offs_n, mask_n, k0, K, stride_wn, stride_sn, BITS, GROUP, BK)
            offs_k = k0 + tl.arange(0, BK)
            xk = tl.load(x_ptr + m * stride_xm + offs_k, mask=offs_k < K, other=0.0).to(tl.float32)
            acc += tl.sum(w * xk[:, None], axis=0)
    tl.store(y_ptr + m * stride_ym + offs_n, acc.to(y_ptr.dtype.element_ty), mask=mask_n)
