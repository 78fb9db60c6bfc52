"""The canvases the decoder trains on, laid out as the speculative rounds lay them out (right after the prompt, or
after committed tokens with the last one pinned at position 0) or alone after the prompt, noised whole or in part,
batched with their targets, loss weights and distillation targets; and a draft's second canvas."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from diffill.infill import tuning
from diffill.model.draws import categorical_entropy, entropy_keep
from diffill.model.tokenizer import PAD

from ..config import DecoderTrainConfig
from .encodings import SOFT_TOP, RowsCache, Soft
from .labels import Anchor


@dataclass
class Layout:
    """One canvas as the decoder meets it. Pinned: a speculative round's, `committed` answer tokens written, the
    token before the canvas (the prompt's last, then the last committed one) pinned at its position 0 and the cache
    holding what comes before that token. Not pinned: the decoder alone after the whole prompt (denoise_canvas)."""

    anchor: int
    committed: int
    pinned: bool = True

    def cache_length(self, a: Anchor) -> int:
        return len(a.prompt) - 1 + self.committed if self.pinned else len(a.prompt)

    def width(self, a: Anchor) -> int:
        return min(tuning.SPECULATIVE_CANVAS, a.room - self.committed + 1)

    def answer_length(self, a: Anchor) -> int:
        """The canvas positions the encoder's answer holds, its pin included."""
        return len(a.label) - self.committed + self.pinned

    def label_index(self, j: int) -> int:
        """The answer token canvas position `j` holds (past the answer: past its last index)."""
        return self.committed + j - self.pinned

    def target(self, a: Anchor, end: int) -> list[int]:
        """The canvas the encoder accepts whole: the pin, the answer's rest, the end id, pads."""
        rest = a.label[self.committed :]
        head = [(a.prompt + a.label)[len(a.prompt) - 1 + self.committed]] if self.pinned else []
        tail = [] if rest and rest[-1] == end else [end]
        width = self.width(a)
        return (head + rest + tail + [PAD] * width)[:width]


def draw_layout(i: int, a: Anchor, rng: random.Random, cfg: DecoderTrainConfig) -> Layout:
    """Canvases alone after the prompt (`alone_share`), a speculative round's first one (`first_share`), else a
    later round's."""
    draw = rng.random()
    if draw < cfg.alone_share:
        return Layout(i, 0, pinned=False)
    if len(a.label) < 2 or draw < cfg.alone_share + cfg.first_share:
        return Layout(i, 0)
    return Layout(i, rng.randint(1, len(a.label) - 1))


def batch_inputs(
    layouts: list[Layout], anchors: list[Anchor], encodings: list, end: int, gen: torch.Generator, vocab: int, cfg
):
    """(cache, noised canvas, targets, pinned mask, loss weights, answer mask, positions, soft targets) of a batch
    of layouts (`encodings`: each anchor's `encoded`): position k after the pin weighs exp(-k / gamma), pads
    pad_weight of that; the soft targets are the encoder's top ids and log-probs at the answer's tokens
    (soft_targets; None where cfg.kl_weight asks for no distillation term). All on the generator's device."""
    dev = gen.device
    rows = [anchors[lay.anchor] for lay in layouts]
    widths = [lay.width(a) for lay, a in zip(layouts, rows, strict=True)]
    lengths = [lay.cache_length(a) for lay, a in zip(layouts, rows, strict=True)]
    cache = RowsCache([encodings[lay.anchor][0] for lay in layouts], lengths, widths, dev)
    c = max(widths)
    targets = torch.full((len(rows), c), PAD)
    pinned = torch.zeros(len(rows), c, dtype=torch.bool)
    answer = torch.zeros(len(rows), c, dtype=torch.bool)  # positions the encoder's answer holds
    for r, (lay, a) in enumerate(zip(layouts, rows, strict=True)):
        t = lay.target(a, end)
        targets[r, : len(t)] = torch.tensor(t)
        pinned[r, 0] = lay.pinned
        answer[r, : min(lay.answer_length(a), len(t))] = True
    targets, pinned, answer = targets.to(dev), pinned.to(dev), answer.to(dev)
    inside = torch.arange(c, device=dev)[None] < torch.tensor(widths, device=dev)[:, None]
    k = (torch.arange(c, device=dev)[None] - pinned[:, :1].long()).clamp(min=0).float()
    weights = torch.exp(-k / cfg.gamma)
    weights = torch.where(targets == PAD, cfg.pad_weight * weights, weights) * inside * ~pinned
    noise = torch.randint(0, vocab, targets.shape, generator=gen, device=dev)
    if cfg.partial_share > 0:  # a seeded canvas (a copy, a name, a draft) as the decoder refines it
        noise = partly_noised(targets, noise, cfg.partial_share, gen)
    canvas = torch.where(pinned, targets, noise)
    positions = torch.tensor(lengths, device=dev)[:, None] + torch.arange(c, device=dev)[None]
    soft = None
    if cfg.kl_weight:
        soft = tuple(t.to(dev) for t in soft_targets(layouts, rows, [encodings[lay.anchor][1] for lay in layouts], c))
    return cache, canvas, targets, pinned, weights, answer & inside, positions, soft


def partly_noised(targets: torch.Tensor, noise: torch.Tensor, share: float, gen: torch.Generator) -> torch.Tensor:
    """`noise` where `share` of the rows keep each target token with probability 1 - t (t ~ U(0, 1) a row): the
    canvases the decoder meets seeded, which it learns to keep where they are the answer."""
    rows, dev = targets.shape[0], targets.device
    t = torch.rand(rows, 1, generator=gen, device=dev)
    seeded = torch.rand(rows, 1, generator=gen, device=dev) < share
    kept = seeded & (torch.rand(targets.shape, generator=gen, device=dev) >= t)
    return torch.where(kept, targets, noise)


def soft_targets(layouts: list[Layout], rows: list[Anchor], softs: list[Soft], width: int):
    """(ids [B, C, K], log-probs [B, C, K], mask [B, C]): the encoder's top choices at each canvas position that
    holds an answer token (the label token was their argmax), none at the pin, the end id or pads."""
    ids = torch.zeros(len(rows), width, SOFT_TOP, dtype=torch.long)
    logp = torch.zeros(len(rows), width, SOFT_TOP)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for r, (lay, a, (top_ids, top_logp)) in enumerate(zip(layouts, rows, softs, strict=True)):
        for j in range(int(lay.pinned), min(width, lay.width(a))):
            i = lay.label_index(j)
            if i >= len(a.label):
                break
            ids[r, j], logp[r, j], mask[r, j] = top_ids[i], top_logp[i], True
    return ids, logp, mask


def second_canvas(logits: torch.Tensor, canvas: torch.Tensor, pinned, gen: torch.Generator, bound: float):
    """The canvas of a draft's second pass, as denoise_canvas writes it: draws kept at the lowest-entropy
    positions while their entropies sum under the bound, noise elsewhere; pins stay."""
    probs = torch.softmax(logits.float(), dim=-1)
    sample = torch.multinomial(probs.view(-1, probs.shape[-1]), 1, generator=gen).view(canvas.shape)
    keep = entropy_keep(categorical_entropy(logits.float()), bound)
    noise = torch.randint(0, logits.shape[-1], canvas.shape, generator=gen, device=canvas.device)
    return torch.where(pinned, canvas, torch.where(keep, sample, noise))


def batches(anchors: list[Anchor], rng: random.Random, cfg: DecoderTrainConfig) -> Iterator[list[Layout]]:
    while True:
        order = list(range(len(anchors)))
        rng.shuffle(order)
        for s in range(0, len(order) - cfg.batch + 1, cfg.batch):
            yield [draw_layout(i, anchors[i], rng, cfg) for i in order[s : s + cfg.batch]]
