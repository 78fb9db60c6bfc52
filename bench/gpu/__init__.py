"""`diffill bench gpu`: the full-size 26B-A4B text stack at int4 on one GPU, random weights, in one run.

Reports ms per denoise step on a 256-token canvas (decoder pass + fused sampler step + fused self-conditioning
input), ms per canvas at 16/32/48 steps and tokens/s, against (a) the HBM roofline of a step from a copy-bandwidth
measurement made in the same run, (b) autoregressive decoding of the same int4 backbone at batch 1 (one token per
forward), (c) transformers' reference step in bf16 (`ref_layers` layers; fewer than 30 are scaled to 30 and the
report says so). Nothing is downloaded or installed. `dry_run` runs every part on a tiny config on the CPU
(the torch reference paths) so that the script itself is tested without a GPU.

This module drives the run and dispatches the command; the parts live beside it in this package: roofline (the
bytes a step moves), harness (target, inputs, timing, copy bandwidth, results file), ours (our step, eager and
graphed), reference (transformers' step), report (the report's lines), profile (--profile) and kernels
(--kernels). Their public names are importable from here too.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from diffill.model.quant import QuantSpec

from .harness import TINY, copy_bandwidth, target, timed, write
from .kernels import kernel_sweeps, kernel_table
from .ours import Denoiser, measure_ours
from .profile import profile_tables
from .reference import transformers_step_ms
from .report import summary
from .roofline import step_bytes

__all__ = [
    "DRY_RUN_SIZES", "TINY", "Denoiser", "copy_bandwidth", "kernel_sweeps", "kernel_table", "main",
    "profile_tables", "run", "step_bytes", "summary", "timed", "transformers_step_ms",
]  # fmt: skip

DRY_RUN_SIZES: dict[str, Any] = dict(canvas=32, prompt=16, steps=(2, 3), ar_tokens=2)


def run(
    out_path: str | Path,
    dry_run: bool = False,
    canvas: int = 256,
    prompt: int = 512,
    steps: tuple[int, ...] = (16, 32, 48),
    ar_tokens: int = 32,
    reps: int = 10,
    ref_layers: int = 30,
    scheme: str = "int4",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Runs every measurement and writes them as JSON to `out_path`; returns them."""
    device, config, dtype = target(dry_run, canvas_length=canvas)
    copy_bytes = 1 << (20 if dry_run else 30)
    if dry_run:
        reps, ref_layers = 1, min(ref_layers, config.num_hidden_layers)
    spec = QuantSpec.of(scheme)
    t_start = time.perf_counter()
    res: dict[str, Any] = {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else platform.processor() or "cpu",
                           "dry_run": dry_run, "scheme": scheme, "canvas": canvas, "prompt": prompt,
                           "torch": torch.__version__}  # fmt: skip
    bw = copy_bandwidth(device, copy_bytes, reps)
    res["copy_bandwidth_GBps"] = bw / 1e9
    log(f"copy bandwidth: {bw / 1e9:.1f} GB/s")

    res.update(measure_ours(config, spec, device, dtype, canvas, prompt, steps, ar_tokens, reps, bw, log, t_start))
    write(out_path, res)  # kept if the reference step below runs out of time
    if device.type == "cuda":
        torch.cuda.empty_cache()  # the int4 model is gone: room for the bf16 reference
    # (c) transformers, bf16 (ref_layers 0: not measured, e.g. a second run that compares weight formats)
    try:
        if ref_layers <= 0:
            raise RuntimeError("not asked for (--ref-layers 0)")
        res["transformers"] = transformers_step_ms(config, ref_layers, canvas, prompt, max(1, reps // 2), device)
        res["step_speedup_vs_transformers"] = res["transformers"]["step_ms_scaled_to_all_layers"] / res["step_ms"]
    except Exception as exc:  # missing transformers (dev extra), or out of memory
        res["transformers"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    res["wall_s"] = time.perf_counter() - t_start
    write(out_path, res)
    for line in summary(res):
        log(line)
    log(f"results written to {out_path}")
    return res


def main(
    dry_run: bool,
    out: str,
    ref_layers: int = 30,
    reps: int = 10,
    profile: str | None = None,
    kernels: str | None = None,
    scheme: str = "int4",
    prompt: int | None = None,
) -> int:
    """Entry point of `diffill bench gpu` (and bench/gpu.sh). `prompt`: the prompt's tokens (default 512; the
    lengths of a model's own prompts come from `diffill bench prompts`)."""
    if kernels:
        print(kernel_table(kernels, dry_run), end="")
        return 0
    if profile:
        print(profile_tables(profile, dry_run, **({"canvas": 32, "prompt": 16} if dry_run else {})))
        return 0
    sizes = dict(DRY_RUN_SIZES) if dry_run else {}
    if prompt is not None:
        sizes["prompt"] = prompt
    run(out, dry_run=dry_run, ref_layers=ref_layers, reps=reps, scheme=scheme, **sizes)
    return 0
