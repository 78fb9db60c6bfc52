"""`diffill bench cost`: what one completion costs with a model of the real 26B-A4B shape (random weights), on the
machine at hand.

The whole 26B stack does not fit a laptop's memory, and every layer of one type costs what the others of that type
cost, so the run builds the real widths (embedding and head over the whole vocabulary, experts, attention) with one
layer of each attention type, times each layer apart (forward hooks; the CPU runs synchronously), and scales the
layers to the real depth: total = rest + n_sliding * sliding + n_full * full. What it reports is what a completion
is made of: the first prompt's prefill, a keystroke's follow-up prefill (the tokens `diffill bench prompts` says a
keystroke re-encodes), and one denoise step (self-conditioning input, decoder pass, head) per canvas width.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from diffill.model.config import DiffusionGemmaConfig
from diffill.model.random_weights import random_quantized_model

from .gpu.harness import write

LAYER_KINDS = ("sliding_attention", "full_attention")


class LayerClock:
    """Seconds spent in each layer of `net` during the last timed call (hooks around each layer's forward)."""

    def __init__(self, net: torch.nn.Module, kinds: Sequence[str]):
        self.kinds = list(kinds)
        self.spent = [0.0] * len(self.kinds)
        self._started = [0.0] * len(self.kinds)
        for i, layer in enumerate(net.layers):
            layer.register_forward_pre_hook(lambda *_, i=i: self._start(i))
            layer.register_forward_hook(lambda *_, i=i: self._stop(i))

    def _start(self, i: int) -> None:
        self._started[i] = time.perf_counter()

    def _stop(self, i: int) -> None:
        self.spent[i] += time.perf_counter() - self._started[i]

    def scaled_ms(self, fn: Callable[[], object], depth: dict[str, int], reps: int) -> dict[str, float]:
        """Milliseconds of a call of `fn` (the median of `reps` after one warm-up call of the same shape): as run,
        the part outside the layers, and with each layer kind repeated `depth[kind]` times."""
        fn()
        runs = []
        for _ in range(reps):
            self.spent = [0.0] * len(self.kinds)
            t0 = time.perf_counter()
            fn()
            total = time.perf_counter() - t0
            per_kind = {
                kind: sum(s for s, k in zip(self.spent, self.kinds, strict=True) if k == kind) for kind in depth
            }
            rest = total - sum(self.spent)
            scaled = rest + sum(depth[kind] * per_kind[kind] for kind in depth)
            runs.append({"measured_ms": total * 1e3, "rest_ms": rest * 1e3, "scaled_ms": scaled * 1e3})
        return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def run(
    prompt: int = 512,
    follow_up: int = 32,
    canvases: Sequence[int] = (32, 256),
    steps: Sequence[int] = (4, 16),
    dtype: str = "float32",
    scheme: str | None = None,
    threads: int | None = None,
    reps: int = 3,
    shape: dict[str, Any] | None = None,
    out_path: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Times prefill, follow-up prefill and a denoise step per canvas width on one layer of each kind at the real
    widths, scaled to the real depth; `shape` overrides the 26B-A4B's config fields (the tests' small shape)."""
    if threads:
        torch.set_num_threads(threads)
    real = DiffusionGemmaConfig(**(shape or {}), canvas_length=max(canvases))
    depth = {kind: real.layer_types.count(kind) for kind in LAYER_KINDS}
    built = DiffusionGemmaConfig(
        **{**(shape or {}), "num_hidden_layers": len(LAYER_KINDS), "layer_types": list(LAYER_KINDS)},
        canvas_length=max(canvases),
    )
    t0 = time.perf_counter()
    torch.manual_seed(0)
    net = random_quantized_model(built, scheme, "cpu", getattr(torch, dtype))
    clock = LayerClock(net, built.layer_types)
    res: dict[str, Any] = {
        "device": "cpu", "threads": torch.get_num_threads(), "dtype": dtype, "scheme": scheme or "none",
        "layers": real.num_hidden_layers, "depth": depth, "vocab": real.vocab_size, "hidden": real.hidden_size,
        "prompt": prompt, "follow_up": follow_up, "build_s": round(time.perf_counter() - t0, 1),
    }  # fmt: skip
    log(f"built one layer of each kind at the real widths in {res['build_s']} s; scaled to {depth}")
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, real.vocab_size, (1, prompt + follow_up), generator=g)
    with torch.inference_mode():
        res["prefill"] = clock.scaled_ms(lambda: net.encode(ids[:, :prompt], net.new_cache()), depth, reps)
        log(f"prefill of {prompt} tokens: {res['prefill']['scaled_ms']:.0f} ms")
        cache = net.new_cache()
        net.encode(ids[:, :prompt], cache)
        follow = clock.scaled_ms(lambda: net.encode(ids[:, prompt:], copy.deepcopy(cache)), depth, reps)
        res["follow_up_prefill"] = follow
        log(f"follow-up prefill of {follow_up} tokens: {follow['scaled_ms']:.0f} ms")
        for width in canvases:
            x = torch.randint(0, real.vocab_size, (1, width), generator=g)
            prev = net.decode(x, cache)  # the first step has no self-conditioning input; the others do
            step = clock.scaled_ms(lambda x=x, prev=prev: net.decode(x, cache, prev), depth, reps)
            res[f"step_canvas_{width}"] = step
            for n in steps:
                res[f"completion_ms_canvas_{width}_{n}_steps"] = follow["scaled_ms"] + n * step["scaled_ms"]
            line = ", ".join(f"{n} steps {res[f'completion_ms_canvas_{width}_{n}_steps'] / 1e3:.1f} s" for n in steps)
            log(f"canvas {width}: one step {step['scaled_ms']:.0f} ms; a keystroke's completion: {line}")
    if out_path:
        write(out_path, res)
    return res
