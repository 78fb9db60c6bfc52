"""Whole denoise steps on the graphs' static state (model/graph_denoise.py `denoise`, model/graphs.py
`PassGraphs.step`), run here without CUDA (the capture is the step itself, or its warm-up side effects first)
and held token for token to the eager loop with the same fused sampler (the Triton interpreter)."""

import sys
from pathlib import Path

import pytest
from kernel_support import device, requires_kernels

from diffill.model import graph_denoise
from diffill.model import graphs as graphs_module
from diffill.model.graphs import PassGraphs

sys.path.insert(0, str(Path(__file__).parents[1]))
from tiny import random_model, tiny_config  # noqa: E402

pytestmark = [
    requires_kernels,
    # The interpreter evaluates both sides of tl.where (0 * inf) and finfo.min / T overflows to -inf, as in torch.
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning"),
]

PROMPT = [2, 10, 11, 12, 13]


def warmed_capture(fn, enabled, pool=None):
    """What a capture does to the state without CUDA: two warm-up steps run (and are undone) before it is kept."""
    fn()
    fn()
    return fn


def _model(quantized: bool = False):
    model = random_model(tiny_config(vocab_size=200, canvas_length=8))
    if quantized:  # experts that never sync with the host: what a CUDA capture needs
        from diffill.model.quant import quantize_model

        model.net = quantize_model(model.net, "int4")
    model.net.to(device())  # on a GPU the kernels run for CUDA tensors only
    return model


def _runs(model, capture: bool = False, **kw):
    """(tokens, steps, drafts, confidence) of one generation: eager (no graphs), then on the graphs' working
    cache (`capture`: as CUDA graphs)."""
    out = []
    for graphed in (False, True):
        model.net.graphs = PassGraphs(model.net, 128, capture_graphs=capture) if graphed else None
        cache = model.net.graphs.cache if graphed else None
        drafts: list[list[int]] = []
        full = model.generate_full(
            PROMPT, cache=cache, on_draft=lambda d, n, seen=drafts: seen.append(d[0].tolist()), fast=True, **kw
        )
        out.append((full.tokens, full.steps, drafts, [round(p, 5) for p in full.confidence]))
    graphs, model.net.graphs = model.net.graphs, None
    return out[0], out[1], graphs


@pytest.mark.parametrize("warm_up", [False, True])
def test_graphed_steps_commit_what_the_eager_loop_commits(warm_up, monkeypatch):
    if warm_up:
        monkeypatch.setattr(graphs_module, "capture", warmed_capture)
    model = _model()
    calls = []
    real = graph_denoise.denoise
    monkeypatch.setattr(graph_denoise, "denoise", lambda *a, **k: calls.append(1) or real(*a, **k))
    cases = [
        dict(max_new_tokens=16, canvas_length=8, steps=6, seed=1),  # two canvases, the second after a commit
        dict(max_new_tokens=8, canvas_length=8, steps=6, seed=2, pinned={1: 42, 5: 43}),
        dict(max_new_tokens=8, canvas_length=8, steps=4, seed=3, first_allowed=[50, 51, 52]),
        dict(max_new_tokens=8, canvas_length=8, steps=8, seed=4, stability_threshold=0, confidence_threshold=100.0),
    ]
    for kw in cases:
        calls.clear()
        eager, graphed, _ = _runs(model, **kw)
        assert calls, kw  # the second run took the graphs (the first had none)
        assert graphed == eager, kw
        tokens, steps, drafts, _ = graphed
        assert 1 <= steps <= kw["steps"] * 2 and len(drafts) == steps
        for off, tok in kw.get("pinned", {}).items():
            assert tokens[off] == tok
        if "first_allowed" in kw:
            assert tokens[0] in kw["first_allowed"]
    assert eager[1] == 1  # confidence_threshold 100 and no stability rule: the first step settles


def test_a_graph_is_kept_per_step_kind_and_rule(monkeypatch):
    model = _model()
    graphs = PassGraphs(model.net, 128, capture_graphs=False)
    model.net.graphs = graphs
    try:
        model.generate(PROMPT, cache=graphs.cache, fast=True, max_new_tokens=8, canvas_length=8, steps=3, seed=0,
                       stability_threshold=None)  # fmt: skip
        kinds = {k[2:5] for k in graphs._steps}
        assert kinds == {(False, False, False), (True, False, False)}  # the first step, then the conditioned ones
        graphs.cache.reset()
        model.generate(PROMPT, cache=graphs.cache, fast=True, max_new_tokens=8, canvas_length=8, steps=3, seed=0,
                       entropy_bound=0.5, stability_threshold=None)  # fmt: skip
        assert len({k[5] for k in graphs._steps}) == 2  # another entropy bound: graphs of its own
        graphs.disable(RuntimeError("test"))
        assert not graphs._steps and not graphs._state
    finally:
        model.net.graphs = None


def test_warming_captures_the_steps_completions_take(monkeypatch):
    """DiffusionModel.warm_graphs (at load): the passes, then the first and conditioned steps at each canvas
    length with the first token free or restricted; a generation of those kinds then captures nothing new, and
    the working cache is left empty."""
    model = _model()
    model.sampler = model.sampler.with_overrides(fast=True)
    graphs = PassGraphs(model.net, 128, capture_graphs=False)
    model.net.graphs = graphs
    try:
        held = model.warm_graphs((8, 4))
        steps = set(graphs._steps)
        assert {(k[1][0], k[2], k[4]) for k in steps} == {(c, s, r) for c in (8, 4) for s in (0, 1) for r in (0, 1)}
        assert held == len(graphs._graphs) + len(steps) and graphs.cache.length == 0
        model.generate(PROMPT, cache=graphs.cache, max_new_tokens=8, canvas_length=8, steps=3, seed=5,
                       first_allowed=[7, 8])  # fmt: skip
        assert set(graphs._steps) == steps
    finally:
        model.net.graphs = None


def test_a_canvas_read_with_the_evidence_writes_on_the_graphs_cache_what_it_writes_eagerly(monkeypatch):
    """The evidence (model.ngram.mixed_rows) is read on the host between a step's logits and its draws, which a
    replayed step cannot do: with a mixer, the graphs' working cache runs the eager loop, so diffusion alone
    writes on a GPU what it writes on a CPU."""
    from diffill.model.ngram import NgramMixer, TokenIndex

    model = _model()
    model.sampler = model.sampler.with_overrides(fast=True)
    target = [20, 21, 22, 23]
    mixer = NgramMixer([TokenIndex([[12, 13, *target] * 5], 200)], tail=PROMPT, weight=0.95, per_order=0.0)
    calls = []
    real = graph_denoise.denoise
    monkeypatch.setattr(graph_denoise, "denoise", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = {}
    for graphed, mix in ((False, None), (False, mixer), (True, None), (True, mixer)):
        model.net.graphs = PassGraphs(model.net, 128, capture_graphs=False) if graphed else None
        cache = model.net.graphs.cache if graphed else model.net.new_cache()
        calls.clear()
        out[graphed, mix is not None] = model.denoise(PROMPT, cache, canvas=4, steps=3, seed=0, mix=mix)
        assert bool(calls) == (graphed and mix is None)  # without evidence the graphs replay, as before
    model.net.graphs = None
    assert out[False, True] == target != out[False, False]
    assert out[True, True] == out[False, True] and out[True, False] == out[False, False]


@pytest.mark.skipif(device() != "cuda", reason="a CUDA capture (the device check)")
def test_captured_steps_commit_what_the_eager_loop_commits():
    model = _model(quantized=True)
    for kw in (dict(max_new_tokens=16, canvas_length=8, steps=6, seed=1), dict(max_new_tokens=8, canvas_length=8,
               steps=4, seed=3, first_allowed=[50, 51, 52], pinned={3: 9})):  # fmt: skip
        eager, graphed, graphs = _runs(model, capture=True, **kw)
        assert graphs.enabled and graphs._steps, kw  # captured, not fallen back to the eager loop
        assert graphed[:3] == eager[:3], kw
