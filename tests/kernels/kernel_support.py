"""Shared markers for the kernel tests (a plain module: conftest.py files cannot be imported by name)."""

import os

import pytest
import torch

from diffill.kernels._triton import triton_available

requires_kernels = pytest.mark.skipif(
    not triton_available() or (os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available()),
    reason="needs triton (pip install triton, the `gpu` extra) and either CUDA or TRITON_INTERPRET=1",
)


def device() -> str:
    """CPU under the interpreter, else the GPU."""
    return "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"


def assert_matches(got: torch.Tensor, want: torch.Tensor) -> None:
    """Elementwise 1e-4 under the interpreter (numpy fp32). On a GPU, tl.dot takes fp32 operands as TF32 (10-bit
    mantissa, ~3e-4 per product), so the check there is the error's norm relative to the reference's: measured on
    an H200 (2026-11-30) under 1.2e-3 for one product (qlinear, soft embedding) and 1.8-2.3e-3 for the MoE's two
    chained products with GeGLU between; 4e-3 passes those and still fails any wrong index or scale (errors ~1)."""
    got = got.detach().float().cpu()
    want = want.detach().float().cpu()
    assert got.shape == want.shape
    if device() == "cpu":
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    else:
        assert torch.isfinite(got).all()
        err = float((got - want).norm() / want.norm())
        assert err < 4e-3, err
