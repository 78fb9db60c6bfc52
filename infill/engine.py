"""The completion engine: document + cursor -> span -> FIM prompt -> denoised canvas -> filtered edit.

The span decides the canvas: mid-line, the rest of the line is regenerated (the model was trained on rest-of-line
middles that run to the line end, so the edit replaces what follows the cursor on that line); after a block
opener or in an empty body, a multi-line body; on an empty line, a few lines.
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from diffill.model.api import DiffusionModel
from diffill.model.fim import build_canvas, build_prompt
from diffill.model.memory import CorpusMemory
from diffill.model.ngram import NgramMixer
from diffill.model.prompt_cache import PromptCache
from diffill.model.sampler import Cancelled
from diffill.model.tokenizer import EOS, SPECIAL_TOKENS, CodeTokenizer

from . import context, edits, signatures
from .context import IDENT_TAIL, RecentEdits
from .copies import MIN_TYPED_KEY, LineCopy, can_copy_next_line, line_copies, next_line_copies, typed_on_line
from .document import SyntaxDocument, count_errors
from .filters.base import Candidate
from .neighbors import MAX_FILE_BYTES, SiblingFiles
from .ngram_sources import NgramSources
from .postprocess import postprocess
from .spans import select_span
from .workspace import IDENT, WorkspaceIndex

if TYPE_CHECKING:
    from diffill.model.runtime import LoadedModel

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 6  # generous: slice this many characters per budget token before tokenizing
WORD_PIECE = re.compile(r" ?\w+")  # a token inside a word (the first of a word may carry its leading space)


@dataclass
class Completion:
    start: int  # string offsets into the document text: replace text[start:end] with `text`
    end: int
    text: str
    kind: str
    timings: dict[str, float] = field(default_factory=dict)
    source: str = "model"  # "model", or "copy" / "next line" for a line copied from the code around (infill.copies)


@dataclass(frozen=True)
class Neighbours:
    """The texts around a document: the other open documents, and the files of its folder on disk (its own saved
    copy included: one n-gram index of a folder serves all its files, each left out of its own matches)."""

    opened: list[str]
    folder: list[tuple[Path, str]]  # resolved paths
    here: Path | None  # the document's resolved path
    opened_paths: frozenset[str]

    def texts(self) -> list[str]:
        """What copies come from: the open documents, then the folder's files neither open nor this one (whose
        saved copy may hold what is being typed)."""
        return self.opened + [t for p, t in self.folder if p != self.here and str(p) not in self.opened_paths]


@dataclass
class EngineOptions:
    steps: int = 8
    canvas_length: int = 0  # 0 = the model's own
    max_prompt_tokens: int = 256  # the daemon's `maxPromptTokens`: 384 cost 25 ms p50 and crossed 200 ms at p95
    max_suffix_tokens: int = 64
    seed: int = 0
    context_tokens: int = 0  # cross-file context budget; 0 = off (models not trained with context)
    line_canvas_length: int = 0  # canvas for rest-of-line spans; 0 = the same as the others
    draft: str = ""  # "ar": seed the canvas with a greedy draft from the encoder's LM head, then denoise
    # Cut the answer before the first token the model gives a lower probability (0 = off): a shorter answer that
    # is right beats a longer one that goes wrong. The model's own rest of line (AR drafts) is judged by its
    # encoder's probability of each token after the ones before; other answers by the denoiser's confidence.
    # Copies stay whole.
    min_confidence: float = 0.0
    # The cut for denoised answers (multi-line spans; any span of a model without AR drafts) when it differs
    # (None = min_confidence): a rest of line is cut harder than a block (measured, docs/benchmarks.md).
    span_min_confidence: float | None = None
    token_healing: bool = True  # mid-line, take the partial last token back and make the answer start with it
    # A word typed in several tokens (`su|pe` for `super`) is taken back whole, up to this many tokens: the model
    # then writes it in its own tokens instead of finishing a piece it never saw there. 1 = the last token only.
    heal_tokens: int = 4
    # A rename in progress is what the user is doing: the new name wins a slot unless the model believes the
    # old one by more than this (mean log-probability per token, nats).
    rename_prior: float = 4.0  # tuned on held-out stdlib/click/attrs/pygls renames (docs/benchmarks.md)
    # A name defined elsewhere in the workspace that extends the word being typed replaces the draft's own
    # word unless the model believes its own by more than this (summed log-probability, nats); < 0 = off.
    symbol_prior: float = 8.0  # tuned on held-out stdlib/click/attrs/pygls (docs/benchmarks.md)
    # Rest-of-line drafts come from a beam search this wide: the continuation the model believes most as a whole
    # (summed log-probability to the line end) seeds the canvas. 1 = plain greedy.
    draft_candidates: int = 1
    # A rest of line copied from another line of the file that starts like this one (infill.copies) replaces the
    # model's answer unless the model believes its own line by more than this (nats, the line end included;
    # WHOLE_LINE_BONUS more when the whole typed line matches); < 0 = off.
    copy_prior: float = 12.0  # tuned on held-out hf_hub and stdlib/click/attrs/pygls (docs/benchmarks.md)
    # The line that followed the line above the cursor's elsewhere, when it starts with what is typed
    # (infill.copies.next_line_copies), is the answer unless the model believes its own best line by more than
    # this (nats, + WHOLE_LINE_BONUS). None: such a copy always wins and the model only ranks the copies
    # (measured for the embedded model, whose own lines are seldom right: on hf_hub with siblings, multi-line
    # useful 0.124 with 12 -> 0.179 with None; rest of line exact 0.330 -> 0.382; docs/benchmarks.md).
    next_line_prior: float | None = None
    # Rest of line: when other copies score within this many nats of the best one, the answer is the start they
    # share (when more than whitespace): `assertEqual(` rather than one of `assertEqual(x, 1)` / `assertEqual(y,
    # 2)`. < 0 = off. Measured: useful +2.6 / +1.2 points (tuning set / hf_hub) at the same exact matches; 2 nats:
    # +3.8 / +2.1 useful, -0.3 / -0.6 exact; on new lines it cost exact matches (docs/benchmarks.md).
    copy_hedge: float = 1.0
    # A rest-of-line copy is cut before its first token the model (with the n-gram evidence of the code around)
    # gives less than this, like the model's own answers at `min_confidence`: a copy that goes wrong part way
    # still gives its right start. 0 (or min_confidence 0: nothing is cut) = copies stay whole. Measured
    # (docs/benchmarks.md): 0.35 -> exact -0.3, useful +1.4 to +2.9 points on the tuning set's draws and hf_hub;
    # 0.6 -> exact -1.5, useful +4.5.
    copy_min_confidence: float = 0.35
    # A cache n-gram model of the code around (the document, open documents, the files beside it: model.ngram)
    # is mixed into the model's next-token probabilities with this weight where two tokens of context match it,
    # plus `ngram_per_order` per further token matched; < 0 = off.
    ngram_weight: float = 0.2
    ngram_per_order: float = 0.1
    # The model's corpus memory (model.memory: code from its training corpus, shipped beside the embedded model)
    # is mixed in the same way, before the code around, where four tokens of context match it, plus
    # `memory_per_order` per further token; < 0 = off. Measured (docs/benchmarks.md): tuning set +1.5 exact, +0.6
    # useful; held-out Go, Rust, JS (languages the model never trained on, only the memory has) +2 to +3 useful.
    memory_weight: float = 0.2
    memory_per_order: float = 0.05

    @classmethod
    def from_card(cls, card: LoadedModel | None, **overrides) -> EngineOptions:
        """The options a model's card asks for (draft mode, answer cut-off, draft candidates; cross-file context
        only for models trained with it: it shifts the prompt of the others) with `overrides` on top. Rest-of-line
        spans get a 16-token canvas (measured: 8.7 ms a step against 13 ms for 32 tokens)."""
        card_options = {"line_canvas_length": 16}
        if card is not None:
            card_options |= {
                "draft": card.draft,
                "min_confidence": card.min_confidence,
                "span_min_confidence": card.span_min_confidence,
                "draft_candidates": card.draft_candidates,
                "context_tokens": 96 if card.trained_with_context else 0,
            }
        return cls(**(card_options | overrides))


WORD_HEAD = re.compile(r"[A-Za-z0-9_]*")
ATTRIBUTE_DOT = re.compile(r"[\w)\]]\.$")  # a dot after an expression (not `from .x`, `..`, `...`)
ATTRIBUTE_OWNER = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\.$")  # `self.` at the cursor: its attributes are candidates
SYMBOL_WINDOW = 8000  # characters before the cursor whose identifiers are candidates for the word being typed
MAX_SYMBOLS = 8
MAX_OPEN_SOURCES = 16  # open documents searched for copies (the last opened)
WHOLE_LINE_BONUS = 8.0  # nats: a line that starts exactly like the one being typed is stronger evidence
KNOWN_TAIL = frozenset(")]}>\"'`;:,. ")


def _is_known_tail(tail: str) -> bool:
    """Text after the cursor that a completion must end with: short runs of closers and punctuation."""
    return 0 < len(tail) <= 8 and set(tail) <= KNOWN_TAIL


def _prefix_window(text: str, offset: int, chars: int) -> str:
    """The text before the cursor, cut at a line start so the first token is not a fragment. The cut point
    moves in steps of 1 KiB, not with every keystroke, so that consecutive prompts share their beginning."""
    start = max(0, (offset - chars) // 1024 * 1024)
    if start:
        nl = text.find("\n", start, offset)
        start = nl + 1 if nl >= 0 else start
    return text[start:offset]


class CompletionEngine:
    def __init__(
        self,
        model: DiffusionModel,
        tokenizer: CodeTokenizer,
        options: EngineOptions | None = None,
        memory: CorpusMemory | None = None,
    ):
        self.model = model
        self.memory = memory  # the model's corpus memory (model.memory), when it has one
        self.tokenizer = tokenizer
        self.options = options or EngineOptions()
        self.prompt_cache = PromptCache(model.net.new_cache)
        self.workspace: WorkspaceIndex | None = None
        self.recent: RecentEdits | None = None
        self._context: list[str] = []
        self._context_stamp: tuple | None = None
        self._newline_ids: set[int] | None = None
        self._vocab_text: list[str] | None = None
        self._first_ids: dict[str, list[int]] = {}
        self.siblings = SiblingFiles()
        self.ngrams = NgramSources(tokenizer.encode, model.config.vocab_size)
        # The editor's open documents (file path -> text), set by the server: copies come from them too, and
        # their unsaved text replaces what the disk has.
        self.open_documents: Callable[[], dict[str, str]] | None = None
        # Folders whose files may be read beside the document (the server sets the workspace roots: nothing
        # outside them is read); None: any folder (the CLI and `diffill eval`, given a path by the user).
        self.read_roots: list[Path] | None = None

    def prompt_for(
        self, text: str, offset: int, suffix_start: int, context: list[str] | None = None, heal: bool = False
    ) -> tuple[list[int], str]:
        """(FIM prompt ids, healed text). With `heal`, the prefix's last token is taken back when it is a piece
        of the current line (`foo.ba` ends in ` ba`, a token the model rarely saw before a middle; `return ` ends
        in a space, which the model writes as the start of the next word): the answer
        must then start with that text (see `first_token_ids`), so the model writes the whole natural token."""
        o = self.options
        prefix = _prefix_window(text, offset, o.max_prompt_tokens * CHARS_PER_TOKEN)
        suffix_ids = self._suffix_ids(text[suffix_start : suffix_start + o.max_suffix_tokens * CHARS_PER_TOKEN])
        blocks = [self.tokenizer.encode(b) for b in context or []]
        prefix_ids = self.tokenizer.encode(prefix)
        healed = ""
        if heal and len(prefix_ids) > 1:
            last = self.tokenizer.decode(prefix_ids[-1:])
            typed_before = prefix[: len(prefix) - len(last)].rsplit("\n", 1)[-1].strip()
            # a trailing space after code is taken back too (`return |`); a line's indentation is not
            partial = last.strip() or typed_before
            if partial and "\n" not in last and prefix.endswith(last) and self.first_token_ids(last):
                prefix_ids, healed = prefix_ids[:-1], last
                taken = 1
                while taken < o.heal_tokens and len(prefix_ids) > 1 and WORD_PIECE.fullmatch(healed):
                    piece = self.tokenizer.decode(prefix_ids[-1:])
                    if healed.startswith(" ") or not WORD_PIECE.fullmatch(piece) or not prefix.endswith(piece + healed):
                        break
                    prefix_ids, healed, taken = prefix_ids[:-1], piece + healed, taken + 1
        prompt = build_prompt(prefix_ids, suffix_ids, o.max_prompt_tokens, o.max_suffix_tokens, context=blocks)
        return prompt, healed

    def _vocab_texts(self) -> list[str]:
        """Each id's text ("" for the special tokens), decoded once."""
        if self._vocab_text is None:
            n = self.tokenizer.vocab_size
            self._vocab_text = [self.tokenizer.decode([i]) if i >= len(SPECIAL_TOKENS) else "" for i in range(n)]
        return self._vocab_text

    def first_token_ids(self, healed: str) -> list[int]:
        """Vocabulary ids whose text starts with `healed` (cached per text)."""
        return self._vocab_ids(healed, lambda t: t.startswith(healed))

    def consistent_ids(self, rest: str) -> list[int]:
        """Vocabulary ids that may start a text beginning with `rest`: those that start with it, and those that
        are a (non-empty) start of it (cached per text)."""
        return self._vocab_ids("\0" + rest, lambda t: bool(t) and (t.startswith(rest) or rest.startswith(t)))

    def _vocab_ids(self, key: str, keep: Callable[[str], bool]) -> list[int]:
        """The ids whose text `keep` accepts, cached under `key` (at most about 4,096 keys)."""
        if key not in self._first_ids:
            if len(self._first_ids) > 4096:
                self._first_ids.clear()
            self._first_ids[key] = [i for i, t in enumerate(self._vocab_texts()) if keep(t)]
        return self._first_ids[key]

    def healing(self, healed: str) -> Callable[[list[int]], list[int] | None] | None:
        """The draft constraint of token healing: the ids a draft's next token may take until its text covers
        `healed` (None after: any), so that a word taken back in pieces is written again in whichever tokens the
        model likes."""
        if not healed:
            return None

        def allowed(tokens: list[int]) -> list[int] | None:
            done = self.tokenizer.decode(tokens) if tokens else ""
            return self.consistent_ids(healed[len(done) :]) if len(done) < len(healed) else None

        return allowed

    def _suffix_ids(self, suffix: str) -> list[int]:
        """The suffix's head in whole lines (a syntax boundary, not a token count, ends it) within the budget."""
        ids = self.tokenizer.encode(suffix)
        budget = self.options.max_suffix_tokens
        while len(ids) > budget and "\n" in suffix.rstrip("\n"):
            suffix = suffix[: suffix.rstrip("\n").rfind("\n") + 1]
            ids = self.tokenizer.encode(suffix)
        return ids

    def _symbols(self, text: str, offset: int, healed: str, path: str | None) -> tuple[str, str, list[str]] | None:
        """(healed text, typed word, known names that extend it), or None. Known names: after `obj.`, the
        attributes the file uses on `obj` (most frequent first); after a word of two or more characters, the
        names that start with it in the file around the cursor (most frequent first), then the definitions of
        other workspace files. (`healed` and the typed word both end the text at the cursor, so the candidate
        text after the prompt is `healed + name[len(typed):]`.)"""
        if self.options.symbol_prior < 0 or WORD_HEAD.match(text, offset).group(0):
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
            return (healed, typed, names) if names else None
        if len(typed) < 2:
            return None
        if ATTRIBUTE_DOT.search(text, max(0, start - 2), start):  # `f.re|` is an attribute: names used after a dot
            used = re.findall(rf"(?<=[\w)\]])\.({re.escape(typed)}\w*)", window)
        else:
            used = IDENT.findall(window)
        near = Counter(w for w in used if w.startswith(typed) and w != typed)
        names = [w for w, _ in near.most_common(MAX_SYMBOLS)]
        if self.workspace is not None:
            chunks = self.workspace.search(context.query_terms(text, offset), exclude_path=path, k=8, prefix=typed)
            names += [c.name for c in chunks if c.name.startswith(typed) and c.name != typed]
        names = list(dict.fromkeys(names))[:MAX_SYMBOLS]
        return (healed, typed, names) if names else None

    def context_for(self, doc: SyntaxDocument, offset: int, key: str | None, path: str | None) -> list[str]:
        """Cross-file context blocks, recomputed only when the cursor line or the index changes, so the prompt
        (and with it the reused encoder cache) stays stable while the user types along a line."""
        if not self.options.context_tokens or (self.workspace is None and self.recent is None):
            return []
        line = doc.text.count("\n", 0, offset)
        stamp = (key, line, self.workspace.version if self.workspace is not None else 0)
        if self._context_stamp != stamp:
            self._context = context.gather(
                doc.text, offset, path, self.workspace, self.recent, self.options.context_tokens * 3
            )
            self._context_stamp = stamp
        return self._context

    def _draft(
        self,
        prompt: list[int],
        canvas: int,
        kind: str,
        cache,
        first: Callable[[list[int]], list[int] | None] | None,
        symbols: tuple[str, str, list[str]] | None = None,
        mix: NgramMixer | None = None,
    ) -> tuple[list[int], float]:
        """A canvas seeded with the encoder's greedy continuation (to the end of the line for rest-of-line spans):
        the denoiser then refines it instead of starting from noise. `symbols` (healed text, typed word,
        workspace names that extend it) lets a workspace name replace the draft's word when the model believes
        it nearly as much (see `_prefer_symbol`). Returns the canvas and the summed log-probability of the model's
        own best draft (its stop token included)."""
        stop = self._line_stops() if kind == "line" else {EOS}
        k = self.options.draft_candidates if kind == "line" else 1
        draft, score = self._best_draft(prompt, canvas - 1, stop, cache, first, k, mix)
        if symbols is not None:
            head = self._prefer_symbol(prompt, draft, symbols, cache, mix)
            if head is not None and len(head) < canvas - 1:
                rest = self._best_draft(
                    prompt + head, canvas - 1 - len(head), stop, cache, None, k, mix and mix.after(head)
                )
                draft = head + rest[0]
        while draft and draft[-1] in stop:
            draft.pop()
        return build_canvas(draft, canvas), score

    def _line_stops(self) -> set[int]:
        """Ids that end a line: EOS and every token with a newline in it."""
        if self._newline_ids is None:
            self._newline_ids = {i for i, t in enumerate(self._vocab_texts()) if "\n" in t}
        return {EOS} | self._newline_ids

    def _best_draft(
        self, prompt, max_tokens: int, stop: set[int], cache, first, k: int, mix: NgramMixer | None = None
    ) -> tuple[list[int], float]:
        """The likeliest draft of a beam `k` wide (k=1: the greedy draft) and its summed log-probability."""
        return self.model.ar_drafts(prompt, max_tokens, stop, cache, first, k=k, mix=mix)[0]

    def _neighbours(self, path: str | None) -> Neighbours:
        """The other open documents (at most MAX_OPEN_SOURCES, the last opened) and the files of this one's folder
        on disk (see infill.neighbors; only inside `read_roots`)."""
        opened = {}
        if self.open_documents is not None:
            try:
                opened = {str(Path(p).resolve()): t for p, t in self.open_documents().items()}
            except Exception:  # a source of extra context must never cost the completion
                log.exception("open documents for copies")
        here = Path(path).resolve() if path else None
        texts = [t for p, t in opened.items() if p != str(here) and len(t) <= MAX_FILE_BYTES][-MAX_OPEN_SOURCES:]
        folder_files = []
        if path:
            # siblings are plain files (no links) of the folder: resolved, they are the resolved folder plus a name
            folder = Path(path).parent.resolve()
            if self.read_roots is None or any(folder == r or folder.is_relative_to(r) for r in self.read_roots):
                folder_files = [(folder / p.name, t) for p, t in self.siblings.texts(path, include_self=True)]
        return Neighbours(texts, folder_files, here, frozenset(opened))

    def _prefer_copy(
        self,
        prompt: list[int],
        text: str,
        offset: int,
        healed: str,
        draft_score: float,
        cache,
        others: list[str],
        mix: NgramMixer | None = None,
    ) -> list[int] | None:
        """Token ids of a rest of line copied from another line that starts the same way (infill.copies) that
        should be the answer instead of the model's own, or None. The model scores each copy as a whole line (its
        end included); a copy wins when it trails the model's best draft by less than `copy_prior` nats (more for
        a copy of a whole line): the file's own spelling of a call or an argument list is a better guess than one
        the model makes up, and the model still rules out lines that do not fit here (measured: diffill eval)."""
        if self.options.copy_prior < 0:
            return None
        hedge = self.options.copy_hedge
        copies = line_copies(text, offset, others)
        return self._pick_copy(prompt, copies, healed, draft_score, cache, hedge=hedge, mix=mix)

    def _prefer_next_line(
        self,
        prompt: list[int],
        text: str,
        offset: int,
        healed: str,
        canvas: int,
        cache,
        others: list[str],
        first,
        hedge: float = -1.0,
        mix: NgramMixer | None = None,
    ) -> list[int] | None:
        """Token ids of the line that follows the line above the cursor's elsewhere (in the file, beside it, in
        open documents: infill.copies.next_line_copies) and starts with what is typed, or None. With no
        `next_line_prior` the copy the model scores best wins; with one, it must come within that many nats of
        the model's own best line (a one-line beam). On a new line the answer is then that one line."""
        copies = next_line_copies(text, offset, others) if self.options.copy_prior >= 0 else []
        if not copies:
            return None
        score = -math.inf  # no prior: the best-scored copy wins, the model's own line is not drafted
        if self.options.next_line_prior is not None:
            k = self.options.draft_candidates
            score = self._best_draft(prompt, canvas - 1, self._line_stops(), cache, first, k, mix)[1]
        return self._pick_copy(prompt, copies, healed, score, cache, self.options.next_line_prior, hedge, mix)

    def warm_sources(self, path: str | None) -> None:
        """Tokenize and index the texts a completion in `path` learns from (see infill.ngram_sources) ahead of it."""
        if self.options.ngram_weight >= 0:
            around = self._neighbours(path)
            self.ngrams.warm(around.opened, around.folder)

    def _mixer(self, text: str, offset: int, prompt: list[int], around: Neighbours | None) -> NgramMixer | None:
        """The n-gram evidence of this completion: the cache of the code around (model.ngram) and the corpus
        memory (model.memory), or None when both are off."""
        o = self.options
        memory = self.memory if o.memory_weight >= 0 else None
        indexes = []
        if o.ngram_weight >= 0 and around is not None:
            try:
                indexes = self.ngrams.indexes(text, offset, around.opened, around.folder, around.here)
            except Exception:  # extra evidence must never cost the completion
                log.exception("n-gram cache")
        if not indexes and memory is None:
            return None
        return NgramMixer(
            indexes, prompt, o.ngram_weight, o.ngram_per_order, memory, o.memory_weight, o.memory_per_order
        )

    def _wants_copies(self, text: str, offset: int, kind: str) -> bool:
        """Whether copies could match here (a line above, or enough typed on a line): only then are the files
        around read."""
        if self.options.copy_prior < 0 or self.options.draft != "ar":
            return False
        return can_copy_next_line(text, offset) or (
            kind == "line" and len(typed_on_line(text, offset)) >= MIN_TYPED_KEY
        )

    def _pick_copy(
        self,
        prompt: list[int],
        copies: list[LineCopy],
        healed: str,
        draft_score: float,
        cache,
        prior: float | None = None,
        hedge: float = -1.0,
        mix: NgramMixer | None = None,
    ) -> list[int] | None:
        """The ids of the copy the model scores best (to its line end) plus its prior (`copy_prior` unless given,
        more for a whole line), if that beats `draft_score`. With `hedge` >= 0, copies that score within that many
        nats of the best are as likely: the answer is the start they share (when it is more than whitespace)."""
        if not copies:
            return None
        encoded = [self.tokenizer.encode(healed + c.rest) for c in copies]
        scores = self.model.continuation_logprobs(prompt, encoded, cache, end_ids=self._line_stops(), mix=mix)
        prior = self.options.copy_prior if prior is None else prior
        bonus = [prior + (WHOLE_LINE_BONUS if c.whole_line else 0.0) for c in copies]
        best = max(range(len(copies)), key=lambda i: scores[i] + bonus[i])
        if scores[best] + bonus[best] < draft_score:
            return None
        if hedge >= 0:
            top = scores[best] + bonus[best]
            rivals = [c.rest for i, c in enumerate(copies) if i != best and scores[i] + bonus[i] >= top - hedge]
            shared = os.path.commonprefix([copies[best].rest, *rivals]) if rivals else ""
            if shared.strip():
                return self.tokenizer.encode(healed + shared)
        return encoded[best]

    def _prefer_symbol(
        self, prompt: list[int], draft: list[int], symbols, cache, mix: NgramMixer | None = None
    ) -> list[int] | None:
        """Token ids of the workspace name that should start the answer instead of the draft's own word, or
        None. The model scores each name and its own word (log-probability after the prompt); a name wins when
        it trails by less than `symbol_prior` nats: a definition the project has is a better guess than a word
        the model made up, and the model still rules out names that do not fit (measured: bench context)."""
        healed, typed, names = symbols
        text = self.tokenizer.decode(draft)
        if not text.startswith(healed):
            return None
        own = typed + WORD_HEAD.match(text, len(healed)).group(0)
        if own in names:
            return None
        options = [own] + names
        encoded = [self.tokenizer.encode(healed + name[len(typed) :]) for name in options]
        scores = self.model.continuation_logprobs(prompt, encoded, cache, mix=mix)
        best = max(range(1, len(options)), key=lambda i: scores[i])
        if scores[best] + self.options.symbol_prior < scores[0]:
            return None
        return encoded[best]

    def _unhealed(self, ids: list[int], healed: str) -> str:
        """The text of `ids` after the healed text they start with (already in the buffer); "" when they do not."""
        raw = self.tokenizer.decode(ids)
        if healed:
            raw = raw[len(healed) :] if raw.startswith(healed) else ""
        return raw

    def _span_confidence(self) -> float:
        """The denoiser's cut-off for the answers the encoder does not judge (see EngineOptions)."""
        o = self.options
        return o.min_confidence if o.span_min_confidence is None else o.span_min_confidence

    def _cut_at_doubt(
        self,
        prompt: list[int],
        ids: list[int],
        healed: str,
        cache,
        mix: NgramMixer | None = None,
        min_confidence: float | None = None,
    ) -> list[int]:
        """`ids` up to the first token the encoder's head gives less than `min_confidence` (the option unless
        given) after the prompt and the tokens before it; the answer keeps at least one token past the healed text."""
        n = next((i for i, t in enumerate(ids) if t < len(SPECIAL_TOKENS)), len(ids))  # up to EOS or padding
        body = ids[:n]
        floor = math.log(self.options.min_confidence if min_confidence is None else min_confidence)
        for i, logp in enumerate(self.model.token_logprobs(prompt, body, cache, mix)):
            if logp < floor and len(self.tokenizer.decode(body[:i])) > len(healed):
                return body[:i]
        return ids

    def _with_pinned_tail(self, prompt, ids, tail, canvas, cache, cancel, first: list[int] | None) -> list[int]:
        """Denoise again with the text after the cursor pinned where the model ended its line, then EOS: the
        known closing brackets are held fixed on the canvas and the model fills what comes before them."""
        tail_ids = self.tokenizer.encode(tail)
        if len(tail_ids) + 2 > canvas:
            return ids
        start = max(1, min(len(ids), canvas - len(tail_ids) - 1))  # where the model ended, if it fits
        pins = {start + i: t for i, t in enumerate(tail_ids)}
        pins[start + len(tail_ids)] = EOS
        return self.model.generate(
            prompt,
            max_new_tokens=canvas,
            seed=self.options.seed,
            steps=self.options.steps,
            canvas_length=canvas,
            pinned=pins,
            cancel=cancel,
            cache=cache,
            min_confidence=0.0 if self.options.draft == "ar" else self._span_confidence(),  # the encoder cuts
            first_allowed=first,
        )

    def edit(
        self,
        doc: SyntaxDocument,
        offset: int,
        rename: tuple[str, str],
        cancel: Callable[[], bool] | None = None,
        key: str | None = None,
        max_canvas: int = 192,
    ) -> Completion | None:
        """An inline edit that carries a rename (old -> new) into the lines below the cursor, or None.

        The region below the cursor goes on the canvas twice, each occurrence of the old name noised: once to
        be filled with the new name, once with the old one. One decoder pass per candidate scores every slot, and
        each occurrence takes the name the model believes more (denoising restricted to the two candidates: a
        small model cannot spell a new identifier on its own, but it can tell which one the code needs)."""
        old, new = rename
        text = doc.text
        region = edits.find_region(text, offset, old, limit_at=edits.scope_end(doc, offset))
        if region is None:
            return None
        encode = self.tokenizer.encode
        ids_new, _, slots_new = edits.canvas_layout(text, region, encode(new), encode)
        ids_old, _, slots_old = edits.canvas_layout(text, region, encode(old), encode)
        if max(len(ids_new), len(ids_old)) + 1 > max_canvas:
            return None
        prompt, _ = self.prompt_for(text, offset, region.end)
        with self.prompt_cache.use(f"{key or ''}#edit", prompt) as cache:
            if cancel is not None and cancel():
                raise Cancelled()
            seed = self.options.seed
            score_new = self.model.slot_logprobs(prompt, ids_new + [EOS], slots_new, cache, seed)
            score_old = self.model.slot_logprobs(prompt, ids_old + [EOS], slots_old, cache, seed)
        prior = self.options.rename_prior
        fills = [new if n + prior >= o else old for n, o in zip(score_new, score_old, strict=True)]
        if new not in fills:
            return None
        replacement = edits.apply_fill(text, region, fills)
        edited = text[: region.start] + replacement + text[region.end :]
        if doc.language and count_errors(doc.language, edited) > count_errors(doc.language, text):
            return None
        return Completion(start=region.start, end=region.end, text=replacement, kind="edit")

    def follow_signature(
        self, doc: SyntaxDocument, offset: int, change: signatures.SignatureChange
    ) -> Completion | None:
        """An inline edit that passes an added parameter on (or drops a removed one) at the calls below the
        cursor (see infill.signatures: the syntax tree decides, no model call)."""
        found = signatures.follow_signature(doc, offset, change)
        if found is None:
            return None
        start, end, text = found
        return Completion(start=start, end=end, text=text, kind="edit")

    def complete(
        self,
        doc: SyntaxDocument,
        offset: int,
        cancel: Callable[[], bool] | None = None,
        key: str | None = None,
        path: str | None = None,
    ) -> Completion | None:
        """A completion at `offset`, or None. Raises diffill.model.sampler.Cancelled when `cancel()` says so.
        `key` (the document URI) selects the encoder cache reused across keystrokes."""
        t0 = time.perf_counter()
        text = doc.text
        offset = max(0, min(offset, len(text)))
        span = select_span(doc, offset)
        # Mid-line, the model regenerates the whole rest of the line: its suffix starts at the line end.
        suffix_start = span.end if span.kind == "line" else offset  # a line span ends at the line end
        context_blocks = self.context_for(doc, offset, key, path)
        heal = self.options.token_healing and span.kind == "line"
        prompt, healed = self.prompt_for(text, offset, suffix_start, context_blocks, heal=heal)
        first = self.healing(healed)  # drafts: each token consistent with the healed text until it is written
        first_ids = first([]) if first is not None else None  # the denoiser: the same, for its first token only
        t1 = time.perf_counter()
        canvas = self.options.canvas_length or self.model.config.canvas_length
        if span.kind == "line" and self.options.line_canvas_length:
            # The rest of a line rarely needs a whole canvas: a shorter one halves each step's cost.
            canvas = min(canvas, self.options.line_canvas_length)
        canvases = 1 if span.kind == "line" else 2
        ar = self.options.draft == "ar"
        line_ar = ar and span.kind == "line"  # the encoder judges these answers (see min_confidence)
        wants_copies = self._wants_copies(text, offset, span.kind)
        around = self._neighbours(path) if wants_copies or (ar and self.options.ngram_weight >= 0) else None
        others = around.texts() if wants_copies and around is not None else []
        mix = self._mixer(text, offset, prompt, around) if ar else None
        with self.prompt_cache.use(key or "", prompt) as cache:
            copied, source = None, "model"
            if ar:
                # a copied line is the whole answer: the canvas is neither drafted nor denoised
                line_canvas = min(canvas, self.options.line_canvas_length or canvas)
                hedge = self.options.copy_hedge if span.kind == "line" else -1.0
                copied = self._prefer_next_line(
                    prompt, text, offset, healed, line_canvas, cache, others, first, hedge, mix
                )
                source = "next line" if copied else source
            draft = ar and not copied
            symbols = self._symbols(text, offset, healed, path) if line_ar and draft else None  # (not for a copy)
            init, score = self._draft(prompt, canvas, span.kind, cache, first, symbols, mix) if draft else (None, 0.0)
            if line_ar and not copied:
                copied = self._prefer_copy(prompt, text, offset, healed, score, cache, others, mix)
                source = "copy" if copied else source
            ids = copied or self.model.generate(
                prompt,
                max_new_tokens=canvas * canvases,
                seed=self.options.seed,
                steps=self.options.steps,
                canvas_length=canvas,
                cancel=cancel,
                cache=cache,
                init=init,
                min_confidence=0.0 if line_ar else self._span_confidence(),
                first_allowed=first_ids,
            )
            tail = text[offset:suffix_start].rstrip() if span.kind == "line" and not copied else ""
            if _is_known_tail(tail) and not self.tokenizer.decode(ids).rstrip().endswith(tail):
                ids = self._with_pinned_tail(prompt, ids, tail, canvas, cache, cancel, first_ids)
            whole = ids
            if line_ar and not copied and self.options.min_confidence > 0:
                ids = self._cut_at_doubt(prompt, ids, healed, cache, mix)
            elif source == "copy" and self.options.copy_min_confidence > 0 and self.options.min_confidence > 0:
                ids = self._cut_at_doubt(prompt, ids, healed, cache, mix, self.options.copy_min_confidence)
        t2 = time.perf_counter()
        raw = self._unhealed(ids, healed)
        # The edit starts as a plain insertion; the suffix-overlap filter extends it over the rest of the line
        # when the model rewrote that rest (as it was trained to), so closing brackets are never doubled. An answer
        # cut short at doubt is judged for syntax as the line it was cut from (see filters.syntax_guard).
        cut_from = self._unhealed(whole, healed) if whole is not ids else ""
        out = postprocess(Candidate.at(text, offset, span, doc.language, raw, doc.tree, whole=cut_from))
        t3 = time.perf_counter()
        timings = {"prompt_ms": (t1 - t0) * 1e3, "model_ms": (t2 - t1) * 1e3, "post_ms": (t3 - t2) * 1e3}
        if not out.text and out.replace_end == offset:
            return None
        if text[offset : out.replace_end] == out.text:  # the edit would change nothing
            return None
        return Completion(offset, out.replace_end, out.text, span.kind, timings, source)
