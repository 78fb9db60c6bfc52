"""Expected weight bytes per precision from a config alone, and `diffill doctor` printing them."""

import pytest
import torch
from quant_helpers import tiny_config, tiny_model

from diffill.model import DiffusionGemmaConfig
from diffill.model.footprint import weight_footprint
from diffill.model.quant import quantize_model


def test_26b_a4b_int4_fits_16_gb():
    cfg = DiffusionGemmaConfig()  # the real 26B-A4B text stack
    bf16 = weight_footprint(cfg, "bf16").total_bytes
    int4 = weight_footprint(cfg, "int4").total_bytes
    assert 25.2e9 * 2 < bf16 < 25.3e9 * 2  # 25.25 B parameters
    assert int4 <= 16e9, int4 / 1e9
    assert weight_footprint(cfg, "int8").total_bytes < 0.55 * bf16


@pytest.mark.parametrize("scheme", ["int8", "int4", "fp8"])
def test_estimate_equals_what_a_quantized_model_holds(scheme):
    if scheme == "fp8" and getattr(torch, "float8_e4m3fn", None) is None:
        pytest.skip("no fp8 in this torch")
    net = quantize_model(tiny_model().to(torch.bfloat16), scheme)
    held = sum(t.numel() * t.element_size() for t in net.state_dict().values())
    assert weight_footprint(tiny_config(), scheme).total_bytes == held


def test_doctor_prints_footprint_for_a_config_only_folder(tmp_path):
    from diffill.lsp.doctor import _footprint

    DiffusionGemmaConfig().save(tmp_path / "config.json")
    lines = list(_footprint(str(tmp_path)))
    text = "\n".join(lines)
    assert "bf16: 50.50 GB" in text and "int4: 14.25 GB" in text, text
