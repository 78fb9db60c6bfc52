"""What one completion cost: the model passes it made, the decoder drafts the encoder verified, and where its
time and its passes went. `diffill eval` and `diffill bench lsp` report these; the daemon keeps their sums (diffill/status)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from diffill.model.session import DraftCounts


@dataclass
class Cost:
    passes: int = 0  # sequential model calls (an encoder or a decoder pass), the prompt's own included
    drafts: int = 0  # decoder drafts verified by the encoder (self-speculative decoding)
    accepted: int = 0  # draft tokens the encoder accepted
    lookups: int = 0  # drafts from the n-gram evidence verified by the encoder (they cost no pass)
    looked_up: int = 0  # their tokens the encoder accepted
    ms: dict[str, float] = field(default_factory=dict)  # stage -> milliseconds
    stage_passes: dict[str, int] = field(default_factory=dict)  # stage -> the model passes it made
    # the model's pass count so far (the engine sets it): stages count their passes by it
    pass_count: Callable[[], int] | None = field(default=None, repr=False, compare=False)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        passes = self.pass_count() if self.pass_count is not None else 0
        try:
            yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - start) * 1e3
            if self.pass_count is not None:
                self.stage_passes[name] = self.stage_passes.get(name, 0) + self.pass_count() - passes

    def record(self, name: str, since: float) -> None:
        """Stage `name` took the time since `since` (time.perf_counter)."""
        self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - since) * 1e3

    def count_drafts(self, counts: DraftCounts | Cost) -> None:
        """Adds what a session's speculative rounds did (model.session.DraftCounts, or another cost's)."""
        self.drafts += counts.drafts
        self.accepted += counts.accepted
        self.lookups += counts.lookups
        self.looked_up += counts.looked_up

    def add(self, other: Cost) -> None:
        """Sums `other` into this one (the daemon's running totals)."""
        self.passes += other.passes
        self.count_drafts(other)
        for name, ms in other.ms.items():
            self.ms[name] = self.ms.get(name, 0.0) + ms
        for name, passes in other.stage_passes.items():
            self.stage_passes[name] = self.stage_passes.get(name, 0) + passes

    @property
    def accepted_per_draft(self) -> float:
        return self.accepted / self.drafts if self.drafts else 0.0
