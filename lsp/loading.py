"""Model loading for the server: on a thread of its own (the editor never waits), with progress in the editor.

A model that fails to load is reported with a reason the user can act on; the server keeps serving with the
model it already has, or else falls back to the embedded model, so that completions keep working.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

from diffill.model.server_url import is_server_url

from . import gc_pause
from .failover import Failover, wait_for
from .settings import Settings, connection

if TYPE_CHECKING:
    from pygls.progress import Progress

    from diffill.model.runtime import LoadedModel
    from diffill.model.vllm_server import Connection

log = logging.getLogger("diffill")

PROGRESS_TIMEOUT_S = 5.0  # how long a load's end waits for the editor to have made its progress token


class Client(Protocol):
    """The editor as the session and the loader see it (the language server): messages and progress."""

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    @property
    def work_done_progress(self) -> Progress: ...

    def show(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None: ...

    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic]) -> None: ...


class Host(Protocol):
    """What the loader needs of the session: the settings of now (a queued load takes the latest), whether a
    model serves already, and where a loaded one goes."""

    settings: Settings
    engine: Any
    failover: Failover | None

    def install(self, loaded: LoadedModel) -> None: ...


class ModelLoader:
    """Loads the model the settings name, one load at a time; `state` and `error` are what diffill/status shows."""

    def __init__(self, client: Client, host: Host) -> None:
        self.client = client
        self.host = host
        self.state = "not loaded"
        self._ready = "not loaded"  # the state of the model that loaded last, for when its server is back
        self.error: str | None = None
        self._lock = threading.Lock()
        self.settled = threading.Event()  # set once a load has ended, ready or not (work that can wait waits on it)

    def start(self) -> None:
        threading.Thread(target=self.load, name="diffill-load", daemon=True).start()

    def load(self) -> None:
        from diffill.model.embedded import prefetch_memory

        prefetch_memory(self.host.settings.model)  # on the other core while torch imports (or already built)
        with self._lock:
            token = f"diffill-load-{uuid.uuid4()}"
            source = self.host.settings.model or "embedded model"
            progress = self._progress_begin(token, f"Loading {source}")  # before torch: the editor says so at once
            self.state = "loading"
            try:
                from diffill.model import runtime  # torch: most of the load's time, and it may be missing or broken

                last = [0.0]

                def on_progress(done: int, total: int) -> None:
                    if progress is not None and progress.is_set() and time.monotonic() - last[0] > 0.2:
                        last[0] = time.monotonic()
                        pct = int(100 * done / max(1, total))
                        self.client.work_done_progress.report(token, types.WorkDoneProgressReport(percentage=pct))

                s = self.host.settings
                quant = None if s.quantization == "none" else s.quantization  # "auto": model.runtime decides
                loaded = runtime.load(
                    s.model, s.device, s.threads, on_progress, quant, dtype=s.precision, connection=connection(s)
                )
                self.host.install(loaded)
                self.state = self._ready = _ready_state(loaded, quant)
                self.error = None
                log.info("model %s", self.state)
                if self.host.failover is not None:  # a served model: the embedded one ready beside it
                    self.host.failover.warm()
            except Exception as exc:  # the server stays up; the user sees why
                self.error = _describe(exc)
                log.exception("model load failed")
                self.client.show(f"could not load model {source!r}: {self.error}")
                if self.host.engine is not None:  # keep serving with the model already loaded
                    self.state = "ready (previous model kept)"
                elif self.host.settings.model:
                    self._fall_back()
                    if is_server_url(self.host.settings.model):  # back to the server once it answers
                        self._wait_for_server(connection(self.host.settings))
                else:
                    self.state = "failed"
            finally:
                gc_pause.resume()  # start-up's objects are made: frozen, out of later passes
                self.settled.set()
                if progress is not None and progress.wait(timeout=PROGRESS_TIMEOUT_S):  # (an end needs its begin)
                    self.client.work_done_progress.end(token, types.WorkDoneProgressEnd(message=self.state))

    def _fall_back(self) -> None:
        """The embedded model on the CPU: it needs no download and fits any machine that runs an editor."""
        from diffill.model import runtime

        self.state = "loading (embedded fallback)"
        try:
            settings = self.host.settings
            self.host.install(runtime.load("", "cpu", settings.threads, dtype=settings.precision))
            self.state = "ready (embedded fallback)"
            self.client.show("using the embedded model instead", types.MessageType.Warning)
        except Exception:
            log.exception("embedded fallback failed")
            self.state = "failed"

    def server_report(self, reason: str | None) -> None:
        """What the editor's status says while a served model fails (lsp.failover), and when it answers again."""
        if reason is not None:
            self.state, self.error = "server down: the embedded model answers meanwhile", reason
            self.client.show(f"{reason}; the embedded model answers meanwhile", types.MessageType.Warning)
        else:
            self.state, self.error = self._ready, None
            self.client.show("the server answers again: completions come from it", types.MessageType.Info)

    def _wait_for_server(self, conn: Connection) -> None:
        """A server that could not be reached at load: probed with lsp.failover's backoff, loaded once it answers."""

        def probe() -> None:
            from diffill.model.vllm_server import VllmServer

            if self.host.settings.model != conn.url:
                return  # another model now: the wait ends, and nothing is loaded
            server = VllmServer(conn)
            try:
                server.models()
            finally:
                server.close()

        def wait() -> None:
            if wait_for(probe, threading.Event()) and self.host.settings.model == conn.url:
                self.start()  # (unless the settings name another model by then)

        threading.Thread(target=wait, name="diffill-probe", daemon=True).start()

    def _progress_begin(self, token: str, title: str) -> threading.Event | None:
        """Asks the editor to make a progress `token` and begins it once the editor has: an event set when begun,
        or None where the editor shows no progress. The load goes on meanwhile: waiting on the editor's answer
        would hold back the torch import behind whatever the server's loop is busy with."""
        caps = self.client.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return None
        begun = threading.Event()

        def on_created(*_: Any) -> None:
            try:
                self.client.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, percentage=0))
                begun.set()
            except Exception:
                log.debug("progress not begun", exc_info=True)

        try:
            self.client.work_done_progress.create(token, callback=on_created)
        except Exception:
            log.debug("progress not available", exc_info=True)
            return None
        return begun


def _ready_state(loaded: LoadedModel, quant: str | None) -> str:
    """What diffill/status says of a model that loaded."""
    if loaded.device == "server":
        return f"ready ({loaded.model.served} served by {loaded.source})"
    precision = str(loaded.model.net.dtype).removeprefix("torch.")
    weights = f", {quant} weights" if quant else ""
    return f"ready ({loaded.source} on {loaded.device}, {precision}{weights})"


def _describe(exc: BaseException) -> str:
    """The user-facing reason for a failed load: MemoryError() has no message, and the type alone says little."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return f"out of memory ({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})"
    return str(exc) or type(exc).__name__
