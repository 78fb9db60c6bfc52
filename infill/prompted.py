"""The model as one completion asks it: every call goes with that completion's prompt, its encoder cache and its
n-gram evidence, so that the candidate sources and the ranking only say what they ask."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from diffill.model.api import DiffusionModel
from diffill.model.cancel import Cancelled
from diffill.model.ngram import NgramMixer
from diffill.model.speculative import Speculator

from .deadline import Deadline
from .request import Constraint
from .trace import Trace
from .vocabulary import Vocabulary


@dataclass(frozen=True)
class PromptedModel:
    model: DiffusionModel
    vocabulary: Vocabulary
    prompt: list[int]
    cache: Any  # the prompt's encoder cache (model.prompt_cache), reused by every call
    mix: NgramMixer | None  # the n-gram evidence mixed into every call's probabilities, or None
    speculator: Speculator | None = None  # writes greedy drafts when set (DraftOptions.speculative)
    trace: Trace | None = None  # where the speculative drafts' counts go
    deadline: Deadline | None = None  # passes that would not fit in the time left are not run
    cancel: Callable[[], bool] | None = None  # asked between the passes of a draft: True raises Cancelled
    # Token log-probabilities the speculative rounds have already verified (draft tokens -> theirs): the cut at
    # doubt reads them instead of running the encoder over the same tokens again.
    verified: dict[tuple[int, ...], tuple[list[float], list[float]]] = field(default_factory=dict)

    def encode(self, text: str) -> list[int]:
        return self.vocabulary.tokenizer.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self.vocabulary.tokenizer.decode(ids)

    def best_draft(
        self,
        max_tokens: int,
        stop: set[int],
        first: Constraint | None,
        k: int,
        head: list[int] | None = None,
        among: Constraint | None = None,
    ) -> tuple[list[int], float]:
        """The likeliest draft of a beam `k` wide (k=1: the greedy draft) after the prompt (and `head`, tokens
        already chosen) and its summed log-probability. `among`: where `first` holds, the ids its tokens'
        beliefs are judged among (Request.judged_among; default: those `first` allows)."""
        prompt, mix = self.prompt, self.mix
        if head is not None:
            prompt, mix = prompt + head, mix and mix.after(head)
        if k == 1 and self.speculator is not None:
            found = self.speculator.greedy(
                prompt, max_tokens, stop, self.cache, first, mix, self._keep_going, self.vocabulary.extensions, among
            )
            if self.trace is not None:
                self.trace.drafts += len(found.accepted)
                self.trace.accepted += sum(found.accepted)
                self.trace.lookups += len(found.looked_up)
                self.trace.looked_up += sum(found.looked_up)
            if head is None:
                self.verified[tuple(found.tokens)] = (found.logprobs, found.prefix_logprobs)
            return found.tokens, found.score
        watched = {} if self.deadline is None and self.cancel is None else {"keep_going": self._keep_going}
        return self.model.ar_drafts(prompt, max_tokens, stop, self.cache, first, k=k, mix=mix, **watched)[0]

    def _keep_going(self, passes: int = 1) -> bool:
        """Whether a draft may make `passes` more passes: raises Cancelled when the request was cancelled; False
        when the time left does not afford them."""
        if self.cancel is not None and self.cancel():
            raise Cancelled()
        return self.affords(passes)

    def affords(self, passes: int) -> bool:
        """Whether the time left affords `passes` more model passes (always, without a deadline)."""
        return self.deadline is None or self.deadline.affords(passes)

    def scores(self, continuations: list[list[int]]) -> list[float]:
        """Each continuation's summed log-probability after the prompt."""
        return self.model.continuation_logprobs(self.prompt, continuations, self.cache, mix=self.mix)

    def line_scores(self, continuations: list[list[int]]) -> list[float]:
        """Each continuation's summed log-probability after the prompt, the end of its line included."""
        stops = self.vocabulary.line_stops()
        return self.model.continuation_logprobs(self.prompt, continuations, self.cache, end_ids=stops, mix=self.mix)

    def token_beliefs(self, ids: list[int], among: Constraint | None = None) -> tuple[list[float], list[float]]:
        """For each token of `ids` after the prompt and the tokens before it: its log-probability, and the
        log-probability that the text goes on as its text does (DiffusionModel.token_beliefs); where `among`
        (Request.judged_among, as the drafts were judged) names ids, among those. What the speculative rounds
        verified is read back, not computed again."""
        for tokens, (logprobs, prefix) in self.verified.items():
            if len(ids) <= len(tokens) and tuple(ids) == tokens[: len(ids)]:
                return logprobs[: len(ids)], prefix[: len(ids)]
        return self.model.token_beliefs(self.prompt, ids, self.cache, self.mix, among, self.vocabulary.extensions)

    def denoise(self, **sampling: Any) -> list[int] | None:
        """A canvas denoised after the prompt (DiffusionModel.generate's options), in as many of its steps as the
        time left affords; None when not even one fits (the caller keeps what it has)."""
        fits = self.deadline.passes_left() if self.deadline is not None else None
        if fits is not None:
            if fits < 2:  # one step and the encoder's commit of the canvas
                return None
            sampling["steps"] = min(sampling.get("steps") or fits, fits - 1)
        return self.model.generate(self.prompt, cache=self.cache, **sampling)
