"""Encoder cache reuse across keystrokes is exact: same tokens as a fresh prefill, fewer tokens encoded."""

import pytest
from tiny import random_model, tiny_config

from diffill.model.prompt_cache import PromptCache, common_prefix


@pytest.fixture(scope="module")
def model():
    cfg = tiny_config(
        vocab_size=120,
        num_hidden_layers=3,
        sliding_window=5,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    )
    return random_model(cfg, seed=1, eos=[])


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix([], [1]) == 0


def test_reuse_is_exact_and_encodes_only_new_tokens(model):
    pc = PromptCache(model.net.new_cache)
    base = [2, 5, 9, 11, 13, 17, 19, 23, 29, 31, 37]
    prompts = [base, base + [41], base + [41, 43, 47], base[:6] + [50, 51], base[:6] + [50, 51, 52]]
    for i, prompt in enumerate(prompts):
        fresh = model.generate(prompt, max_new_tokens=16, seed=3, steps=4, trim=False)
        before = pc.encoded_tokens
        with pc.use("doc", prompt) as cache:
            reused = model.generate(prompt, max_new_tokens=16, seed=3, steps=4, trim=False, cache=cache)
        assert reused == fresh, i
        encoded = pc.encoded_tokens - before
        expected_new = {0: len(base), 1: 1, 2: 2, 3: 2, 4: 1}[i]
        assert encoded == expected_new, (i, encoded)
    assert pc.reused_tokens > 0


def test_cancelled_generation_keeps_a_usable_cache(model):
    from diffill.model.cancel import Cancelled

    pc = PromptCache(model.net.new_cache)
    prompt = [2, 7, 8, 9, 10]
    calls = []

    def cancel_after_prefill():  # checked once before the prefill, then before each denoising step
        calls.append(1)
        return len(calls) > 1

    with pytest.raises(Cancelled):
        with pc.use("doc", prompt) as cache:
            model.generate(prompt, max_new_tokens=8, seed=0, steps=4, cancel=cancel_after_prefill, cache=cache)
    fresh = model.generate(prompt + [11], max_new_tokens=8, seed=0, steps=4, trim=False)
    with pc.use("doc", prompt + [11]) as cache:
        again = model.generate(prompt + [11], max_new_tokens=8, seed=0, steps=4, trim=False, cache=cache)
    assert again == fresh
    assert pc.encoded_tokens == len(prompt) + 1
