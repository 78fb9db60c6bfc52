"""What every part of `diffill bench gpu` shares: where it runs, on which config, with which inputs, how a figure
is timed (the median of synchronised runs; the copy bandwidth that is the roofline) and how the results file is
written.

One place, so that the step measurement, the profile tables and the kernel table build the same target (the GPU
with the 26B-A4B, or the CPU with a tiny config on a dry run) and wait for the device the same way.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from diffill.model.config import DiffusionGemmaConfig

from .roofline import bytes_per_s

TINY = dict(
    vocab_size=1024, hidden_size=128, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=32, global_head_dim=64, num_global_key_value_heads=1, num_experts=8,
    top_k_experts=2, moe_intermediate_size=64, sliding_window=64,
)  # fmt: skip


def target(dry_run: bool, **config_kw: Any) -> tuple[torch.device, DiffusionGemmaConfig, torch.dtype]:
    """Where a measurement runs: the GPU with the full 26B-A4B config in bf16, or (dry run) the CPU with the tiny
    config in fp32, which checks the script without a GPU."""
    if dry_run:
        return torch.device("cpu"), DiffusionGemmaConfig(**TINY, **config_kw), torch.float32
    if not torch.cuda.is_available():
        raise RuntimeError("bench gpu needs a CUDA device (use --dry-run to check the script on the CPU)")
    return torch.device("cuda"), DiffusionGemmaConfig(**config_kw), torch.bfloat16


def inputs(
    config: DiffusionGemmaConfig, prompt: int, canvas: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same random prompt ids [1, prompt] and canvas ids [1, canvas] for every measurement."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, config.vocab_size, (1, prompt), generator=g).to(device)
    x0 = torch.randint(0, config.vocab_size, (1, canvas), generator=g).to(device)
    return ids, x0


def write(out_path: str | Path, res: dict[str, Any] | str) -> None:
    """The results file (its folder made): JSON for a dict, else the text as it is."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(res if isinstance(res, str) else json.dumps(res, indent=2) + "\n", encoding="utf-8")


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
