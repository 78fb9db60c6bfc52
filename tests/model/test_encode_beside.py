"""One pass of two row groups (DiffusionGemma.encode_beside): the causal rows are exactly `encode`'s and the canvas
beside them is the decoder pass that would follow `encode` of all but their last token, on growing and static
caches, sliding windows crossed."""

from __future__ import annotations

import pytest
import torch
from tiny import random_net, tiny_config

from diffill.model.adapters import attach_decoder_adapters, decoder_only_parameters
from diffill.model.static_cache import StaticKVCache

PREFIX = torch.tensor([[2, 10, 11, 12, 13, 14, 15]])  # longer than the sliding window (4)
IDS = torch.tensor([[30, 31, 32, 33, 34]])
TAIL = [40, 41, 42, 43, 44, 45]  # the canvas after its pin (IDS's last token)


def _net(adapted: bool):
    net = random_net(tiny_config())
    if adapted:
        attach_decoder_adapters(net, 4)
        g = torch.Generator().manual_seed(3)
        with torch.no_grad():
            for _, p in decoder_only_parameters(net):
                p.add_(torch.randn(p.shape, generator=g) * 0.3)
    return net


def _cache(net, static: bool):
    return StaticKVCache(net.config, 64, "cpu", net.dtype) if static else net.new_cache()


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("adapted", [False, True])
def test_the_two_groups_are_the_encoder_pass_and_the_decoder_pass_after_it(adapted, static):
    net = _net(adapted)
    canvas = torch.tensor([[int(IDS[0, -1]), *TAIL]])
    with torch.inference_mode():
        alone = _cache(net, static)
        net.encode(PREFIX, alone)
        want_x = net.encode(IDS, alone)
        want_keys = [k[:, :, : alone.length].clone() for k in alone.keys]
        alone.truncate(PREFIX.shape[1] + IDS.shape[1] - 1)
        want_y = net.decode_hidden(canvas, alone)

        joint = _cache(net, static)
        net.encode(PREFIX, joint)
        passes = net.passes
        x, y = net.encode_beside(IDS, canvas, joint)
    assert net.passes == passes + 1
    assert torch.equal(x, want_x)  # the encoder's rows, bit for bit
    assert joint.length == PREFIX.shape[1] + IDS.shape[1]  # the causal rows are cached, the canvas is not
    assert all(torch.equal(k[:, :, : joint.length], w) for k, w in zip(joint.keys, want_keys, strict=True))
    assert torch.allclose(y, want_y, atol=1e-5)
    assert not torch.allclose(y[:, 1:], want_x[:, -1:].expand_as(y[:, 1:]), atol=1e-3)  # a real canvas pass


@pytest.mark.parametrize("static", [False, True])
def test_beside_a_tree_pass_the_canvas_follows_the_trunk_and_the_branches_are_scored_as_without_it(static):
    """A canvas beside a TreeRows pass (a draft's riders scored in it): the rows are the tree pass's, the cache
    keeps the trunk's alone, and the canvas is the decoder pass after the trunk, the branches unseen."""
    from diffill.model.cache import TreeRows

    net = _net(True)
    branches = [[50, 51, 52], [60]]
    row = torch.tensor([[*IDS[0].tolist(), *[t for b in branches for t in b]]])
    canvas = torch.tensor([[int(IDS[0, -1]), *TAIL]])
    with torch.inference_mode():
        alone = _cache(net, static)
        net.encode(PREFIX, alone)
        tree = TreeRows(alone, IDS.shape[1], [len(b) for b in branches], "cpu", fork=2)
        want_x = net.encode(row, tree, tree.positions)
        tree.commit()
        want_keys = [k[:, :, : alone.length].clone() for k in alone.keys]
        alone.truncate(PREFIX.shape[1] + IDS.shape[1] - 1)
        want_y = net.decode_hidden(canvas, alone)

        joint = _cache(net, static)
        net.encode(PREFIX, joint)
        tree = TreeRows(joint, IDS.shape[1], [len(b) for b in branches], "cpu", fork=2)
        x, y = net.encode_beside(row, canvas, tree, tree.positions)
        tree.commit()
    assert torch.equal(x, want_x)
    assert joint.length == PREFIX.shape[1] + IDS.shape[1]
    assert all(torch.equal(k[:, :, : joint.length], w) for k, w in zip(joint.keys, want_keys, strict=True))
    assert torch.allclose(y, want_y, atol=1e-5)
