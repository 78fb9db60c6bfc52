"""The encoder's beam search over its LM head: the drafts a rest of line starts from (DiffusionModel.ar_drafts)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .cache import KVCache, hold_prompt
from .diffusion_gemma import DiffusionGemma
from .ngram import NgramMixer


@torch.inference_mode()
def beam_drafts(
    net: DiffusionGemma,
    prompt_ids,
    max_tokens: int,
    stop_ids: set[int],
    cache: KVCache | None,
    first_allowed: list[int] | Callable[[list[int]], Sequence[int] | None] | None,
    k: int,
    mix: NgramMixer | None,
    keep_going: Callable[[], bool] | None,
) -> list[tuple[list[int], float]]:
    """DiffusionModel.ar_drafts on `net` (its docstring says what the drafts are)."""
    if max_tokens <= 0:
        return [([], 0.0)]
    device = net.device
    prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
    n = prompt.shape[1]
    cache = cache if cache is not None else net.new_cache()
    if cache.length >= n:  # the prompt's last token is encoded again, for its hidden state
        hold_prompt(net, prompt, cache, n - 1)
    logp = torch.log_softmax(net.head(net.encode(prompt[:, cache.length :], cache)[:, -1]).float(), -1)[0]
    if mix is not None:
        logp = mix.mix([], logp)
    allowed = first_allowed if callable(first_allowed) or first_allowed is None else _first_only(first_allowed)
    if allowed is not None:
        logp = restrict(logp, allowed([]))
    top = logp.topk(min(k, int(torch.isfinite(logp).sum())))
    beams = [([t], s) for t, s in zip(top.indices.tolist(), top.values.tolist(), strict=True)]
    if not beams:  # nothing allowed first
        return [([], 0.0)]
    # The beams advance in lockstep, one batched encoder step each: row i of `rows` holds the prompt and beam
    # i's tokens but its last (the prompt's keys/values are shared, copied once per beam).
    rows = cache.expanded(len(beams))
    done: list[tuple[list[int], float]] = []
    while beams:
        live = [i for i, (tokens, _) in enumerate(beams) if tokens[-1] not in stop_ids and len(tokens) < max_tokens]
        done = sorted(done + [b for i, b in enumerate(beams) if i not in live], key=lambda d: -d[1])[:k]
        # A beam's score only falls as it grows: once a finished draft beats every live one, it is the best.
        if not live or (done and done[0][1] >= max(beams[i][1] for i in live)):
            break
        if keep_going is not None and not keep_going():  # out of time: the live drafts end where they are
            return sorted(done + [beams[i] for i in live], key=lambda d: -d[1])[:k]
        _select_rows(rows, live)
        last = torch.tensor([[beams[i][0][-1]] for i in live], device=device)
        step = torch.log_softmax(net.head(net.encode(last, rows)[:, -1]).float(), -1)
        if mix is not None:
            step = torch.stack([mix.mix(beams[i][0], row) for row, i in zip(step, live, strict=True)])
        held = [allowed(beams[i][0]) for i in live] if allowed is not None else []
        if any(ids is not None for ids in held):  # (healing: until the beams have written the healed text)
            step = torch.stack([restrict(row, ids) for row, ids in zip(step, held, strict=True)])
        step = step.topk(k)
        grown = [
            (score + s, row, t)
            for row, (i, score) in enumerate((i, beams[i][1]) for i in live)
            for t, s in zip(step.indices[row].tolist(), step.values[row].tolist(), strict=True)
            if s > -math.inf
        ]
        grown = sorted(grown, key=lambda g: -g[0])[:k]
        beams = [(beams[live[row]][0] + [t], score) for score, row, t in grown]
        _select_rows(rows, [row for _, row, _ in grown])
    return done


def _first_only(ids: Sequence[int]) -> Callable[[list[int]], Sequence[int] | None]:
    """A draft constraint that holds the first token to `ids` and leaves the rest free."""
    return lambda tokens: None if tokens else ids


def restrict(logp: torch.Tensor, ids: Sequence[int] | None) -> torch.Tensor:
    """`logp` [V] with every id outside `ids` at -inf (`ids` None: as is)."""
    if ids is None:
        return logp
    keep = torch.as_tensor(ids, dtype=torch.long, device=logp.device)
    return torch.full_like(logp, -math.inf).index_copy_(0, keep, logp[keep])


def _select_rows(cache: KVCache, rows: list[int]) -> None:
    """Keeps (and repeats) the given batch rows of every layer's keys/values, in that order."""
    if rows == list(range(cache.keys[0].shape[0])):
        return
    index = torch.tensor(rows, device=cache.keys[0].device)
    cache.keys = [x.index_select(0, index) for x in cache.keys]
    cache.values = [x.index_select(0, index) for x in cache.values]
