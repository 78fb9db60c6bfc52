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

    def calibrate(self, model: DiffusionModel) -> float:
        """Times the passes a completion makes on this machine (DiffusionModel.time_passes); returns and keeps
        their mean cost in milliseconds."""
        self.ms_per_pass = model.time_passes()
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
