"""The fp8 MoE through PyTorch's grouped GEMM (kernels.grouped_fp8): its logic on the CPU, where the grouped
product is emulated from the same fp8 operands; on a Hopper GPU the same calls reach torch._scaled_grouped_mm."""

import pytest
import torch

from diffill.kernels import grouped_fp8
from diffill.kernels.moe import QuantizedExperts, fused_moe, fused_moe_reference
from diffill.model.quant import QuantSpec, quantize_tensor

pytestmark = pytest.mark.skipif(grouped_fp8.FP8_DTYPE is None, reason="needs a torch with float8_e4m3fn")

E, H, IE = 4, 64, 32


def experts(seed: int = 0, scheme: str = "fp8", group: int = 0) -> QuantizedExperts:
    torch.manual_seed(seed)
    spec = QuantSpec(scheme, group)
    gu, gs = quantize_tensor(torch.randn(E, 2 * IE, H) * 0.1, spec, spec.group_for(H))
    dq, ds = quantize_tensor(torch.randn(E, H, IE) * 0.1, spec, spec.group_for(IE))
    return QuantizedExperts(gu, gs, dq, ds, scheme)


def routing(t: int, k: int = 2, skip: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k routing of t tokens; `skip`: an expert that gets no token (an empty group)."""
    scores = torch.randn(t, E)
    if skip is not None:
        scores[:, skip] = -1e9
    top, index = scores.topk(k, dim=-1)
    return top.softmax(-1), index


def test_the_emulated_grouped_product_is_each_group_times_its_expert():
    torch.manual_seed(1)
    counts = [3, 0, 5, 2]  # one expert without rows
    a = torch.randn(sum(counts), 32)
    b = torch.randn(len(counts), 32, 24)
    a8, sa = grouped_fp8.quantize_rows(a)
    b8 = b.to(grouped_fp8.FP8_DTYPE)
    sb = torch.rand(len(counts), 24) + 0.5
    offs = torch.cumsum(torch.tensor(counts), 0).to(torch.int32)
    got = grouped_fp8.grouped_scaled_mm_emulated(a8, sa, b8, sb, offs)
    start, parts = 0, []
    for g, n in enumerate(counts):
        rows = a8[start : start + n].float() @ b8[g].float()
        parts.append(rows * sa[start : start + n, None] * sb[g])
        start += n
    torch.testing.assert_close(got.float(), torch.cat(parts).bfloat16().float(), rtol=1e-2, atol=1e-2)


def test_rows_quantize_within_e4m3_precision():
    x = torch.randn(6, 40) * torch.tensor([[1e-3], [1.0], [30.0], [1.0], [1.0], [5.0]])
    q, scale = grouped_fp8.quantize_rows(x)
    assert q.dtype == grouped_fp8.FP8_DTYPE and float(q.float().abs().max()) <= grouped_fp8.FP8_MAX
    back = q.float() * scale[:, None]
    assert float((back - x).abs().max() / x.abs().max()) < 0.07  # e4m3: 3 mantissa bits


@pytest.mark.parametrize("t,skip", [(1, None), (7, None), (16, 2)])
def test_fp8_grouped_moe_matches_the_reference(t, skip):
    w = experts()
    weights, index = routing(t, skip=skip)
    x = torch.randn(t, H)
    got = grouped_fp8.fp8_grouped_moe(x, weights, index, w)
    want = fused_moe_reference(x, weights, index, w)  # fp8 weights, activations unquantized
    assert got.shape == want.shape == (t, H)
    err = float((got.float() - want.float()).norm() / want.float().norm())
    assert err < 0.06, err  # the activations' e4m3 rounding, twice; a wrong expert or scale gives ~1


def test_group_wise_scales_are_refused():
    with pytest.raises(ValueError, match="per-output-channel"):
        grouped_fp8.fp8_grouped_moe(torch.randn(2, H), *routing(2), experts(scheme="int8", group=16))


def test_fused_moe_takes_the_grouped_path_where_the_op_runs(monkeypatch):
    """The dispatch, and the call as aten's schema has it (self, mat2, scale_a, scale_b, offs=, out_dtype=): on
    the CPU the op is stood in for by the emulation it is tested against above."""
    calls = []

    def scaled_grouped_mm(a, b, scale_a, scale_b, offs=None, out_dtype=None):
        calls.append((a.dtype, b.shape, out_dtype))
        return grouped_fp8.grouped_scaled_mm_emulated(a, scale_a, b, scale_b, offs)

    w = experts()
    weights, index = routing(5)
    x = torch.randn(5, H)
    assert not grouped_fp8.fp8_gemms_available(x)  # a CPU tensor
    monkeypatch.setattr(grouped_fp8, "fp8_gemms_available", lambda x: True)
    monkeypatch.setattr(torch, "_scaled_grouped_mm", scaled_grouped_mm, raising=False)
    got = fused_moe(x, weights, index, w)
    assert calls == [
        (grouped_fp8.FP8_DTYPE, (E, H, 2 * IE), torch.bfloat16),
        (grouped_fp8.FP8_DTYPE, (E, IE, H), torch.bfloat16),
    ]
    torch.testing.assert_close(got, grouped_fp8.fp8_grouped_moe(x, weights, index, w))


def test_fp8_linear_matches_the_reference_and_calls_scaled_mm_where_it_runs(monkeypatch):
    """The plain fp8 linear layers: torch._scaled_mm with row-wise scales on Hopper (stood in for by its
    emulation here), the weight never dequantized."""
    from diffill.kernels.qlinear import qlinear, qlinear_reference

    torch.manual_seed(3)
    spec = QuantSpec("fp8", 0)
    q, s = quantize_tensor(torch.randn(48, 64) * 0.1, spec, spec.group_for(64))
    x = torch.randn(2, 5, 64)
    want = qlinear_reference(x, q, s, "fp8")
    got = grouped_fp8.fp8_linear(x, q, s)
    assert got.shape == want.shape == (2, 5, 48)
    assert float((got.float() - want).norm() / want.norm()) < 0.06  # the activations' e4m3 rounding
    calls = []

    def scaled_mm(a, b, scale_a, scale_b, out_dtype=None):
        calls.append((a.dtype, tuple(b.shape), b.stride(), tuple(scale_a.shape), tuple(scale_b.shape), out_dtype))
        return grouped_fp8.scaled_mm_emulated(a, scale_a, b, scale_b)

    monkeypatch.setattr(grouped_fp8, "fp8_gemms_available", lambda x: True)
    monkeypatch.setattr(torch, "_scaled_mm", scaled_mm)
    torch.testing.assert_close(qlinear(x, q, s, "fp8"), got.to(x.dtype))
    assert calls == [(grouped_fp8.FP8_DTYPE, (64, 48), (1, 64), (10, 1), (1, 48), torch.bfloat16)]  # column-major B


def test_a_failing_fp8_gemm_falls_back_to_dequantizing_for_good(monkeypatch, caplog):
    """A GPU or shape PyTorch's fp8 GEMMs refuse costs one warning, not the daemon's answers."""
    from diffill.kernels.qlinear import qlinear, qlinear_reference

    def broken(*args, **kwargs):
        raise RuntimeError("not on this GPU")

    w = experts()
    weights, index = routing(4)
    x = torch.randn(4, H)
    monkeypatch.setattr(grouped_fp8, "_FAILED", [])
    monkeypatch.setattr(grouped_fp8, "fp8_gemms_available", lambda x: not grouped_fp8._FAILED)  # "a Hopper GPU"
    monkeypatch.setattr(torch, "_scaled_grouped_mm", broken, raising=False)
    with caplog.at_level("WARNING"):
        got = fused_moe(x, weights, index, w)
    torch.testing.assert_close(got, fused_moe_reference(x, weights, index, w))
    assert "fp8 GEMMs failed" in caplog.text and grouped_fp8._FAILED
    spec = QuantSpec("fp8", 0)
    q, s = quantize_tensor(torch.randn(8, H) * 0.1, spec, spec.group_for(H))
    monkeypatch.setattr(grouped_fp8, "fp8_linear", broken)  # not even tried once refused
    torch.testing.assert_close(qlinear(x, q, s, "fp8"), qlinear_reference(x, q, s, "fp8"))
