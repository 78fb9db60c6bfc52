"""The model's own answer: a draft from the encoder's LM head seeds the canvas (the denoiser then refines it
instead of starting from noise), and the known text after the cursor is pinned where the model ended its line.

A rest-of-line draft comes from a beam to the line end (the continuation the model believes most as a whole) and
a known name may start its word (infill.sources.names); other spans take the greedy draft to its end.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from diffill.model.fim import build_canvas
from diffill.model.session import PromptSession
from diffill.model.speculative import Enough

from .. import tuning
from ..options import CopyOptions, DraftOptions, EngineOptions
from ..request import Request
from .line_search import line_copies, next_line_copies
from .names import KnownNames, preferred_name


@dataclass(frozen=True)
class Draft:
    canvas: list[int]  # the canvas seeded with the draft
    score: float  # the summed log-probability of the model's own best draft (its stop token included)
    # the tokens `score` is of, when it stopped before its end (where it is no longer shown, or out of time): the
    # whole line's score is at most that (None: it went to its end)
    short: list[int] | None = None
    open_end: bool = False  # the canvas's draft stopped before its line's end (OwnLine.whole_line writes the rest)


def canvas_length(line: bool, model_canvas: int, options: DraftOptions) -> int:
    """The canvas of a span (`line`: a rest of line, which rarely needs a whole one: a shorter one costs less a
    step)."""
    canvas = options.canvas_length if options.canvas_length is not None else model_canvas
    if line and options.line_canvas_length is not None:
        canvas = min(canvas, options.line_canvas_length)
    return canvas


def draft(
    model: PromptSession,
    request: Request,
    canvas: int,
    beam: int,
    names: KnownNames | None,
    enough: Enough | None = None,
    riders: list[list[int]] | None = None,
) -> Draft:
    """A canvas seeded with the encoder's continuation (to the end of the line for rest-of-line spans, from a
    `beam` this wide). With `names`, a known name replaces the draft's own word when the model believes it nearly
    as much, and the draft goes on after it. `enough`: where the draft may stop early (infill.doubt.draft_ends:
    what follows would not be shown); `riders`: continuations scored beside its first pass (PromptSession.draft)."""
    stop = request.stops
    k = beam if request.line else 1
    ids, score = model.draft(canvas - 1, stop, k, enough=enough, riders=riders)
    short = None if _whole(ids, stop, canvas - 1) else ids
    open_end = short is not None
    if names is not None:
        head = preferred_name(model, ids, names)
        if head is not None and len(head) < canvas - 1:
            rest = model.draft(canvas - 1 - len(head), stop, k, head=head, enough=enough)
            ids, open_end = head + rest[0], not _whole(rest[0], stop, canvas - 1 - len(head))
    return Draft(build_canvas(_written(ids, stop), canvas, request.end), score, short, open_end)


def _whole(ids: list[int], stop: Collection[int], room: int) -> bool:
    """Whether a draft went to its end: a stop id, or all the room it had."""
    return len(ids) >= room or bool(ids) and ids[-1] in stop


def _written(ids: list[int], stop: Collection[int]) -> list[int]:
    """A draft's text: its ids without the stop id that ended it."""
    return ids[:-1] if ids and ids[-1] in stop else ids


class OwnLine:
    """The model's own rest of line, drafted only as far as it is shown (`enough`): the rest is drafted only where
    it is needed, to judge a copy against the whole line (`score_against`), or for the line an answer was cut
    from (`whole_line`: the syntax guard runs an answer on along it)."""

    def __init__(self, model: PromptSession, request: Request, drafted: Draft, canvas: int, beam: int) -> None:
        self.model, self.request, self.canvas, self.beam = model, request, canvas, beam
        self.draft = drafted

    @property
    def ids(self) -> list[int]:
        """The answer's ids as drafted so far."""
        return drafted(self.draft.canvas, self.request.end)

    def score_against(self, bar: float) -> float:
        """The line's score where it decides against a rival scoring `bar`: as far as drafted when that is at most
        `bar` already (a score only falls as the line goes on), else the whole line's, the rest drafted now (when
        the time left affords it)."""
        d = self.draft
        if d.short is not None and d.score > bar and self.model.affords(1):
            self._go_on(d.short)
        return self.draft.score

    def whole_line(self) -> list[int]:
        """The ids of the answer's whole line (its rest drafted now, when the time left affords it)."""
        if self.draft.open_end and self.model.affords(1):
            self._go_on(self.ids)
        return self.ids

    def _go_on(self, ids: list[int]) -> None:
        """Drafts on after `ids` (the scored draft, or the answer, or both) and keeps what that makes whole; not
        before `ids` have written the healed text (a draft out of time inside it: what follows is unconstrained)."""
        d, stop = self.draft, self.request.stops
        if len(self.model.decode(ids)) < len(self.request.healed):
            return
        room = self.canvas - 1 - len(ids)
        rest, score = self.model.draft(room, stop, self.beam if self.request.line else 1, head=ids)
        whole = _whole(rest, stop, room)
        longer = ids + _written(rest, stop)
        answer, open_end = (longer, not whole) if ids == self.ids else (self.ids, d.open_end)
        short, total = (None if whole else longer, d.score + score) if ids == d.short else (d.short, d.score)
        self.draft = Draft(build_canvas(answer, self.canvas, self.request.end), total, short, open_end)


NAME = "name"  # a Seed's source when a known name seeds the canvas (name_seed)


@dataclass(frozen=True)
class Seed:
    """A canvas seeded with a copied line (copy_seed) or a known name (name_seed), and what seeded it."""

    canvas: list[int]
    ids: list[int]  # the seed's tokens (the healed text first)
    source: str  # "next line" or "copy", as the encoder's plan names its copies, or NAME
    places: int  # how many places continue this way


def copy_seed(
    model: PromptSession, request: Request, others: Sequence[str], canvas: int, options: CopyOptions
) -> Seed | None:
    """A rest of line's canvas seeded with the line that followed the line above elsewhere, else with the line the
    document or the code around (`others`) continues the same way (the best evidence of
    infill.sources.line_search, tried in the order the encoder's plan tries them; the healed text first), for a
    decoder that has no encoder draft to start from; None when copies are off or there is none."""
    if not request.line or options.copy_prior is None:
        return None
    found, source = next_line_copies(request.text, request.offset, others), "next line"
    if not found:
        found, source = line_copies(request.text, request.offset, others, in_docstring=request.in_docstring), "copy"
    if not found:
        return None
    ids = model.encode(request.healed + found[0].rest)
    if not ids:
        return None
    return Seed(build_canvas(ids, canvas, request.end), ids, source, found[0].count)  # (too long: its start)


def name_seed(model: PromptSession, request: Request, names: KnownNames, canvas: int) -> Seed | None:
    """A rest of line's canvas seeded with the known name that the typed word goes on as most often nearby
    (KnownNames lists them so), for a decoder with no encoder draft whose word a name could start; None when
    the name writes nothing."""
    ids = model.encode(names.healed + names.names[0][len(names.typed) :])
    return Seed(build_canvas(ids, canvas, request.end), ids, NAME, 0) if ids else None


def drafted(canvas: list[int], end: int) -> list[int]:
    """The draft a seeded canvas holds (up to its `end` id)."""
    return canvas[: canvas.index(end)] if end in canvas else canvas


def with_known_tail(
    model: PromptSession, request: Request, ids: list[int], canvas: int, options: EngineOptions
) -> list[int]:
    """`ids`, or when they do not end with the known text after the cursor (closing brackets), a second denoising
    with that text pinned where the model ended its line, then the end id: the model fills what comes before it."""
    tail = request.known_tail
    if not tail or model.decode(ids).rstrip().endswith(tail):
        return ids
    tail_ids = model.encode(tail)
    if len(tail_ids) + 2 > canvas:
        return ids
    start = max(1, min(len(ids), canvas - len(tail_ids) - 1))  # where the model ended, if it fits
    pins = _pins_at(start, tail_ids, request.end)
    pinned = model.denoise(canvas, options.drafts.steps, tuning.SEED, pins=pins, min_confidence=_floor(options))
    return ids if pinned is None else pinned  # (None: out of time)


def with_suffix_head(
    model: PromptSession, request: Request, ids: list[int], canvas: int, options: EngineOptions
) -> list[int]:
    """A block body's answer denoised again with the suffix's head (Request.suffix_head) and the end id pinned where
    the answer ended, so that the decoder writes the body knowing the line it leads to; the answer is what comes
    before the pins. `ids` when there is no head, no answer, no room, or no time."""
    if not request.suffix_head or not ids:
        return ids
    head = model.encode(request.suffix_head)
    start = len(ids)
    if start + len(head) + 1 > canvas:
        return ids
    pins = _pins_at(start, head, request.end)
    pinned = model.denoise(canvas, options.drafts.steps, tuning.SEED, pins=pins, min_confidence=_floor(options))
    return ids if pinned is None else pinned[:start]


def _pins_at(start: int, ids: list[int], end: int) -> dict[int, int]:
    """`ids` then the `end` id pinned from canvas offset `start` on."""
    return {start + i: t for i, t in enumerate(ids)} | {start + len(ids): end}


def _floor(options: EngineOptions) -> float:
    """Where a pinned denoising cuts its answer: at the decoder's doubt, unless the encoder cuts its drafts."""
    return 0.0 if options.drafts.ar else options.rank.span_confidence
