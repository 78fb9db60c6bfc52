"""Where an answer ends: before the first token the model doubts, and only as far as all its tokens together stay
likely enough. A shorter answer that is right beats a longer one that goes wrong.
"""

from __future__ import annotations

import math
import re

from diffill.model.session import PromptSession
from diffill.model.speculative import Enough

from . import tuning
from .options import RankOptions

# A draft's text has gone past the word being typed (infill.sources.names reads that word whole).
_WORD_ENDED = re.compile(r"\W")


def doubt_floor(source: str, encoder_judges: bool, rank: RankOptions) -> float | None:
    """The probability under which a token ends an answer, or None. The model's own rest of line (the encoder
    judges it: `encoder_judges`) ends at `min_confidence`, a copied rest of line at COPY_MIN_CONFIDENCE; a copied
    next line is judged whole (`answer_floor`), and the denoiser cut its own answers already."""
    if rank.min_confidence <= 0:
        return None
    if source == "model" and encoder_judges:
        return rank.min_confidence
    if source == "copy" and tuning.COPY_MIN_CONFIDENCE > 0:
        return tuning.COPY_MIN_CONFIDENCE
    return None


def answer_floor(source: str, rank: RankOptions, prose: bool = False, places: int = 0) -> float | None:
    """The probability under which the answer so far, all its tokens together, is not shown, or None (the floors
    are infill.tuning's): the model's own answers at ANSWER_CONFIDENCE, copied rests of line at
    COPY_ANSWER_CONFIDENCE, copied next lines at NEXT_LINE_CONFIDENCE (the copies' priors say how much more than
    the model's belief they are worth); a copied rest of line in a comment or a string (`prose`) at least
    COPY_PROSE_CONFIDENCE, and one that only one place continues (`places`) at least LONE_COPY_CONFIDENCE. A
    `min_confidence` of 0 (no cut at all) turns these off too."""
    if rank.min_confidence <= 0:
        return None
    floor = {
        "model": tuning.ANSWER_CONFIDENCE,
        "copy": tuning.COPY_ANSWER_CONFIDENCE,
        "next line": tuning.NEXT_LINE_CONFIDENCE,
    }.get(source, 0.0)
    if prose and source == "copy":
        floor = max(floor, tuning.COPY_PROSE_CONFIDENCE)
    if places == 1 and source == "copy":
        floor = max(floor, tuning.LONE_COPY_CONFIDENCE)
    return floor if floor > 0 else None


def cut_at_doubt(
    model: PromptSession,
    ids: list[int],
    healed: str,
    floor: float | None,
    joint: float | None = None,
    *,
    specials: frozenset[int],
) -> list[int] | None:
    """`ids` up to the longest start the model believes, or None when it believes them all (or neither `floor` nor
    `joint` is set). A start is believed when the encoder's head, after the prompt and the tokens before, gives
    each of its tokens past the healed text at least `floor` and all of them together at least `joint`, its last
    token counting the probability that the text goes on as that token's does (` None` and ` NoneType` both go on
    with ` None`). The probabilities are given the healed text (the session's Healing.judged_among): the word
    being typed is known, so a first token past it that fails leaves no answer."""
    if floor is None and joint is None:
        return None
    n = next((i for i, t in enumerate(ids) if t in specials), len(ids))  # up to its end or padding
    body = ids[:n]
    logprobs, goes_on = model.beliefs(body)
    at = doubted_at(logprobs, goes_on, past_healed(model, body, healed), floor, joint)
    return None if at is None else body[:at]


def past_healed(model: PromptSession, ids: list[int], healed: str) -> int:
    """The index of the first token of `ids` whose text goes past the healed text (the typed word is given: the
    tokens that write it are not judged)."""
    return next((i for i in range(len(ids)) if len(model.decode(ids[: i + 1])) > len(healed)), len(ids))


def doubted_at(
    logprobs: list[float],
    goes_on: list[float],
    first: int,
    floor: float | None,
    joint: float | None,
    more: bool = False,
) -> int | None:
    """How many tokens of an answer are shown (`cut_at_doubt`'s rule on its beliefs, judged from token `first`
    on), or None for all of them. `more`: tokens are still to follow the last one (a draft being written), so
    the last token's own doubt already ends the answer after it."""
    log_floor = math.log(floor) if floor is not None else -math.inf
    log_joint = math.log(joint) if joint is not None else -math.inf
    before = 0.0  # the log-probability of the tokens before, past the healed text
    for i in range(first, len(logprobs)):
        logp, prefix = logprobs[i], goes_on[i]
        if prefix < log_floor or before + prefix < log_joint:
            return i
        if (more or i + 1 < len(logprobs)) and (logp < log_floor or before + logp < log_joint):
            return i + 1  # this token's text is believed, not the token itself: what follows it is not
        before += logp
    return None


def draft_ends(
    model: PromptSession,
    healed: str,
    floor: float | None,
    joint: float | None,
    specials: frozenset[int],
    whole_word: bool = False,
) -> Enough | None:
    """The test by which a draft of the model's own answer stops early (None: it never does): given its tokens so
    far and their beliefs, whether `cut_at_doubt` with these floors ends the answer before whatever follows, and
    with `whole_word`, the draft has written the word being typed whole (known names are judged against it, and
    extend a cut inside it), and a token after the cut (the filters read the character after an answer). Tokens
    written after that are never shown, so verifying them is a wasted pass: the rest of the line is written only
    if the filters ask for it (plans.Answer.whole)."""
    if floor is None and joint is None:
        return None

    def ended(tokens: list[int], logprobs: list[float], goes_on: list[float]) -> bool:
        n = next((i for i, t in enumerate(tokens) if t in specials), len(tokens))
        body = tokens[:n]
        at = doubted_at(logprobs[:n], goes_on[:n], past_healed(model, body, healed), floor, joint, more=True)
        if at is None or at >= len(body):  # (the text after the cut is drafted too: filters read what follows)
            return False
        return not whole_word or _WORD_ENDED.search(model.decode(body), len(healed)) is not None

    return ended
