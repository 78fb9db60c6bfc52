"""Quantized logits stay close to full precision, on a tiny random model and on the embedded model.

Measured on this machine (CPU, torch 2.13; logits over a 32-token canvas, second step self-conditioned):

| model | scheme | max abs logit err | RMS err / logit std | top-1 agreement | tolerance (max, rel, top-1) |
|---|---|---|---|---|---|
| tiny random (logit std 0.4) | int8 | 0.166 | 0.047 | 96.9 % | 0.35, 0.10, 90 % |
| tiny random | int4 (groups 64/32) | 1.009 | 0.524 | 84.4 % | 2.0, 0.8, 60 % |
| tiny random | fp8 | 0.739 | 0.209 | 93.8 % | 1.5, 0.45, 75 % |
| embedded (6.2M, 9,080 steps) | int8 | 0.758 | 0.0745 | 100 % | 1.1, 0.11, 100 % |
| embedded | int4 (group 128) | 4.290 | 0.414 | 96.9 % | 6.0, 0.6, 95 % |
| embedded | fp8 | 1.099 | 0.0819 | 100 % | 1.6, 0.12, 95 % |

A random model is far more fragile than a trained one (near-uniform logits, near-tie attention with scaling 1.0
over q/k-normed heads), so its int4 / fp8 bounds are loose: they catch layout bugs (a wrong nibble order or
scale gives top-1 near chance, ~0.2 %, and errors of several logit stds), not small regressions. The embedded
model is the real quality check.
"""

import copy

import pytest
import torch
from quant_helpers import canvas_logits, errors, tiny_model

from diffill.model import runtime
from diffill.model.quant import QuantLinear, QuantSpec, quantize_model

FP8 = getattr(torch, "float8_e4m3fn", None) is not None


def schemes():
    return ["int8", "int4"] + (["fp8"] if FP8 else [])


@pytest.mark.parametrize("scheme,rel_max", [("int8", 0.01), ("int4", 0.12), ("fp8", 0.05)])
def test_quant_linear_relative_error(scheme, rel_max):
    """Per-layer error on Gaussian weights, close to the format's resolution (int4: 1/14 of the group max)."""
    if scheme == "fp8" and not FP8:
        pytest.skip("this torch has no float8_e4m3fn")
    torch.manual_seed(0)
    w = torch.randn(96, 256) * 0.02
    x = torch.randn(16, 256)
    got = QuantLinear.from_weight(w, QuantSpec.of(scheme))(x)
    want = x @ w.T
    assert ((got - want).norm() / want.norm()).item() <= rel_max


TINY_TOL = {"int8": (0.35, 0.1, 0.9), "int4": (2.0, 0.8, 0.6), "fp8": (1.5, 0.45, 0.75)}


@pytest.mark.parametrize("scheme", schemes())
def test_tiny_random_model(scheme):
    net = tiny_model()
    ref = canvas_logits(net)
    got = canvas_logits(quantize_model(copy.deepcopy(net), scheme))
    max_err, rel, top1 = errors(got, ref)
    print(f"tiny {scheme}: max abs {max_err:.4f} rel {rel:.4f} top1 {top1:.3f}")
    max_tol, rel_tol, top1_tol = TINY_TOL[scheme]
    assert max_err <= max_tol and rel <= rel_tol and top1 >= top1_tol, (max_err, rel, top1)


# Tolerances about 1.5x the errors measured on the shipped weights; retrained weights move them (the 3,400-step
# weights: int8 0.116 / 0.011, int4 1.52 / 0.178, fp8 0.367 / 0.037; the 6,400-step ones, trained longer at a
# higher learning rate, have sharper logits: int8 0.343 / 0.0207 / top-1 1.000, int4 2.10 / 0.286 / 0.969,
# fp8 0.457 / 0.046 / 1.000; the 9,080-step ones sharper again: int8 0.758 / 0.0745 / 1.000, int4 4.29 / 0.414 /
# 0.969, fp8 1.10 / 0.082 / 1.000; top-1 agreement held; the 9,080 + 1,450-step multi-language ones: int8 0.197 /
# 0.0195, int4 2.00 / 0.209, fp8 0.546 / 0.050, top-1 1.000 where the reference is no tie: int8 flipped one
# position whose two best logits were 0.01 apart).
EMBEDDED_TOL = {"int8": (1.1, 0.11, 1.0), "int4": (6.0, 0.6, 0.95), "fp8": (1.6, 0.12, 0.95)}


@pytest.fixture(scope="module")
def embedded_ref():
    if not runtime.embedded_available():
        pytest.skip("the embedded model is not installed")
    loaded = runtime.load("", "cpu", dtype="float32")
    return canvas_logits(loaded.model.net, prompt_len=200)


@pytest.mark.parametrize("scheme", schemes())
def test_embedded_model(embedded_ref, scheme):
    loaded = runtime.load("", "cpu", quantization=scheme, dtype="float32")
    got = canvas_logits(loaded.model.net, prompt_len=200)
    max_err, rel, top1 = errors(got, embedded_ref)
    print(f"embedded {scheme}: max abs {max_err:.4f} rel {rel:.4f} top1 {top1:.3f}")
    max_tol, rel_tol, top1_tol = EMBEDDED_TOL[scheme]
    assert max_err <= max_tol and rel <= rel_tol and top1 >= top1_tol, (max_err, rel, top1)
