"""Names the project knows, as candidates for the word being typed: a definition the project has is a better guess
than a word a small model makes up, and the model still rules out names that do not fit (bench context)."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePath

from diffill.model.session import PromptSession

from .. import priors
from ..context.definitions import Chunk
from ..context.prompt_context import IDENT_TAIL, query_terms
from ..context.workspace import IDENT, WorkspaceIndex

WORD_HEAD = re.compile(r"[A-Za-z0-9_]*")
ATTRIBUTE_DOT = re.compile(r"[\w)\]]\.$")  # a dot after an expression (not `from .x`, `..`, `...`)
ATTRIBUTE_OWNER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\.$")  # `self.` at the cursor: its attributes are candidates
MODULE_OWNER = re.compile(r"([A-Za-z_]\w*)\.$")  # `units.` or `pkg.units.` before the typed word: a module, maybe
FROM_IMPORT = re.compile(r"^[ \t]*from\s+(?:[\w.]*\.)?(\w+)\s+import\s+[\w\s,()]*$", re.M)  # `from units import a, `
IMPORTS_HEAD = 20_000  # characters at a file's head where its star imports are looked for
STAR_IMPORT = re.compile(r"^from\s+(?:[\w.]*\.)?(\w+)\s+import\s+\*", re.M)  # the module a file star-imports
WORKSPACE_NAMES = 32  # workspace definitions searched for the typed word, before those of the module in use are kept
SYMBOL_WINDOW = 8000  # characters before the cursor whose identifiers are candidates for the word being typed
MAX_SYMBOLS = 8


@dataclass(frozen=True)
class KnownNames:
    """Names that extend the word being typed. `healed` and the typed word both end the text at the cursor, so a
    name's text after the prompt is `healed + name[len(typed):]`."""

    healed: str
    typed: str
    names: list[str]
    prior: float  # nats the model's own word may lead a name by and still lose (NameOptions.symbol_prior)


def known_names(
    text: str, offset: int, healed: str, workspace: WorkspaceIndex | None, path: str | None, prior: float | None
) -> KnownNames | None:
    """The known names that extend the word at the cursor, or None (also when `prior` is None: off). After
    `obj.`, the attributes the file uses on `obj` (most frequent first); after a word of two or more characters,
    the names that start with it in the file around the cursor (most frequent first), then the definitions of
    other workspace files."""
    if prior is None or WORD_HEAD.match(text, offset, offset + 1).group(0):  # (a word goes on after the cursor)
        return None
    m = IDENT_TAIL.search(text, max(0, offset - 64), offset)
    typed = m.group(0) if m else ""
    start = offset - len(typed)
    window = text[max(0, offset - SYMBOL_WINDOW) : start] + " " + text[offset : offset + SYMBOL_WINDOW // 4]
    if not typed:
        owner = ATTRIBUTE_OWNER.search(text, max(0, offset - 64), offset)
        if owner is None:
            return None
        used = re.findall(rf"(?<![\w.]){re.escape(owner.group(1))}\.([A-Za-z_]\w*)", window)
        names = [w for w, _ in Counter(used).most_common(MAX_SYMBOLS)]
        return KnownNames(healed, typed, names, prior) if names else None
    if len(typed) < 2:
        return None
    if ATTRIBUTE_DOT.search(text, max(0, start - 2), start):  # `f.re|` is an attribute: names used after a dot
        used = re.findall(rf"(?<=[\w)\]])\.({re.escape(typed)}\w*)", window)
    else:
        used = IDENT.findall(window)
    near = Counter(w for w in used if w.startswith(typed) and w != typed)
    names = [w for w, _ in near.most_common(MAX_SYMBOLS)]
    if workspace is not None:
        chunks = workspace.search(query_terms(text, offset), exclude_path=path, k=WORKSPACE_NAMES, prefix=typed)
        chunks = _from_modules_in_use(chunks, text, start)
        names += [c.name for c in chunks[:MAX_SYMBOLS] if c.name.startswith(typed) and c.name != typed]
    names = list(dict.fromkeys(names))[:MAX_SYMBOLS]
    return KnownNames(healed, typed, names, prior) if names else None


def _from_modules_in_use(chunks: list[Chunk], text: str, start: int) -> list[Chunk]:
    """The workspace definitions a name typed at `start` can mean, when the code says which module it comes from:
    after `mod.` or in `from mod import`, those of the module `mod` (when the workspace has one of that name); a
    bare name, those of the modules the file star-imports at its head (when any of them has one). Else all of
    them."""
    owner = MODULE_OWNER.search(text, max(0, start - 64), start) or FROM_IMPORT.search(text, max(0, start - 256), start)
    modules = {owner.group(1)} if owner else set(STAR_IMPORT.findall(text, 0, min(start, IMPORTS_HEAD)))
    mine = [c for c in chunks if _module(c.path) in modules]
    return mine or chunks


def _module(path: str) -> str:
    """The module name a file defines (its stem; a package's `__init__` is the package)."""
    p = PurePath(path)
    return p.parent.name if p.stem == "__init__" else p.stem


def preferred_name(model: PromptSession, draft: list[int], known: KnownNames) -> list[int] | None:
    """Token ids of the known name that should start the answer instead of the draft's own word, or None. The
    model scores each name and its own word (log-probability after the prompt); a name wins unless the model's
    own word leads it by more than the prior."""
    text = model.decode(draft)
    own = _answer_word(text, known)
    if own is None or own in known.names:
        return None
    options = [own] + known.names
    encoded = [model.encode(known.healed + name[len(known.typed) :]) for name in options]
    scores = model.scores(encoded)
    top = 1 + priors.best(scores[1:])
    if priors.trails(scores[top], known.prior, scores[0]):
        return None
    return encoded[top]


def _answer_word(text: str, known: KnownNames) -> str | None:
    """The word an answer's text (after the prompt) makes of the word being typed, or None when the answer does not
    start with the healed text."""
    if not text.startswith(known.healed):
        return None
    return known.typed + WORD_HEAD.match(text, len(known.healed)).group(0)


def whole_name(
    model: PromptSession, ids: list[int], cut: list[int] | None, known: KnownNames | None
) -> list[int] | None:
    """`cut` (the answer cut at the model's doubt: infill.doubt), or a longer start of `ids` when the cut falls
    inside the word being typed and the answer's word is a name the project knows: the cut then ends where the
    known names that go on as the answer does stop agreeing (the whole name when only it does). The model doubts a
    name it never saw spelled (`convert_psi_|to_kilopascal`); the definition is the evidence (bench names)."""
    if cut is None or known is None:
        return cut
    text, shown = model.decode(ids), model.decode(cut)
    own = _answer_word(text, known)
    written = known.typed + shown[len(known.healed) :]  # (the cut may end inside the typed word's tokens)
    if own is None or own not in known.names or not own.startswith(written) or own == written:
        return cut
    agreeing = [name for name in known.names if name.startswith(written)]
    end = len(os.path.commonprefix(agreeing)) - len(known.typed)
    if end <= len(written) - len(known.typed):
        return cut
    return model.encode(text[: len(known.healed) + end])
