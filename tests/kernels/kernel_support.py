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
    """Elementwise 1e-4 under the interpreter (numpy fp32); on a GPU, tl.dot takes fp32 operands as TF32 (10-bit
    mantissa), so the check there is the relative norm of the error against TF32's ~3e-4 (METHOD.md: 'tf32 ... near
    3e-4'), with a factor of 4 for two chained products."""
    got = got.float().cpu()
    want = want.float().cpu()
    assert got.shape == want.shape
    if device() == "cpu":
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    else:
        assert torch.isfinite(got).all()
        err = float((got - want).norm() / want.norm())
        assert err < 1.2e-3, err
