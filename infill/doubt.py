"""Where an answer ends: before the first token the model doubts, and only as far as all its tokens together stay
likely enough. A shorter answer that is right beats a longer one that goes wrong.
"""

from __future__ import annotations

import math

from diffill.model.session import PromptSession

from . import tuning
from .options import RankOptions


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
    log_floor = math.log(floor) if floor is not None else -math.inf
    log_joint = math.log(joint) if joint is not None else -math.inf
    logprobs, goes_on = model.beliefs(body)
    before = 0.0  # the log-probability of the tokens before, past the healed text
    for i, (logp, prefix) in enumerate(zip(logprobs, goes_on, strict=True)):
        if len(model.decode(body[: i + 1])) <= len(healed):  # still writing what is typed
            continue
        if prefix < log_floor or before + prefix < log_joint:
            return body[:i]
        if i + 1 < len(body) and (logp < log_floor or before + logp < log_joint):
            return body[: i + 1]  # this token's text is believed, not the token itself: what follows it is not
        before += logp
    return None
