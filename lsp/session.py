"""The state of one server, apart from the protocol: settings, documents, counters, the engine, the completion path.

Completions run on one model worker thread; each document has at most one generation in flight, and an edit, a
newer request or `$/cancelRequest` stops the older one between denoising steps (one still queued never starts). A
request whose document changed meanwhile gets an empty answer. What a completion reads of its document is bounded
(the cursor line's window, infill.text.line_window; the syntax guard's re-parse time), so one in a document of
megabytes holds the thread no longer than one in a small file, and the other documents' answers wait little.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lsprotocol import types
from pygls.uris import to_fs_path

from diffill.infill.completion import Completion, edit_key
from diffill.infill.context.folder import FolderFiles
from diffill.infill.context.neighbours import Neighbours, neighbours_of
from diffill.infill.context.recent_edits import RecentEdits
from diffill.infill.context.workspace import WorkspaceIndex
from diffill.infill.cost import Cost
from diffill.infill.declined import after_declined
from diffill.infill.document import SyntaxDocument
from diffill.infill.next_edits import Proposal
from diffill.infill.next_edits.progress import PAUSE_S
from diffill.model.cancel import Cancelled

from .cache import TypedAheadCache
from .documents import BIG_DOCUMENT_BYTES, DocState, apply_changes, best_effort, open_state
from .failover import Failover
from .heap import IdleTrim, release_freed_memory
from .loading import Client, ModelLoader
from .scheduler import Scheduler, lower_priority
from .settings import Settings, SettingsError, engine_options, parse_settings

if TYPE_CHECKING:  # (imported where used: the engine pulls in torch, which loads after `initialize`)
    from diffill.infill.engine import CompletionEngine
    from diffill.infill.options import EngineOptions
    from diffill.infill.sources.lookup import LookupAnswers
    from diffill.model.runtime import LoadedModel

log = logging.getLogger("diffill")


# The settings a change of which loads the model again (a server's connection among them).
RELOAD_ON = (
    "model",
    "device",
    "precision",
    "quantization",
    "api_key",
    "ca_file",
    "tls_verify",
    "request_timeout_ms",
    "served_model_files",
)
TRIM_EVERY = 200  # answers between hand-backs of the freed heap pages (docs/benchmarks.md, "Tuned constants")


class Session:
    """What one server keeps between messages; the handlers (server.py) only convert to and from the protocol."""

    def __init__(self, client: Client) -> None:
        self.client = client  # the server: messages and progress in the editor
        self.settings = Settings()
        self.docs: dict[str, DocState] = {}
        self.cache = TypedAheadCache()
        self.scheduler = Scheduler()
        self.scheduler.on_busy.append(IdleTrim(self.scheduler.quiet_for, self.scheduler.executor.submit).told)
        self.engine: CompletionEngine | None = None
        self.loaded: LoadedModel | None = None  # its card (draft, answer cut-off, context) shapes the engine
        self.failover: Failover | None = None  # a served model's: the embedded model answers while the server fails
        self._fallback_loaded: LoadedModel | None = None
        self.loader = ModelLoader(client, self)
        self.warm_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="diffill-warm")  # see _warm_sources
        self.warming: set[str] = set()  # documents whose sources are being warmed (diffill/status)
        self.stats = {
            "requests": 0,
            "model_calls": 0,
            "cache_hits": 0,
            "declined": 0,  # answers cut or not shown: they repeated the rest of ghost text the user typed along
            "cancelled": 0,
            "stale": 0,
            "errors": 0,
            "copied": 0,  # answers copied from the code around (a line of the file, a file beside, an open document)
            "before_model": 0,  # answers given while the model loaded (infill.sources.lookup)
        }
        self.last_latency_ms = 0.0  # the last answered request's, keystroke to answer (diffill/status)
        self.cost = Cost()  # what the model's answers cost, summed (diffill/status: bench lsp reads it)
        self.traced = 0  # answers summed in `cost`
        self.workspace_index: WorkspaceIndex | None = None
        self.recent = RecentEdits()
        self.context_enabled = False
        # what answers while the model loads: built at the first request then (False: no embedded model to read)
        self.lookups: LookupAnswers | Literal[False] | None = None
        self.folder = FolderFiles()

    # ----- settings and the model -----
    def apply_settings(self, raw: Any, initial: bool = False) -> bool:
        try:
            new = parse_settings(raw, self.settings)
        except SettingsError as exc:
            self.client.show(f"{exc} (previous settings kept)")
            return False
        reload = initial or any(getattr(new, name) != getattr(self.settings, name) for name in RELOAD_ON)
        self.settings = new
        if self.engine is not None:
            self.engine.options = self._engine_options()
        if self.failover is not None and self.failover.fallback_loaded is not None:
            self.failover.fallback_loaded.options = engine_options(self.settings, self._fallback_loaded)
        if reload and not initial:
            self.loader.start()
        return True

    def _engine_options(self) -> EngineOptions:
        return engine_options(self.settings, self.loaded)

    def install(self, loaded: LoadedModel) -> None:
        """Serves completions with a model just loaded (ModelLoader), wired to the session's context sources; a
        served model with the embedded one beside it (lsp.failover)."""
        previous, self.loaded = self.loaded, loaded
        self.context_enabled = loaded.card.trained_with_context
        engine = self._engine(loaded)
        if self.failover is not None:
            self.failover.close()
        self.failover = None
        if loaded.device == "server":
            self.failover = Failover(engine, self._embedded_engine, loaded.model.probe, self.loader.server_report)
        first = self.engine is None
        self.engine = engine
        if previous is not None and previous.device == "server":  # its connections and their thread
            best_effort(previous.model.close)
        if first:  # the documents opened while the model loaded: their first answers find the files beside read
            for uri in list(self.docs):
                self._warm_sources(uri)

    def _engine(self, loaded: LoadedModel) -> CompletionEngine:
        from diffill.infill.engine import CompletionEngine

        engine = CompletionEngine(loaded.model, loaded.tokenizer, engine_options(self.settings, loaded), loaded.memory)
        engine.warm_up()  # the latency budget plans passes on what they cost here
        self._share_workspace(engine)
        engine.folder = self.folder  # the files beside read while the model loaded are not read again
        engine.recent = self.recent
        engine.open_documents = self._open_documents
        return engine

    def _embedded_engine(self) -> CompletionEngine:
        """The embedded model on the CPU, for the time a server fails."""
        from diffill.model import runtime

        self._fallback_loaded = runtime.load("", "cpu", self.settings.threads, dtype=self.settings.precision)
        return self._engine(self._fallback_loaded)

    def start_workspace_index(self, roots: list[str]) -> None:
        """Indexes the workspace folders in the background once the model has loaded, then keeps the index fresh
        with a file watcher."""
        roots = [r for r in roots if r and os.path.isdir(r)]
        if not roots:
            return
        index = WorkspaceIndex(
            roots, yield_to=lambda: self.scheduler.in_flight() > 0, quiet_for=self.scheduler.quiet_for
        )
        self.scheduler.on_busy.append(index.hold)
        self.workspace_index = index

        def run() -> None:
            lower_priority()
            if self.engine is None:  # the model first: the first answers need it, not the index
                self.loader.settled.wait(timeout=60)
            try:
                index.start()
                log.info("workspace index: %d files, %d definitions", index.file_count(), index.chunk_count())
            except Exception:
                log.exception("workspace index failed")

        threading.Thread(target=run, name="diffill-index", daemon=True).start()
        if self.engine is not None:
            self._share_workspace(self.engine)

    # ----- documents -----
    def open_document(self, item: types.TextDocumentItem) -> None:
        state = open_state(item)
        if state is None:
            self.close_document(item.uri)  # a re-open must not leave the older text behind
            return
        self.docs[item.uri] = state
        self._warm_sources(item.uri)
        if self.engine is None:  # the first requests may come while the model loads
            self.scheduler.executor.submit(best_effort, self._warm_lookups, item.uri)

    def _warm_sources(self, uri: str) -> None:
        """Tokenize and index the files beside a document just opened, on a thread of its own (a completion never
        queues behind it): the first completions there then find them ready."""
        engine = self.engine
        if engine is None:
            return

        def warm() -> None:
            try:
                engine.warm_sources(to_fs_path(uri))
            except Exception:  # a head start only: the completion tokenizes what it needs itself
                log.exception("warming the n-gram sources of %s", uri)
            finally:
                self.warming.discard(uri)

        self.warming.add(uri)
        self.warm_executor.submit(warm)

    def change_document(self, uri: str, changes: Sequence[types.TextDocumentContentChangeEvent], encoding: str) -> None:
        state = self.docs.get(uri)
        self.scheduler.cancel(uri)
        if state is None:
            log.warning("didChange for unknown document %s", uri)
            return
        fits = apply_changes(uri, state, changes, encoding, next_edits=self.settings.next_edits)
        best_effort(self._record_edits, uri, changes, state)
        if not fits:
            self.close_document(uri)
            return
        if self.settings.next_edits:
            self.show_hints(uri, state, encoding)
            self._after_pause(uri, state, encoding)

    def show_hints(self, uri: str, state: DocState, encoding: str) -> None:
        """Publishes the document's next edits as hint diagnostics when they changed."""
        if state.hints.dirty:
            diagnostics = state.hints.diagnostics(state.doc, encoding)
            self.client.publish_diagnostics(uri, diagnostics)

    def _after_pause(self, uri: str, state: DocState, encoding: str) -> None:
        """Finishes the edit in progress once the user pauses (no change for PAUSE_S)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # (no event loop: a direct call, as in unit use)
            return
        version = state.version

        def paused() -> None:
            if self.docs.get(uri) is state and state.version == version:
                finished = best_effort(state.hints.finish, state.doc)
                self.show_hints(uri, state, encoding)
                if finished is not None:
                    self._rewrite_below(uri, state, encoding)

        loop.call_later(PAUSE_S, paused)

    def _rewrite_below(self, uri: str, state: DocState, encoding: str) -> None:
        """Asks a model that rewrites (CompletionEngine.rewrites) for the next edits below the edit the user just
        finished, on the model thread behind any completion; they join the hints if the document is as it was
        (an edit or a completion of the document cancels them)."""
        engine, failover = self.engine, self.failover
        if engine is None or not engine.rewrites or state.doc.window is not None or self.scheduler.busy(uri):
            return
        token = self.scheduler.start(uri)
        version, text, language, recent = state.version, state.doc.text, state.doc.language, list(state.hints.recent)

        def ask(engine: CompletionEngine) -> list[Proposal]:
            return engine.rewrite_below(SyntaxDocument(text, language), recent, cancel=token, key=uri)

        def work() -> list[Proposal]:
            if token():
                raise Cancelled()
            return failover.answer(ask) if failover is not None else ask(engine)

        def done(future: Future[list[Proposal]]) -> None:
            self.scheduler.finish(uri, token)
            if future.cancelled() or isinstance(future.exception(), Cancelled):
                return
            if future.exception() is not None:
                log.error("rewriting below the edit in %s failed", uri, exc_info=future.exception())
                return
            if self.docs.get(uri) is state and state.version == version:
                state.hints.add(future.result())
                self.show_hints(uri, state, encoding)

        loop = asyncio.get_running_loop()
        future = self.scheduler.executor.submit(work)
        future.add_done_callback(lambda f: loop.call_soon_threadsafe(done, f))

    def _record_edits(self, uri: str, changes: Sequence[types.TextDocumentContentChangeEvent], state: DocState) -> None:
        for change in changes[-1:]:
            line = change.range.start.line if isinstance(change, types.TextDocumentContentChangePartial) else 0
            self.recent.record(to_fs_path(uri) or uri, state.doc.text, line, starts=state.doc.line_starts)

    def close_document(self, uri: str) -> None:
        self.scheduler.cancel(uri)
        closed = self.docs.pop(uri, None)
        self.cache.forget(uri)
        if self.engine is not None:
            for key in (uri, edit_key(uri)):  # the model thread only reads entries by key
                self.engine.prompter.forget(key)
        if closed is not None and len(closed.doc.source) >= BIG_DOCUMENT_BYTES:
            release_freed_memory()

    def _open_documents(self) -> dict[str, str]:
        """The open documents' text by file path: rest-of-line copies come from them (CompletionEngine)."""
        return {path: state.doc.text for uri, state in list(self.docs.items()) if (path := to_fs_path(uri))}

    # ----- completion -----
    def _loading(self) -> bool:
        """Whether a model is still to come (not loaded yet, or loading), rather than loaded or failed."""
        state = self.loader.state
        return state == "not loaded" or state.startswith("loading")

    async def _model_ready(self, poll_s: float = 0.05, max_wait_s: float = 120.0) -> bool:
        """Waits while the model loads, so that a request made meanwhile is answered once it is ready (the editor
        may cancel it first); False when there is no model to wait for (the load failed)."""
        waited = 0.0
        while self.engine is None and waited < max_wait_s:
            if not self._loading():
                break
            await asyncio.sleep(poll_s)
            waited += poll_s
        return self.engine is not None

    def _build_lookups(self) -> None:
        """The lookups, built once on the model thread (before the model loads it is free): the tokenizer read and
        its vocabulary spelled out."""
        if self.lookups is None:
            from diffill.infill.sources.lookup import embedded_lookups  # (numpy and tokenizers: after `initialize`)

            self.lookups = embedded_lookups() or False

    def _share_workspace(self, engine: CompletionEngine) -> None:
        """The engine reads the workspace's definitions and the files of its folders (none without a workspace)."""
        engine.workspace = self.workspace_index
        engine.read_roots = self._read_roots()

    def _read_roots(self) -> list[Path]:
        """The folders whose files may be read beside a document: the workspace's (none without one)."""
        return list(self.workspace_index.roots) if self.workspace_index is not None else []

    def _around(self, uri: str) -> Neighbours:
        """The open documents and the folder's files around `uri` (infill.context.neighbours)."""
        return neighbours_of(to_fs_path(uri), self._open_documents, self.folder, self._read_roots())

    def _warm_lookups(self, uri: str) -> None:
        """The lookups built and the texts around a document just opened read and indexed for them, while the
        model loads: the first request there finds them ready."""
        self._build_lookups()
        if self.lookups and self.engine is None:
            around = self._around(uri)
            self.lookups.evidence.warm(around.opened, around.folder)

    async def _looked_up(
        self, uri: str, state: DocState, line: int, character: int, encoding: str
    ) -> Completion | None:
        """The rest of the line from the code around and the corpus memory (infill.sources.lookup), for a request
        that comes while the model loads; None once it has loaded, or when they are not sure."""
        if not self._loading():
            return None
        offset = state.doc.offset_at(line, character, encoding)
        text = state.doc.text

        def look_up() -> str | None:
            self._build_lookups()
            return self.lookups.answer(text, offset, self._around(uri)) if self.lookups else None

        try:
            rest = await asyncio.get_running_loop().run_in_executor(self.scheduler.executor, look_up)
        except Exception:  # a head start only: the model answers once loaded
            log.exception("looking up the rest of the line in %s", uri)
            return None
        if rest is None or self.docs.get(uri) is not state or state.doc.text is not text:
            return None
        self.stats["before_model"] += 1
        return Completion(offset, offset, rest, kind="line", source="lookup")

    async def complete(
        self, uri: str, line: int, character: int, encoding: str, ghost: bool = True
    ) -> tuple[DocState, Completion] | None:
        """The completion at (line, character) in `uri`, or None (disabled, unknown document, stale, no answer).
        `ghost`: the answer is shown as ghost text (inline completion), which the user accepts with one key; one
        they typed along instead is declined, and an answer that would show its rest again keeps only the word being
        typed, or is not given (infill.declined; a popup's item is served on from the cache while the user types the
        word it completes)."""
        self.stats["requests"] += 1
        state = self.docs.get(uri)
        if state is None:
            log.warning("completion for unknown document %s", uri)
            return None
        lang = state.doc.language or "plaintext"
        if not self.settings.enabled or lang not in self.settings.languages:
            return None
        if self.engine is None:
            arrived = state.version
            looked_up = await self._looked_up(uri, state, line, character, encoding)
            if looked_up is not None:  # while the model loads: the code around and the corpus memory alone
                return state, looked_up
            if not await self._model_ready():
                log.info("completion without a model (%s)", self.loader.state)
                return None
            if self.docs.get(uri) is not state or state.version != arrived:  # edited or closed while it loaded
                self.stats["stale"] += 1
                return None
        offset = state.doc.offset_at(line, character, encoding)
        proposed = state.hints.at(offset) if ghost and self.settings.next_edits else None
        if proposed is not None:  # the cursor on a next edit: it is the answer (Tab applies it)
            return state, Completion(proposed.start, proposed.end, proposed.text, kind="next edit", source="next edit")
        text = state.doc.text
        hit = self.cache.lookup(uri, text, offset)
        if hit is not None and not ghost:
            self.stats["cache_hits"] += 1
            rest, end = hit
            return state, Completion(start=offset, end=end, text=rest, kind="cached")
        state.doc.focus(offset)  # (a large document's tree covers where the user works: moved here, with the edits)
        token = self.scheduler.start(uri)
        version_at_start = state.version
        engine, failover = self.engine, self.failover
        loop = asyncio.get_running_loop()
        started = time.perf_counter()  # the latency budget counts from here
        try:
            self.stats["model_calls"] += 1
            spent = Cost()

            def ask(engine: CompletionEngine) -> Completion | None:
                return engine.answer(
                    state.doc,
                    offset,
                    renames=state.renames,
                    signatures=state.signatures,
                    cancel=token,
                    key=uri,
                    path=to_fs_path(uri),
                    cost=spent,
                    start=started,
                )

            def work() -> Completion | None:
                if token():  # superseded while it queued for the model thread: the other documents' turn
                    raise Cancelled()
                return failover.answer(ask) if failover is not None else ask(engine)

            result = await loop.run_in_executor(self.scheduler.executor, work)
            self.cost.add(spent)
            self.traced += 1
            if self.traced % TRIM_EVERY == 0:  # on the model thread, after this answer: no request waits for it
                loop.run_in_executor(self.scheduler.executor, release_freed_memory)
        except asyncio.CancelledError:  # $/cancelRequest: stop the worker too, answer with the cancel error
            token.cancel()
            self.stats["cancelled"] += 1
            raise
        except Cancelled:  # superseded by an edit or a newer request: an empty answer at once
            self.stats["cancelled"] += 1
            return None
        except Exception:
            self.stats["errors"] += 1
            log.exception("completion failed for %s", uri)
            return None
        finally:
            self.scheduler.finish(uri, token)
        if state.version != version_at_start or self.docs.get(uri) is not state:
            self.stats["stale"] += 1
            return None
        self.last_latency_ms = state.last_latency_ms = (time.perf_counter() - started) * 1e3
        if result is None:
            return None
        if hit is not None:  # ghost text the user typed along: declined (hit: the rest of it)
            shown = after_declined(result, offset, hit[0], text)
            self.stats["declined"] += shown is not result
            if shown is None:  # the suggestion typed along stays in the cache: typing on along it declines it still
                return None
            result = shown
        if result.source != "model":
            self.stats["copied"] += 1
        self.cache.remember(uri, text, offset, result.text, result.end)
        return state, result
