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


def paired(bits: int, bk: int) -> bool:
    """int4 tiles read as even/odd K halves (coalesced byte loads; see triton_qmm.load_weight_pairs), where each
    half still gives tl.dot its minimum of 16 along K. PAIRED_INT4 = False restores the byte-per-nibble reads."""
    return PAIRED_INT4 and bits == 4 and bk >= 32


PAIRED_INT4 = True
