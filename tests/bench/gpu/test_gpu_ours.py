"""Our step as `bench gpu` measures it, on the tiny config on the CPU: the entropy-bounded renoise keeps the
lowest-entropy draws, the canvas walks its temperatures down with one seed per step, a forked cache leaves the
prompt's alone, and every figure of `measure_ours` follows from the times it measured."""

import pytest
import torch

from diffill.bench.gpu import ours as gpu_ours
from diffill.bench.gpu.harness import TINY, inputs
from diffill.bench.gpu.ours import Denoiser, fork, measure_ours
from diffill.kernels.sampler import SamplerStep
from diffill.model import DiffusionGemmaConfig
from diffill.model.quant import QuantSpec
from diffill.model.random_weights import random_quantized_model

CPU = torch.device("cpu")
PROMPT, CANVAS = 8, 4


@pytest.fixture(scope="module")
def tiny():
    config = DiffusionGemmaConfig(**TINY, canvas_length=CANVAS)
    torch.manual_seed(0)
    net = random_quantized_model(config, QuantSpec.of("int4"), CPU, torch.float32)
    ids, x0 = inputs(config, PROMPT, CANVAS, CPU)
    with torch.inference_mode():
        cache = net.new_cache()
        net.encode(ids, cache)
    return config, net, cache, ids, x0


def positions():
    return torch.arange(PROMPT, PROMPT + CANVAS)[None]


def fake_sampler(calls):
    """A sampler step with known draws: samples 10.., noise 20.., entropies 0.05, 0.5, 0.01, 0.2."""

    def step(logits, temp, seed):
        calls.append((logits, temp, seed))
        return SamplerStep(
            sample=torch.tensor([10, 11, 12, 13]),
            argmax=torch.tensor([0, 0, 0, 0]),
            entropy=torch.tensor([0.05, 0.5, 0.01, 0.2]),
            lse=torch.tensor([1.0, 2.0, 3.0, 4.0]),
            noise=torch.tensor([20, 21, 22, 23]),
        )

    return step


@pytest.mark.parametrize(
    "bound,expected",
    [
        # sorted 0.01, 0.05, 0.2, 0.5: kept while the entropy kept before sums to at most 0.1 (0, 0.01, 0.06)
        (0.1, [10, 21, 12, 13]),
        (0.0, [20, 21, 12, 23]),  # only the first (nothing before it)
        (-1.0, [20, 21, 22, 23]),  # nothing kept: all renoised
        (float("inf"), [10, 11, 12, 13]),  # everything kept
    ],
)
def test_step_keeps_the_lowest_entropy_draws_and_renoises_the_rest(tiny, monkeypatch, bound, expected):
    config, net, cache, _, x0 = tiny
    calls = []
    monkeypatch.setattr(gpu_ours, "sampler_step", fake_sampler(calls))
    den = Denoiser(net, cache, positions(), entropy_bound=bound)
    with torch.inference_mode():
        x, (logits, temp, lse) = den.step(x0, None, 0.7, 5)
    assert x.tolist() == [expected]
    ((seen_logits, seen_temp, seen_seed),) = calls
    assert seen_logits is logits and logits.shape == (1, CANVAS, config.vocab_size)
    assert (seen_temp, seen_seed, temp) == (0.7, 5, 0.7)
    assert lse.tolist() == [1.0, 2.0, 3.0, 4.0]  # the sampler's, for the next step's soft embedding


def test_step_self_conditions_on_the_previous_logits(tiny, monkeypatch):
    _, net, cache, _, x0 = tiny
    calls = []
    monkeypatch.setattr(gpu_ours, "sampler_step", fake_sampler(calls))
    den = Denoiser(net, cache, positions())
    with torch.inference_mode():
        _, prev = den.step(x0, None, 0.8, 0)
        sharp = (prev[0] * 50, 0.8, prev[0].logsumexp(-1))  # a confident previous guess
        _, (again, _, _) = den.step(x0, None, 0.8, 0)
        _, (conditioned, _, _) = den.step(x0, sharp, 0.8, 0)
    assert torch.equal(again, prev[0])  # the same input, no previous logits: the same logits
    assert not torch.allclose(conditioned, prev[0])  # the soft embedding of the previous logits went in


def test_canvas_walks_the_temperature_down_one_seed_per_step(tiny):
    _, net, cache, _, x0 = tiny
    den = Denoiser(net, cache, positions())
    calls = []

    def step(x, prev, temp, seed):
        calls.append((x, prev, temp, seed))
        return x + 1, ("prev", seed)

    den.step = step
    out = den.canvas(x0, 4)  # t_min 0.4 + (0.8 - 0.4) * n / 4 for n = 4, 3, 2, 1
    assert [c[2] for c in calls] == pytest.approx([0.8, 0.7, 0.6, 0.5])
    assert [c[3] for c in calls] == [4, 3, 2, 1]
    assert [c[1] for c in calls] == [None, ("prev", 4), ("prev", 3), ("prev", 2)]
    assert torch.equal(out, x0 + 4)  # each step starts from the last one's canvas


def test_fork_extends_a_copy_not_the_prompt_cache(tiny):
    _, net, cache, _, x0 = tiny
    copy = fork(cache)
    with torch.inference_mode():
        net.encode(x0, copy)
    assert cache.length == PROMPT
    assert copy.length == PROMPT + CANVAS


def test_measure_ours_derives_its_figures_from_its_times(tiny):
    config = tiny[0]
    lines = []
    bw = 20e9
    res = measure_ours(config, QuantSpec.of("int4"), CPU, torch.float32, CANVAS, PROMPT, (1, 2), 2, 1, bw,
                       lines.append, 0.0)  # fmt: skip
    times = [k for k in res if k.endswith("_ms") or "_ms_" in k]
    assert all(res[k] > 0 for k in times), {k: res[k] for k in times}
    assert res["step_ms"] == min(res["step_ms_probs_then_matmul"], res["step_ms_fused_soft_embedding"])
    fused_faster = res["step_ms_fused_soft_embedding"] < res["step_ms_probs_then_matmul"]
    assert res["soft_embedding"] == ("fused kernel" if fused_faster else "probs kernel + matmul")
    for n in (1, 2):
        assert res[f"canvas_ms_{n}_steps"] > res["commit_ms"]  # the steps, then the commit
        assert res[f"tokens_per_s_{n}_steps"] == pytest.approx(CANVAS / (res[f"canvas_ms_{n}_steps"] / 1e3))
        assert res[f"speedup_vs_ar_{n}_steps"] == pytest.approx(res[f"tokens_per_s_{n}_steps"] / res["ar_tokens_per_s"])
    assert not any(k.startswith("canvas_ms_") and k not in ("canvas_ms_1_steps", "canvas_ms_2_steps") for k in res)
    assert res["ar_tokens_per_s"] == pytest.approx(1e3 / res["ar_ms_per_token"])
    need = res["step_bytes"]
    assert need["logits"] == CANVAS * TINY["vocab_size"] * 4 * 3
    assert res["roofline_step_ms"] == pytest.approx(need["total"] / bw * 1e3)
    assert res["step_fraction_of_roofline"] == pytest.approx(res["roofline_step_ms"] / res["step_ms"])
    assert 0 < res["step_fraction_of_roofline"] <= 1
    assert res["graphed_step_ms"] == pytest.approx(res["graphed_canvas_ms_16_steps"] / 16)
    assert "graphed_error" not in res  # the graphed path runs (eagerly) on the CPU
    assert res["weight_GB"] > 0
    # every figure was logged as it came, floats to three places
    assert f"  step_ms: {res['step_ms']:.3f}" in lines
    assert f"  soft_embedding: {res['soft_embedding']}" in lines
    assert lines[0].startswith("model built: ")
