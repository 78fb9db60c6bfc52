"""How a candidate from the code around competes with the model's own answer.

A candidate from the code around (a copied line, a known name) is a better guess than what a small model makes
up, so it carries a prior: it wins unless the model believes its own answer by more than that many nats, and the
model still rules out candidates that do not fit here.
"""

from __future__ import annotations

from collections.abc import Sequence


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
