"""The byte model of a denoise step, checked against sums done by hand for a small config: expert bytes counted
only for the experts a canvas routes to, the embedding twice, fp32 logits three times, the KV cache growing with
the prompt (sliding layers only up to their window); and the roofline arithmetic."""

import pytest

from diffill.bench.gpu.roofline import bytes_per_s, expert_bytes, experts_touched, kv_bytes, roofline_ms, step_bytes
from diffill.model import DiffusionGemmaConfig
from diffill.model.footprint import weight_footprint
from diffill.model.quant import QuantSpec

INT4 = QuantSpec.of("int4")  # 4 bits packed two per byte, one fp16 scale per group of 128 inputs (or fewer)
SMALL = dict(
    vocab_size=1024, hidden_size=128, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=32, global_head_dim=64, num_global_key_value_heads=1, num_experts=8,
    top_k_experts=2, moe_intermediate_size=64, sliding_window=64,
)  # fmt: skip
# Two layers: layer 0 slides (2 KV heads of 32), layer 1 (the last) attends fully (1 KV head of 64).
SLIDING_TOKEN_BYTES = 2 * 2 * 32 * 2  # keys + values, 2 heads, 32 dims, bf16
FULL_TOKEN_BYTES = 2 * 1 * 64 * 2
# Per layer, 8 experts: gate/up [128 out, 128 in] -> 128*64 packed bytes + 128 fp16 scales (one group of 128);
# down [128 out, 64 in] -> 128*32 packed bytes + 128 fp16 scales (one group of 64).
EXPERTS_PER_LAYER = 8 * (128 * 64 + 128 * 2 + 128 * 32 + 128 * 2)
EXPERTS = 2 * EXPERTS_PER_LAYER
EMBED = 1024 * 128 * 2  # bf16


def config(**kw):
    return DiffusionGemmaConfig(**{**SMALL, **kw})


def test_expert_bytes_by_hand():
    assert expert_bytes(config(), INT4) == EXPERTS == 204_800


def test_share_of_experts_touched():
    assert experts_touched(config(), canvas=1) == pytest.approx(2 / 8)  # one token: its top-2 of 8
    assert experts_touched(config(), canvas=2) == pytest.approx(1 - (6 / 8) ** 2)
    assert experts_touched(config(top_k_experts=8), canvas=1) == 1.0


def test_weights_count_only_the_experts_the_canvas_touches():
    every = step_bytes(config(top_k_experts=8), INT4, canvas=1, prompt=16)["weights"]  # every expert used
    one_token = step_bytes(config(), INT4, canvas=1, prompt=16)["weights"]
    three_tokens = step_bytes(config(), INT4, canvas=3, prompt=16)["weights"]
    assert every - one_token == pytest.approx(EXPERTS * 6 / 8)  # 6 of 8 experts idle
    assert every - three_tokens == pytest.approx(EXPERTS * (6 / 8) ** 3)  # none of 3 tokens picked them
    assert one_token < three_tokens < every


def test_weights_read_the_embedding_twice():
    # All experts touched: the whole stack as stored (the embedding once, tied to the head) plus the embedding
    # read again for the self-conditioning input.
    need = step_bytes(config(top_k_experts=8), INT4, canvas=4, prompt=16)
    assert need["weights"] == weight_footprint(config(top_k_experts=8), INT4).total_bytes + EMBED


def test_logits_are_fp32_written_once_read_twice():
    assert step_bytes(config(), INT4, canvas=5, prompt=16)["logits"] == 5 * 1024 * 4 * 3


def test_kv_bytes_by_hand():
    assert kv_bytes(config(), prompt=16) == 16 * SLIDING_TOKEN_BYTES + 16 * FULL_TOKEN_BYTES == 8192
    # Past the window the sliding layer reads its last 63 keys (the window less the query's own slot).
    assert kv_bytes(config(), prompt=100) == 63 * SLIDING_TOKEN_BYTES + 100 * FULL_TOKEN_BYTES


def test_kv_bytes_grow_with_the_prompt():
    per_token = [kv_bytes(config(), prompt=p + 1) - kv_bytes(config(), prompt=p) for p in (1, 30, 62, 63, 200)]
    both = SLIDING_TOKEN_BYTES + FULL_TOKEN_BYTES
    assert per_token == [both, both, both, FULL_TOKEN_BYTES, FULL_TOKEN_BYTES]


def test_step_bytes_total_is_its_parts():
    need = step_bytes(config(), INT4, canvas=8, prompt=40)
    assert need["kv"] == 40 * SLIDING_TOKEN_BYTES + 40 * FULL_TOKEN_BYTES
    assert need["total"] == pytest.approx(need["weights"] + need["logits"] + need["kv"])
    assert set(need) == {"weights", "logits", "kv", "total"}


def test_step_bytes_of_the_real_model():
    need = step_bytes(DiffusionGemmaConfig(), INT4, canvas=256, prompt=512)
    assert 14e9 < need["weights"] < 16e9  # ~12.8 GB of int4 layers (all experts touched) + the embedding twice
    assert need["logits"] == 256 * 262_144 * 4 * 3
    # 25 sliding layers (8 KV heads of 256) and 5 full ones (2 of 512), 512 keys each (under the 1024 window)
    assert need["kv"] == 512 * (25 * 2 * 8 * 256 * 2 + 5 * 2 * 2 * 512 * 2)


def test_roofline_arithmetic():
    assert roofline_ms(2e9, 4e12) == pytest.approx(0.5)  # 2 GB at 4 TB/s
    assert bytes_per_s(1e9, 0.5) == pytest.approx(2e12)  # 1 GB in half a millisecond
    assert roofline_ms(3e6, bytes_per_s(3e6, 7.0)) == pytest.approx(7.0)
