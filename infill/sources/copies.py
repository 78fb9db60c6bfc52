"""The copies of lines the model judges (infill.sources.line_search finds them by text): a copy wins unless the
model believes its own line by more than `copy_prior` (infill.priors). The best copy alone is as often exactly
right as the model's own line, and the two are right on different lines (docs/benchmarks.md, "Tuned constants").
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from diffill.model.session import PromptSession

from .. import tuning
from ..options import CopyOptions
from ..priors import best, trails, within
from ..request import Request
from .line_search import LineCopy, line_copies, next_line_copies

WHOLE_LINE_BONUS = 8.0  # nats: a line that starts exactly like the one being typed is stronger evidence
# The model's own answer as a copy's rival: its score, where it decides against a copy's score plus prior
# (infill.sources.draft.OwnLine.score_against: it may be drafted further to tell)
Rival = Callable[[float], float]
COPY_PASSES = 2  # a copy costs the pass that scores the candidates and the one that cuts the winner at doubt


@dataclass(frozen=True)
class Copied:
    """A copy chosen as the answer: its token ids, and how many places continue this way (one place is a guess
    that another line started alike; several agree: infill.doubt.answer_floor judges them apart)."""

    ids: list[int]
    places: int


def next_line_copy(
    model: PromptSession, request: Request, others: Sequence[str], options: CopyOptions
) -> Copied | None:
    """The line that follows the line above the cursor's elsewhere (in the file, in `others`) and starts with what
    is typed, or None: the copy the model scores best. The model's own line is not drafted to contest it: the
    embedded model's own lines are seldom right there (docs/benchmarks.md, "Tuned constants")."""
    found = next_line_copies(request.text, request.offset, others) if options.copy_prior is not None else []
    if not found:
        return None
    hedge = tuning.COPY_HEDGE if request.line else None
    encoded = copied_ids(model, request, found)
    return _preferred(model, found, encoded, request, lambda bar: -math.inf, options.copy_prior, hedge)


def rest_of_line_copies(request: Request, others: Sequence[str], options: CopyOptions) -> list[LineCopy]:
    """The other lines that start the way this one does (in the file, in `others`), whose rests may contest the
    model's own (none when copies are off)."""
    if options.copy_prior is None:
        return []
    return line_copies(request.text, request.offset, others, in_docstring=request.in_docstring)


def rest_of_line_copy(
    model: PromptSession,
    request: Request,
    found: list[LineCopy],
    encoded: list[list[int]],
    own: Rival,
    options: CopyOptions,
) -> Copied | None:
    """The rest of line copied from one of the lines `found` (rest_of_line_copies; `encoded`: their copied_ids)
    that should be the answer instead of the model's own (`own`: its score against a copy's), or None: the
    file's own spelling of a call or an argument list is a better guess than one the model makes up
    (docs/benchmarks.md, "Tuned constants")."""
    if options.copy_prior is None:
        return None
    return _preferred(model, found, encoded, request, own, options.copy_prior, tuning.COPY_HEDGE)


def copied_ids(model: PromptSession, request: Request, found: list[LineCopy]) -> list[list[int]]:
    """Each copy's tokens after the prompt, as the model scores them (the healed text first)."""
    return [model.encode(request.healed + c.rest) for c in found]


def _preferred(
    model: PromptSession,
    found: list[LineCopy],
    encoded: list[list[int]],
    request: Request,
    rival: Rival,
    prior: float,
    hedge: float | None,
) -> Copied | None:
    """The copy (of `found`, in tokens `encoded`) the model scores best (to its line end) plus its prior (more for a whole line), if it does not
    trail `rival`'s score. With a `hedge`, copies that score within that many nats of the best are as likely: the answer
    is the start they share (when it is more than whitespace), which all their places continue. None too when the
    time left does not afford scoring them and cutting the winner at doubt (the model's own answer is then what
    there is)."""
    if not found or not model.affords(COPY_PASSES):
        return None
    scores = model.scores(encoded, end_ids=request.line_stops)
    priors = [prior + (WHOLE_LINE_BONUS if c.whole_line else 0.0) for c in found]
    top = best(scores, priors)
    if trails(scores[top], priors[top], rival(scores[top] + priors[top])):
        return None
    if hedge is not None:
        rivals = [found[i] for i in within(scores, priors, top, hedge)]
        shared = os.path.commonprefix([found[top].rest, *(c.rest for c in rivals)]) if rivals else ""
        if shared.strip():
            return Copied(model.encode(request.healed + shared), found[top].count + sum(c.count for c in rivals))
    return Copied(encoded[top], found[top].count)
