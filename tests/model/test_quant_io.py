"""Quantize-on-load, saving and reloading quantized checkpoints (safetensors only), and the module swap rules."""

import json

import torch
from quant_helpers import canvas_logits, tiny_config, tiny_model

from diffill.model import DiffusionModel, save_model
from diffill.model.loader import save_quantized
from diffill.model.quant import QuantExperts, QuantLinear, QuantSpec, quantize_model


def _quant_state(net):
    return {k: v for k, v in net.state_dict().items()}


def test_quantize_model_targets_and_keeps_router_embeddings_norms_dense():
    net = quantize_model(tiny_model(), "int4")
    layer = net.layers[0]
    for mod in (layer.self_attn.q_proj, layer.self_attn.o_proj, layer.mlp.down_proj, net.self_conditioning.up_proj):
        assert isinstance(mod, QuantLinear)
    assert isinstance(layer.experts, QuantExperts)
    assert isinstance(layer.router.proj, torch.nn.Linear) and layer.router.proj.weight.dtype == torch.float32
    assert net.embed_tokens.weight.dtype == torch.float32 and layer.input_layernorm.weight.dtype == torch.float32
    assert layer.experts.gate_up_qweight.dtype == torch.uint8 and layer.experts.gate_up_qweight.shape == (4, 128, 32)
    # group 128 does not divide 96 (dense MLP input) or 64: the largest power of two that does
    assert layer.mlp.down_proj.scales.shape == (64, 3) and layer.experts.down_scales.shape == (4, 64, 1)


def test_group_rule_for_the_real_widths():
    spec = QuantSpec.of("int4")
    assert spec.group_for(2816) == 128 and spec.group_for(704) == 64 and spec.group_for(2112) == 64
    assert QuantSpec.of("int8").group_for(704) == 704  # per output channel


def test_quantize_on_load_equals_quantize_after_load(tmp_path):
    net = tiny_model()
    save_model(net, tmp_path / "dense")
    want = quantize_model(DiffusionModel.from_pretrained(tmp_path / "dense").net, "int4")
    got = DiffusionModel.from_pretrained(tmp_path / "dense", quantization="int4").net
    assert isinstance(got.layers[1].self_attn.k_proj, QuantLinear)
    a, b = _quant_state(got), _quant_state(want)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert not any(v.is_meta for v in a.values())


def test_router_shaped_like_a_target_stays_dense(tmp_path):
    """num_experts == kv heads * head_dim: the router's proj has k_proj's shape; only names tell them apart."""
    torch.manual_seed(0)
    from diffill.model import DiffusionGemma

    net = DiffusionGemma(tiny_config(num_experts=32, top_k_experts=2)).eval()
    save_model(net, tmp_path / "dense")
    got = DiffusionModel.from_pretrained(tmp_path / "dense", quantization="int8").net
    assert isinstance(got.layers[0].self_attn.k_proj, QuantLinear)
    assert torch.equal(got.layers[0].router.proj.weight, net.layers[0].router.proj.weight)


def test_save_and_reload_quantized(tmp_path):
    for scheme in ("int4", "int8", "fp8"):
        net = quantize_model(tiny_model(), scheme)
        folder = save_quantized(net, tmp_path / scheme)
        assert json.loads((folder / "config.json").read_text())["quantization"]["scheme"] == scheme
        assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
        loaded = DiffusionModel.from_pretrained(folder).net
        a, b = _quant_state(loaded), _quant_state(net)
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].dtype == b[k].dtype and torch.equal(a[k].float(), b[k].float()), (scheme, k)
        torch.testing.assert_close(canvas_logits(loaded), canvas_logits(net))


def test_saved_int4_is_about_a_quarter_of_fp32(tmp_path):
    net = tiny_model()
    save_model(net, tmp_path / "dense")
    save_quantized(quantize_model(net, "int4"), tmp_path / "q")
    dense = (tmp_path / "dense" / "model.safetensors").stat().st_size
    small = (tmp_path / "q" / "model.safetensors").stat().st_size
    assert small < 0.5 * dense  # the tiny model's embeddings (kept dense) are a large share


def test_unreadable_config_is_named(tmp_path):
    import pytest

    from diffill.model.loader import CheckpointError
    from diffill.model.quant_io import quantization_entry

    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json"):
        quantization_entry(bad)
    bad.write_text("[1, 2]")
    assert quantization_entry(bad) is None
