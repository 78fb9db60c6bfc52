"""Tile sizes for the quantized matmul kernels (fixed heuristics, not autotuned yet)."""

from __future__ import annotations


def k_block(group: int, k: int) -> int | None:
    """A K tile that never straddles a quantization group (None: no such tile >= 16, use the torch path)."""
    if group == k:
        return 64
    for bk in (64, 32, 16):
        if group % bk == 0:
            return bk
    return None
