"""Timing for `diffill bench gpu`: the median of synchronised runs, and the copy bandwidth that is the roofline.

One place for how a figure is timed, so that every measurement (our step, transformers' step, the kernel table)
waits for the device the same way and reports the same statistic.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

from .roofline import bytes_per_s


def sync(device: torch.device) -> None:
    """Waits for the work queued on a CUDA device (nothing to wait for on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], reps: int, device: torch.device, warmup: int = 1) -> float:
    """Median milliseconds of `fn` over `reps` runs after `warmup` runs (synchronised around each run)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def copy_bandwidth(device: torch.device, nbytes: int, reps: int) -> float:
    """Bytes/s of a device-to-device copy (read + write counted), the practical HBM roofline."""
    src = torch.empty(nbytes // 2, dtype=torch.float16, device=device).normal_()
    dst = torch.empty_like(src)
    ms = timed(lambda: dst.copy_(src), reps, device, warmup=2)
    return bytes_per_s(2 * nbytes, ms)
