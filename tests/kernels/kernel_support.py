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
