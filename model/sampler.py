"""Entropy-bounded uniform-state sampler (DiffusionGemma's reference sampler) plus what diffill needs.

Reference behaviour, matched call for call so that a seeded run is token-identical to transformers':
linear temperature schedule from t_max to t_min, one categorical draw per position, keep the lowest-entropy
positions while the summed entropy of the others kept stays under the bound, renoise everything else with
uniform random ids, stop when the argmax canvas is stable and the mean entropy low, commit the argmax canvas.

diffill's additions: any canvas length, pinned positions (known tokens held fixed: their logits are forced to a
one-hot, so they have zero entropy and are always kept), a max-steps knob, a cancel check between steps, and a
callback that sees each step's argmax draft.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from . import graph_denoise
from .cache import KVCache, hold_prompt
from .cancel import check
from .diffusion_gemma import DiffusionGemma
from .draws import (
    CanvasResult,
    categorical_entropy,
    constrain,
    entropy_keep,
    fused_stats,
    inverse_cdf_sample,
    kernel_seeds,
    kernels_run,
    stable_since,
    temperature,
)
from .ngram import NgramMixer, mixed_rows


@dataclass
class SamplerConfig:
    max_denoising_steps: int = 48
    entropy_bound: float = 0.1
    t_min: float | None = 0.4
    t_max: float | None = 0.8
    stability_threshold: int | None = 1
    confidence_threshold: float | None = 0.005
    eos_token_ids: list[int] = field(default_factory=lambda: [1])
    pad_token_id: int = 0
    # Fast draws: one fused Triton pass for sample/argmax/entropy (kernels/sampler.py) where the kernels run
    # (CUDA), inverse-CDF sampling elsewhere (cheaper than torch.multinomial on CPU: docs/benchmarks.md, "Tuned constants"). The same distribution
    # as the reference, not the same random stream, so parity runs leave it off; the daemon turns it on.
    fast: bool = False
    # A canvas seeded with a draft (`generate(init=...)`): None denoises it as the reference would (the draft is
    # the starting point, uncertain tokens are renoised); a margin keeps the draft and changes a token only where
    # the decoder's top choice beats the draft token's probability by that much (card key diffill_draft_margin).
    draft_margin: float | None = None

    @classmethod
    def from_generation_config(cls, raw: dict[str, Any]) -> SamplerConfig:
        """Reads a transformers `generation_config.json` for DiffusionGemma."""
        cfg = cls()
        sampler = raw.get("sampler_config") or {}
        eos = raw.get("eos_token_id", cfg.eos_token_ids)
        return cls(
            max_denoising_steps=raw.get("max_denoising_steps", cfg.max_denoising_steps),
            entropy_bound=sampler.get("entropy_bound", cfg.entropy_bound),
            t_min=raw.get("t_min", cfg.t_min),
            t_max=raw.get("t_max", cfg.t_max),
            stability_threshold=raw.get("stability_threshold", cfg.stability_threshold),
            confidence_threshold=raw.get("confidence_threshold", cfg.confidence_threshold),
            eos_token_ids=list(eos) if isinstance(eos, list) else ([eos] if eos is not None else []),
            pad_token_id=raw.get("pad_token_id", cfg.pad_token_id) or 0,
            draft_margin=raw.get("diffill_draft_margin", cfg.draft_margin),
        )

    def with_overrides(self, **kw: Any) -> SamplerConfig:
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


def denoise_canvas(
    model: DiffusionGemma,
    cache: KVCache,
    positions: torch.Tensor,
    cfg: SamplerConfig,
    generator: torch.Generator,
    canvas_length: int,
    init_canvas: torch.Tensor | None = None,
    pin_mask: torch.Tensor | None = None,
    pin_ids: torch.Tensor | None = None,
    cancel: Callable[[], bool] | None = None,
    on_draft: Callable[[torch.Tensor, int], None] | None = None,
    first_allowed: torch.Tensor | None = None,
    mix: NgramMixer | None = None,
) -> CanvasResult:
    """Denoises one canvas of `canvas_length` tokens at `positions` [1, C] against the encoded `cache`.
    `first_allowed` [V] bool restricts the canvas's first token (token healing, see `generate`). `mix` (the code
    around's n-gram evidence) is read into every step's logits (model.ngram.mixed_rows) before the sampler
    draws and keeps: what the evidence settles early is kept and conditions the positions still noised (the
    steps after see it, self-conditioning too), and the last step's read is the canvas (eagerly, graphs or not)."""
    vocab = model.config.vocab_size
    device = model.device
    batch = 1
    x = (
        init_canvas
        if init_canvas is not None
        else torch.randint(0, vocab, (batch, canvas_length), generator=generator, device=device)
    )
    if pin_mask is not None:
        x = torch.where(pin_mask, pin_ids, x)
    # The evidence is read on the host between a step's logits and its draws, which a replayed step cannot do.
    if cfg.fast and mix is None and graph_denoise.serves(model, cache, x):
        try:
            return graph_denoise.denoise(model, cache, positions, cfg, generator, x, pin_mask, pin_ids, cancel,
                                      on_draft, first_allowed)  # fmt: skip
        except RuntimeError as exc:  # a step that cannot be captured: every step eager from now on
            model.graphs.disable(exc)
    total = cfg.max_denoising_steps
    adaptive = cfg.stability_threshold is not None and cfg.confidence_threshold is not None
    seeds = kernel_seeds(generator, cache.length)
    history = None
    prev_logits = None
    argmax = x
    steps = 0
    for n in range(total, 0, -1):
        check(cancel)
        logits = constrain(model.decode(x, cache, prev_logits, positions), pin_mask, pin_ids, first_allowed)
        if mix is not None:
            logits = mixed_rows(mix, logits[0], pin_mask[0] if pin_mask is not None else None)[None]
        steps += 1
        last_logits = logits
        temp = temperature(cfg, n, total)
        z = logits / temp if temp is not None else logits
        noise = None
        if cfg.fast and kernels_run(z):
            sample, argmax, entropy, noise = fused_stats(z, seeds.randrange(2**31 - 1))
        else:
            probs = torch.softmax(z, dim=-1, dtype=torch.float32)
            if cfg.fast:
                sample = inverse_cdf_sample(probs, generator)
            else:
                sample = torch.multinomial(probs.view(-1, vocab), 1, generator=generator).view(batch, canvas_length)
            argmax = torch.argmax(z, dim=-1)
            entropy = categorical_entropy(z)
        keep = entropy_keep(entropy, cfg.entropy_bound)
        accepted = torch.where(keep, sample, x)
        if noise is None:
            noise = torch.randint(0, vocab, (batch, canvas_length), generator=generator, device=device)
        x = torch.where(keep, accepted, noise)
        if on_draft is not None:
            on_draft(argmax, steps)
        prev_logits = z.to(model.dtype)
        if adaptive:
            if cfg.stability_threshold == 0:
                stable = torch.ones(batch, dtype=torch.bool, device=device)
            else:
                if history is None:
                    history = torch.full((cfg.stability_threshold, batch, canvas_length), -1, device=device)
                stable = stable_since(history, argmax)
            confident = entropy.mean(dim=-1) < cfg.confidence_threshold
            if bool((stable & confident).all()):
                break
    confidence = None
    if steps:
        # a row the evidence read is log-probabilities already: the evidence's mass on an id the logits rule out
        # (token healing) is not given back to the others, so doubt about the constraint shows as doubt
        logp = last_logits if mix is not None else torch.log_softmax(last_logits, dim=-1, dtype=torch.float32)
        confidence = logp.gather(-1, argmax.unsqueeze(-1)).squeeze(-1).exp()
    return CanvasResult(tokens=argmax, steps=steps, confidence=confidence)


def refine_canvas(
    model: DiffusionGemma,
    cache: KVCache,
    positions: torch.Tensor,
    cfg: SamplerConfig,
    draft: torch.Tensor,
    pin_mask: torch.Tensor | None = None,
    pin_ids: torch.Tensor | None = None,
    cancel: Callable[[], bool] | None = None,
    on_draft: Callable[[torch.Tensor, int], None] | None = None,
    first_allowed: torch.Tensor | None = None,
) -> CanvasResult:
    """Keeps a drafted canvas and lets the decoder correct it: each pass replaces the tokens whose probability
    (given the rest of the canvas, both sides) trails the decoder's top choice by more than cfg.draft_margin;
    stops when a pass changes nothing. A small model's draft is worth more than its renoised canvas (multi-line
    edit similarity, docs/benchmarks.md, "Tuned constants"), and one or two passes cost less."""
    x = draft if pin_mask is None else torch.where(pin_mask, pin_ids, draft)
    prev_logits = None
    probs = None
    steps = 0
    for _ in range(max(1, cfg.max_denoising_steps)):
        check(cancel)
        logits = constrain(model.decode(x, cache, prev_logits, positions), pin_mask, pin_ids, first_allowed)
        steps += 1
        probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
        best_p, best = probs.max(dim=-1)
        change = (best != x) & (best_p - probs.gather(-1, x.unsqueeze(-1)).squeeze(-1) > cfg.draft_margin)
        prev_logits = (logits / cfg.t_min if cfg.t_min else logits).to(model.dtype)  # as the reference's last step
        if on_draft is not None:
            on_draft(torch.where(change, best, x), steps)
        if not bool(change.any()):
            break
        x = torch.where(change, best, x)
    confidence = probs.gather(-1, x.unsqueeze(-1)).squeeze(-1) if probs is not None else None
    return CanvasResult(tokens=x, steps=steps, confidence=confidence)


@dataclass
class GenerationOutput:
    tokens: list[int]  # new tokens, EOS handling applied (see `generate`)
    steps: int  # decoder passes over all canvases
    canvases: int
    confidence: list[float] = field(default_factory=list)  # per token: the model's probability of it


def generate(
    model: DiffusionGemma,
    prompt_ids: list[int] | torch.Tensor,
    cfg: SamplerConfig,
    max_new_tokens: int = 256,
    seed: int | None = None,
    canvas_length: int | None = None,
    cache: KVCache | None = None,
    pinned: dict[int, int] | None = None,
    cancel: Callable[[], bool] | None = None,
    on_draft: Callable[[torch.Tensor, int], None] | None = None,
    init: list[int] | None = None,
    first_allowed: list[int] | None = None,
    mix: NgramMixer | None = None,
) -> GenerationOutput:
    """Prompt prefill, then ceil(max_new_tokens / C) canvases, each denoised then committed through the encoder.

    `init` seeds the first canvas (a draft to refine) instead of uniform noise.
    `first_allowed` lists the only ids the first new token may take (token healing: the prompt's last, partial
    token was taken back, and the answer must start with its text).
    `pinned` maps canvas offsets of the first canvas to token ids held fixed. `mix` (the code around's n-gram
    evidence) is read into the first canvas's steps when it is denoised from noise (denoise_canvas); a seeded one holds
    what a copy, a known name or the encoder wrote, which the evidence would only argue with. After a canvas
    that contains an EOS id, tokens after the first EOS become pad and generation stops (the reference's
    EOS-then-pad rule).
    """
    device = model.device
    c = canvas_length or model.config.canvas_length
    generator = torch.Generator(device=device)
    generator.manual_seed(seed if seed is not None else torch.seed())
    ids = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
    cache = cache if cache is not None else model.new_cache()
    eos = torch.tensor(cfg.eos_token_ids, device=device) if cfg.eos_token_ids else None
    pin_mask = pin_ids = None
    if pinned:
        pin_mask = torch.zeros(1, c, dtype=torch.bool, device=device)
        pin_ids = torch.zeros(1, c, dtype=torch.long, device=device)
        for off, tok in pinned.items():
            pin_mask[0, off], pin_ids[0, off] = True, tok
    allowed = None
    if first_allowed is not None:
        allowed = torch.zeros(model.config.vocab_size, dtype=torch.bool, device=device)
        allowed[torch.as_tensor(first_allowed, dtype=torch.long, device=device)] = True
    check(cancel)  # stale before it started: skip even the prefill
    # A reused cache may already hold a prefix of this prompt (typing appends to it): encode only the rest.
    hold_prompt(model, ids, cache, ids.shape[1])
    new: list[int] = []
    confidence: list[float] = []
    steps = 0
    n_canvases = max(1, math.ceil(max_new_tokens / c))
    block: torch.Tensor | None = None
    for b in range(n_canvases):
        if block is not None:
            model.encode(block, cache)  # the canvas just written is committed before the next one
        start = cache.length
        positions = torch.arange(start, start + c, device=device)[None]
        if b == 0 and init is not None and cfg.draft_margin is not None:  # a draft kept, corrected where doubted
            seeded = torch.tensor([init[:c]], device=device)
            result = refine_canvas(model, cache, positions, cfg, seeded, pin_mask, pin_ids, cancel, on_draft, allowed)
        else:
            result = denoise_canvas(
                model,
                cache,
                positions,
                cfg,
                generator,
                c,
                pin_mask=pin_mask if b == 0 else None,
                pin_ids=pin_ids if b == 0 else None,
                cancel=cancel,
                on_draft=on_draft,
                init_canvas=torch.tensor([init[:c]], device=device) if init is not None and b == 0 else None,
                first_allowed=allowed if b == 0 else None,
                mix=mix if b == 0 and init is None else None,
            )
        steps += result.steps
        block = result.tokens
        finished = False
        if eos is not None:
            is_eos = torch.isin(block, eos)
            if bool(is_eos.any()):
                seen = is_eos.cumsum(dim=-1)
                block = torch.where((seen > 0) & ~((seen == 1) & is_eos), cfg.pad_token_id, block)
                finished = True
        new.extend(block[0].tolist())
        if result.confidence is not None:
            confidence.extend(result.confidence[0].tolist())
        else:
            confidence.extend([1.0] * block.shape[1])
        if finished:
            break
    return GenerationOutput(tokens=new, steps=steps, canvases=b + 1, confidence=confidence)


def before_unsure(tokens: list[int], confidence: list[float], threshold: float) -> list[int]:
    """The tokens before the first one the model gave a probability under `threshold`: a weak model's canvas
    is often right at its start and noise after, and a shorter right answer beats a long wrong one."""
    if threshold <= 0:
        return tokens
    for i, (_, p) in enumerate(zip(tokens, confidence, strict=False)):
        if p < threshold:
            return tokens[:i]
    return tokens


def ended(tokens: list[int], confidence: list[float], eos_ids: Collection[int]) -> tuple[list[int], list[float]] | None:
    """The tokens before the first EOS with their confidences, or None when there is no EOS (the answer did not
    end on its canvas)."""
    for i, t in enumerate(tokens):
        if t in eos_ids:
            return tokens[:i], confidence[:i]
    return None


def trim_after_eos(tokens: list[int], eos_ids: list[int], pad_id: int) -> list[int]:
    """Drops the first EOS and everything after it, and trailing pads."""
    for i, t in enumerate(tokens):
        if t in eos_ids:
            return tokens[:i]
    while tokens and tokens[-1] == pad_id:
        tokens = tokens[:-1]
    return tokens
