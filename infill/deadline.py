"""A completion's deadline (the `latencyBudgetMs` setting), kept by planning model passes on what they cost here.

A pass's cost is measured on the machine the engine runs on, once at load (`PassClock.calibrate`) and then from
every completion (an exponentially weighted mean of milliseconds per pass), so a budget holds on a machine twice
as slow as the one it was set on. Before each further pass of a draft, a denoising step or a speculative round,
the engine asks whether the time left affords it; what it has verified by then is the answer (a shorter answer
that is right is a fine answer).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from diffill.model.api import DiffusionModel

# Milliseconds and passes the engine keeps for what follows its drafts (the cut at doubt's pass, the filters).
RESERVE_MS = 5.0
RESERVE_PASSES = 2


class PassClock:
    """Milliseconds one model pass costs on this machine (None until measured)."""

    def __init__(self, ms_per_pass: float | None = None, weight: float = 0.2) -> None:
        self.ms_per_pass = ms_per_pass
        self.weight = weight  # of each new observation

    def observe(self, ms: float, passes: int) -> None:
        """A completion's model time and passes."""
        if passes <= 0 or ms <= 0:
            return
        per = ms / passes
        self.ms_per_pass = per if self.ms_per_pass is None else (1 - self.weight) * self.ms_per_pass + self.weight * per

    def calibrate(self, model: DiffusionModel, prompt_tokens: int = 64, canvas: int = 16, reps: int = 3) -> float:
        """Times the passes a completion makes (single-token encoder steps, a decoder pass over a canvas) on a
        throwaway prompt; returns and keeps their mean cost in milliseconds."""
        net = model.net
        vocab = net.config.vocab_size
        prompt = [2 + i % (vocab - 2) for i in range(prompt_tokens)]
        graphs = getattr(net, "graphs", None)  # CUDA graphs: time the passes as completions will run them
        cache = graphs.cache if graphs is not None else net.new_cache()
        cache.truncate(0)
        model.ar_drafts(prompt, 2, set(), cache)  # warm-up: first calls allocate
        start, passes = time.perf_counter(), net.passes
        for _ in range(reps):
            model.ar_drafts(prompt, 4, set(), cache)
            model.denoise_step(prompt, canvas, cache)
        self.ms_per_pass = (time.perf_counter() - start) * 1e3 / max(1, net.passes - passes)
        cache.truncate(0)  # (the working cache is left empty for the prompt cache's first owner)
        return self.ms_per_pass


class Deadline:
    """The time left for one completion, from when its request arrived."""

    def __init__(
        self,
        budget_ms: float | None,
        clock: PassClock,
        start: float | None = None,
        now: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.budget_ms = budget_ms
        self.clock = clock
        self.now = now
        self.start = now() if start is None else start

    def left_ms(self) -> float:
        if self.budget_ms is None:
            return math.inf
        return self.budget_ms - RESERVE_MS - (self.now() - self.start) * 1e3

    def affords(self, passes: int = 1) -> bool:
        """Whether `passes` more model passes fit in the time left (always, with no budget or no measure yet)."""
        per = self.clock.ms_per_pass
        return per is None or self.left_ms() >= (passes + RESERVE_PASSES) * per

    def passes_left(self) -> int | None:
        """How many passes fit in the time left (None: no limit)."""
        per = self.clock.ms_per_pass
        left = self.left_ms()
        if per is None or math.isinf(left):
            return None
        return max(0, int(left // per) - RESERVE_PASSES)
