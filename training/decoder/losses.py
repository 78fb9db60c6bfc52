"""A draft's losses (one decoder pass, then a second fed the first one's draws and self-conditioning) and the
held-out report: tokens the encoder accepts per decoder draft."""

from __future__ import annotations

import random
from dataclasses import replace

import torch
import torch.nn.functional as F

from diffill.model.draws import pin_logits

from ..config import DecoderTrainConfig
from .canvases import Layout, batch_inputs, second_canvas
from .labels import Anchor


def draft_losses(net, inputs, gen: torch.Generator, bound: float, temp: float, kl_weight: float = 0.0):
    """(first pass's loss, second pass's loss, first logits, second logits) of a batch of canvases: the
    position-weighted cross-entropy on the labels plus `kl_weight` times the same-weighted cross-entropy on the
    encoder's own beliefs where the canvas holds an answer token (its top SOFT_TOP choices, renormalised; the
    inputs' soft targets, which batch_inputs builds only for a config that asks for the term)."""
    cache, canvas, targets, pinned, weights, _, positions, soft = inputs
    vocab = net.config.vocab_size
    if kl_weight:
        soft_ids, soft_logp, soft_mask = soft
        soft_p = torch.softmax(soft_logp, dim=-1)

    def loss_of(logits):
        per = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), reduction="none").view(targets.shape)
        if kl_weight:
            mine = torch.log_softmax(logits.float(), dim=-1).gather(-1, soft_ids)
            per = per + kl_weight * soft_mask * -(soft_p * mine).sum(-1)
        return (per * weights).sum() / weights.sum().clamp(min=1e-6)

    first = pin_logits(net.decode(canvas, cache, None, positions), pinned, targets)
    with torch.no_grad():
        z = first.detach() / temp
        x2 = second_canvas(z, canvas, pinned, gen, bound)
    second = pin_logits(net.decode(x2, cache, z.to(net.dtype), positions), pinned, targets)
    return loss_of(first), loss_of(second), first, second


def accepted_counts(logits: torch.Tensor, inputs) -> tuple[list[int], list[bool]]:
    """Per canvas: the draft tokens the encoder accepts (its argmax after the pin, matched against the answer
    up to the first miss, the stop included) and whether the whole answer was accepted."""
    _, _, targets, pinned, _, answer, _, _ = inputs
    draft, targets, pinned, answer = logits.argmax(-1).cpu(), targets.cpu(), pinned.cpu(), answer.cpu()
    counts, whole = [], []
    for r in range(targets.shape[0]):
        start = int(pinned[r, 0])
        n = int(answer[r].sum()) - start
        same = (draft[r, start : start + n] == targets[r, start : start + n]).long()
        taken = int(same.cumprod(0).sum()) if n else 0
        counts.append(taken)
        whole.append(taken == n)
    return counts, whole


@torch.no_grad()
def report(net, anchors: list[Anchor], encodings: list, end: int, cfg: DecoderTrainConfig, bound: float) -> dict:
    """Held-out figures: tokens accepted per decoder draft after 1 and 2 passes, for a speculative answer's first
    draft and for later ones (after committed tokens); whole answers accepted; and the decoder alone after the
    prompt (`alone_whole_2`: it writes the encoder's whole answer in 2 passes). Every canvas is noised whole
    (a partly noised one holds answer tokens: what the rounds draft from is noise)."""
    rng, gen = random.Random(1), torch.Generator(net.device).manual_seed(1)
    cfg = replace(cfg, partial_share=0.0, kl_weight=0.0)  # (its losses are not read: no distillation term)
    layouts_of = {
        "first": [Layout(i, 0) for i in range(len(anchors))],
        "later": [Layout(i, rng.randint(1, len(a.label) - 1)) for i, a in enumerate(anchors) if len(a.label) >= 2],
        "alone": [Layout(i, 0, pinned=False) for i in range(len(anchors))],
    }
    out: dict = {}
    for name, layouts in layouts_of.items():
        got = {1: [], 2: []}
        whole = {1: [], 2: []}
        for s in range(0, len(layouts), cfg.batch):
            inputs = batch_inputs(layouts[s : s + cfg.batch], anchors, encodings, end, gen, net.config.vocab_size, cfg)
            _, _, l1, l2 = draft_losses(net, inputs, gen, bound, 1.0)
            for steps, logits in ((1, l1), (2, l2)):
                counts, full = accepted_counts(logits, inputs)
                got[steps] += counts
                whole[steps] += full
        for steps in (1, 2):
            out[f"{name}_accepted_{steps}"] = round(sum(got[steps]) / max(1, len(got[steps])), 3)
            out[f"{name}_whole_{steps}"] = round(sum(whole[steps]) / max(1, len(whole[steps])), 3)
    return out
