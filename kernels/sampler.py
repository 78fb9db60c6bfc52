"""One fused sampler step over the vocabulary, and the self-conditioning input, with torch references.

The reference sampler (model/sampler.py) reads the [C, V] logits five times per step (softmax, multinomial,
argmax, entropy, then softmax again for the self-conditioning input): with V = 262,144 that is the cost that
matters beside the forward. Here the logits are read once for all statistics and once for the soft embedding.
Sampling is Gumbel-max (same distribution as torch.multinomial, not the same random stream).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._triton import use_triton


@dataclass
class SamplerStep:
    sample: torch.Tensor  # [R] int64, one draw from softmax(z)
    argmax: torch.Tensor  # [R] int64
    entropy: torch.Tensor  # [R] fp32, of softmax(z)
    lse: torch.Tensor  # [R] fp32, logsumexp(z), reused by the soft embedding
    noise: torch.Tensor  # [R] int64, a uniform id (what a position not kept is renoised to)


def _rows(logits: torch.Tensor) -> torch.Tensor:
    return logits.reshape(-1, logits.shape[-1])


def sampler_step_reference(
    logits: torch.Tensor, temperature: float = 1.0, generator: torch.Generator | None = None
) -> SamplerStep:
    """Torch oracle (z = logits / T): multinomial sample, argmax, entropy as torch.distributions computes it."""
    z = _rows(logits).float() / temperature
    lse = z.logsumexp(dim=-1)
    norm = torch.clamp(z - lse[:, None], min=torch.finfo(z.dtype).min)
    probs = norm.exp()
    entropy = -(norm * probs).sum(-1)
    sample = torch.multinomial(probs, 1, generator=generator)[:, 0]
    noise = torch.randint(0, z.shape[-1], sample.shape, generator=generator, device=z.device)
    return SamplerStep(sample, z.argmax(dim=-1), entropy, lse, noise)


def sampler_step_triton(
    logits: torch.Tensor, temperature: float = 1.0, seed: int | torch.Tensor = 0, block_v: int = 4096
) -> SamplerStep:
    """The fused step; `seed` an int, or a one-element int64 tensor on the logits' device that the kernel reads
    (what a CUDA graph replays with a new value each time)."""
    from .triton_sampler import sampler_stats_kernel

    rows = _rows(logits)
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    r, v = rows.shape
    dev = rows.device
    sample = torch.empty(r, dtype=torch.int64, device=dev)
    argmax = torch.empty(r, dtype=torch.int64, device=dev)
    entropy = torch.empty(r, dtype=torch.float32, device=dev)
    lse = torch.empty(r, dtype=torch.float32, device=dev)
    noise = torch.empty(r, dtype=torch.int64, device=dev)
    in_memory = isinstance(seed, torch.Tensor)
    sampler_stats_kernel[(r,)](
        rows, sample, argmax, entropy, lse, noise, float(temperature), seed if in_memory else int(seed), r, v,
        rows.stride(0), BV=block_v, SEED_IN_MEMORY=in_memory,
    )  # fmt: skip
    return SamplerStep(sample, argmax, entropy, lse, noise)


def sampler_step(
    logits: torch.Tensor, temperature: float = 1.0, seed: int = 0, generator: torch.Generator | None = None
) -> SamplerStep:
    """Sample, argmax, entropy and logsumexp of softmax(logits / T) per row of [..., V] logits."""
    if use_triton(logits):
        return sampler_step_triton(logits, temperature, seed)
    return sampler_step_reference(logits, temperature, generator)


def soft_embedding_reference(
    logits: torch.Tensor, temperature: float, weight: torch.Tensor, scale: float, lse: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(logits / T) (fp32, cast to the embedding dtype) @ E * scale, as DiffusionGemma.self_conditioning_input."""
    z = _rows(logits).float() / temperature
    probs = z.softmax(dim=-1).to(weight.dtype)
    return (probs @ weight) * torch.tensor(scale).to(weight.dtype)


def soft_embedding_triton(
    logits: torch.Tensor, temperature: float, weight: torch.Tensor, scale: float, lse: torch.Tensor
) -> torch.Tensor:
    import triton

    from .triton_sampler import soft_embedding_kernel

    rows = _rows(logits).contiguous()
    r, v = rows.shape
    h = weight.shape[1]
    out = torch.empty(r, h, dtype=weight.dtype, device=rows.device)
    bm, bn, bk = (16 if r <= 16 else 64), (64 if h <= 64 else 128), 64
    grid = (triton.cdiv(r, bm), triton.cdiv(h, bn))
    soft_embedding_kernel[grid](
        rows, lse.contiguous(), weight, out, float(temperature), float(scale), r, v, h,
        rows.stride(0), weight.stride(0), out.stride(0), BM=bm, BN=bn, BK=bk,
    )  # fmt: skip
    return out


def softmax_probs_triton(logits: torch.Tensor, temperature: float, lse: torch.Tensor, dtype: torch.dtype):
    """softmax(logits / T) written once in `dtype` (the unfused alternative: then probs @ E with cuBLAS)."""
    import triton

    from .triton_sampler import probs_kernel

    rows = _rows(logits).contiguous()
    r, v = rows.shape
    out = torch.empty(r, v, dtype=dtype, device=rows.device)
    bv = 4096
    probs_kernel[(r, triton.cdiv(v, bv))](rows, lse.contiguous(), out, float(temperature), v, rows.stride(0),
                                          out.stride(0), BV=bv)  # fmt: skip
    return out


def soft_embedding(
    logits: torch.Tensor,
    temperature: float,
    weight: torch.Tensor,
    scale: float,
    lse: torch.Tensor | None = None,
    fused: bool = False,
) -> torch.Tensor:
    """The self-conditioning input [R, H] from the previous step's logits (lse from `sampler_step` saves a pass).

    On CUDA, `fused` computes softmax @ E in one kernel (logits re-read once per H tile); otherwise the
    probabilities are written once in the embedding dtype and multiplied by cuBLAS. Which is faster depends
    on the GPU's cache; the GPU benchmark times both."""
    if use_triton(logits, weight):
        if lse is None:
            lse = (_rows(logits).float() / temperature).logsumexp(-1)
        if fused:
            return soft_embedding_triton(logits, temperature, weight, scale, lse)
        probs = softmax_probs_triton(logits, temperature, lse, weight.dtype)
        return (probs @ weight) * torch.tensor(scale).to(weight.dtype)
    return soft_embedding_reference(logits, temperature, weight, scale)
