"""`diffill bench gpu --kernels`: the quantized kernels alone at the 26B-A4B's shapes, each way of reading the
weights and each launch shape of a sweep, against the copy bandwidth, and the fastest shapes as a tiles table.

Apart from the step measurement because it times kernels, not the model, and writes what to ship
(kernels/tiles.json) rather than a report of the model's speed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import torch

from diffill.kernels import tiles
from diffill.kernels.grouped_fp8 import fp8_grouped_moe
from diffill.kernels.moe import fused_moe_triton
from diffill.kernels.qlinear import qlinear_triton
from diffill.kernels.tiles import Tiles, table_json
from diffill.model.quant import QuantExperts, QuantLinear, QuantSpec, tile_weights, untile_weights
from diffill.model.random_weights import fill_quantized

from .harness import copy_bandwidth, target, timed, write
from .roofline import bytes_per_s

TOKENS = (1, 16, 256)  # a single token (AR), a short line, a full canvas
Fastest = dict[str, dict[int, tuple[float, Tiles]]]  # kernel -> tokens -> (ms, the launch shape)


def kernel_sweeps(dry_run: bool) -> dict[tuple[str, int], list[Tiles]]:
    """Launch shapes `kernel_table` times per (kernel, tokens): output tiles, warps (Triton's default stages)."""

    if dry_run:
        return {("moe", 16): [Tiles(16, 32), Tiles(32, 64), Tiles(16, 32, split_k=2)],
                ("proj", 16): [Tiles(16, 32), Tiles(1, 32)]}  # fmt: skip
    few = [Tiles(16, bn, w) for bn in (16, 32, 64, 128) for w in (2, 4)]
    split = [Tiles(16, bn, 4, split_k=s) for bn in (32, 64) for s in (2, 4)]  # the MoE's down projection split
    gemv = [Tiles(1, bn, w) for bn in (32, 64, 128, 256) for w in (2, 4)]  # qlinear's matrix-vector kernel
    moe_many = [Tiles(bm, bn, w) for bm in (16, 32, 64) for bn in (32, 64, 128) for w in (4, 8)]
    proj_many = [Tiles(bm, bn, w) for bm in (32, 64, 128) for bn in (64, 128) for w in (4, 8)]
    return {("moe", 1): few + split, ("moe", 16): few + split, ("moe", 256): moe_many,
            ("proj", 1): few + gemv, ("proj", 16): few, ("proj", 256): proj_many}  # fmt: skip


def tile_label(t: Tiles) -> str:
    """A launch shape as the table names it (the split only when the reduction is split)."""
    return f"bm={t.bm} bn={t.bn} warps={t.warps}" + (f" split={t.split_k}" if t.split_k > 1 else "")


def table_row(name: str, tokens: int, variant: str, ms: float, moved: float, bandwidth: float) -> str:
    """One timed row: milliseconds, the bytes moved per second (GB/s) and that rate's share of the copy bandwidth."""
    rate = bytes_per_s(moved, ms)
    return f"{name:<6} {tokens:>6} {variant:<24} {ms:>9.4f} {rate / 1e9:>7.0f} {100 * rate / bandwidth:>6.1f}%"


def failed_row(name: str, tokens: int, variant: str, exc: BaseException) -> str:
    """The row of a variant that could not run, with the kind of error."""
    return f"{name:<6} {tokens:>6} {variant:<24} failed: {type(exc).__name__}"


def keep_fastest(best: Fastest, name: str, tokens: int, ms: float | None, t: Tiles) -> None:
    """Records launch shape `t` for (name, tokens) if it ran (`ms` not None) faster than the one recorded."""
    if ms is not None and ms < best.setdefault(name, {}).get(tokens, (float("inf"), t))[0]:
        best[name][tokens] = (ms, t)


def kernel_table(out_path: str | Path, dry_run: bool = False) -> str:
    """The quantized kernels alone at the 26B-A4B's shapes (one MoE layer, one attention projection) for 1, 16 and
    256 tokens: each way of reading int4 tiles (kernels/tiles.py PAIRED_INT4), the weights tile-major
    (DIFFILL_TILE_MAJOR), the fp8 experts through PyTorch's
    grouped GEMM (kernels/grouped_fp8.py), then the launch shapes of `kernel_sweeps`, as packed bytes moved per
    second against the copy bandwidth: one device call compares the variants and says which tiles to ship.
    Written to `out_path` and returned; the fastest shape per (kernel, tokens) goes to `out_path` with the suffix
    .json, a kernels/tiles.json to ship (or to point DIFFILL_TILES at)."""

    device, config, dtype = target(dry_run)
    reps = 1 if dry_run else 20
    spec = QuantSpec.of("int4")
    bw = copy_bandwidth(device, 1 << (20 if dry_run else 30), reps)
    e, h = config.num_experts, config.hidden_size
    experts = QuantExperts(e, h, config.moe_intermediate_size, spec, device=device)
    proj = QuantLinear(h, config.num_attention_heads * config.head_dim, spec, device=device)
    for module in (experts, proj):
        fill_quantized(module, spec, device)
    expert_bytes = sum(b.nbytes for b in experts.buffers()) / e
    proj_bytes = sum(b.nbytes for b in proj.buffers())
    lines = [f"copy bandwidth {bw / 1e9:.0f} GB/s; int4; {e} experts top-{config.top_k_experts}, hidden {h}",
             f"{'kernel':<6} {'tokens':>6} {'variant':<24} {'ms':>9} {'GB/s':>7} {'% copy':>7}"]  # fmt: skip
    g = torch.Generator().manual_seed(0)
    inputs = {}
    for tokens in TOKENS:
        x = torch.randn(tokens, h, generator=g).to(device, dtype)
        weights, index = torch.rand(tokens, e, generator=g).softmax(-1).topk(config.top_k_experts, dim=-1)
        inputs[tokens] = (x, weights.to(device), index.to(device), index.unique().numel() * expert_bytes)

    def row(name: str, tokens: int, variant: str, fn: Callable[[], object], moved: float) -> float | None:
        try:
            ms = timed(fn, reps, device, warmup=2)
        except Exception as exc:  # a launch shape the compiler refuses (shared memory, registers)
            lines.append(failed_row(name, tokens, variant, exc))
            return None
        lines.append(table_row(name, tokens, variant, ms, moved, bw))
        return ms

    default = tiles.PAIRED_INT4
    use_kernels = device.type == "cuda"  # the dry run checks the table on the CPU's torch paths
    with torch.inference_mode():
        try:
            for tokens, (x, weights, index, moe_bytes) in inputs.items():
                for flag in (True, False):
                    tiles.PAIRED_INT4 = flag
                    row("moe", tokens, f"paired={flag}", functools.partial(experts, x, weights, index), moe_bytes)
                    row("proj", tokens, f"paired={flag}", functools.partial(proj, x), proj_bytes)
        finally:
            tiles.PAIRED_INT4 = default
        for module in (experts, proj):  # the same weights tile-major (model.quant.tile_weights)
            tile_weights(module)
        for tokens, (x, weights, index, moe_bytes) in inputs.items():
            row("moe", tokens, "tile-major", functools.partial(experts, x, weights, index), moe_bytes)
            row("proj", tokens, "tile-major", functools.partial(proj, x), proj_bytes)
        for module in (experts, proj):
            untile_weights(module)
        fp8 = QuantExperts(e, h, config.moe_intermediate_size, QuantSpec.of("fp8"), device=device)
        fill_quantized(fp8, fp8.spec, device)
        fp8_bytes = sum(b.nbytes for b in fp8.buffers()) / e
        for tokens, (x, weights, index, _) in inputs.items():
            moved = index.unique().numel() * fp8_bytes
            row(
                "moe", tokens, "fp8 grouped", functools.partial(fp8_grouped_moe, x, weights, index, fp8.packed()), moved
            )
        del fp8
        packed = experts.packed()
        best: Fastest = {}
        for (name, tokens), variants in kernel_sweeps(dry_run).items():
            x, weights, index, moe_bytes = inputs[tokens]
            for t in variants:
                label = tile_label(t)
                if name == "moe":
                    fn = functools.partial(fused_moe_triton, x, weights, index, packed, t)
                    cpu = functools.partial(experts, x, weights, index)
                    ms = row(name, tokens, label, fn if use_kernels else cpu, moe_bytes)
                else:
                    fn = functools.partial(qlinear_triton, x, proj.qweight, proj.scales, "int4", t)
                    ms = row(name, tokens, label, fn if use_kernels else functools.partial(proj, x), proj_bytes)
                keep_fastest(best, name, tokens, ms, t)
    text = "\n".join(lines) + "\n"
    write(out_path, text)
    chosen = {name: {tokens: t for tokens, (_, t) in rows.items()} for name, rows in best.items()}
    write(Path(out_path).with_suffix(".json"), table_json(chosen) + "\n")
    return text
