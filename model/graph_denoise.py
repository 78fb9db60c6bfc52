"""Whole denoise steps replayed as CUDA graphs (model/graphs.py `PassGraphs.step`): the same tokens as
`sampler.denoise_canvas`'s eager loop with the fused sampler, step for step, with no host sync inside a step."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from .cache import KVCache
from .cancel import check
from .diffusion_gemma import DiffusionGemma
from .draws import (
    CanvasResult,
    entropy_keep,
    fused_stats,
    kernel_seeds,
    kernels_run,
    pin_logits,
    restrict_first,
    stable_since,
    temperature,
)

if TYPE_CHECKING:
    from .sampler import SamplerConfig


def serves(model: DiffusionGemma, cache: KVCache, x: torch.Tensor) -> bool:
    """Whether whole denoise steps replay as graphs: the cache is the graphs' working cache and the fused sampler
    runs (CUDA; the Triton interpreter in tests)."""
    graphs = model.graphs
    return graphs is not None and graphs.serves(cache, x, causal=False) and kernels_run(model.embed_tokens.weight)


def _step_state(model: DiffusionGemma, c: int, history: int) -> dict[str, torch.Tensor]:
    dev, vocab = model.device, model.config.vocab_size
    return {
        "x": torch.zeros(1, c, dtype=torch.long, device=dev),
        "positions": torch.zeros(1, c, dtype=torch.long, device=dev),
        "prev": torch.zeros(1, c, vocab, dtype=model.dtype, device=dev),  # the last step's tempered logits
        "pin_mask": torch.zeros(1, c, dtype=torch.bool, device=dev),
        "pin_ids": torch.zeros(1, c, dtype=torch.long, device=dev),
        "allowed": torch.ones(vocab, dtype=torch.bool, device=dev),
        "temp": torch.ones((), dtype=torch.float32, device=dev),
        "seed": torch.zeros(1, dtype=torch.int64, device=dev),
        "history": torch.full((max(1, history), 1, c), -1, dtype=torch.long, device=dev),
    }


def _graphed_step(model: DiffusionGemma, cache: KVCache, s: dict[str, torch.Tensor], cfg: SamplerConfig,
                  conditioned: bool, pinned: bool, restricted: bool) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """One whole denoise step over the static state `s`, as `denoise_canvas`'s loop computes it with the fused
    sampler: no host sync, so one graph replays it. Writes the next canvas and the self-conditioning input into
    `s`; returns the (constrained) logits, the argmax draft and whether the canvas has settled."""
    soft = model.self_conditioning_input(s["prev"]) if conditioned else None
    logits = model.head(model.eager_decode_hidden(s["x"], soft, s["positions"], cache))
    if pinned:
        logits = pin_logits(logits, s["pin_mask"], s["pin_ids"])
    if restricted:
        logits = restrict_first(logits, s["allowed"])
    z = logits / s["temp"]
    sample, argmax, entropy, noise = fused_stats(z, s["seed"])
    s["x"].copy_(torch.where(entropy_keep(entropy, cfg.entropy_bound), sample, noise))
    s["prev"].copy_(z)
    confident = entropy.mean(dim=-1) < (cfg.confidence_threshold or 0.0)
    stable = stable_since(s["history"], argmax) if cfg.stability_threshold else torch.ones_like(confident)
    return logits, argmax, stable & confident


def denoise(
    model: DiffusionGemma,
    cache: KVCache,
    positions: torch.Tensor,
    cfg: SamplerConfig,
    generator: torch.Generator,
    x: torch.Tensor,
    pin_mask: torch.Tensor | None,
    pin_ids: torch.Tensor | None,
    cancel: Callable[[], bool] | None,
    on_draft: Callable[[torch.Tensor, int], None] | None,
    first_allowed: torch.Tensor | None,
) -> CanvasResult:
    """`sampler.denoise_canvas` with each step one graph replay (model/graphs.py `PassGraphs.step`): the host writes the
    step's temperature and seed into the state, replays, and reads one flag (whether to stop). The same tokens
    as the eager loop with the fused sampler, step for step."""
    graphs, c = model.graphs, x.shape[1]
    history = cfg.stability_threshold or 0
    shape = (c, history)
    s = graphs.state(shape, lambda: _step_state(model, c, history))
    s["x"].copy_(x)
    s["positions"].copy_(positions)
    s["history"].fill_(-1)
    pinned, restricted = pin_mask is not None, first_allowed is not None
    if pinned:
        s["pin_mask"].copy_(pin_mask)
        s["pin_ids"].copy_(pin_ids)
    if restricted:
        s["allowed"].copy_(first_allowed)
    adaptive = cfg.stability_threshold is not None and cfg.confidence_threshold is not None
    rule = (cfg.entropy_bound, cfg.confidence_threshold, cfg.stability_threshold)  # what the graph holds fixed
    seeds = kernel_seeds(generator, cache.length)
    total = cfg.max_denoising_steps
    steps, logits, argmax = 0, None, x
    for n in range(total, 0, -1):
        check(cancel)
        temp = temperature(cfg, n, total)
        s["temp"].fill_(float(temp) if temp is not None else 1.0)
        s["seed"].fill_(seeds.randrange(2**31 - 1))
        conditioned = steps > 0
        key = ("step", shape, conditioned, pinned, restricted, rule)
        logits, argmax, done = graphs.step(
            key, shape, lambda k=conditioned: _graphed_step(model, cache, s, cfg, k, pinned, restricted)
        )
        steps += 1
        if on_draft is not None:
            on_draft(argmax.clone(), steps)
        if adaptive and bool(done.all()):
            break
    confidence = None
    if logits is not None:
        probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
        confidence = probs.gather(-1, argmax.unsqueeze(-1)).squeeze(-1)
    return CanvasResult(tokens=argmax.clone(), steps=steps, confidence=confidence)
