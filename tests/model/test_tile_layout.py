"""Quantized weights in the kernels' tile-major layout (model.quant.tile_weights): the same model, and saved
row-major as checkpoints hold them."""

import pytest
import torch
from quant_helpers import canvas_logits, tiny_model

from diffill.kernels.tiles import k_block
from diffill.model.loader import load_model, save_quantized
from diffill.model.quant import QuantExperts, QuantLinear, quantize_model, tile_weights, untile_weights


def _splits(k: int, group: int) -> bool:
    """Whether K divides into the kernel's K tiles (or fits one)."""
    bk = k_block(group, k)
    return bk is not None and (k <= bk or k % bk == 0)


@pytest.mark.parametrize("scheme", ["int4", "int8"])
def test_a_tiled_model_computes_what_the_row_major_one_does(scheme, tmp_path):
    net = quantize_model(tiny_model(), scheme)
    want = canvas_logits(net)
    linears = [m for m in net.modules() if isinstance(m, QuantLinear)]
    splits = [m for m in linears if _splits(m.in_features, m.in_features // m.scales.shape[-1])]
    packed = len(splits) + 2 * sum(isinstance(m, QuantExperts) for m in net.modules())
    assert tile_weights(net) == packed and tile_weights(net) == 0  # every weight once, then nothing left to do
    assert all(m.qweight.ndim == 3 for m in splits)
    torch.testing.assert_close(canvas_logits(net), want)  # the torch paths read either layout
    folder = save_quantized(net, tmp_path / scheme)
    assert all(m.qweight.ndim == 3 for m in splits)  # left as it was
    reloaded = load_model(folder)
    assert all(m.qweight.ndim == 2 for m in reloaded.modules() if isinstance(m, QuantLinear))  # stored row-major
    torch.testing.assert_close(canvas_logits(reloaded), want)
    assert untile_weights(net) == packed
    torch.testing.assert_close(canvas_logits(net), want)


def test_fp8_weights_are_left_as_they_are():
    net = quantize_model(tiny_model(), "fp8")
    assert tile_weights(net) == 0
