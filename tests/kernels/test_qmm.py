"""Quantized linear and fused MoE kernels against their torch references (small shapes, interpreter on CPU)."""

import pytest
import torch
from kernel_support import assert_matches, device, requires_kernels

from diffill.kernels.moe import QuantizedExperts, align_slots, fused_moe_reference, fused_moe_triton
from diffill.kernels.qlinear import qlinear_reference, qlinear_triton
from diffill.model.quant import QuantSpec, quantize_tensor

pytestmark = requires_kernels


@pytest.mark.parametrize("scheme,group", [("int4", 32), ("int4", 16), ("int8", 0)])
def test_qlinear_matches_reference(scheme, group):
    """int4 groups of 32 take the paired (even/odd K) reads, groups of 16 the byte-per-nibble ones."""
    torch.manual_seed(0)
    spec = QuantSpec(scheme, group)
    w = torch.randn(48, 64) * 0.05
    q, s = quantize_tensor(w, spec, spec.group_for(64))
    x = torch.randn(5, 3, 64)
    dev = device()
    got = qlinear_triton(x.to(dev), q.to(dev), s.to(dev), scheme).cpu()
    want = qlinear_reference(x, q, s, scheme)
    assert got.shape == want.shape == (5, 3, 48)
    assert_matches(got, want)


@pytest.mark.parametrize("scheme,group", [("int4", 32), ("int4", 16), ("int8", 0)])
@pytest.mark.parametrize("m", [1, 3])
def test_the_matrix_vector_kernel_matches_reference(scheme, group, m):
    """bm = 1 tiles: one program row per token, no tensor-core tile (kernels/qlinear.py, qgemv_kernel)."""
    from diffill.kernels.tiles import Tiles

    torch.manual_seed(4)
    spec = QuantSpec(scheme, group)
    q, s = quantize_tensor(torch.randn(40, 64) * 0.05, spec, spec.group_for(64))
    x = torch.randn(m, 64)
    dev = device()
    got = qlinear_triton(x.to(dev), q.to(dev), s.to(dev), scheme, Tiles(1, 16)).cpu()
    assert_matches(got, qlinear_reference(x, q, s, scheme))


def test_align_slots_covers_every_slot_once():
    index = torch.tensor([[0, 2], [2, 3], [0, 2], [3, 1], [2, 0]])
    slots, experts, n_padded = align_slots(index, 4, 4)
    n = index.numel()
    real = slots[slots < n]
    assert sorted(real.tolist()) == list(range(n))
    assert slots.numel() % 4 == 0 and int(n_padded) <= slots.numel()
    flat = index.reshape(-1)
    for b in range(int(n_padded) // 4):  # every block holds slots of its expert only
        block = slots[4 * b : 4 * b + 4]
        assert all(flat[s] == experts[b] for s in block.tolist() if s < n)


def _experts(scheme: str, group: int, e=4, h=64, ie=32):
    spec = QuantSpec(scheme, group)
    gate_up = torch.randn(e, 2 * ie, h) * 0.1
    down = torch.randn(e, h, ie) * 0.1
    q1, s1 = quantize_tensor(gate_up, spec, spec.group_for(h))
    q2, s2 = quantize_tensor(down, spec, spec.group_for(ie))
    return QuantizedExperts(q1, s1, q2, s2, scheme)


def _on(w: QuantizedExperts, dev: str) -> QuantizedExperts:
    """The same packed experts on the kernels' device."""
    parts = (w.gate_up_qweight, w.gate_up_scales, w.down_qweight, w.down_scales)
    return QuantizedExperts(*(t.to(dev) for t in parts), w.scheme)


@pytest.mark.parametrize("scheme,group,tokens", [("int4", 32, 16), ("int4", 16, 37), ("int8", 0, 24)])
def test_fused_moe_matches_reference(scheme, group, tokens):
    torch.manual_seed(1)
    w = _experts(scheme, group)
    x = torch.randn(tokens, 64)
    probs = torch.rand(tokens, 4).softmax(-1)
    weights, index = probs.topk(2, dim=-1)
    dev = device()
    moved = _on(w, dev)
    got = fused_moe_triton(x.to(dev), weights.to(dev), index.to(dev), moved).cpu()
    want = fused_moe_reference(x, weights, index, w)
    assert_matches(got, want)


def test_int4_reads_agree_paired_or_not(monkeypatch):
    """The same int4 experts through both ways of reading a tile (kernels/tiles.py PAIRED_INT4)."""
    from diffill.kernels import tiles

    torch.manual_seed(2)
    w = _experts("int4", 32)
    x = torch.randn(20, 64)
    weights, index = torch.rand(20, 4).softmax(-1).topk(2, dim=-1)
    dev = device()
    moved = _on(w, dev)
    outs = []
    for flag in (True, False):
        monkeypatch.setattr(tiles, "PAIRED_INT4", flag)
        outs.append(fused_moe_triton(x.to(dev), weights.to(dev), index.to(dev), moved).cpu())
    assert_matches(outs[0], outs[1])
    assert_matches(outs[0], fused_moe_reference(x, weights, index, w))


def test_other_launch_shapes_compute_the_same():
    """The tiles `bench gpu --kernels` sweeps (bigger and smaller blocks, other warp counts, the MoE's down
    projection split over its inputs) change only speed."""
    from diffill.kernels.tiles import Tiles

    torch.manual_seed(3)
    dev = device()
    w = _experts("int4", 32)
    x = torch.randn(30, 64)
    weights, index = torch.rand(30, 4).softmax(-1).topk(2, dim=-1)
    moved = _on(w, dev)
    want = fused_moe_reference(x, weights, index, w)
    for shape in (Tiles(32, 32, 8), Tiles(64, 128, 4, 2)):
        assert_matches(fused_moe_triton(x.to(dev), weights.to(dev), index.to(dev), moved, shape).cpu(), want)
    wide = _experts("int4", 32, ie=128)  # four K tiles in the down projection: split two and four ways
    want = fused_moe_reference(x, weights, index, wide)
    for shape in (Tiles(16, 32, 4, split_k=2), Tiles(16, 64, 4, split_k=4), Tiles(16, 64, 4, split_k=9)):
        assert_matches(fused_moe_triton(x.to(dev), weights.to(dev), index.to(dev), _on(wide, dev), shape).cpu(), want)
    spec = QuantSpec("int4", 32)
    q, s = quantize_tensor(torch.randn(48, 64) * 0.05, spec, 32)
    want = qlinear_reference(x, q, s, "int4")
    for shape in (Tiles(16, 16, 2), Tiles(128, 64, 8)):
        assert_matches(qlinear_triton(x.to(dev), q.to(dev), s.to(dev), "int4", shape).cpu(), want)


@pytest.mark.parametrize("scheme,group", [("int4", 32), ("int4", 16), ("int8", 0)])
def test_tile_major_weights_give_the_same_products(scheme, group):
    """Weights rearranged tile-major (kernels/qformat.py) through every kernel: tl.dot tiles, the matrix-vector
    kernel, both MoE halves; and back to row-major for the reference."""
    from diffill.kernels.qformat import row_major, tile_major
    from diffill.kernels.tiles import Tiles, k_block

    torch.manual_seed(5)
    spec = QuantSpec(scheme, group)
    q, s = quantize_tensor(torch.randn(48, 64) * 0.05, spec, spec.group_for(64))
    bk = k_block(64 // s.shape[-1], 64)
    tiled = tile_major(q, scheme, bk)
    assert tiled.ndim == 3 and torch.equal(row_major(tiled, s), q)
    x = torch.randn(5, 64)
    dev = device()
    want = qlinear_reference(x, q, s, scheme)
    for t in (None, Tiles(1, 16)):
        assert_matches(qlinear_triton(x.to(dev), tiled.to(dev), s.to(dev), scheme, t).cpu(), want)
    w = _experts(scheme, group)
    bk1 = k_block(64 // w.gate_up_scales.shape[-1], 64)
    bk2 = k_block(32 // w.down_scales.shape[-1], 32)
    tiled_w = QuantizedExperts(
        tile_major(w.gate_up_qweight, scheme, bk1), w.gate_up_scales, tile_major(w.down_qweight, scheme, bk2),
        w.down_scales, scheme,
    )  # fmt: skip
    x = torch.randn(9, 64)
    weights, index = torch.rand(9, 4).softmax(-1).topk(2, dim=-1)
    got = fused_moe_triton(x.to(dev), weights.to(dev), index.to(dev), _on(tiled_w, dev)).cpu()
    assert_matches(got, fused_moe_reference(x, weights, index, w))
    assert_matches(fused_moe_reference(x, weights, index, tiled_w), fused_moe_reference(x, weights, index, w))
