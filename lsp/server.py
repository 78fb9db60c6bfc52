"""diffill's language server (pygls 2): thin handlers over the completion engine.

Documents are kept as tree-sitter `SyntaxDocument`s updated incrementally. Completions run on one model worker
thread; each document has at most one generation in flight, and an edit, a newer request or `$/cancelRequest`
stops the older one between denoising steps. A request whose document changed meanwhile gets an empty answer.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from diffill.infill.context import RecentEdits
from diffill.infill.document import SyntaxDocument
from diffill.infill.edits import RenameTracker
from diffill.infill.engine import Completion, CompletionEngine, EngineOptions
from diffill.infill.languages import language_for
from diffill.infill.policy import CompletionPolicy
from diffill.infill.signatures import SignatureTracker
from diffill.infill.workspace import WorkspaceIndex
from diffill.model.sampler import Cancelled

from .cache import TypedAheadCache
from .protocol import BoundedReader, DiffillProtocol, report_error, serve_tcp
from .scheduler import Scheduler
from .settings import Settings, SettingsError, parse_settings

if TYPE_CHECKING:
    from diffill.model.runtime import LoadedModel

log = logging.getLogger("diffill")

try:
    VERSION = version("diffill")
except PackageNotFoundError:  # pragma: no cover
    VERSION = "0"

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024


@dataclass
class DocState:
    doc: SyntaxDocument
    language_id: str
    version: int = 0  # bumped on every change (ours, not the client's)
    last_latency_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    renames: RenameTracker = field(default_factory=RenameTracker)  # identifiers being renamed (inline edits)
    signatures: SignatureTracker = field(default_factory=SignatureTracker)  # parameter lists being edited


class DiffillServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "diffill",
            VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=DiffillProtocol,
        )
        self.settings = Settings()
        self.docs: dict[str, DocState] = {}
        self.cache = TypedAheadCache()
        self.scheduler = Scheduler()
        self.engine: CompletionEngine | None = None
        self.loaded: LoadedModel | None = None  # its card (draft, answer cut-off, context) shapes the engine
        self.model_state = "not loaded"
        self.model_error: str | None = None
        self._load_lock = threading.Lock()
        self.warm_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="diffill-warm")  # see _warm_sources
        self.warming: set[str] = set()  # documents whose sources are being warmed (diffill/status)
        self.stats = {
            "requests": 0,
            "model_calls": 0,
            "cache_hits": 0,
            "cancelled": 0,
            "stale": 0,
            "errors": 0,
            "copied": 0,  # answers copied from the code around (a line of the file, a file beside, an open document)
        }
        self.workspace_index: WorkspaceIndex | None = None
        self.recent = RecentEdits()
        self.context_enabled = False

    # ----- helpers -----
    def report_server_error(self, error: Exception, source: Any) -> None:
        report_error(self.protocol, error)  # a parse error reply, else a log line: never a popup for client bugs

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding if self._workspace_ready() else None
        return str(enc.value if hasattr(enc, "value") else enc or "utf-16")

    def _workspace_ready(self) -> bool:
        try:
            self.workspace  # noqa: B018 - raises before initialize
            return True
        except Exception:
            return False

    def show(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        log.warning(message) if kind != types.MessageType.Info else log.info(message)
        try:
            self.window_show_message(types.ShowMessageParams(type=kind, message=f"diffill: {message}"))
        except Exception:  # no client yet (e.g. in unit use)
            log.debug("could not show message", exc_info=True)

    def apply_settings(self, raw: Any, initial: bool = False) -> bool:
        try:
            new = parse_settings(raw, self.settings)
        except SettingsError as exc:
            self.show(f"{exc} (previous settings kept)")
            return False
        reload = (
            new.model != self.settings.model
            or new.device != self.settings.device
            or new.precision != self.settings.precision
            or new.quantization != self.settings.quantization
            or initial
        )
        self.settings = new
        if self.engine is not None:
            self.engine.options = self._engine_options()
        if reload and not initial:
            self.load_model_async()
        return True

    def _engine_options(self) -> EngineOptions:
        """The settings over the loaded model's card: its draft mode, its answer cut-off unless the user set one,
        and cross-file context only for models trained with it (it shifts the prompt of the others)."""
        s, card = self.settings, self.loaded
        user = {"min_confidence": s.min_confidence} if s.min_confidence >= 0 else {}
        if s.draft_candidates:
            user["draft_candidates"] = s.draft_candidates
        return EngineOptions.from_card(
            card, steps=s.steps, canvas_length=s.canvas_length, max_prompt_tokens=s.max_prompt_tokens, **user
        )

    # ----- workspace context -----
    def start_workspace_index(self) -> None:
        """Indexes the workspace folders in the background, then keeps the index fresh with a file watcher."""
        roots = [to_fs_path(f.uri) for f in self.workspace.folders.values()] if self._workspace_ready() else []
        if not roots and self._workspace_ready() and self.workspace.root_path:
            roots = [self.workspace.root_path]
        roots = [r for r in roots if r and os.path.isdir(r)]
        if not roots:
            return
        index = WorkspaceIndex(roots)
        self.workspace_index = index

        def run() -> None:
            try:
                index.start()
                log.info("workspace index: %d files, %d definitions", index.file_count(), index.chunk_count())
            except Exception:
                log.exception("workspace index failed")

        threading.Thread(target=run, name="diffill-index", daemon=True).start()
        if self.engine is not None:
            self.engine.workspace = index
            self.engine.read_roots = list(index.roots)

    def _make_engine(self, loaded) -> CompletionEngine:
        self.loaded = loaded
        self.context_enabled = loaded.trained_with_context
        engine = CompletionEngine(loaded.model, loaded.tokenizer, self._engine_options(), loaded.memory)
        engine.workspace = self.workspace_index
        engine.read_roots = list(self.workspace_index.roots) if self.workspace_index is not None else []
        engine.recent = self.recent
        engine.open_documents = self._open_documents
        return engine

    def _open_documents(self) -> dict[str, str]:
        """The open documents' text by file path: rest-of-line copies come from them (CompletionEngine)."""
        return {path: state.doc.text for uri, state in list(self.docs.items()) if (path := to_fs_path(uri))}

    def _record_edits(self, uri: str, params: types.DidChangeTextDocumentParams, state: DocState) -> None:
        for change in params.content_changes[-1:]:
            line = change.range.start.line if isinstance(change, types.TextDocumentContentChangePartial) else 0
            self.recent.record(to_fs_path(uri) or uri, state.doc.text, line)

    # ----- model loading -----
    def load_model_async(self) -> None:
        threading.Thread(target=self._load_model, name="diffill-load", daemon=True).start()

    def _load_model(self) -> None:
        from diffill.model import runtime

        with self._load_lock:
            token = f"diffill-load-{uuid.uuid4()}"
            source = self.settings.model or "embedded model"
            progress = self._progress_begin(token, f"Loading {source}")
            self.model_state = "loading"
            try:
                last = [0.0]

                def on_progress(done: int, total: int) -> None:
                    if progress and time.monotonic() - last[0] > 0.2:
                        last[0] = time.monotonic()
                        pct = int(100 * done / max(1, total))
                        self.work_done_progress.report(token, types.WorkDoneProgressReport(percentage=pct))

                s = self.settings
                quant = None if s.quantization == "none" else s.quantization
                loaded = runtime.load(s.model, s.device, s.threads, on_progress, quant, dtype=s.precision)
                self.engine = self._make_engine(loaded)
                precision = str(loaded.model.net.dtype).removeprefix("torch.")
                weights = f", {quant} weights" if quant else ""
                self.model_state = f"ready ({loaded.source} on {loaded.device}, {precision}{weights})"
                self.model_error = None
                log.info("model %s", self.model_state)
            except Exception as exc:  # the server stays up; the user sees why
                self.model_error = _describe(exc)
                log.exception("model load failed")
                self.show(f"could not load model {source!r}: {self.model_error}")
                if self.engine is not None:  # keep serving with the model already loaded
                    self.model_state = "ready (previous model kept)"
                elif self.settings.model:
                    self.model_state = "loading (embedded fallback)"
                    try:
                        loaded = runtime.load("", "cpu", self.settings.threads, dtype=self.settings.precision)
                        self.engine = self._make_engine(loaded)
                        self.model_state = "ready (embedded fallback)"
                        self.show("using the embedded model instead", types.MessageType.Warning)
                    except Exception:
                        log.exception("embedded fallback failed")
                        self.model_state = "failed"
                else:
                    self.model_state = "failed"
            finally:
                if progress:
                    self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=self.model_state))

    def _progress_begin(self, token: str, title: str) -> bool:
        caps = self.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return False
        try:
            self.work_done_progress.create(token).result(timeout=5)
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, percentage=0))
            return True
        except Exception:
            log.debug("progress not available", exc_info=True)
            return False

    # ----- documents -----
    def open_document(self, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        text = item.text
        if len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES:
            log.warning("%s: %d bytes, too large: completions off for it", item.uri, len(text))
            self.close_document(item.uri)  # a re-open must not leave the older text behind
            return
        try:
            lang = language_for(item.language_id, to_fs_path(item.uri) or item.uri)
        except ValueError:  # a URI urllib cannot split (`file://[x`): the languageId alone decides
            lang = language_for(item.language_id)
        self.docs[item.uri] = DocState(_syntax_document(item.uri, text, lang), item.language_id)
        self._warm_sources(item.uri)

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

    def change_document(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        state = self.docs.get(uri)
        self.scheduler.cancel(uri)
        if state is None:
            log.warning("didChange for unknown document %s", uri)
            return
        state.version += 1
        try:
            for change in params.content_changes:
                if isinstance(change, types.TextDocumentContentChangePartial):
                    r = change.range
                    before = state.doc.text
                    at = state.doc.offset_at(r.start.line, r.start.character, self.encoding)
                    signature = _guarded(state.signatures.before_change, state.doc, at)
                    state.doc.apply_change(
                        r.start.line, r.start.character, r.end.line, r.end.character, change.text, self.encoding
                    )
                    _guarded(state.renames.observe, before, state.doc.text, at)
                    _guarded(state.signatures.observe, signature, state.doc, at)
                else:
                    state.doc.replace_all(change.text)
                    state.renames.session = None
        except Exception:  # never lose the document: reparse our own text (edited before the tree is touched)
            # (pygls' copy is no fallback: it splits lines like str.splitlines and may be missing.)
            log.exception("%s: incremental update failed; reparsing", uri)
            state.doc = _syntax_document(uri, state.doc.text, state.doc.language)
        _guarded(self._record_edits, uri, params, state)
        if len(state.doc.source) > MAX_DOCUMENT_BYTES:
            log.warning("%s: grew past %d bytes: completions off for it", uri, MAX_DOCUMENT_BYTES)
            self.close_document(uri)

    def close_document(self, uri: str) -> None:
        self.scheduler.cancel(uri)
        self.docs.pop(uri, None)
        self.cache.forget(uri)
        if self.engine is not None:
            self.engine.prompt_cache.forget(uri)  # the model thread only reads entries by key

    # ----- completion -----
    async def complete(self, uri: str, position: types.Position) -> tuple[DocState, Completion] | None:
        """The completion at `position` in `uri`, or None (disabled, unknown document, stale, no answer)."""
        self.stats["requests"] += 1
        state = self.docs.get(uri)
        if state is None:
            log.warning("completion for unknown document %s", uri)
            return None
        lang = state.doc.language or "plaintext"
        if not self.settings.enabled or lang not in self.settings.languages:
            return None
        offset = state.doc.offset_at(position.line, position.character, self.encoding)
        text = state.doc.text
        hit = self.cache.lookup(uri, text, offset)
        if hit is not None:
            self.stats["cache_hits"] += 1
            rest, end = hit
            return state, Completion(start=offset, end=end, text=rest, kind="cached")
        if self.engine is None:
            log.info("completion before the model is ready (%s)", self.model_state)
            return None
        token = self.scheduler.start(uri)
        version_at_start = state.version
        engine = self.engine
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        try:
            self.stats["model_calls"] += 1
            policy = CompletionPolicy(engine)

            def work():
                return policy.answer(
                    state.doc,
                    offset,
                    renames=state.renames,
                    signatures=state.signatures,
                    cancel=token,
                    key=uri,
                    path=to_fs_path(uri),
                )

            result = await loop.run_in_executor(self.scheduler.executor, work)
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
        state.last_latency_ms = (time.perf_counter() - started) * 1e3
        if result is None:
            return None
        if result.source != "model":
            self.stats["copied"] += 1
        self.cache.remember(uri, text, offset, result.text, result.end)
        return state, result

    def to_range(self, state: DocState, start: int, end: int) -> types.Range:
        sl, sc = state.doc.position_at(start, self.encoding)
        el, ec = state.doc.position_at(end, self.encoding)
        return types.Range(types.Position(sl, sc), types.Position(el, ec))


def _syntax_document(uri: str, text: str, language: str | None) -> SyntaxDocument:
    try:
        return SyntaxDocument(text, language)
    except Exception:  # a grammar that fails to load must not lose the document: keep it as plain text
        log.exception("%s: cannot parse as %s; kept as plain text", uri, language)
        return SyntaxDocument(text, None)


server = DiffillServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: DiffillServer, params: types.InitializeParams) -> None:
    ls.apply_settings(params.initialization_options, initial=True)


@server.feature(types.INITIALIZED)
def on_initialized(ls: DiffillServer, params: types.InitializedParams) -> None:
    ls.load_model_async()
    ls.start_workspace_index()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(ls: DiffillServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.open_document(params)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_change(ls: DiffillServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.change_document(params)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(ls: DiffillServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.close_document(params.text_document.uri)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_configuration(ls: DiffillServer, params: types.DidChangeConfigurationParams) -> None:
    ls.apply_settings(params.settings)


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def on_inline_completion(
    ls: DiffillServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList | None:
    found = await ls.complete(params.text_document.uri, params.position)
    if found is None:
        return types.InlineCompletionList(items=[])
    state, c = found
    item = types.InlineCompletionItem(insert_text=c.text, range=ls.to_range(state, c.start, c.end))
    return types.InlineCompletionList(items=[item])


@server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[".", "(", " "]))
async def on_completion(ls: DiffillServer, params: types.CompletionParams) -> types.CompletionList:
    found = await ls.complete(params.text_document.uri, params.position)
    if found is None:
        return types.CompletionList(is_incomplete=True, items=[])
    state, c = found
    label = c.text.strip().splitlines()[0] if c.text.strip() else c.text
    item = types.CompletionItem(
        label=label[:80] or "diffill",
        kind=types.CompletionItemKind.Snippet,
        detail="diffill",
        text_edit=types.TextEdit(range=ls.to_range(state, c.start, c.end), new_text=c.text),
        insert_text_format=types.InsertTextFormat.PlainText,
        filter_text=c.text,
        sort_text="0",
        preselect=True,
    )
    return types.CompletionList(is_incomplete=True, items=[item])


@server.feature("diffill/status")
def on_status(ls: DiffillServer, params: Any = None) -> dict[str, Any]:
    """Model state, settings and counters: for editor status bars and tests."""
    return {
        "model": ls.model_state,
        "error": ls.model_error,
        "ready": ls.engine is not None,
        "settings": ls.settings.as_dict(),
        "documents": len(ls.docs),
        "in_flight": ls.scheduler.in_flight(),
        "warming": len(ls.warming),
        "last_latency_ms": max((d.last_latency_ms for d in ls.docs.values()), default=0.0),
        "stats": dict(ls.stats),
        "position_encoding": ls.encoding,
        "workspace": {
            "files": ls.workspace_index.file_count() if ls.workspace_index else 0,
            "definitions": ls.workspace_index.chunk_count() if ls.workspace_index else 0,
            "context": ls.context_enabled,
        },
    }


def run(tcp_port: int | None = None) -> None:
    if tcp_port is None:
        server.start_io(BoundedReader(sys.stdin.buffer))
    else:
        serve_tcp(server, "127.0.0.1", tcp_port)  # loopback only: never reachable from another machine
    if server.protocol.exit_code:  # LSP: `exit` without `shutdown` ends with 1
        sys.exit(server.protocol.exit_code)


if os.environ.get("DIFFILL_TEST_HOOKS") == "1":  # test-only: never registered in normal use

    @server.feature("diffill/documentText")
    def on_document_text(ls: DiffillServer, params: Any = None) -> dict[str, Any] | None:
        """The server's copy of a document ({text, version}), or None: lets tests compare it with a reference."""
        uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
        state = ls.docs.get(uri) if isinstance(uri, str) else None
        return None if state is None else {"text": state.doc.text, "version": state.version}

    @server.feature("diffill/debugCounts")
    def on_debug_counts(ls: DiffillServer, params: Any = None) -> dict[str, int]:
        """Sizes of everything that could grow per request: a leak shows here before it shows in RSS."""
        import gc

        proto = ls.protocol
        cache = ls.engine.prompt_cache._entries if ls.engine is not None else {}
        return {
            "gc_objects": len(gc.get_objects()),
            "documents": len(ls.docs),
            "pygls_documents": len(ls.workspace.text_documents) if ls._workspace_ready() else 0,
            "request_futures": len(proto._request_futures),
            "result_types": len(proto._result_types),
            "scheduler_tokens": ls.scheduler.in_flight(),
            "typed_ahead": len(ls.cache._by_uri),
            "prompt_cache": len(cache),
            "prompt_cache_tokens": sum(len(ids) for ids, _ in cache.values()),
            "threads": threading.active_count(),
        }


def _describe(exc: BaseException) -> str:
    """The user-facing reason for a failed load: MemoryError() has no message, and the type alone says little."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return f"out of memory ({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})"
    return str(exc) or type(exc).__name__


def _guarded(fn: Any, *args: Any) -> Any:
    """Runs a side feature of an edit (rename tracking, recent edits): its failure must never cost the edit itself,
    nor the later changes of the same notification (which the text-sync `try` above would skip). None if it fails."""
    try:
        return fn(*args)
    except Exception:
        log.exception("%s failed; the edit itself is kept", getattr(fn, "__qualname__", fn))
        return None
