"""Tile sizes for the quantized matmul kernels: fixed heuristics, not autotuned (compiling variants on the user's
first request would cost seconds); `diffill bench gpu --kernels` times the alternatives on a GPU to set them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tiles:
    """One kernel launch's output tile (bm tokens x bn features) and shape (warps, software-pipeline stages)."""

    bm: int
    bn: int
    warps: int = 4
    stages: int = 3


MOE_TILES = Tiles(16, 64)  # rows of a block are one expert's slots: 256 tokens x top-8 / 128 experts = 16 a block


def qlinear_tiles(m: int) -> Tiles:
    return Tiles(16 if m <= 16 else (32 if m <= 32 else 64), 64)


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
