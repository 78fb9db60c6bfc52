"""One generation per document: a newer request, a cancel or an edit stops the older one between steps.

pygls can only cancel work that has not started; the model runs in a worker thread, so each generation gets
a token whose flag the sampler checks between denoising steps.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

BACKGROUND_NICE = 10  # what background work (the workspace index) adds to its thread's niceness


def lower_priority() -> None:
    """Lowers the calling thread's scheduling priority, where the system has per-thread niceness (Linux): background
    work then takes the cores the completions leave."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE))
    except (AttributeError, OSError):  # no per-thread priorities here, or not allowed
        pass


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def __call__(self) -> bool:
        return self._event.is_set()


class Scheduler:
    def __init__(self) -> None:
        # One model worker: generations queue behind each other, and stale ones drop out at their first step.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="diffill-model")
        self._tokens: dict[str, CancelToken] = {}
        self._lock = threading.Lock()
        self._last = time.monotonic()  # when a generation last started or ended
        # Told True when the first generation starts and False when the last one ends: background work steps aside.
        self.on_busy: list[Callable[[bool], None]] = []

    def start(self, uri: str) -> CancelToken:
        """A fresh token for `uri`, cancelling the one in flight."""
        token = CancelToken()
        with self._lock:
            old = self._tokens.get(uri)
            became_busy = not self._tokens
            self._tokens[uri] = token
            self._last = time.monotonic()
        if old is not None:
            old.cancel()
        if became_busy:
            self._tell(True)
        return token

    def _tell(self, busy: bool) -> None:
        for listener in self.on_busy:
            try:
                listener(busy)
            except Exception:  # background work's trouble is never the completion's
                pass

    def cancel(self, uri: str) -> None:
        with self._lock:
            token = self._tokens.pop(uri, None)
            idle = token is not None and not self._tokens
        if token is not None:
            token.cancel()
        if idle:
            self._tell(False)

    def finish(self, uri: str, token: CancelToken) -> None:
        with self._lock:
            ended = self._tokens.get(uri) is token
            if ended:
                del self._tokens[uri]
            self._last = time.monotonic()
            idle = ended and not self._tokens
        if idle:
            self._tell(False)

    def busy(self, uri: str) -> bool:
        """Whether a generation for `uri` is in flight."""
        with self._lock:
            return uri in self._tokens

    def in_flight(self) -> int:
        with self._lock:
            return len(self._tokens)

    def quiet_for(self) -> float:
        """Seconds since a generation last started or ended; 0 while one is in flight."""
        with self._lock:
            return 0.0 if self._tokens else time.monotonic() - self._last

    def shutdown(self) -> None:
        with self._lock:
            tokens = list(self._tokens.values())
            self._tokens.clear()
        for t in tokens:
            t.cancel()
        self.executor.shutdown(wait=False, cancel_futures=True)
