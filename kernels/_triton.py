"""Triton is optional (the `gpu` extra): import it lazily so that the package works without it."""

from __future__ import annotations

import functools
import os

import torch


@functools.cache
def triton_available() -> bool:
    """True when triton imports (it may be absent, or present but broken on this platform) and the user has not
    turned the kernels off with DIFFILL_NO_TRITON=1 (the torch reference paths then run on the GPU too)."""
    if os.environ.get("DIFFILL_NO_TRITON", "") == "1":
        return False
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except Exception:
        return False
    return True


def interpreting() -> bool:
    """TRITON_INTERPRET=1 runs Triton kernels on the CPU with numpy (tests only: slow)."""
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def use_triton(*tensors: torch.Tensor) -> bool:
    """Kernels run on CUDA tensors when triton is there; everything else takes the torch reference path."""
    return all(t.is_cuda for t in tensors) and triton_available()  # CPU tensors never import triton
