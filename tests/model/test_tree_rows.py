"""Continuations scored in one row (model.cache.TreeRows): each branch sees the cache, the trunk and its own
tokens before it, past the sliding window as a causal pass over prompt + branch alone would; the cache keeps the
trunk only, so scoring carries the prompt's prefill in its pass."""

from __future__ import annotations

import pytest
import torch
from tiny import random_model, tiny_config

from diffill.model.static_cache import StaticKVCache

PROMPT = list(range(2, 14))  # three times the tiny model's sliding window
BRANCHES = [[40, 41, 42, 43, 44, 45], [50], [60, 61, 62, 63, 64, 65, 66]]


@pytest.fixture(scope="module")
def model():
    return random_model(tiny_config(), seed=4)


def _alone(model, tokens: list[int]) -> list[float]:
    """Each token's log-probability after the prompt, from a causal pass over the prompt and it alone."""
    hidden = model.net.encode(torch.tensor([PROMPT + tokens]), model.net.new_cache())
    logp = torch.log_softmax(model.net.head(hidden[0, len(PROMPT) - 1 :]).float(), dim=-1)
    return [float(logp[i, t]) for i, t in enumerate(tokens)]


@pytest.mark.parametrize("cached", [0, 5, len(PROMPT) - 1, len(PROMPT)])
def test_each_branch_scores_as_it_would_alone_whatever_the_cache_held(model, cached):
    cache = model.net.new_cache()
    if cached:
        model.net.encode(torch.tensor([PROMPT[:cached]]), cache)
    before = model.net.passes
    scores = model.continuation_logprobs(PROMPT, BRANCHES, cache)
    assert model.net.passes == before + 1  # the prompt's uncached tail rides in the one pass
    for branch, score in zip(BRANCHES, scores, strict=True):
        assert score == pytest.approx(sum(_alone(model, branch)), abs=1e-4)
    fresh = model.net.new_cache()
    model.net.encode(torch.tensor([PROMPT]), fresh)
    assert cache.length == len(PROMPT)  # the trunk kept, the branches not
    for a, b in zip(cache.keys + cache.values, fresh.keys + fresh.values, strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)


def test_a_static_cache_keeps_the_trunk_alike(model):
    config = model.net.config
    static = StaticKVCache(config, 64, model.net.device, model.net.dtype)
    model.net.encode(torch.tensor([PROMPT[:5]]), static)
    scores = model.continuation_logprobs(PROMPT, BRANCHES, static)
    assert scores == pytest.approx(model.continuation_logprobs(PROMPT, BRANCHES, model.net.new_cache()), abs=1e-4)
    fresh = model.net.new_cache()
    model.net.encode(torch.tensor([PROMPT]), fresh)
    assert static.length == len(PROMPT)
    for layer, k in enumerate(fresh.keys):
        assert torch.allclose(static.keys[layer][:, :, : len(PROMPT)], k, atol=1e-5)
