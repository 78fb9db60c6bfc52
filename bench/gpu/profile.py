"""`diffill bench gpu --profile`: where a step's time goes, as torch profiler tables of one denoise step and one
AR token of the same int4 stack.

Apart from the timed run because it answers another question (which operations and how many kernel launches,
not how long) and is asked for on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from diffill.model.quant import QuantSpec
from diffill.model.random_weights import random_quantized_model

from .harness import inputs, sync, target, write
from .ours import Denoiser, fork

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx")  # the host calls that start a kernel


def kernel_launches(events: Iterable[Any]) -> int:
    """How many kernels the profiled code launched: the calls of the launch functions among averaged events
    (each with a `key` and a `count`)."""
    return sum(e.count for e in events if e.key in LAUNCHES)


def profile_tables(out_path: str | Path, dry_run: bool = False, canvas: int = 256, prompt: int = 512) -> str:
    """Where a step's time goes: torch profiler tables (by device time and by host time, kernel launches counted)
    of one denoise step and one AR token of the same int4 stack, written to `out_path` and returned."""
    from torch.profiler import ProfilerActivity, profile

    device, config, dtype = target(dry_run, canvas_length=canvas)
    torch.manual_seed(0)
    net = random_quantized_model(config, QuantSpec.of("int4"), device, dtype)
    ids, x0 = inputs(config, prompt, canvas, device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sort = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    parts = []
    with torch.inference_mode():
        cache = net.new_cache()
        net.encode(ids, cache)
        den = Denoiser(net, cache, torch.arange(prompt, prompt + canvas, device=device)[None], fused_soft=True)
        _, prev = den.step(x0, None, 0.8, 0)
        ar_cache = fork(cache)
        tok = ids[:, -1:]
        for name, fn in (
            ("denoise step", lambda: den.step(x0, prev, 0.7, 1)),
            ("AR token", lambda: net.head(net.encode(tok, ar_cache)[:, -1:]).argmax(-1)),
        ):
            fn()  # compiled and warm
            sync(device)
            with profile(activities=activities) as prof:
                fn()
                sync(device)
            events = prof.key_averages()
            parts.append(f"== {name}: {kernel_launches(events)} kernel launches\n")
            parts.append(events.table(sort_by=sort, row_limit=30, max_name_column_width=70))
            parts.append(events.table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=70))
    text = "\n".join(parts)
    write(out_path, text)
    return text
