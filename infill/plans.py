"""What a completion does, chosen once from its request, each plan its sources, ranking and cut in order.

- `rest_of_line` (the encoder drafts, mid-line or at a line's end): a copied next line, else the model's own line
  (a known name may start its word), which a copied rest of line replaces when the model finds it nearly as
  likely; the answer is cut at the model's doubt, to a whole known name.
- `lines` (the encoder drafts, a block body or a few lines): a copied next line, else the encoder's draft seeds
  a canvas the decoder denoises; the known tail is pinned where it ended its line.
- `canvas` (a model whose card asks for no encoder drafts, a served model): the decoder writes the span from
  noise, or for a rest of line from a copy (the line that followed the line above elsewhere, else the line the
  code around continues the same way), judged as that copy where the decoder keeps it (the cut's beliefs mixed
  with the n-gram evidence, as the encoder's plans mix them), else from the known name the typed word most
  often goes on as nearby.

Every plan's answer then goes through the same filters (infill.postprocess). Where the engine answers with an
edit instead (a rename in progress, a signature being changed), `CompletionEngine.answer` says first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from diffill.model.session import PromptSession
from diffill.model.speculative import Enough

from . import doubt, tuning
from .cost import Cost
from .options import EngineOptions
from .request import Request
from .sources import copies, draft
from .sources.names import KnownNames, whole_name

REST_OF_LINE, LINES, CANVAS = "rest of line", "lines", "canvas"


def plan_for(request: Request, options: EngineOptions) -> str:
    """The plan of a request: which span, and whether the model's card has the encoder draft."""
    if not options.drafts.ar:
        return CANVAS
    return REST_OF_LINE if request.line else LINES


@dataclass(frozen=True)
class Inputs:
    """What a plan works from, gathered once by the engine."""

    model: PromptSession
    request: Request
    options: EngineOptions
    canvas: int  # the span's canvas length
    beam: int  # the rest-of-line beam's width under the latency budget
    others: list[str]  # the texts copies come from (the open documents, the files beside)
    names: KnownNames | None  # the names the project knows that extend the word being typed (rest of line)
    cost: Cost


@dataclass(frozen=True)
class Answer:
    ids: list[int]  # the answer as written
    cut: list[int] | None  # its start the model believes, where it doubts the rest (None: all of it)
    source: str  # "model", "copy" (a copied rest of line) or "next line"
    # where `ids` were written only as far as they are shown (a draft stopped at doubt): writes the rest, giving
    # the whole line's ids (the filters ask for it only where they run an answer on along its line)
    whole: Callable[[], list[int]] | None = None


def rest_of_line(a: Inputs) -> Answer:
    """The rest of the line (see the module docstring); nothing is denoised: the encoder wrote it."""
    copied_next = _next_line(a)
    if copied_next is not None:
        return copied_next
    with a.cost.stage("copies"):
        found = copies.rest_of_line_copies(a.request, a.others, a.options.copies)
    with a.cost.stage("draft"):
        riders = copies.copied_ids(a.model, a.request, found)  # scored beside the draft's first pass
        drafted = draft.draft(a.model, a.request, a.canvas, a.beam, a.names, _draft_ends(a), riders)
        own = draft.OwnLine(a.model, a.request, drafted, a.canvas, a.beam)
    with a.cost.stage("copies"):
        copied = copies.rest_of_line_copy(a.model, a.request, found, riders, own.score_against, a.options.copies)
    if copied:
        return _cut(a, copied.ids, "copy", copied.places, encoder_judges=True)
    if own.draft.open_end and not a.request.known_tail:
        return _cut(a, own.ids, "model", 0, encoder_judges=True, whole=own.whole_line)
    with a.cost.stage("denoise"):
        ids = draft.with_known_tail(a.model, a.request, own.ids, a.canvas, a.options)
    return _cut(a, ids, "model", 0, encoder_judges=True)


def lines(a: Inputs) -> Answer:
    """A block body or a few lines (see the module docstring)."""
    copied_next = _next_line(a)
    if copied_next is not None:
        return copied_next
    with a.cost.stage("draft"):
        drafted = draft.draft(a.model, a.request, a.canvas, a.beam, None)
    with a.cost.stage("denoise"):
        ids = a.model.denoise(a.canvas, a.options.drafts.steps, tuning.SEED, init=drafted.canvas, **_canvases(a))
    return _written(a, ids, drafted.canvas)


def canvas(a: Inputs) -> Answer:
    """The span written by the decoder from noise, or from a copy or a known name (see the module docstring),
    which the decoder keeps or rewrites as it believes. A copy's canvas has no cut of the decoder's own (the
    copy's floors judge what it keeps); a name's is cut as the decoder's own answer is. Out of time, nothing: a
    copy is shown only as the decoder wrote it."""
    with a.cost.stage("copies"):
        seed = draft.copy_seed(a.model, a.request, a.others, a.canvas, a.options.copies)
        if seed is None and a.names is not None:
            seed = draft.name_seed(a.model, a.request, a.names, a.canvas)
    copied = seed is not None and seed.source != draft.NAME
    with a.cost.stage("denoise"):
        init = seed.canvas if seed is not None else None
        knobs = _canvases(a) | ({"min_confidence": 0.0} if copied else {})
        ids = a.model.denoise(a.canvas, a.options.drafts.steps, tuning.SEED, init=init, **knobs)
    kept = copied and ids and seed.ids[: len(ids)] == ids  # the decoder wrote the copy (or its start)
    return _written(a, ids, [], (seed.source, seed.places) if kept else ("model", 0))


def _next_line(a: Inputs) -> Answer | None:
    """The line that followed the line above elsewhere, when one starts with what is typed (judged whole: no
    token of a copied next line is cut at doubt, so whether the encoder judges the span does not matter)."""
    with a.cost.stage("copies"):
        copied = copies.next_line_copy(a.model, a.request, a.others, a.options.copies)
    return _cut(a, copied.ids, "next line", copied.places, encoder_judges=False) if copied else None


def _draft_ends(a: Inputs) -> Enough | None:
    """Where the model's own rest of line may stop being drafted: past the point its cut at doubt ends it
    (infill.doubt.draft_ends) and, where known names contest its word, past that word; never where a known tail
    must close it (its check reads the whole line). Copies that contest it have the rest drafted if they need
    it (draft.OwnLine)."""
    if a.request.known_tail:
        return None
    rank, healed = a.options.rank, a.request.healed
    floor, joint = doubt.doubt_floor("model", True, rank), doubt.answer_floor("model", rank, a.request.prose)
    return doubt.draft_ends(a.model, healed, floor, joint, a.request.specials, whole_word=a.names is not None)


def _canvases(a: Inputs) -> dict[str, float | int]:
    """How the decoder's span is denoised: two canvases for a block, cut where the decoder doubts it."""
    return {"min_confidence": a.options.rank.span_confidence, "canvases": 1 if a.request.line else 2}


def _written(a: Inputs, ids: list[int] | None, init: list[int], source: tuple[str, int] = ("model", 0)) -> Answer:
    """The decoder's answer (out of time, None: the draft `init` as it stands) with the known tail pinned where it
    did not end with it (a block body's: the suffix's head after it), cut at the decoder's own doubt, and judged
    as what it is (`source`: a copy the decoder kept, and its places)."""
    with a.cost.stage("denoise"):
        ids = draft.drafted(init, a.request.end) if ids is None else ids
        ids = draft.with_known_tail(a.model, a.request, ids, a.canvas, a.options)
        ids = draft.with_suffix_head(a.model, a.request, ids, a.canvas, a.options)
    return _cut(a, ids, source[0], source[1], encoder_judges=False)


def _cut(
    a: Inputs,
    ids: list[int],
    source: str,
    places: int,
    encoder_judges: bool,
    whole: Callable[[], list[int]] | None = None,
) -> Answer:
    """The answer with its start the model believes (infill.doubt): token by token where the encoder judges
    it, and all its tokens together; a cut inside a known name goes on to the name's end. `whole`: as
    Answer.whole (kept for an answer that is cut)."""
    o, request = a.options, a.request
    with a.cost.stage("cut"):
        floor = doubt.doubt_floor(source, encoder_judges, o.rank)
        joint = doubt.answer_floor(source, o.rank, request.prose, places)
        cut = doubt.cut_at_doubt(a.model, ids, request.healed, floor, joint, specials=request.specials)
        cut = whole_name(a.model, ids, cut, a.names)
        return Answer(ids, cut, source, whole if cut is not None else None)


PLANS = {REST_OF_LINE: rest_of_line, LINES: lines, CANVAS: canvas}
