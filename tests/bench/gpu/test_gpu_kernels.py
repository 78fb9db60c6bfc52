"""`bench gpu --kernels`: the rows' arithmetic (GB/s and share of the copy bandwidth), the launch-shape labels,
the fastest shape kept per (kernel, tokens), the sweeps, and the dry run's table and shipped tiles."""

import json

from diffill.bench.gpu.kernels import (
    TOKENS,
    failed_row,
    keep_fastest,
    kernel_sweeps,
    kernel_table,
    table_row,
    tile_label,
)
from diffill.kernels import tiles
from diffill.kernels.tiles import Tiles


def test_tile_label_names_the_split_only_when_split():
    assert tile_label(Tiles(16, 64, 8)) == "bm=16 bn=64 warps=8"
    assert tile_label(Tiles(32, 128, 4, split_k=2)) == "bm=32 bn=128 warps=4 split=2"


def test_table_row_rate_and_share_of_copy():
    row = table_row("moe", 16, "paired=True", ms=0.5, moved=1e9, bandwidth=4e12)  # 1 GB in 0.5 ms = 2 TB/s
    assert row.split() == ["moe", "16", "paired=True", "0.5000", "2000", "50.0%"]
    failed = failed_row("proj", 1, "bm=1 bn=32", ValueError("x"))
    assert failed.split() == ["proj", "1", "bm=1", "bn=32", "failed:", "ValueError"]


def test_keep_fastest_skips_failures_and_keeps_the_minimum():
    a, b, c, d = Tiles(16, 16), Tiles(16, 32), Tiles(32, 32), Tiles(64, 64)
    best = {}
    for ms, t in ((2.0, a), (None, b), (1.0, c), (1.5, d)):
        keep_fastest(best, "moe", 16, ms, t)
    keep_fastest(best, "proj", 1, None, a)  # every shape failed: nothing to ship
    assert best == {"moe": {16: (1.0, c)}}


def test_sweeps_cover_every_kernel_and_size_once():
    full = kernel_sweeps(False)
    assert set(full) == {(k, t) for k in ("moe", "proj") for t in TOKENS}
    for variants in full.values():
        assert len(set(variants)) == len(variants)
    split = {key for key, variants in full.items() if any(t.split_k > 1 for t in variants)}
    assert split == {("moe", 1), ("moe", 16)}  # split-K only for the MoE's few-token down projection
    gemv = {key for key, variants in full.items() if any(t.bm == 1 for t in variants)}
    assert gemv == {("proj", 1)}  # the matrix-vector kernel only for one token
    assert set(kernel_sweeps(True)) <= set(full)


def test_kernel_table_dry_run_times_every_variant_and_ships_the_fastest(tmp_path):
    out = tmp_path / "kernels.txt"
    text = kernel_table(out, dry_run=True)
    assert out.read_text() == text
    rows = [r.split() for r in text.splitlines()[2:]]
    parsed = [(r[0], int(r[1]), " ".join(r[2:-3]), float(r[-3])) for r in rows]
    assert all(ms > 0 for *_, ms in parsed)  # each row timed, none failed
    reads = {(k, t, v) for k, t, v, _ in parsed if v.startswith("paired=")}
    assert reads == {(k, t, f"paired={p}") for k in ("moe", "proj") for t in TOKENS for p in (True, False)}
    assert {(k, t) for k, t, v, _ in parsed if v == "tile-major"} == {(k, t) for k in ("moe", "proj") for t in TOKENS}
    assert {(k, t) for k, t, v, _ in parsed if v == "fp8 grouped"} == {("moe", t) for t in TOKENS}
    sweeps = kernel_sweeps(True)
    swept = {(k, t, v): ms for k, t, v, ms in parsed if v.startswith("bm=")}
    assert set(swept) == {(k, t, tile_label(s)) for (k, t), shapes in sweeps.items() for s in shapes}
    assert tiles.PAIRED_INT4  # the default is back after the table
    chosen = tiles.parse_table(json.loads(out.with_suffix(".json").read_text()))
    for (kernel, tokens), shapes in sweeps.items():
        assert chosen[kernel][tokens] in shapes
        times = [ms for (k, t, _), ms in swept.items() if (k, t) == (kernel, tokens)]
        assert swept[(kernel, tokens, tile_label(chosen[kernel][tokens]))] == min(times)  # the fastest shipped
