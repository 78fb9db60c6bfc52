"""The model as one completion meets it: a `PromptSession` is the model bound to one prompt.

This is the seam between the engine (`infill/`) and a network. The engine opens a session with the prompt's ids,
token healing's hold on the answer, the n-gram evidence, the deadline and the cancel check, all given once; then
asks in plain ids and numbers: the greedy or beam draft, the scores of given continuations, each token's beliefs,
a canvas denoised with pins and a seed, a rename's slot scores. It never sees a tensor or a cache.

What a session owns, so that no caller re-establishes it:
- the cache rule: opening a session encodes what the encoder cache lacks of the prompt but its last token (the
  prefill; the cache is reused across keystrokes by key, `Prompter`), and every operation feeds that token again
  with what it adds, for its hidden state. A session with speculative rounds leaves the prefill to its first
  operation: a draft's first pass, or the one pass of scores or beliefs, carries it (one pass fewer); a
  denoising or a rename's slot scores first run it as a pass of its own. Either way `counts` says what the
  prefill cost inside the answer, which the pass clock leaves out;
- the healing constraint (`Healing`): drafts and denoising start with the text taken back from the prompt, and
  beliefs are judged among the ids that write it;
- the deadline (`Budget`) and cancellation: a draft stops where the time left does not afford another pass (what
  it verified by then is its answer), a denoising takes the steps that fit, and a cancelled request raises
  `Cancelled` between passes;
- what the speculative rounds verified: a later `beliefs` of those tokens reads them back instead of a pass.

A prompt format per model family, and a remote engine serving the model, plug in here: they offer the same
operations on the same ids (docs/architecture.md has the contract).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import torch

from .api import DiffusionModel
from .cancel import check
from .ngram import NgramMixer
from .prompt_cache import PromptCache
from .scoring import beliefs_from, scores_from
from .speculative import Allowed, Enough, Extensions, Speculator, Spelled


@dataclass(frozen=True)
class Healing:
    """Token healing's hold on an answer: the text taken back from the prompt must be written first."""

    allowed: Allowed | None = None  # the ids each next token may take until that text is written (None: any)
    judged_among: Allowed | None = None  # where `allowed` holds, the ids a token's belief is judged among
    # where `allowed` holds, what it still asks to be written, in the tokenizer's own ids: a speculative draft
    spelled: Spelled | None = None

    @property
    def first_ids(self) -> list[int] | None:
        """The ids the answer's first token may take (the denoiser restricts its canvas's first position)."""
        return None if self.allowed is None else self.allowed([])


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class Budget(Protocol):
    """The time a completion has left, in model passes (infill.deadline.Deadline)."""

    def affords(self, passes: int) -> bool: ...

    def passes_left(self) -> int | None: ...


@dataclass(frozen=True)
class Speculation:
    """How greedy drafts are written (model.speculative): the decoder drafts `canvas` tokens beside each
    verifying pass where `decoder` is on, for the rounds the code around drafts nothing."""

    canvas: int = 16
    seed: int = 0
    decoder: bool = False


@dataclass
class DraftCounts:
    """What the speculative rounds of a session did (the engine's cost report)."""

    drafts: int = 0  # decoder drafts the encoder verified
    accepted: int = 0  # their tokens it accepted
    lookups: int = 0  # drafts from the n-gram evidence it verified
    looked_up: int = 0  # their tokens it accepted
    prefill_passes: int = 0  # passes that encoded the prompt after the session opened (a draft carried it, or not)
    prefill_ms: float = 0.0  # their milliseconds


class PromptSession:
    """The model bound to one prompt (see the module docstring). Open it with `Prompter.session`."""

    def __init__(
        self,
        model: DiffusionModel,
        prompt: list[int],
        cache,
        *,
        healing: Healing = Healing(),
        mix: NgramMixer | None = None,
        speculation: Speculation | None = None,
        budget: Budget | None = None,
        cancel: Callable[[], bool] | None = None,
        extensions: Extensions | None = None,
        tokenizer: Tokenizer | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer  # the model's own: what the engine's candidates are written in
        self.prompt = prompt
        self._cache = cache
        self.healing = healing
        self.mix = mix
        self.budget = budget
        self.cancel = cancel
        self.extensions = extensions  # a token -> the ids whose text starts with its text (for beliefs)
        self.counts = DraftCounts()
        self._speculator = None
        if speculation is not None:
            s = speculation
            self._speculator = Speculator(model.net, s.canvas, s.seed, s.decoder)
        # Token log-probabilities the speculative rounds verified (draft tokens -> theirs), for `beliefs`.
        self._verified: dict[tuple[int, ...], tuple[list[float], list[float]]] = {}
        # The encoder's log-probability rows of the continuations `scores` ranked (or a draft's riders), for their
        # `beliefs` and a later `scores` of them.
        self._scored: dict[tuple[int, ...], torch.Tensor] = {}
        self._unfilled = self._speculator is not None  # the prefill is left to the first draft
        if not self._unfilled:
            model.prefill(prompt, cache)

    def _prefilled(self) -> None:
        """The prefill an operation other than a speculative draft needs first, timed as the prefill."""
        if self._unfilled:
            with self._carrying():
                self.model.prefill(self.prompt, self._cache)

    @contextmanager
    def _carrying(self) -> Iterator[None]:
        """An operation whose one pass encodes what the cache lacks of the prompt with what it adds (scores,
        beliefs: model.scoring; or the prefill alone, `_prefilled`), counted as the prefill when the prefill was
        left to it."""
        if not self._unfilled:
            yield
            return
        began, passes = time.perf_counter(), self.model.net.passes
        yield
        self.counts.prefill_passes += self.model.net.passes - passes
        self.counts.prefill_ms += (time.perf_counter() - began) * 1e3
        self._unfilled = False

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids)

    def affords(self, passes: int) -> bool:
        """Whether the time left affords `passes` more model passes (always, without a deadline)."""
        return self.budget is None or self.budget.affords(passes)

    def _keep_going(self, passes: int = 1) -> bool:
        """Whether a draft may make `passes` more passes; raises Cancelled when the request was cancelled."""
        check(self.cancel)
        return self.affords(passes)

    def draft(
        self,
        max_tokens: int,
        stop: Collection[int],
        width: int = 1,
        head: list[int] | None = None,
        enough: Enough | None = None,
        riders: list[list[int]] | None = None,
    ) -> tuple[list[int], float]:
        """The likeliest continuation of a beam `width` wide (1: the greedy one, by speculative rounds when the
        session has them) up to a stop id (included) or `max_tokens`, and its summed log-probability. `head`:
        tokens already chosen after the prompt (a known name), which write the healed text: the draft goes on
        after them, unconstrained. `enough`: where speculative rounds write it, the test that stops them early
        (model.speculative.Enough: what follows would not be shown); the tokens and score are then as far as
        they went. `riders`: continuations `scores` may be asked for later (copies), scored in the draft's first
        pass where speculative rounds write it (then `scores` of them makes no pass)."""
        prompt, mix, allowed = self.prompt, self.mix, self.healing.allowed
        known = None  # the head's beliefs, where a pass before gave them: the whole answer's are then known
        if head is not None:
            prompt, mix, allowed = prompt + head, mix and mix.after(head), None
            known = self._known_beliefs(head)
            if enough is not None:
                enough = None if known is None else _after(head, known, enough)
        if width == 1 and self._speculator is not None:
            fresh = head is None  # (a draft after a head is past healing, and its riders were the first draft's)
            found = self._speculator.greedy(
                prompt,
                max_tokens,
                stop,
                self._cache,
                allowed=allowed,
                mix=mix,
                keep_going=self._keep_going,
                extensions=self.extensions,
                among=self.healing.judged_among if fresh else None,
                enough=enough,
                spelled=self.healing.spelled if fresh else None,
                riders=riders if fresh else None,
            )
            for tokens, rows in zip(riders or [], found.rider_rows, strict=False):
                self._scored[tuple(tokens)] = rows
            if self._unfilled and found.prefill_ms:
                self.counts.prefill_passes += 1
                self.counts.prefill_ms += found.prefill_ms
            self._unfilled = False
            self.counts.drafts += len(found.accepted)
            self.counts.accepted += sum(found.accepted)
            self.counts.lookups += len(found.looked_up)
            self.counts.looked_up += sum(found.looked_up)
            if head is None:
                self._verified[tuple(found.tokens)] = (found.logprobs, found.prefix_logprobs)
            elif known is not None:
                logprobs, prefix = known
                self._verified[tuple(head + found.tokens)] = (logprobs + found.logprobs, prefix + found.prefix_logprobs)
            return found.tokens, found.score
        self._prefilled()
        watched = {} if self.budget is None and self.cancel is None else {"keep_going": self._keep_going}
        return self.model.ar_drafts(prompt, max_tokens, stop, self._cache, allowed, k=width, mix=mix, **watched)[0]

    def scores(self, continuations: list[list[int]], end_ids: Collection[int] | None = None) -> list[float]:
        """Each continuation's summed log-probability after the prompt; with `end_ids`, the probability that one of
        them comes next counted too (a whole line: the line end included)."""
        rows = [self._scored.get(tuple(c)) for c in continuations]
        needed = (lambda c: len(c) + 1) if end_ids is not None else len  # (the line end judged after the last)
        if all(r is not None and len(r) >= needed(c) for r, c in zip(rows, continuations, strict=True)):
            return scores_from(rows, continuations, end_ids, self.mix)  # a pass before scored them
        with self._carrying():
            return self.model.continuation_logprobs(
                self.prompt, continuations, self._cache, end_ids=end_ids, mix=self.mix, logps_out=self._scored
            )

    def beliefs(self, ids: list[int]) -> tuple[list[float], list[float]]:
        """For each token of `ids` after the prompt and the tokens before it: its log-probability, and the
        log-probability that the text goes on as its text does (DiffusionModel.token_beliefs), judged as the
        drafts were (Healing.judged_among). What the speculative rounds verified, or `scores` ranked, is read
        back without a pass."""
        known = self._known_beliefs(ids)
        if known is not None:
            return known
        with self._carrying():
            among = self.healing.judged_among
            return self.model.token_beliefs(self.prompt, ids, self._cache, self.mix, among, self.extensions)

    def _known_beliefs(self, ids: list[int]) -> tuple[list[float], list[float]] | None:
        """`beliefs(ids)` where a pass before gave them (a verified draft, a scored continuation), else None."""
        for tokens, (logprobs, prefix) in self._verified.items():
            if len(ids) <= len(tokens) and tuple(ids) == tokens[: len(ids)]:
                return logprobs[: len(ids)], prefix[: len(ids)]
        for tokens, logp in self._scored.items():
            if len(ids) <= len(tokens) and tuple(ids) == tokens[: len(ids)]:
                return beliefs_from(logp, ids, self.mix, self.healing.judged_among, self.extensions)
        return None

    def denoise(
        self,
        canvas: int,
        steps: int,
        seed: int,
        *,
        canvases: int = 1,
        init: list[int] | None = None,
        pins: dict[int, int] | None = None,
        min_confidence: float = 0.0,
    ) -> list[int] | None:
        """The answer of up to `canvases` canvases of `canvas` tokens denoised after the prompt in `steps` steps
        (or as many as the time left affords), the first seeded with `init` and holding `pins` (canvas offset ->
        id), cut before its first token under `min_confidence`, up to its EOS. None when the time left does not
        afford one step and the encoder's commit of the canvas (the caller keeps what it has)."""
        self._prefilled()
        fits = self.budget.passes_left() if self.budget is not None else None
        if fits is not None:
            if fits < 2:
                return None
            steps = min(steps or fits, fits - 1)
        return self.model.denoise(
            self.prompt,
            self._cache,
            canvas=canvas,
            steps=steps,
            seed=seed,
            canvases=canvases,
            init=init,
            pins=pins,
            first_allowed=self.healing.first_ids,
            min_confidence=min_confidence,
            cancel=self.cancel,
            mix=self.mix,
        )

    def rewrite(self, init: list[int], steps: int, seed: int) -> tuple[list[int], list[float]] | None:
        """The canvas `init` (a text to rewrite, its end id, pads) rewritten as the model believes after the prompt,
        and each token's probability, up to the end id (DiffusionModel.rewrite); None when it did not end on the
        canvas or the time left affords no step."""
        self._prefilled()
        fits = self.budget.passes_left() if self.budget is not None else None
        if fits is not None:
            if fits < 1:
                return None
            steps = min(steps or fits, fits)
        return self.model.rewrite(self.prompt, self._cache, init=init, steps=steps, seed=seed, cancel=self.cancel)

    def slot_scores(self, canvas: list[int], slots: list[tuple[int, int]], seed: int) -> list[float]:
        """How much the model believes each slot of a candidate canvas (DiffusionModel.slot_logprobs)."""
        check(self.cancel)
        self._prefilled()
        return self.model.slot_logprobs(self.prompt, canvas, slots, self._cache, seed)


def _after(head: list[int], beliefs: tuple[list[float], list[float]], enough: Enough) -> Enough:
    """`enough` for a draft that goes on after `head` (whose `beliefs` are known): judged on the whole answer."""
    logprobs, prefix = beliefs
    return lambda tokens, lps, prefixes: enough(head + tokens, logprobs + lps, prefix + prefixes)


class Prompter:
    """Opens sessions on one model, each prompt's encoder cache kept by key across keystrokes (PromptCache)."""

    def __init__(self, model: DiffusionModel) -> None:
        self.model = model
        graphs = getattr(model.net, "graphs", None)  # CUDA graphs: prompts run on the cache they were captured on
        self.prompt_cache = PromptCache(model.net.new_cache, working=graphs.cache if graphs is not None else None)

    @property
    def passes(self) -> int:
        """Model passes run so far (a completion's cost counts its own)."""
        return self.model.net.passes

    @contextmanager
    def session(self, key: str, prompt: list[int], **given) -> Iterator[PromptSession]:
        """A session on `prompt` (PromptSession's keywords), the cache kept under `key` afterwards."""
        with self.prompt_cache.use(key, prompt) as cache:
            yield PromptSession(self.model, prompt, cache, **given)

    def forget(self, key: str) -> None:
        """Drops the cache kept under `key` (a closed document)."""
        self.prompt_cache.forget(key)


def prompter_for(model):
    """The sessions of `model`: a served model's own (model.remote), else a Prompter of local passes."""
    own = getattr(model, "prompter", None)
    return own() if own is not None else Prompter(model)
