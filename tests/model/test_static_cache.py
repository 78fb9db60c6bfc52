"""The fixed-capacity cache CUDA graphs need (model/static_cache.py) and the graphed passes over it
(model/graphs.py, run eagerly here: the same passes on the same static buffers), held to the growing cache."""

import pytest
import torch
from tiny import random_net, tiny_config

from diffill.model.graphs import GraphedPasses
from diffill.model.static_cache import MIN_CAPACITY, StaticKVCache, capacity_for

CONFIG = tiny_config(sliding_window=4, layer_types=["sliding_attention", "full_attention"])


def net():
    return random_net(CONFIG, seed=3)


def static(model, capacity: int = 32) -> StaticKVCache:
    cache = StaticKVCache(model.config, capacity, "cpu", model.dtype)
    for t in cache.keys + cache.values:  # garbage in every slot: only the masks keep it unseen
        t.normal_(0, 50)
    return cache


@torch.inference_mode()
def test_prompt_decode_and_tokens_match_the_growing_cache():
    model = net()
    ids = torch.randint(2, CONFIG.vocab_size, (1, 11))
    canvas = torch.randint(2, CONFIG.vocab_size, (1, 6))
    grow, fixed = model.new_cache(), static(model)
    # a prompt in two chunks (the second causal pass sees the first through the cache, sliding layers 3 back)
    for part in (ids[:, :7], ids[:, 7:]):
        torch.testing.assert_close(model.encode(part, fixed), model.encode(part, grow))
    assert fixed.length == grow.length == 11 and int(fixed.filled) == 11
    torch.testing.assert_close(model.decode(canvas, fixed), model.decode(canvas, grow))
    soft = torch.randn(1, 6, CONFIG.hidden_size)
    torch.testing.assert_close(
        model.head(model._run(model.self_conditioning(model.embed(canvas), soft), _pos(11, 6), fixed, False)),
        model.head(model._run(model.self_conditioning(model.embed(canvas), soft), _pos(11, 6), grow, False)),
    )
    for token in (5, 9, 17):  # AR tokens one at a time
        t = torch.tensor([[token]])
        torch.testing.assert_close(model.encode(t, fixed), model.encode(t, grow))
    assert fixed.length == grow.length == 14


def _pos(start: int, n: int) -> torch.Tensor:
    return torch.arange(start, start + n)[None]


@torch.inference_mode()
def test_a_truncated_cache_serves_a_shorter_prompt_as_a_fresh_one():
    model = net()
    first = torch.randint(2, CONFIG.vocab_size, (1, 12))
    second = torch.randint(2, CONFIG.vocab_size, (1, 5))
    canvas = torch.randint(2, CONFIG.vocab_size, (1, 4))
    fixed = static(model)
    model.encode(first, fixed)
    fixed.truncate(2)  # the new prompt shares two tokens with the old one
    model.encode(torch.cat([first[:, :2], second], 1)[:, 2:], fixed)
    fresh = model.new_cache()
    model.encode(torch.cat([first[:, :2], second], 1), fresh)
    torch.testing.assert_close(model.decode(canvas, fixed), model.decode(canvas, fresh))


def test_a_prompt_past_the_capacity_is_refused():
    model = net()
    with pytest.raises(ValueError, match="do not fit"):
        model.encode(torch.randint(2, 50, (1, 9)), static(model, capacity=8))


def test_capacities_come_in_buckets():
    assert capacity_for(1) == capacity_for(MIN_CAPACITY) == MIN_CAPACITY
    assert capacity_for(MIN_CAPACITY + 1) == 2 * MIN_CAPACITY
    assert capacity_for(1000 + 256) == 2048


@torch.inference_mode()
def test_graphed_steps_and_tokens_are_the_models_passes():
    """GraphedPasses run eagerly (no CUDA here): its static inputs, outputs and positions on the device give the
    model's own logits, step after step, prompt after prompt (one object per capacity bucket)."""
    model = net()
    passes = GraphedPasses(model, 32, capture_graphs=False)
    for n in (9, 4):
        ids = torch.randint(2, CONFIG.vocab_size, (1, n))
        canvas = torch.randint(2, CONFIG.vocab_size, (1, 6))
        passes.prefill(ids)
        grow = model.new_cache()
        model.encode(ids, grow)
        torch.testing.assert_close(passes.step(canvas), model.decode(canvas, grow))
        soft = model.self_conditioning_input(model.decode(canvas, grow))
        want = model.head(model._run(model.self_conditioning(model.embed(canvas), soft), _pos(n, 6), grow, False))
        torch.testing.assert_close(passes.step(canvas, soft), want)
        for token in (7, 8):
            t = torch.tensor([[token]])
            torch.testing.assert_close(passes.token(t), model.head(model.encode(t, grow)[:, -1]))
        assert passes.cache.length == grow.length == n + 2


def test_the_engine_answers_the_same_on_fixed_capacity_caches():
    """The shipped model's completions, every source and pass of the engine (prefill, speculative rounds, beams,
    continuation scoring, denoising), with each cache a fixed-capacity one: the same answers as growing caches."""
    from diffill.infill.document import SyntaxDocument
    from diffill.infill.engine import CompletionEngine
    from diffill.lsp.settings import Settings, engine_options
    from diffill.model import runtime

    loaded = runtime.load("", "cpu")
    texts = [
        "def total(values):\n    result = 0\n    for value in values:\n        result += value\n    return ",
        "class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = ",
        "import os\nimport sys\n\n\ndef main():\n    args = sys.argv[1:]\n    for arg in args:\n        print(",
        "import numpy as ",
        "def parse(text):\n    if not text:\n",
    ]
    for width in (1, 4):  # greedy and a beam
        answers = {}
        for capacity in (None, 512):
            loaded.model.net.cache_capacity = capacity
            opts = engine_options(Settings(latency_budget_ms=0, draft_candidates=width), loaded)
            engine = CompletionEngine(loaded.model, loaded.tokenizer, opts, loaded.memory)
            got = []
            for i, text in enumerate(texts):
                c = engine.complete(SyntaxDocument(text, "python"), len(text), key=f"doc{i}")
                more = text + "n"  # the next keystroke: the cache is reused
                c2 = engine.complete(SyntaxDocument(more, "python"), len(more), key=f"doc{i}")
                got.append(tuple(None if a is None else (a.start, a.end, a.text) for a in (c, c2)))
            answers[capacity] = got
        loaded.model.net.cache_capacity = None
        assert answers[None] == answers[512]
        assert any(a is not None for pair in answers[None] for a in pair)


@torch.inference_mode()
def test_beams_and_continuations_read_only_what_a_fixed_cache_holds():
    """The batched passes (a beam's rows, continuations scored side by side) copy the cached positions out of a
    fixed-capacity cache, never its unwritten slots, and leave it holding the prompt as a growing one would."""
    from tiny import random_model

    model = random_model(CONFIG, seed=5)
    prompt = torch.randint(2, CONFIG.vocab_size, (9,)).tolist()
    conts = [[5, 6, 7], [8], [9, 10]]
    results = []
    for cache in (model.net.new_cache(), static(model.net)):
        model.net.encode(torch.tensor([prompt[:4]]), cache)  # part of the prompt cached already
        scores = model.continuation_logprobs(prompt, conts, cache, end_ids={1})  # writes the prompt's last token
        after = model.net.decode(torch.tensor([[3, 4, 5]]), cache)
        drafts = model.ar_drafts(prompt, 5, {1}, cache, k=3)
        results.append((drafts, scores, cache.length, after))
    (d1, s1, n1, a1), (d2, s2, n2, a2) = results
    assert [t for t, _ in d1] == [t for t, _ in d2] and n1 == n2 == len(prompt)
    torch.testing.assert_close(torch.tensor([s for _, s in d1]), torch.tensor([s for _, s in d2]))
    torch.testing.assert_close(torch.tensor(s1), torch.tensor(s2))
    torch.testing.assert_close(a1, a2)
