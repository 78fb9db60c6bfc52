"""The server's copy of each open document: text sync that never loses a document, with the edit observers.

Documents are tree-sitter `SyntaxDocument`s updated incrementally. Each edit is also shown to the rename and
signature trackers (inline edits follow what the user is changing); those side features run best_effort, so their
failure never costs the edit. A document over MAX_DOCUMENT_BYTES is not kept: parsing it would stall the daemon.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from diffill.infill.document import SyntaxDocument
from diffill.infill.edits import RenameTracker
from diffill.infill.languages import language_for
from diffill.infill.signatures import SignatureTracker

from .next_edit_hints import DocumentHints

log = logging.getLogger("diffill")

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024


@dataclass
class DocState:
    doc: SyntaxDocument
    language_id: str
    version: int = 0  # bumped on every change (ours, not the client's): a completion checks it is not stale
    last_latency_ms: float = 0.0
    renames: RenameTracker = field(default_factory=RenameTracker)  # identifiers being renamed (inline edits)
    signatures: SignatureTracker = field(default_factory=SignatureTracker)  # parameter lists being edited
    hints: DocumentHints = field(default_factory=DocumentHints)  # the next edits the user's changes imply


def open_state(item: types.TextDocumentItem) -> DocState | None:
    """The state of a document just opened, or None when it is too large to keep (completions off for it)."""
    text = item.text
    if len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES:
        log.warning("%s: %d bytes, too large: completions off for it", item.uri, len(text))
        return None
    try:
        lang = language_for(item.language_id, to_fs_path(item.uri) or item.uri)
    except ValueError:  # a URI urllib cannot split (`file://[x`): the languageId alone decides
        lang = language_for(item.language_id)
    return DocState(_syntax_document(item.uri, text, lang), item.language_id)


def apply_changes(
    uri: str,
    state: DocState,
    changes: Sequence[types.TextDocumentContentChangeEvent],
    encoding: str,
    next_edits: bool = True,
) -> bool:
    """Applies a didChange's edits in order, showing each to the observers (to the next edits' too, unless
    `next_edits` is off). False when the document grew past MAX_DOCUMENT_BYTES: the caller then drops it."""
    state.version += 1
    try:
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                r = change.range
                before = state.doc.text
                at = state.doc.offset_at(r.start.line, r.start.character, encoding)
                signature = best_effort(state.signatures.before_change, state.doc, at)
                if next_edits:
                    end = state.doc.offset_at(r.end.line, r.end.character, encoding)
                    best_effort(state.hints.before_change, state.doc, at, end, change.text)
                state.doc.apply_change(
                    r.start.line, r.start.character, r.end.line, r.end.character, change.text, encoding
                )
                best_effort(state.renames.observe, before, state.doc.text, at)
                best_effort(state.signatures.observe, signature, state.doc, at)
            else:
                state.doc.replace_all(change.text)
                state.renames.session = None
                state.hints.replaced()
    except Exception:  # never lose the document: reparse our own text (edited before the tree is touched)
        # (pygls' copy is no fallback: it splits lines like str.splitlines and may be missing.)
        log.exception("%s: incremental update failed; reparsing", uri)
        state.doc = _syntax_document(uri, state.doc.text, state.doc.language)
    if len(state.doc.source) > MAX_DOCUMENT_BYTES:
        log.warning("%s: grew past %d bytes: completions off for it", uri, MAX_DOCUMENT_BYTES)
        return False
    return True


BIG_DOCUMENT_BYTES = 1 << 20  # closing a document this large hands the memory it held back to the system


def best_effort(fn: Any, *args: Any) -> Any:
    """Runs a side feature of an edit (rename tracking, recent edits): its failure must never cost the edit itself,
    nor the later changes of the same notification (which the text-sync `try` would skip). None if it fails."""
    try:
        return fn(*args)
    except Exception:
        log.exception("%s failed; the edit itself is kept", getattr(fn, "__qualname__", fn))
        return None


def _syntax_document(uri: str, text: str, language: str | None) -> SyntaxDocument:
    try:
        return SyntaxDocument(text, language)
    except Exception:  # a grammar that fails to load must not lose the document: keep it as plain text
        log.exception("%s: cannot parse as %s; kept as plain text", uri, language)
        return SyntaxDocument(text, None)
