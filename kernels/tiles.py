"""Tile sizes for the quantized matmul kernels, per kernel and token count, as data (kernels/tiles.json).

Not autotuned at run time (compiling variants on the user's first request would cost seconds): `diffill bench gpu
--kernels` sweeps the launch shapes at the real shapes on a GPU and writes the fastest per (kernel, tokens) as a
file of this format; shipping it as kernels/tiles.json (or pointing DIFFILL_TILES at it) makes them the defaults.
A token count takes the entry of the smallest bucket that holds it (the largest for more tokens).
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TILES_FILE = Path(__file__).with_name("tiles.json")


@dataclass(frozen=True)
class Tiles:
    """One kernel launch's output tile (bm tokens x bn features) and shape (warps, software-pipeline stages);
    `split_k` splits the MoE down projection's inputs over that many programs (a few tokens: more of the GPU busy;
    split-K can also lose, so only a sweep picks it)."""

    bm: int
    bn: int
    warps: int = 4
    stages: int = 3
    split_k: int = 1


def _heuristic(kernel: str, m: int) -> Tiles:
    """The shapes before any sweep: MoE blocks of 16 slots (256 tokens x top-8 / 128 experts is 16 a block),
    projections' bm grown with the tokens."""
    if kernel == "moe":
        return Tiles(16, 64)
    return Tiles(16 if m <= 16 else (32 if m <= 32 else 64), 64)


def parse_table(data: Any) -> dict[str, dict[int, Tiles]]:
    """{kernel: {tokens: Tiles}} from the JSON form {"moe": {"16": {"bm": 16, "bn": 64, ...}}, ...}."""
    if not isinstance(data, dict):
        raise ValueError("a tile table is an object of kernels")
    table: dict[str, dict[int, Tiles]] = {}
    for kernel, rows in data.items():
        if not isinstance(rows, dict):
            raise ValueError(f"tiles of {kernel!r}: an object of token counts")
        table[kernel] = {int(tokens): Tiles(**shape) for tokens, shape in rows.items()}
    return table


def table_json(table: dict[str, dict[int, Tiles]]) -> str:
    return json.dumps({k: {str(t): asdict(s) for t, s in sorted(rows.items())} for k, rows in table.items()}, indent=1)


@functools.cache
def shipped_table() -> dict[str, dict[int, Tiles]]:
    """The table in effect: DIFFILL_TILES if set, else kernels/tiles.json, else none (the heuristics)."""
    path = Path(os.environ.get("DIFFILL_TILES") or TILES_FILE)
    if not path.exists():
        return {}
    return parse_table(json.loads(path.read_text()))


def tiles_for(kernel: str, m: int, table: dict[str, dict[int, Tiles]] | None = None) -> Tiles:
    """The launch shape of `kernel` ("moe", "proj") for m tokens."""
    rows = (shipped_table() if table is None else table).get(kernel)
    if not rows:
        return _heuristic(kernel, m)
    buckets = sorted(rows)
    return rows[next((b for b in buckets if b >= m), buckets[-1])]


def qlinear_tiles(m: int) -> Tiles:
    return tiles_for("proj", m)


def moe_tiles(tokens: int) -> Tiles:
    return tiles_for("moe", tokens)


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
# Quantized weights rearranged tile-major at load on a GPU (model.quant.tile_weights): off until a GPU run of
# `bench gpu --kernels` shows it faster (it times both layouts); DIFFILL_TILE_MAJOR=1 turns it on.
TILE_MAJOR = os.environ.get("DIFFILL_TILE_MAJOR", "") == "1"
