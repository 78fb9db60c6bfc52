"""A served model with the embedded one beside it: while the server fails, completions come from the embedded
model; a probe with backoff finds the server again.

A server fails in ways a local model does not (it goes away, restarts, times out, answers 5xx). The user's
completions must not stop meanwhile, nor the daemon hammer a server that is down: the first failure switches to
the embedded model (loaded beside the served one ahead of time, so the switch costs no load) and starts one probe
thread, which asks the server for a one-token canvas after growing pauses; the first answer switches back. The editor's
status says which model answers and why (diffill/status, a message on each switch).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("diffill")

# Pauses between probes of a server that is down (the last repeats): its return is seen within 4 s plus a
# probe's time (within 10 s of its return: docs/server.md), and a probe every 4 s costs a server nothing.
BACKOFF_S = (0.25, 0.5, 1.0, 2.0, 4.0)


class Failover:
    """Which engine answers: the served one, or the embedded one while the server is down (`down`: why)."""

    def __init__(
        self,
        served: Any,
        fallback: Callable[[], Any],
        probe: Callable[[], object],
        report: Callable[[str | None], None],
        backoff: tuple[float, ...] = BACKOFF_S,
    ) -> None:
        self.served = served
        self._make_fallback = fallback
        self._fallback: Any = None
        self._probe = probe
        self._report = report  # called with the reason when the server goes down, with None when it is back
        self._backoff = backoff
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.down: str | None = None
        self.switches = 0  # times the answers moved to the embedded model (diffill/status)

    @property
    def fallback_loaded(self) -> Any:
        """The embedded engine if it is loaded, else None (settings changes reach it)."""
        return self._fallback

    def fallback(self) -> Any:
        """The embedded engine, loaded on first need (`warm` loads it ahead)."""
        with self._lock:
            if self._fallback is None:
                self._fallback = self._make_fallback()
            return self._fallback

    def warm(self) -> None:
        try:
            self.fallback()
        except Exception:  # the served model works without it; a later failure tries again
            log.exception("loading the embedded fallback")

    def engine(self) -> Any:
        return self.served if self.down is None else self.fallback()

    def answer(self, ask: Callable[[Any], Any]) -> Any:
        """`ask(engine)` of the engine that answers now; a server failure moves this answer, and the next ones, to
        the embedded model."""
        from diffill.model.vllm_server import ServerError

        engine = self.engine()
        if engine is not self.served:
            return ask(engine)
        try:
            return ask(engine)
        except ServerError as exc:
            self.failed(str(exc))
            return ask(self.fallback())

    def failed(self, reason: str) -> None:
        """The server failed a request: answers move to the embedded model and one probe looks for its return."""
        with self._lock:
            if self.down is not None or self._stop.is_set():
                return
            self.down = reason
            self.switches += 1
        log.warning("server down (%s): the embedded model answers meanwhile", reason)
        self._report(reason)
        threading.Thread(target=self._wait_for_server, name="diffill-probe", daemon=True).start()

    def _wait_for_server(self) -> None:
        if wait_for(self._probe, self._stop, self._backoff):
            with self._lock:
                self.down = None
            log.info("server back: it answers again")
            self._report(None)

    def close(self) -> None:
        """Stops the probe (a new model replaces this one)."""
        self._stop.set()


def wait_for(probe: Callable[[], object], stop: threading.Event, backoff: tuple[float, ...] = BACKOFF_S) -> bool:
    """Calls `probe` after each pause of `backoff` (its last repeating) until it returns without raising: True; or
    False once `stop` is set."""
    for attempt in itertools.count():
        if stop.wait(backoff[min(attempt, len(backoff) - 1)]):
            return False
        try:
            probe()
        except Exception as exc:
            log.debug("server still down: %s", exc)
            continue
        return True
