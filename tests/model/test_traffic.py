"""The traffic model of a denoise step (model.traffic): per launch, the HBM bytes its grid and tiles imply,
against the least the step must move, for the real 26B-A4B shapes at int4."""

import pytest

from diffill.model import traffic
from diffill.model.config import DiffusionGemmaConfig
from diffill.model.footprint import weight_footprint

CONFIG = DiffusionGemmaConfig()  # the 26B-A4B shapes


@pytest.mark.parametrize("canvas", [16, 64, 256])
def test_the_moe_kernels_read_each_active_experts_weights_once_and_the_step_moves_little_more_than_it_must(canvas):
    launches = traffic.denoise_step(CONFIG, canvas, p=1000)
    s = traffic.summary(launches)
    assert s["moe_weight_ratio"] <= 1.15, s
    assert s["ratio"] <= 1.3, s
    # the least the MoE must read is the active experts' weights: all 128 at 256 tokens, fewer on short canvases
    per_expert = sum(x.min_weight_bytes for x in traffic.moe(CONFIG, [1] + [0] * 127, traffic.QuantSpec.of("int4")))
    active = sum(sum(1 for c in traffic.uniform_counts(CONFIG, canvas, i) if c) for i in range(30))
    assert s["moe_weight_gb"] * 1e9 == pytest.approx(active * per_expert, rel=1e-6)


def test_at_256_tokens_the_step_reads_every_weight_and_the_embedding_twice():
    """Every expert is active at 256 tokens: the weights read are the int4 footprint, plus the tied embedding a
    second time (the head, then the self-conditioning product): the gap a fused head closes."""
    launches = traffic.denoise_step(CONFIG, 256, p=1000)
    weights = sum(x.weight_bytes for x in launches)
    footprint = weight_footprint(CONFIG, "int4").total_bytes
    embedding = CONFIG.vocab_size * CONFIG.hidden_size * 2
    assert weights == pytest.approx(footprint + embedding, rel=0.02)
    least = sum(x.min_weight_bytes for x in launches)
    assert least == pytest.approx(footprint, rel=0.02)


def test_an_operand_that_fits_in_l2_is_read_once_else_once_per_n_tile():
    small = traffic.qlinear("x", 256, 2816, 2816, None)
    assert small.other_bytes == small.min_other_bytes  # 1.4 MB of activations: from L2 after the first N tile
    big = traffic.qlinear("x", 16384, 2816, 2816, None, traffic.Tiles(64, 64))  # 92 MB of activations
    assert big.other_bytes > 40 * big.min_other_bytes // 2
    assert big.weight_bytes == big.min_weight_bytes  # the weight slab of an N tile: its M blocks run side by side


def test_routing_counts_are_the_canvas_times_top_k():
    for m in (16, 256):
        counts = traffic.uniform_counts(CONFIG, m, seed=3)
        assert sum(counts) == m * CONFIG.top_k_experts and len(counts) == CONFIG.num_experts
