"""The sampler's per-step maths: entropy, the temperature schedule, pins, draws, the keep rule and the stability
check (model/sampler.py runs them in its loops; model/graph_denoise.py in a step replayed as one graph)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from diffill.kernels import sampler as kernel_sampler
from diffill.kernels._triton import interpreting, triton_available, use_triton

if TYPE_CHECKING:
    from .sampler import SamplerConfig


@dataclass
class CanvasResult:
    tokens: torch.Tensor  # [B, C] argmax canvas of the last step
    steps: int
    confidence: torch.Tensor | None = None  # [B, C] the untempered probability of each argmax token


def categorical_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) over the last axis, computed as torch.distributions.Categorical does."""
    norm = logits - logits.logsumexp(dim=-1, keepdim=True)
    norm = torch.clamp(norm, min=torch.finfo(norm.dtype).min)
    probs = torch.softmax(norm, dim=-1)
    return -(norm * probs).sum(-1)


def temperature(cfg: SamplerConfig, step: int, total: int) -> torch.Tensor | None:
    """Linear schedule: t_max at the first step (step == total) down to near t_min at the last (step == 1)."""
    if cfg.t_min is None or cfg.t_max is None:
        return None
    # The same fp32 arithmetic as the reference, so tempered logits match bit for bit.
    return cfg.t_min + (cfg.t_max - cfg.t_min) * (torch.tensor(step, dtype=torch.int32) / total)


def pin_logits(logits: torch.Tensor, pin_mask: torch.Tensor, pin_ids: torch.Tensor) -> torch.Tensor:
    """Forces a one-hot distribution at pinned positions (mask [B, C], ids [B, C]), in one pass over the logits."""
    mask, ids = pin_mask.unsqueeze(-1), pin_ids.unsqueeze(-1)
    kept = logits.gather(-1, ids)  # an unpinned row gets its own value back
    pinned = logits.masked_fill(mask, torch.finfo(logits.dtype).min)
    return pinned.scatter_(-1, ids, torch.where(mask, 0.0, kept))


def inverse_cdf_sample(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One draw per row of probs [..., V]: the first id whose cumulative probability exceeds u ~ U(0, total)."""
    cdf = probs.cumsum(dim=-1)
    u = torch.rand((*probs.shape[:-1], 1), generator=generator, device=probs.device) * cdf[..., -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp_(max=probs.shape[-1] - 1)


def kernel_seeds(generator: torch.Generator, salt: int) -> random.Random:
    """Host-side seeds for the fused sampler's steps: from the generator's own seed (so a seeded generation
    repeats) and `salt` (the cache length: each canvas of a generation draws its own)."""
    return random.Random(generator.initial_seed() * 1_000_003 + salt)


def kernels_run(z: torch.Tensor) -> bool:
    return use_triton(z) or (interpreting() and triton_available())


def fused_stats(z: torch.Tensor, seed: int | torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Sample (Gumbel-max), argmax, entropy of softmax(z) and a renoising id per position, in one read of the
    [B, C, V] logits. The seed is drawn on the host (`kernel_seeds`): one drawn on the GPU would make the host
    wait for it at every step (a graphed step reads it from a buffer the host fills)."""
    step = kernel_sampler.sampler_step_triton(z, 1.0, seed)
    shape = z.shape[:-1]
    return step.sample.view(shape), step.argmax.view(shape), step.entropy.view(shape), step.noise.view(shape)


def constrain(
    logits: torch.Tensor, pin_mask: torch.Tensor | None, pin_ids: torch.Tensor | None, allowed: torch.Tensor | None
) -> torch.Tensor:
    """A decoder pass's logits with the pinned positions forced to their ids and the first token restricted to
    `allowed` (token healing), where given."""
    if pin_mask is not None:
        logits = pin_logits(logits, pin_mask, pin_ids)
    if allowed is not None:
        logits = restrict_first(logits, allowed)
    return logits


def restrict_first(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Logits [B, C, V] with the first position's disallowed ids at the dtype's minimum (in place: the logits
    are a pass's own output)."""
    logits[:, 0].masked_fill_(~allowed, torch.finfo(logits.dtype).min)
    return logits


def entropy_keep(entropy: torch.Tensor, bound: float) -> torch.Tensor:
    """The positions whose draw is kept: the lowest-entropy ones while the entropy of those kept before them
    sums to at most `bound` (the reference's rule)."""
    sorted_h, order = torch.sort(entropy, dim=-1)
    chosen = torch.cumsum(sorted_h, dim=-1) - sorted_h <= bound
    return torch.scatter(torch.zeros_like(chosen), -1, order, chosen)


def stable_since(history: torch.Tensor, argmax: torch.Tensor) -> torch.Tensor:
    """Whether `argmax` [B, C] equals each of the drafts in `history` [S, B, C]; then it joins the history (in
    place, the oldest leaving)."""
    stable = (history == argmax[None]).all(dim=-1).all(dim=0)
    history.copy_(torch.roll(history, shifts=-1, dims=0))
    history[-1] = argmax
    return stable
