"""What the encoder's head believes of given continuations of a prompt: the scores candidates are ranked by
(DiffusionModel.continuation_logprobs) and the beliefs an answer is cut at (DiffusionModel.token_beliefs)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from .cache import KVCache, TreeRows
from .diffusion_gemma import DiffusionGemma
from .ngram import NgramMixer
from .speculative import Allowed, Extensions, judged_with, log_mass


def token_beliefs(
    net: DiffusionGemma,
    prompt_ids,
    tokens: list[int],
    cache: KVCache | None,
    mix: NgramMixer | None,
    allowed: Allowed | None,
    extensions: Extensions | None,
) -> tuple[list[float], list[float]]:
    """DiffusionModel.token_beliefs on `net` (its docstring says what they are)."""
    beliefs: list[list[float]] = []
    logps = continuation_rows(net, prompt_ids, [tokens], cache, None, mix, allowed, extensions, beliefs)[0]
    return logps, beliefs[0] if beliefs else list(logps)


@torch.inference_mode()
def continuation_rows(
    net: DiffusionGemma,
    prompt_ids,
    continuations: list[list[int]],
    cache: KVCache | None,
    end_ids: Collection[int] | None,
    mix: NgramMixer | None = None,
    allowed: Allowed | None = None,
    extensions: Extensions | None = None,
    prefix_rows: list[list[float]] | None = None,
    logps_out: dict[tuple[int, ...], torch.Tensor] | None = None,
) -> list[list[float]]:
    """Per-token log-probabilities of each continuation (then log p(an end id) when `end_ids` are given).
    Every continuation goes through the encoder in one pass, a single row: what the cache lacks of the prompt
    (its last token at least, fed again for its state: the prefill, when it was left to this pass), then each
    continuation, seeing the prompt and its own tokens before it (model.cache.TreeRows); the cache is left
    holding the prompt. With `extensions`, each row's prefix beliefs (`token_beliefs`) are appended to
    `prefix_rows`. `logps_out` gets each continuation's log-probability rows (its tokens -> one row per token,
    then with `end_ids` the row after its last), from which `beliefs_from` reads its beliefs and `scores_from`
    its score later without another pass."""
    rows: list[list[float]] = [[] for _ in continuations]
    asked = [i for i, tokens in enumerate(continuations) if tokens]
    if not asked:
        return rows
    device = net.device
    prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
    n = prompt.shape[1]
    cache = cache if cache is not None else net.new_cache()
    if cache.length > n - 1:
        cache.truncate(n - 1)  # the last token is fed again, with the continuations, for its state
    trunk = prompt[0, cache.length :].tolist()
    # the last token's state is needed only for the end id's probability
    fed = [continuations[i] if end_ids is not None else continuations[i][:-1] for i in asked]
    tree = TreeRows(cache, len(trunk), [len(f) for f in fed], device)
    row = torch.tensor([trunk + [t for f in fed for t in f]], device=device)
    hidden = net.encode(row, tree, tree.positions)[0]
    tree.commit()
    logps = tree.logps(net, hidden)
    for b, i in enumerate(asked):
        tokens = continuations[i]
        logp = logps[b]
        if logps_out is not None:
            logps_out[tuple(tokens)] = logp
        row, prefix = beliefs_from(logp, tokens, mix, allowed, extensions)
        if prefix_rows is not None and extensions is not None:
            prefix_rows.append(prefix)
        rows[i] = row + ([end_mass(logp, tokens, end_ids, mix)] if end_ids is not None else [])
    return rows


def end_mass(logp: torch.Tensor, tokens: list[int], end_ids: Collection[int], mix: NgramMixer | None) -> float:
    """log p(one of `end_ids` right after `tokens`), from their rows (`logp[len(tokens)]`: the row after the last)."""
    ends = torch.as_tensor(sorted(end_ids), dtype=torch.long, device=logp.device)
    end = logp[len(tokens)]
    end = end.index_select(0, ends) if mix is None else mix.mix_at(tokens, end, ends)
    return float(torch.logsumexp(end, 0))


def scores_from(
    logps: list[torch.Tensor], continuations: list[list[int]], end_ids: Collection[int] | None, mix: NgramMixer | None
) -> list[float]:
    """DiffusionModel.continuation_logprobs from rows a pass gave before (`continuation_rows`' `logps_out`, or a
    speculative round's riders): no pass of its own."""
    out = []
    for logp, tokens in zip(logps, continuations, strict=True):
        score = sum(beliefs_from(logp, tokens, mix, None, None)[0]) if tokens else 0.0
        out.append(score + (end_mass(logp, tokens, end_ids, mix) if end_ids is not None and tokens else 0.0))
    return out


def beliefs_from(
    logp: torch.Tensor,
    tokens: list[int],
    mix: NgramMixer | None,
    allowed: Allowed | None,
    extensions: Extensions | None,
) -> tuple[list[float], list[float]]:
    """(each token's log-probability, each position's prefix belief: `token_beliefs`) from the encoder's
    log-probability rows after the prompt and each token before (`logp[j]` judges `tokens[j]`)."""
    if not tokens:
        return [], []
    ids = torch.tensor(tokens, device=logp.device)
    if mix is None:
        row = logp[: len(tokens)].gather(-1, ids.unsqueeze(-1)).squeeze(-1).tolist()
    else:  # each token's mixed probability alone (NgramMixer.mix_at)
        row = [float(mix.mix_at(tokens[:j], logp[j], ids[j : j + 1])[0]) for j in range(len(tokens))]
    norms = [0.0] * len(tokens)
    if allowed is not None:
        norms = [_mass(judged_with(allowed(tokens[:j]), t), logp[j], tokens[:j], mix) for j, t in enumerate(tokens)]
        row = [lp - norm for lp, norm in zip(row, norms, strict=True)]
    if extensions is None:
        return row, list(row)
    return row, [_mass(extensions(t), logp[j], tokens[:j], mix) - norms[j] for j, t in enumerate(tokens)]


def _mass(ids: Sequence[int] | None, logp: torch.Tensor, before: list[int], mix: NgramMixer | None) -> float:
    """log P(one of `ids` next) for a row of log-probabilities (0 when `ids` is None: anything is)."""
    if not ids:
        return 0.0
    if mix is None:
        return log_mass(logp, ids)
    keep = torch.as_tensor(list(ids), dtype=torch.long, device=logp.device)
    return float(torch.logsumexp(mix.mix_at(before, logp, keep), 0))
