"""diffill's language server (pygls 2): the server instance and thin feature handlers.

The handlers only convert between the protocol and the session (session.py), which holds the state and does the
work: positions and ranges in the client's encoding, workspace folders as paths, results as LSP types.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from diffill.infill.completion import Completion

from .documents import DocState
from .early import EarlyStart, Replayed, server_version
from .protocol import BoundedReader, DiffillProtocol, report_error, serve_tcp
from .session import Session

log = logging.getLogger("diffill")

VERSION = server_version()


class DiffillServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "diffill",
            VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=DiffillProtocol,
            max_workers=1,  # pygls' pool only reads stdin, a message at a time: more threads grew in with races
        )
        self.session = Session(self)

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

    def workspace_roots(self) -> list[str]:
        """The workspace folders as paths (else the root path): the index reads only these."""
        if not self._workspace_ready():
            return []
        roots = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        if not roots and self.workspace.root_path:
            roots = [self.workspace.root_path]
        return [r for r in roots if r]

    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        try:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
        except Exception:  # no client yet (e.g. in unit use)
            log.debug("could not publish diagnostics", exc_info=True)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        log.warning(message) if kind != types.MessageType.Info else log.info(message)
        try:
            self.window_show_message(types.ShowMessageParams(type=kind, message=f"diffill: {message}"))
        except Exception:  # no client yet (e.g. in unit use)
            log.debug("could not show message", exc_info=True)


def _resident_mb() -> int:
    """The server's resident memory in MB (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20
    except (OSError, ValueError, IndexError):
        return 0


WORD_TAIL = re.compile(r"\w+$")  # the word being typed, before the cursor


def _range(state: DocState, start: int, end: int, encoding: str) -> types.Range:
    sl, sc = state.doc.position_at(start, encoding)
    el, ec = state.doc.position_at(end, encoding)
    return types.Range(types.Position(sl, sc), types.Position(el, ec))


server = DiffillServer()


@server.feature(types.INITIALIZE)
def on_initialize(ls: DiffillServer, params: types.InitializeParams) -> None:
    ls.session.apply_settings(params.initialization_options, initial=True)


@server.feature(types.INITIALIZED)
def on_initialized(ls: DiffillServer, params: types.InitializedParams) -> None:
    ls.session.loader.start()
    ls.session.start_workspace_index(ls.workspace_roots())


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(ls: DiffillServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.session.open_document(params.text_document)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def on_change(ls: DiffillServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.session.change_document(params.text_document.uri, params.content_changes, ls.encoding)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(ls: DiffillServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.session.close_document(params.text_document.uri)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def on_configuration(ls: DiffillServer, params: types.DidChangeConfigurationParams) -> None:
    ls.session.apply_settings(params.settings)


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def on_inline_completion(
    ls: DiffillServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList | None:
    at = params.position
    found = await ls.session.complete(params.text_document.uri, at.line, at.character, ls.encoding)
    if found is None:
        return types.InlineCompletionList(items=[])
    state, c = found
    item = types.InlineCompletionItem(insert_text=c.text, range=_range(state, c.start, c.end, ls.encoding))
    return types.InlineCompletionList(items=[item])


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])
)
def on_code_action(ls: DiffillServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    state = ls.session.docs.get(params.text_document.uri)
    if state is None or not ls.session.settings.next_edits:
        return []
    return state.hints.code_actions(state.doc, params.text_document.uri, params.range, ls.encoding)


@server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[".", "(", " "]))
async def on_completion(ls: DiffillServer, params: types.CompletionParams) -> types.CompletionList:
    at = params.position
    found = await ls.session.complete(params.text_document.uri, at.line, at.character, ls.encoding, ghost=False)
    if found is None:
        return types.CompletionList(is_incomplete=True, items=[])
    state, c = found
    return types.CompletionList(is_incomplete=True, items=[_completion_item(state, c, ls.encoding)])


def _completion_item(state: DocState, c: Completion, encoding: str) -> types.CompletionItem:
    """The answer as a popup item that clients keep: popups filter items by the word being typed, so the edit
    starts at that word's beginning and the label and filter text start with the word (`self._ex` ->
    `_exrule)`, not `rule)`); a plain text edit (not a snippet)."""
    text = state.doc.text
    word = WORD_TAIL.search(text, max(0, c.start - 256), c.start)
    typed = word.group(0) if word else ""
    new_text = typed + c.text
    first = new_text.strip().splitlines()[0] if new_text.strip() else new_text
    label = first[:80] or "diffill"
    return types.CompletionItem(
        label=label,
        kind=types.CompletionItemKind.Text,
        detail="diffill",
        text_edit=types.TextEdit(range=_range(state, c.start - len(typed), c.end, encoding), new_text=new_text),
        insert_text_format=types.InsertTextFormat.PlainText,
        filter_text=label,
        sort_text="0",
        preselect=True,
    )


@server.feature("diffill/status")
def on_status(ls: DiffillServer, params: Any = None) -> dict[str, Any]:
    """Model state, settings and counters: for editor status bars and tests."""
    s = ls.session
    return {
        "model": s.loader.state,
        "error": s.loader.error,
        "ready": s.engine is not None,
        "source": s.loaded.source if s.loaded is not None else None,
        "prompt_format": s.engine.vocabulary.format.name if s.engine is not None else None,
        "answering": _answering(s),
        "fallbacks": s.failover.switches if s.failover is not None else 0,  # times a failing server was replaced
        "settings": s.settings.as_dict(),
        "documents": len(s.docs),
        "in_flight": s.scheduler.in_flight(),
        "warming": len(s.warming),
        "last_latency_ms": round(s.last_latency_ms, 1),
        "memory_mb": _resident_mb(),
        "stats": dict(s.stats),
        "cost": {
            "answers": s.traced,
            "passes": s.cost.passes,
            "drafts": s.cost.drafts,
            "accepted": s.cost.accepted,
            "lookups": s.cost.lookups,
            "looked_up": s.cost.looked_up,
            "ms": {stage: round(ms, 1) for stage, ms in s.cost.ms.items()},
            "stage_passes": dict(s.cost.stage_passes),
            # a served model's requests as diffill saw them (connection, server, transfer), summed
            "server_ms": round(getattr(s.loaded.model, "server_ms", 0.0), 1) if s.loaded is not None else 0.0,
            "server_requests": getattr(s.loaded.model, "requests", 0) if s.loaded is not None else 0,
        },
        "position_encoding": ls.encoding,
        "workspace": {
            "files": s.workspace_index.file_count() if s.workspace_index else 0,
            "definitions": s.workspace_index.chunk_count() if s.workspace_index else 0,
            "indexing": s.workspace_index.scanning if s.workspace_index else False,
            "context": s.context_enabled,
        },
    }


def _answering(s) -> str | None:
    """Which model writes the answers: "local", "server", or "embedded fallback" while a server fails."""
    if s.engine is None:
        return None
    if s.failover is None:
        return "local"
    return "server" if s.failover.down is None else "embedded fallback"


def run(tcp_port: int | None = None, early: EarlyStart | None = None) -> None:
    """Serves stdio (after lsp.early's hand-read start, if any: what it read is read again) or one TCP client."""
    if tcp_port is None:
        stdin: Any = sys.stdin.buffer
        if early is not None:
            server.protocol.answered_early = early.answered_id
            stdin = Replayed(early.consumed, stdin)
        server.start_io(BoundedReader(stdin))
    else:
        serve_tcp(server, "127.0.0.1", tcp_port)  # loopback only: never reachable from another machine
    if server.session.workspace_index is not None:
        server.session.workspace_index.stop()  # (its scan's process, perhaps paused, goes with the daemon)
    end_now(server.protocol.exit_code or 0)  # LSP: `exit` without `shutdown` ends with 1


def end_now(code: int) -> None:
    """Ends the process with `code`, skipping the interpreter's teardown: a model still loading on its thread when
    the editor says `exit` (torch's C++ thread pools at work) made the teardown abort the process (SIGABRT,
    "terminate called without an active exception") instead of exiting with the code the editor expects. Nothing
    is left to save: the documents are the editor's, the answers have been written."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the editor closed the pipe
            pass
    os._exit(code)


if os.environ.get("DIFFILL_TEST_HOOKS") == "1":  # test-only: never registered in normal use
    _TRACED: dict[str, Any] = {}  # the allocation snapshot tracing started with (diffill/debugAllocations)

    @server.feature("diffill/documentText")
    def on_document_text(ls: DiffillServer, params: Any = None) -> dict[str, Any] | None:
        """The server's copy of a document ({text, version}), or None: lets tests compare it with a reference."""
        uri = params.get("uri") if isinstance(params, dict) else getattr(params, "uri", None)
        state = ls.session.docs.get(uri) if isinstance(uri, str) else None
        return None if state is None else {"text": state.doc.text, "version": state.version}

    @server.feature("diffill/debugCounts")
    def on_debug_counts(ls: DiffillServer, params: Any = None) -> dict[str, int]:
        """Sizes of everything that could grow per request: a leak shows here before it shows in RSS."""
        import gc

        from .heap import heap_figures

        s, proto = ls.session, ls.protocol
        kept = s.engine.prompter.prompt_cache if s.engine is not None else None  # (a served model keeps none)
        cache = kept._entries if kept is not None else {}
        return {
            "gc_objects": len(gc.get_objects()),
            "python_blocks": sys.getallocatedblocks(),
            "documents": len(s.docs),
            "pygls_documents": len(ls.workspace.text_documents) if ls._workspace_ready() else 0,
            "request_futures": len(proto._request_futures),
            "result_types": len(proto._result_types),
            "scheduler_tokens": s.scheduler.in_flight(),
            "typed_ahead": len(s.cache._by_uri),
            "prompt_cache": len(cache),
            "prompt_cache_tokens": sum(len(ids) for ids, _ in cache.values()),
            "threads": threading.active_count(),
            **{f"heap_{k}_kb": v for k, v in heap_figures().items()},
        }

    @server.feature("diffill/debugTypes")
    def on_debug_types(ls: DiffillServer, params: Any = None) -> dict[str, int]:
        """How many objects of each type the collector tracks (a structure that grows shows as its items' type)."""
        import gc
        from collections import Counter

        return dict(Counter(type(o).__qualname__ for o in gc.get_objects()))

    @server.feature("diffill/debugAllocations")
    def on_debug_allocations(ls: DiffillServer, params: Any = None) -> list[dict[str, Any]]:
        """`{"start": true}` begins tracing Python allocations (tracemalloc, `frames` calls deep) from here; then the
        allocation sites whose live memory grew most since that start: [{site, kib, blocks}] (`limit`, 12 by
        default), a site being the allocating line and, traced deeper, the calls that led there ("a <- b")."""
        import tracemalloc

        def given(name: str, default: Any) -> Any:
            value = params.get(name) if isinstance(params, dict) else getattr(params, name, None)
            return default if value is None else value

        if given("start", False):
            tracemalloc.start(int(given("frames", 1)))
            _TRACED["since"] = tracemalloc.take_snapshot()
            return []
        since = _TRACED.get("since")
        if since is None or not tracemalloc.is_tracing():
            return []
        frames = tracemalloc.get_traceback_limit()
        grown = tracemalloc.take_snapshot().compare_to(since, "traceback" if frames > 1 else "lineno")
        top = sorted(grown, key=lambda d: d.size_diff, reverse=True)[: int(given("limit", 12))]
        site = (lambda t: " <- ".join(map(str, reversed(t)))) if frames > 1 else str
        return [{"site": site(d.traceback), "kib": round(d.size_diff / 1024, 1), "blocks": d.count_diff} for d in top]
