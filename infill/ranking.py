"""How the model's scores decide between answers, and where an answer ends.

A candidate from the code around (a copied line, a known name) is a better guess than what a small model makes
up, so it carries a prior: it wins unless the model believes its own answer by more than that many nats, and the
model still rules out candidates that do not fit here. An answer then ends before the first token the model
doubts: a shorter answer that is right beats a longer one that goes wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from diffill.model.tokenizer import SPECIAL_TOKENS

from .options import CopyOptions, RankOptions
from .prompted import PromptedModel


def best(scores: Sequence[float], priors: Sequence[float] | None = None) -> int:
    """The index of the best score plus prior (the first of equals)."""
    if priors is None:
        return max(range(len(scores)), key=lambda i: scores[i])
    return max(range(len(scores)), key=lambda i: scores[i] + priors[i])


def trails(score: float, prior: float, rival: float) -> bool:
    """Whether a candidate loses to the model's own answer: it trails it by more than its prior."""
    return score + prior < rival


def within(scores: Sequence[float], priors: Sequence[float], top: int, margin: float) -> list[int]:
    """The other candidates whose score plus prior comes within `margin` of candidate `top`'s: as likely."""
    least = scores[top] + priors[top] - margin
    return [i for i in range(len(scores)) if i != top and scores[i] + priors[i] >= least]


def doubt_floor(source: str, encoder_judges: bool, rank: RankOptions, copies: CopyOptions) -> float | None:
    """The probability under which an answer is cut, or None. The model's own rest of line (the encoder judges
    it: `encoder_judges`) ends at `min_confidence`, a copied rest of line at `copy_min_confidence`; a copied next
    line stays whole, and the denoiser cut its own answers already."""
    if rank.min_confidence <= 0:
        return None
    if source == "model" and encoder_judges:
        return rank.min_confidence
    if source == "copy" and copies.copy_min_confidence > 0:
        return copies.copy_min_confidence
    return None


def cut_at_doubt(asked: PromptedModel, ids: list[int], healed: str, floor: float | None) -> list[int] | None:
    """`ids` up to the first token the encoder's head gives less than `floor` after the prompt and the tokens
    before it, or None when none does (or no floor): the answer keeps at least one token past the healed text."""
    if floor is None:
        return None
    n = next((i for i, t in enumerate(ids) if t < len(SPECIAL_TOKENS)), len(ids))  # up to EOS or padding
    body = ids[:n]
    log_floor = math.log(floor)
    for i, logp in enumerate(asked.token_logprobs(body)):
        if logp < log_floor and len(asked.decode(body[:i])) > len(healed):
            return body[:i]
    return None
