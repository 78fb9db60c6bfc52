"""Triton kernels for one sampler step over the vocabulary (imported only when triton is there).

`sampler_stats_kernel` reads each row of logits once, in chunks, and keeps running statistics (online softmax):
max, sum of exp, sum of exp * (z - max) for the entropy, the argmax, and the Gumbel-max sample
argmax(z + g), g = -log(-log(u)) from Philox uniforms, which draws from softmax(z) like torch.multinomial; and a
uniform id per row (the renoising draw). The seed is an argument, or (`SEED_IN_MEMORY`) read from a one-element
tensor, so that a CUDA graph replaying the step takes a new seed at each replay.
`soft_embedding_kernel` is the self-conditioning input softmax(z) @ E without writing the probabilities.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def sampler_stats_kernel(
    logits_ptr,
    sample_ptr,
    argmax_ptr,
    entropy_ptr,
    lse_ptr,
    noise_ptr,
    temperature,
    seed,
    R,
    V,
    stride_r,
    BV: tl.constexpr,
    SEED_IN_MEMORY: tl.constexpr,
):
    row = tl.program_id(0)
    if SEED_IN_MEMORY:
        seed = tl.load(seed)
    base = logits_ptr + row.to(tl.int64) * stride_r
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.zeros((), tl.float32)
    t = tl.zeros((), tl.float32)
    best = tl.full((), float("-inf"), tl.float32)
    best_i = tl.zeros((), tl.int32)
    gbest = tl.full((), float("-inf"), tl.float32)
    gbest_i = tl.zeros((), tl.int32)
    for v0 in range(0, V, BV):
        offs = v0 + tl.arange(0, BV)
        mask = offs < V
        z = tl.load(base + offs, mask=mask, other=float("-inf")).to(tl.float32) / temperature
        cmax = tl.max(z, 0)
        m_new = tl.maximum(m, cmax)
        m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)  # all -inf so far: keep the sums at 0, not NaN
        alpha = tl.exp(m - m_ref)
        e = tl.where(mask, tl.exp(z - m_ref), 0.0)
        diff = tl.where(e > 0, z - m_ref, 0.0)
        # sum e^(z-m')(z-m') = e^(m-m') * (sum e^(z-m)(z-m) + (m - m') * sum e^(z-m))
        shift = tl.where(s > 0, m - m_ref, 0.0)
        t = tl.where(alpha > 0, alpha * (t + shift * s), 0.0) + tl.sum(e * diff, 0)  # alpha 0: all forgotten
        s = alpha * s + tl.sum(e, 0)
        m = m_new
        ci = tl.argmax(z, 0).to(tl.int32) + v0
        take = cmax > best
        best_i = tl.where(take, ci, best_i)
        best = tl.where(take, cmax, best)
        u = tl.rand(seed, row * V + offs)
        zg = tl.where(mask, z - tl.log(-tl.log(u)), float("-inf"))
        gmax = tl.max(zg, 0)
        gi = tl.argmax(zg, 0).to(tl.int32) + v0
        gtake = gmax > gbest
        gbest_i = tl.where(gtake, gi, gbest_i)
        gbest = tl.where(gtake, gmax, gbest)
    log_s = tl.log(s)
    tl.store(lse_ptr + row, m + log_s)
    tl.store(entropy_ptr + row, log_s - t / s)
    tl.store(argmax_ptr + row, best_i.to(tl.int64))
    tl.store(sample_ptr + row, gbest_i.to(tl.int64))
    u = tl.rand(seed, R * V + row)  # past every offset the Gumbel draws used
    tl.store(noise_ptr + row, tl.minimum((u * V).to(tl.int32), V - 1).to(tl.int64))


@triton.jit
def soft_embedding_kernel(
    logits_ptr,
    lse_ptr,
    w_ptr,
    out_ptr,
    temperature,
    scale,
    R,
    V,
    H,
    stride_r,
    stride_wv,
    stride_or,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    """out[R, H] = softmax(logits / T) @ W[V, H] * scale, the probabilities rebuilt tile by tile from the lse."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    mask_r = rows < R
    mask_c = cols < H
    lse = tl.load(lse_ptr + rows, mask=mask_r, other=0.0)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for v0 in range(0, V, BK):
        offs_v = v0 + tl.arange(0, BK)
        mask_v = offs_v < V
        z = (
            tl.load(
                logits_ptr + rows[:, None].to(tl.int64) * stride_r + offs_v[None, :],
                mask=mask_r[:, None] & mask_v[None, :],
                other=float("-inf"),
            ).to(tl.float32)
            / temperature
        )
        p = tl.where(mask_r[:, None] & mask_v[None, :], tl.exp(z - lse[:, None]), 0.0)
        w = tl.load(
            w_ptr + offs_v[:, None].to(tl.int64) * stride_wv + cols[None, :],
            mask=mask_v[:, None] & mask_c[None, :],
            other=0.0,
        )
        acc += tl.dot(p.to(w.dtype), w)
    tl.store(
        out_ptr + rows[:, None] * stride_or + cols[None, :],
        (acc * scale).to(out_ptr.dtype.element_ty),
        mask=mask_r[:, None] & mask_c[None, :],
    )


@triton.jit
def probs_kernel(logits_ptr, lse_ptr, out_ptr, temperature, V, stride_r, stride_or, BV: tl.constexpr):
    """out[r, v] = softmax(logits[r] / T)[v] in out's dtype (for a following cuBLAS matmul)."""
    row = tl.program_id(0)
    offs = tl.program_id(1) * BV + tl.arange(0, BV)
    mask = offs < V
    z = tl.load(logits_ptr + row.to(tl.int64) * stride_r + offs, mask=mask, other=float("-inf")).to(tl.float32)
    p = tl.exp(z / temperature - tl.load(lse_ptr + row))
    tl.store(out_ptr + row.to(tl.int64) * stride_or + offs, p.to(out_ptr.dtype.element_ty), mask=mask)
