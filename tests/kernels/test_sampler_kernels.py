"""The fused sampler step against the torch reference: exact argmax, entropy and logsumexp, the Gumbel-max
sample's distribution (not its random stream), and the fused self-conditioning input."""

import math

import pytest
import torch
from kernel_support import assert_matches, device, requires_kernels

from diffill.kernels.sampler import (
    sampler_step_reference,
    sampler_step_triton,
    soft_embedding_reference,
    soft_embedding_triton,
    softmax_probs_triton,
)

pytestmark = requires_kernels


def _logits(rows=6, vocab=1000, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, vocab, generator=g) * 4
    logits[0] = 0.0  # ties everywhere: argmax must be the first index, as torch's
    logits[1, 17] = 50.0  # nearly one-hot
    logits[2, :] = torch.finfo(torch.float32).min
    logits[2, 5] = 0.0  # a pinned position: zero entropy
    logits[3, :] = torch.finfo(torch.float32).min
    logits[3, 900] = 0.0  # pinned, after whole chunks of -inf (tempered) logits
    return logits


# The interpreter evaluates both sides of tl.where (0 * inf) and finfo.min / T overflows to -inf, as in torch.
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_stats_match_reference():
    logits = _logits()
    dev = device()
    for temp in (1.0, 0.6):
        got = sampler_step_triton(logits.to(dev), temp, seed=3, block_v=256)
        want = sampler_step_reference(logits, temp)
        assert torch.equal(got.argmax.cpu(), want.argmax)
        torch.testing.assert_close(got.entropy.cpu(), want.entropy, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(got.lse.cpu(), want.lse, atol=1e-4, rtol=1e-5)
        assert got.sample[1] == 17 and got.sample[2] == 5 and got.sample[3] == 900


def test_gumbel_sample_follows_softmax():
    """256 draws from one 12-way distribution: per-token frequencies within 5 sigma of the probabilities."""
    vocab, rows = 12, 128
    base = torch.linspace(-2, 2, vocab)
    logits = base.repeat(rows, 1)
    counts = torch.zeros(vocab)
    for seed in range(2):
        step = sampler_step_triton(logits.to(device()), 0.8, seed=seed, block_v=8)
        counts += torch.bincount(step.sample.cpu(), minlength=vocab)
    n = rows * 2
    p = (base / 0.8).softmax(-1)
    sigma = (n * p * (1 - p)).sqrt()
    assert ((counts - n * p).abs() <= 5 * sigma + 1).all(), (counts / n, p)


def test_soft_embedding_matches_reference():
    torch.manual_seed(0)
    logits = torch.randn(20, 300) * 3
    weight = torch.randn(300, 40)
    scale = math.sqrt(40)
    dev = device()
    stats = sampler_step_triton(logits.to(dev), 0.7, block_v=128)
    got = soft_embedding_triton(logits.to(dev), 0.7, weight.to(dev), scale, stats.lse).cpu()
    want = soft_embedding_reference(logits, 0.7, weight, scale)
    assert_matches(got, want)
    probs = softmax_probs_triton(logits.to(dev), 0.7, stats.lse, torch.float32).cpu()
    torch.testing.assert_close(probs, (logits / 0.7).softmax(-1), atol=1e-6, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_fused_sampler_path_in_the_denoiser(monkeypatch):
    """model/sampler.py with `fast` takes the kernel (counted) and, when every draw is kept (no entropy bound)
    at a tiny temperature (draw = argmax), commits the same tokens as the reference path at every step."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from tiny import random_model, tiny_config

    from diffill.kernels import sampler as ksampler

    model = random_model(tiny_config(vocab_size=200, canvas_length=8))
    model.net.to(device())  # on a GPU the kernel runs for CUDA tensors only
    calls = []
    real = ksampler.sampler_step_triton
    monkeypatch.setattr(ksampler, "sampler_step_triton", lambda *a, **k: calls.append(1) or real(*a, **k))
    kw = dict(max_new_tokens=8, seed=1, canvas_length=8, steps=3, t_min=1e-4, t_max=1e-4, trim=False, entropy_bound=1e9)
    ref = model.generate([2, 10, 11], **kw)
    assert not calls
    fused = model.generate([2, 10, 11], fast=True, **kw)
    assert calls and fused == ref
    pins = {1: 42, 4: 43}
    held = model.generate(
        [2, 10, 11], fast=True, pinned=pins, **{**kw, "t_min": 0.4, "t_max": 0.8, "entropy_bound": 0.1}
    )
    assert held[1] == 42 and held[4] == 43 and all(0 <= t < 200 for t in held)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_decoder_self_conditioning_takes_the_kernel_where_triton_runs(monkeypatch):
    """DiffusionGemma.self_conditioning_input calls the Triton soft embedding when the kernels run (CUDA; here
    forced onto the interpreter) and gives the reference's result."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from tiny import random_model, tiny_config

    from diffill.kernels import _triton
    from diffill.kernels import sampler as ksampler

    net = random_model(tiny_config(vocab_size=200, canvas_length=8)).net.to(device())
    logits = (torch.randn(1, 8, 200) * 3).to(device())
    monkeypatch.setattr(_triton, "use_triton", lambda *t: False)
    monkeypatch.setattr(ksampler, "use_triton", lambda *t: False)
    want = net.self_conditioning_input(logits)  # the torch path, on a GPU too
    calls = []
    real = ksampler.softmax_probs_triton
    monkeypatch.setattr(_triton, "use_triton", lambda *t: True)
    monkeypatch.setattr(ksampler, "use_triton", lambda *t: True)
    monkeypatch.setattr(ksampler, "softmax_probs_triton", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = net.self_conditioning_input(logits)
    assert calls and got.shape == want.shape
    assert_matches(got, want)


def test_the_fused_samplers_seeds_come_from_the_host(monkeypatch):
    """Each step draws its Gumbel seed on the host (a draw on the GPU would make the host wait at every step): a
    new one per step, the same ones for the same generation seed, others for another."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from tiny import random_model, tiny_config

    from diffill.kernels import sampler as ksampler

    model = random_model(tiny_config(vocab_size=200, canvas_length=8))
    model.net.to(device())
    seeds: list[int] = []
    real = ksampler.sampler_step_triton
    monkeypatch.setattr(
        ksampler, "sampler_step_triton", lambda z, t, seed, **k: seeds.append(seed) or real(z, t, seed, **k)
    )
    kw = dict(max_new_tokens=8, canvas_length=8, steps=3, trim=False, fast=True)
    runs = []
    for seed in (1, 1, 2):
        seeds.clear()
        model.generate([2, 10, 11], seed=seed, **kw)
        runs.append(list(seeds))
    assert runs[0] == runs[1] and len(set(runs[0])) == len(runs[0]) >= 2
    assert runs[2] != runs[0]


def test_a_seed_read_from_memory_draws_as_the_same_seed_given():
    """A graphed step passes its seed in a tensor (refilled before each replay): the same draws as the seed given
    as an argument, other draws for another seed; the renoising ids cover the vocabulary."""
    logits = torch.randn(64, 50)
    dev = device()
    given = sampler_step_triton(logits.to(dev), 0.8, seed=1234, block_v=32)
    stored = sampler_step_triton(logits.to(dev), 0.8, seed=torch.tensor([1234], device=dev), block_v=32)
    other = sampler_step_triton(logits.to(dev), 0.8, seed=torch.tensor([99], device=dev), block_v=32)
    assert torch.equal(given.sample, stored.sample) and torch.equal(given.noise, stored.noise)
    assert not torch.equal(given.noise, other.noise) and not torch.equal(given.sample, other.sample)
    noise = torch.cat([given.noise, other.noise]).cpu()
    assert 0 <= int(noise.min()) and int(noise.max()) < 50 and len(set(noise.tolist())) > 30
