"""The fixed-capacity cache CUDA graphs need (model/static_cache.py) and the graphed passes over it
(model/graphs.py, run eagerly here: the same passes on the same static buffers), held to the growing cache."""

import pytest
import torch
from tiny import random_net, tiny_config

from diffill.model import graphs as graphs_module
from diffill.model.graphs import MAX_CAUSAL, PassGraphs
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


def warmed_capture(fn, enabled, pool=None):
    """A capture's side effects without CUDA: its warm-up passes run (writing the cache) before it is kept."""
    fn()
    fn()
    return fn


@pytest.mark.parametrize("warm_up", [False, True])
@torch.inference_mode()
def test_graphed_passes_are_the_models_passes(warm_up, monkeypatch):
    """PassGraphs run eagerly (no CUDA here) through the net's own encode/decode: static inputs, outputs and
    positions on the device give the model's logits, step after step, prompt after prompt, for the shapes it
    graphs (batch 1, short causal passes, canvases) and eagerly on its cache for the others. `warm_up`: the
    capture's warm-up passes run first, as on a GPU (they write the cache at the inputs' positions)."""
    if warm_up:
        monkeypatch.setattr(graphs_module, "capture", warmed_capture)
    model = net()
    model.graphs = PassGraphs(model, 48, capture_graphs=False)
    cache = model.graphs.cache
    try:
        for n in (9, 4):
            ids = torch.randint(2, CONFIG.vocab_size, (1, n))
            canvas = torch.randint(2, CONFIG.vocab_size, (1, 6))
            cache.reset()
            grow = model.new_cache()
            torch.testing.assert_close(model.encode(ids, cache), model.encode(ids, grow))
            first = model.decode(canvas, cache)
            torch.testing.assert_close(first, model.decode(canvas, grow))
            torch.testing.assert_close(model.decode(canvas, cache, first), model.decode(canvas, grow, first))
            for token in (7, 8):
                t = torch.tensor([[token]])
                torch.testing.assert_close(model.encode(t, cache), model.encode(t, grow))
            long = torch.randint(2, CONFIG.vocab_size, (1, MAX_CAUSAL + 1))  # past the graphed lengths: eager
            torch.testing.assert_close(model.encode(long, cache), model.encode(long, grow))
            assert cache.length == grow.length == n + 2 + MAX_CAUSAL + 1
        assert {k[0] for k in model.graphs._graphs} == {"encode", "decode"}
        assert ("encode", MAX_CAUSAL + 1) not in model.graphs._graphs
    finally:
        model.graphs = None


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
    net = loaded.model.net
    for width in (1, 4):  # greedy and a beam
        answers = {}
        for capacity in (None, 512, "graphs"):  # growing caches, fixed ones, the graphs' working cache
            net.cache_capacity = capacity if isinstance(capacity, int) else None
            net.graphs = PassGraphs(net, 1024, capture_graphs=False) if capacity == "graphs" else None
            opts = engine_options(Settings(draft_candidates=width), loaded, latency_budget_ms=None)
            engine = CompletionEngine(loaded.model, loaded.tokenizer, opts, loaded.memory)
            got = []
            for i, text in enumerate(texts):
                c = engine.complete(SyntaxDocument(text, "python"), len(text), key=f"doc{i}")
                more = text + "n"  # the next keystroke: the cache is reused
                c2 = engine.complete(SyntaxDocument(more, "python"), len(more), key=f"doc{i}")
                got.append(tuple(None if a is None else (a.start, a.end, a.text) for a in (c, c2)))
            answers[capacity] = got
        net.cache_capacity = net.graphs = None
        assert answers[None] == answers[512] == answers["graphs"]
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


@torch.inference_mode()
def test_the_prompt_cache_moves_documents_through_the_working_cache():
    """Two documents take turns on the one working cache: each finds its own prompt again (a snapshot copied in),
    reused as a growing cache would be, and the passes on it give the fresh cache's logits."""
    from diffill.model.prompt_cache import WORKING_ROOM, PromptCache

    model = net()
    working = static(model, capacity=24 + WORKING_ROOM)
    prompts = {k: torch.randint(2, CONFIG.vocab_size, (n,)).tolist() for k, n in (("a", 10), ("b", 7))}
    cache = PromptCache(model.new_cache, working=working)
    canvas = torch.randint(2, CONFIG.vocab_size, (1, 5))
    for turn in range(3):
        for key, prompt in prompts.items():
            prompt = prompt + [5] * turn  # the user typed on
            reused = cache.reused_tokens
            with cache.use(key, prompt) as c:
                assert c is working
                model.encode(torch.tensor([prompt[c.length :]]), c)
                fresh = model.new_cache()
                model.encode(torch.tensor([prompt]), fresh)
                torch.testing.assert_close(model.decode(canvas, c), model.decode(canvas, fresh))
            if turn:
                assert cache.reused_tokens - reused == len(prompt) - 1  # all but the key typed since
    too_long = list(range(2, 2 + working.capacity))
    with cache.use("c", too_long) as c:  # a prompt the working cache cannot hold runs on a growing cache
        assert c is not working


def test_graphs_are_left_off_where_a_pass_would_sync_with_the_host():
    from diffill.model.graphs import graphable
    from diffill.model.quant import quantize_model

    assert not graphable(net())  # the CPU (and dense experts anywhere)
    assert not graphable(quantize_model(net(), "int4"))  # quantized, but not on CUDA


@torch.inference_mode()
def test_warming_holds_every_shape_completions_replay_and_leaves_the_cache_empty():
    model = net()
    graphs = PassGraphs(model, 64, capture_graphs=False)
    assert graphs.warm((8, 16, 8)) == MAX_CAUSAL + 2 * 2  # causal 1..16, two canvases with and without soft
    assert {k for k in graphs._graphs if k[0] == "decode"} == {("decode", c, s) for c in (8, 16) for s in (False, True)}
    assert graphs.cache.length == 0 and int(graphs.cache.filled) == 0
