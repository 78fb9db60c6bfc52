"""The engine's knobs, one small group per stage of a completion, and the one builder callers use.

Every knob is a user setting (lsp.settings), a model-card key (docs/model.md) or one an experiment sets
(`diffill eval`'s flags); the numbers no one sets are in infill.tuning. Callers name knobs flat (`steps`,
`min_confidence`, `copy_prior`): `EngineOptions.from_card` routes each to its stage. A feature that can be
switched off takes None for off; a number is always a value, never a code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diffill.model.card import ModelCard

from . import tuning


@dataclass(frozen=True)
class PromptOptions:
    """What the prompt holds (infill.request)."""

    # The daemon's `maxPromptTokens`: the latency budget decides it (docs/benchmarks.md, "Tuned constants").
    max_prompt_tokens: int = 256
    # Cross-file context budget (infill.context.prompt_context); 0 for models not trained with context: it shifts
    # the prompt of the others.
    context_tokens: int = 0
    token_healing: bool = True  # mid-line, take the partial last token back and make the answer start with it


@dataclass(frozen=True)
class DraftOptions:
    """How the model writes its own answer (infill.sources.draft, infill.plans)."""

    draft: str = ""  # "ar" (the model's card): the encoder drafts, which a canvas then starts from; else noise
    steps: int = 8
    canvas_length: int | None = None  # None: the model's own
    line_canvas_length: int | None = None  # the canvas of rest-of-line spans; None: the same as the others
    # Rest-of-line drafts come from a beam search this wide: the continuation the model believes most as a whole
    # (summed log-probability to the line end) seeds the canvas. 1 = plain greedy.
    draft_candidates: int = 1
    # A greedy draft is written by self-speculative decoding (model.speculative): each round the n-gram evidence
    # drafts what the code around says follows (no pass), or with `decoder_drafts` (the model's card) the decoder
    # drafts, and the encoder verifies the draft in one pass: the encoder's own greedy answer, in fewer passes.
    speculative: bool = True
    decoder_drafts: bool = False

    def __post_init__(self) -> None:
        for name in ("canvas_length", "line_canvas_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive or None, not {value}")

    def beam_width(self, budget_ms: float | None) -> int:
        """The rest-of-line beam's width under a latency budget (None: no deadline)."""
        if budget_ms is not None and budget_ms < tuning.BEAM_FROM_BUDGET_MS:
            return 1
        return self.draft_candidates

    @property
    def ar(self) -> bool:
        """Whether answers start from the encoder's draft (which also lets copies and known names compete)."""
        return self.draft == "ar"


@dataclass(frozen=True)
class CopyOptions:
    """When a line copied from the code around beats the model's own (infill.sources.copies)."""

    # A rest of line copied from another line that starts like this one replaces the model's answer unless the
    # model believes its own line by more than this (nats, the line end included; WHOLE_LINE_BONUS more when the
    # whole typed line matches); a copied next line is the answer outright. None: no copies. Tuned on held-out
    # code (docs/benchmarks.md, "Tuned constants").
    copy_prior: float | None = 12.0


@dataclass(frozen=True)
class NameOptions:
    """When a name the project knows beats the model's own word (infill.sources.names)."""

    # A name used in the file or defined elsewhere in the workspace that extends the word being typed replaces
    # the draft's own word unless the model believes its own by more than this (summed log-probability, nats).
    # None: no known names. Tuned on held-out code (docs/benchmarks.md, "Tuned constants").
    symbol_prior: float | None = 8.0


@dataclass(frozen=True)
class RankOptions:
    """Where an answer ends (infill.doubt): a shorter answer that is right beats a longer one that goes wrong."""

    # Cut the answer before the first token the model gives a lower probability (0 cuts nothing, and turns off
    # the floors of whole answers: tuning.ANSWER_CONFIDENCE and the copies'). The model's own rest of line is
    # judged by its encoder's probability of each token after the ones before; other answers by the denoiser's.
    min_confidence: float = 0.0
    # The cut for denoised answers (multi-line spans; any span of a model without encoder drafts) when it differs
    # (None: min_confidence): the model's card.
    span_min_confidence: float | None = None
    # A change a model rewrote below the user's edit is offered as a next edit only where every token it wrote there
    # is at least this probable (infill.next_edits.rewrite; the card may say otherwise). Set, not tuned (no chat
    # checkpoint has been measured): near-sure, as a wrong edit offered costs the user more than one missed.
    rewrite_min_confidence: float = 0.9

    @property
    def span_confidence(self) -> float:
        """The denoiser's cut-off for the answers the encoder does not judge."""
        return self.min_confidence if self.span_min_confidence is None else self.span_min_confidence


@dataclass(frozen=True)
class BudgetOptions:
    """The time a completion may take (infill.deadline)."""

    # Milliseconds from the request to the answer (the daemon's `latencyBudgetMs`); passes that would not fit
    # are not run and the answer verified by then is given. None: no deadline.
    latency_budget_ms: float | None = None


@dataclass(frozen=True)
class EngineOptions:
    """All the engine's knobs, by stage."""

    prompt: PromptOptions = field(default_factory=PromptOptions)
    drafts: DraftOptions = field(default_factory=DraftOptions)
    copies: CopyOptions = field(default_factory=CopyOptions)
    names: NameOptions = field(default_factory=NameOptions)
    rank: RankOptions = field(default_factory=RankOptions)
    budget: BudgetOptions = field(default_factory=BudgetOptions)

    @classmethod
    def from_card(cls, card: ModelCard | None, **knobs: Any) -> EngineOptions:
        """The options a model's card asks for (draft mode, answer cut-off, draft candidates; cross-file context
        only for models trained with it) with `knobs` (flat names, e.g. steps=4) on top. Rest-of-line spans get a
        short canvas. Raises TypeError for a knob no stage has."""
        chosen: dict[str, Any] = {"line_canvas_length": tuning.LINE_CANVAS_LENGTH}
        if card is not None:
            chosen |= {
                "draft": card.draft,
                "min_confidence": card.min_confidence,
                "span_min_confidence": card.span_min_confidence,
                "draft_candidates": card.draft_candidates,
                "decoder_drafts": card.speculative,
                "context_tokens": tuning.CONTEXT_TOKENS if card.trained_with_context else 0,
            }
            if card.rewrite_min_confidence is not None:
                chosen["rewrite_min_confidence"] = card.rewrite_min_confidence
        by_stage: dict[str, dict[str, Any]] = {stage: {} for stage in STAGES}
        for knob, value in (chosen | knobs).items():
            if knob not in KNOB_STAGE:
                raise TypeError(f"EngineOptions has no knob {knob!r}")
            by_stage[KNOB_STAGE[knob]][knob] = value
        return cls(**{stage: STAGES[stage](**values) for stage, values in by_stage.items()})


STAGES: dict[str, type] = {f.name: f.default_factory for f in dataclasses.fields(EngineOptions)}  # type: ignore[misc]
KNOB_STAGE: dict[str, str] = {knob.name: stage for stage, group in STAGES.items() for knob in dataclasses.fields(group)}
