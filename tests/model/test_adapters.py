"""Decoder adapters (model.adapters): they act in the decoder's pass only, so the encoder's logits stay bit for bit
the plain model's; checkpoints with and without them load; quantization leaves them alone."""

from __future__ import annotations

import json

import pytest
import torch
from tiny import random_net, tiny_config

from diffill.model.adapters import attach_decoder_adapters, decoder_only_parameters
from diffill.model.config import ADAPTER_KEY
from diffill.model.loader import load_model, save_model
from diffill.model.quant import quantize_model

IDS = torch.tensor([[2, 10, 11, 12, 13, 14, 15, 16, 17, 18]])
CANVAS = torch.tensor([[20, 21, 22, 23, 24, 25]])


def _trained(net, seed: int = 1):
    """Adapters given weights as if trained (fresh ones are a zero update) and the self-conditioning MLP moved."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in decoder_only_parameters(net):
            p.add_(torch.randn(p.shape, generator=g) * 0.3)
    return net


def _passes(net):
    cache = net.new_cache()
    encoded = net.head(net.encode(IDS, cache))
    first = net.decode(CANVAS, cache)
    return encoded, first, net.decode(CANVAS, cache, first)


def test_the_encoder_is_bit_identical_and_the_decoder_changes():
    plain = random_net(tiny_config())
    enc0, dec0, sc0 = _passes(plain)
    adapted = random_net(tiny_config())
    attach_decoder_adapters(adapted, 4)
    fresh_enc, fresh_dec, _ = _passes(adapted)
    assert torch.equal(fresh_enc, enc0) and torch.allclose(fresh_dec, dec0, atol=1e-5)  # B = 0: no change yet
    _trained(adapted)
    enc1, dec1, sc1 = _passes(adapted)
    assert torch.equal(enc1, enc0)
    assert (dec1 - dec0).abs().max() > 0.1 and (sc1 - sc0).abs().max() > 0.1


def test_only_decoder_weights_are_decoder_only_parameters():
    net = random_net(tiny_config())
    attach_decoder_adapters(net, 4)
    names = {n for n, _ in decoder_only_parameters(net)}
    layers = net.config.num_hidden_layers
    # q, k, o on every layer, v on sliding ones (a full layer's V is its K), beside each dense MLP; the SC MLP
    sliding = sum(t == "sliding_attention" for t in net.config.layer_types)
    assert len(names) == 2 * (3 * layers + sliding + layers) + 4
    assert all(".decoder_" in n or n.startswith("self_conditioning.") for n in names)
    with pytest.raises(ValueError):
        attach_decoder_adapters(net, 4)


def test_checkpoints_with_and_without_adapters_load(tmp_path):
    plain = random_net(tiny_config())
    save_model(plain, tmp_path / "plain")
    loaded = load_model(tmp_path / "plain", dtype=torch.float32)
    assert loaded.config.decoder_adapter_rank == 0 and loaded.layers[0].self_attn.decoder_adapters is None
    assert ADAPTER_KEY not in json.loads((tmp_path / "plain" / "config.json").read_text())["text_config"]
    adapted = _trained(random_net(tiny_config()).eval().requires_grad_(False))
    attach_decoder_adapters(adapted, 4)
    _trained(adapted)
    save_model(adapted, tmp_path / "adapted")
    assert json.loads((tmp_path / "adapted" / "config.json").read_text())["text_config"][ADAPTER_KEY] == 4
    back = load_model(tmp_path / "adapted", dtype=torch.float32)
    for got, want in zip(_passes(back), _passes(adapted), strict=True):
        assert torch.equal(got, want)


def test_quantization_leaves_the_adapters_as_they_are():
    net = random_net(tiny_config())
    attach_decoder_adapters(net, 4)
    _trained(net)
    before = {n: p.clone() for n, p in decoder_only_parameters(net) if ".decoder_" in n}
    quantize_model(net, "int8")
    after = dict(net.named_parameters())
    assert all(torch.equal(after[n], p) for n, p in before.items())
