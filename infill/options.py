"""The engine's knobs, one small group per stage of a completion, and the one builder callers use.

Callers (the daemon's settings, `diffill complete`, `diffill eval`) name knobs flat (`steps`, `min_confidence`,
`copy_prior`): `EngineOptions.from_card` routes each to its stage. A feature that can be switched off takes None
for off; a number is always a value, never a code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diffill.model.runtime import LoadedModel

LINE_CANVAS_LENGTH = 16  # a rest of line rarely needs more; a short canvas makes each step cheaper (docs/benchmarks.md)
CONTEXT_TOKENS = 96  # cross-file context budget of models trained with it


@dataclass(frozen=True)
class PromptOptions:
    """What the prompt holds (infill.request)."""

    max_prompt_tokens: int = 256  # the daemon's `maxPromptTokens`: the latency budget decides it (docs/benchmarks.md)
    max_suffix_tokens: int = 64
    # Cross-file context budget (infill.around.prompt_context); 0 for models not trained with context: it shifts
    # the prompt of the others.
    context_tokens: int = 0
    token_healing: bool = True  # mid-line, take the partial last token back and make the answer start with it
    # A word typed in several tokens (`su|pe` for `super`) is taken back whole, up to this many tokens: the model
    # then writes it in its own tokens instead of finishing a piece it never saw there. 1 = the last token only.
    heal_tokens: int = 4


@dataclass(frozen=True)
class DraftOptions:
    """How the model writes its own answer (infill.sources.draft)."""

    draft: str = ""  # "ar": seed the canvas with a draft from the encoder's LM head, then denoise; else from noise
    steps: int = 8
    seed: int = 0
    canvas_length: int | None = None  # None: the model's own
    line_canvas_length: int | None = None  # the canvas of rest-of-line spans; None: the same as the others
    # Rest-of-line drafts come from a beam search this wide: the continuation the model believes most as a whole
    # (summed log-probability to the line end) seeds the canvas. 1 = plain greedy.
    draft_candidates: int = 1
    # The beam makes a pass per token where speculative greedy drafts verify several at once, for slightly better
    # lines (docs/benchmarks.md): it runs only when the latency budget is at least this (or there is none).
    beam_from_budget_ms: float = 300.0
    # A greedy draft (one candidate, or a span other than a rest of line) is written by self-speculative decoding
    # (model.speculative): each round the n-gram evidence drafts what the code around says follows (no pass), or
    # with `decoder_drafts` the decoder drafts `speculative_canvas` tokens in `speculative_steps` passes, and the
    # encoder verifies the draft in one. The same answer as the encoder's token-by-token greedy draft, in fewer
    # passes when the drafts are what the encoder would write.
    speculative: bool = True
    decoder_drafts: bool = False  # the model's card says whether its decoder drafts well (diffill_speculative)
    speculative_canvas: int = 16
    speculative_steps: int = 1
    # Denoise the encoder's rest-of-line draft too (the draft margin keeps it: docs/benchmarks.md measured no
    # answer changed), instead of answering with the draft as the encoder verified it.
    denoise_lines: bool = False

    def __post_init__(self) -> None:
        for name in ("canvas_length", "line_canvas_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be positive or None, not {value}")

    def beam_width(self, budget_ms: float | None) -> int:
        """The rest-of-line beam's width under a latency budget (None: no deadline)."""
        if budget_ms is not None and budget_ms < self.beam_from_budget_ms:
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
    # whole typed line matches). None: no copies. Tuned on held-out code (docs/benchmarks.md).
    copy_prior: float | None = 12.0
    # The line that followed the line above the cursor's elsewhere, when it starts with what is typed, is the
    # answer outright: the model only ranks such copies (the embedded model's own lines are seldom right there,
    # docs/benchmarks.md). With `next_line_contest`, the model's own best line competes, and the copy must come
    # within `next_line_prior` nats of it (+ WHOLE_LINE_BONUS).
    next_line_contest: bool = False
    next_line_prior: float = 12.0
    # Rest of line: when other copies score within this many nats of the best one, the answer is the start they
    # share (when more than whitespace): `assertEqual(` rather than one of `assertEqual(x, 1)` / `assertEqual(y,
    # 2)`. None: the best copy whole. More useful starts, as many exact lines (docs/benchmarks.md).
    copy_hedge: float | None = 1.0
    # A rest-of-line copy is cut before its first token the model (with the n-gram evidence) gives less than this,
    # like the model's own answers at `min_confidence`: a copy that goes wrong part way still gives its right
    # start. 0 (or a `min_confidence` of 0) cuts nothing (docs/benchmarks.md).
    copy_min_confidence: float = 0.35
    # A copied rest of line, or a copied next line, is shown only as far as the model (with the n-gram evidence)
    # gives its tokens together at least this probability (0: off); see RankOptions.answer_confidence.
    copy_answer_confidence: float = 0.35
    # ... and at least this in a comment or a string: prose copied from a line that starts alike goes wrong more
    # often than code does (docs/benchmarks.md). 0: as in code.
    copy_prose_confidence: float = 0.6
    # ... and at least this when only one place continues the typed text that way: several lines that go on alike
    # are evidence, one is a guess that a line starting alike ends alike (docs/benchmarks.md). 0: as the others.
    lone_copy_confidence: float = 0.55
    next_line_confidence: float = 0.1


@dataclass(frozen=True)
class NameOptions:
    """When a name the project knows beats the model's own word (infill.sources.names, CompletionEngine.edit)."""

    # A name used in the file or defined elsewhere in the workspace that extends the word being typed replaces
    # the draft's own word unless the model believes its own by more than this (summed log-probability, nats).
    # None: no known names. Tuned on held-out code (docs/benchmarks.md).
    symbol_prior: float | None = 8.0
    # A rename in progress is what the user is doing: the new name wins a slot unless the model believes the old
    # one by more than this (mean log-probability per token, nats). Tuned on held-out renames (docs/benchmarks.md).
    rename_prior: float = 4.0


@dataclass(frozen=True)
class RankOptions:
    """Where an answer ends (infill.ranking): a shorter answer that is right beats a longer one that goes wrong."""

    # Cut the answer before the first token the model gives a lower probability (0 cuts nothing). The model's own
    # rest of line (AR drafts) is judged by its encoder's probability of each token after the ones before; other
    # answers by the denoiser's confidence. Copies have `copy_min_confidence`.
    min_confidence: float = 0.0
    # The cut for denoised answers (multi-line spans; any span of a model without AR drafts) when it differs
    # (None: min_confidence): a rest of line is cut harder than a block (docs/benchmarks.md).
    span_min_confidence: float | None = None
    # Show the model's own answer (any span) only as far as the encoder gives all its tokens together at least
    # this probability, given the typed text: a shorter right answer or none beats a wrong one (0, or a
    # `min_confidence` of 0: off). Copies have `copy_answer_confidence` and `next_line_confidence`. Tuned on
    # held-out code (docs/benchmarks.md).
    answer_confidence: float = 0.6

    @property
    def span_confidence(self) -> float:
        """The denoiser's cut-off for the answers the encoder does not judge."""
        return self.min_confidence if self.span_min_confidence is None else self.span_min_confidence


@dataclass(frozen=True)
class EvidenceOptions:
    """How much the n-gram evidence counts in every model call (infill.around.ngram_evidence)."""

    # A cache n-gram model of the code around (the document, open documents, the files beside it: model.ngram) is
    # mixed into the model's next-token probabilities with this weight where two tokens of context match it, plus
    # `ngram_per_order` per further token matched. None: off.
    ngram_weight: float | None = 0.2
    ngram_per_order: float = 0.1
    # The model's corpus memory (model.memory) is mixed in the same way, before the code around, where four tokens
    # of context match it, plus `memory_per_order` per further token. None: off. It helps most on languages only
    # the memory has (docs/benchmarks.md).
    memory_weight: float | None = 0.2
    memory_per_order: float = 0.05


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
    evidence: EvidenceOptions = field(default_factory=EvidenceOptions)
    budget: BudgetOptions = field(default_factory=BudgetOptions)

    @classmethod
    def from_card(cls, card: LoadedModel | None, **knobs: Any) -> EngineOptions:
        """The options a model's card asks for (draft mode, answer cut-off, draft candidates; cross-file context
        only for models trained with it) with `knobs` (flat names, e.g. steps=4) on top. Rest-of-line spans get a
        short canvas. Raises TypeError for a knob no stage has."""
        chosen: dict[str, Any] = {"line_canvas_length": LINE_CANVAS_LENGTH}
        if card is not None:
            chosen |= {
                "draft": card.draft,
                "min_confidence": card.min_confidence,
                "span_min_confidence": card.span_min_confidence,
                "draft_candidates": card.draft_candidates,
                "decoder_drafts": card.speculative,
                "context_tokens": CONTEXT_TOKENS if card.trained_with_context else 0,
            }
        by_stage: dict[str, dict[str, Any]] = {stage: {} for stage in STAGES}
        for knob, value in (chosen | knobs).items():
            if knob not in KNOB_STAGE:
                raise TypeError(f"EngineOptions has no knob {knob!r}")
            by_stage[KNOB_STAGE[knob]][knob] = value
        return cls(**{stage: STAGES[stage](**values) for stage, values in by_stage.items()})


STAGES: dict[str, type] = {f.name: f.default_factory for f in dataclasses.fields(EngineOptions)}  # type: ignore[misc]
KNOB_STAGE: dict[str, str] = {knob.name: stage for stage, group in STAGES.items() for knob in dataclasses.fields(group)}
