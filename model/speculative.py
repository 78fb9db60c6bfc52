"""Self-speculative decoding: the canvas decoder drafts, the causal encoder verifies and commits, in one pass a round.

The encoder, being causal, scores every position of a draft in one pass: its own next-token choice after each
prefix of the draft. The longest prefix on which the two agree, plus the encoder's token where they first differ,
is committed; the agreed tokens' keys/values are already in the cache from the verifying pass. The answer is
therefore exactly the encoder's greedy answer under the same evidence mixing and constraints (what
`DiffusionModel.ar_drafts` with k=1 writes, one encoder pass per token): the drafts only decide how many tokens
each pass commits.

Drafts come first from the n-gram evidence (`NgramMixer.draft`: what the code around says follows, the lookup
drafts of prompt lookup decoding), which cost nothing. Beside each verifying pass, in the same pass
(`DiffusionGemma.encode_beside`), the decoder writes a canvas after the last token fed, pinned at its position 0:
its guess of the token the encoder commits after a draft taken whole, and of the tokens after it. When the encoder
takes the whole draft and commits the token the canvas guessed, the rest of the canvas is the next round's draft
where the code around has none, or where the code around's is a prefix of it (the decoder agrees and goes on);
otherwise it is dropped. A decoder's draft therefore costs no pass of its own:
a round is one pass whoever drafts, and never commits less than the encoder's one token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import torch

from .beam import restrict
from .cache import KVCache, TreeRows, hold_prompt
from .diffusion_gemma import DiffusionGemma
from .ngram import NgramMixer

# A draft constraint: the ids the next token may take after the tokens so far (None: any). Token healing
# holds an answer to the text taken back from the prompt until it is written.
Allowed = Callable[[list[int]], Sequence[int] | None]
Extensions = Callable[[int], Sequence[int]]  # a token -> the ids whose text starts with its text
# Where a constraint holds, a draft of the text it still asks for after the tokens so far (token healing's)
Spelled = Callable[[list[int]], list[int]]
# Whether a draft has gone far enough, given its tokens and their logprobs and prefix logprobs (Speculation's)
Enough = Callable[[list[int], list[float], list[float]], bool]


@dataclass
class Speculation:
    tokens: list[int]  # the committed answer, its stop token included when one was reached
    score: float  # summed log-probability of `tokens` under the encoder's head (mixed and constrained)
    # each token's log-probability; where `allowed` constrained it, among the allowed tokens (`score` is not)
    logprobs: list[float] = field(default_factory=list)
    # each token's log-probability that the text goes on as its text does (`extensions`), on the same footing
    prefix_logprobs: list[float] = field(default_factory=list)
    passes: int = 0  # sequential model passes: one a round (the decoder's canvas rides in it)
    # milliseconds of the first pass when it also encoded the prompt's uncached tail (the prefill it carried), else 0
    prefill_ms: float = 0.0
    accepted: list[int] = field(default_factory=list)  # draft tokens the encoder accepted, per decoder draft
    looked_up: list[int] = field(default_factory=list)  # the same, per draft from the n-gram evidence
    finished: bool = True  # False when `keep_going` stopped it early: `tokens` is then a verified prefix
    # each rider's log-probability rows from the first pass (one per token, then the one after its last)
    rider_rows: list[torch.Tensor] = field(default_factory=list)
    enough: bool = False  # True when `enough` stopped it early: `tokens` is then a verified prefix


def log_mass(logp: torch.Tensor, ids: Sequence[int]) -> float:
    """log of the probability of any of `ids` in a row of log-probabilities."""
    return float(torch.logsumexp(logp.index_select(0, torch.as_tensor(list(ids), device=logp.device)), 0))


def judged_with(ids: Sequence[int] | None, token: int) -> Sequence[int] | None:
    """The ids a token's probability is judged among: `ids` (the typed word's tokens) with `token` itself, for a
    token outside them is judged with them (None stays None: no constraint, judged among all). Speculative rounds
    and DiffusionModel.token_beliefs normalise alike through it."""
    if ids is None or token in ids:
        return ids
    return [*ids, token]


class Speculator:
    """Runs the draft/verify loop for one net, the decoder's drafts on a canvas of `canvas` tokens. The n-gram
    evidence drafts first where it has a draft; else the decoder's canvas of the pass before, when `decoder` is
    on and that canvas still applies (else the round commits one token, as plain greedy decoding does)."""

    def __init__(self, net: DiffusionGemma, canvas: int = 16, seed: int = 0, decoder: bool = True) -> None:
        self.net = net
        self.canvas = canvas
        self.seed = seed
        self.decoder = decoder

    @torch.inference_mode()
    def greedy(
        self,
        prompt_ids: Sequence[int],
        max_tokens: int,
        stop_ids: Collection[int],
        cache: KVCache | None = None,
        allowed: Allowed | None = None,
        mix: NgramMixer | None = None,
        keep_going: Callable[[int], bool] | None = None,
        extensions: Extensions | None = None,
        among: Allowed | None = None,
        enough: Enough | None = None,
        spelled: Spelled | None = None,
        riders: list[list[int]] | None = None,
    ) -> Speculation:
        """The encoder's greedy continuation of `prompt_ids` (up to a stop id, included, or `max_tokens`).
        `cache` may hold a prefix of the prompt and is left holding the prompt. `keep_going(passes)` is asked
        before each round after the first with the one pass it would make; when it says no, the tokens verified
        so far come back (`finished` False). `extensions(token)`: the ids whose text starts with that token's,
        for `Speculation.prefix_logprobs` (without it, each token's own log-probability); `among(tokens)`: where
        `allowed` holds, the ids the logprobs are judged among (default: the allowed ones). `enough(tokens,
        logprobs, prefix_logprobs)` is asked after each round: when it says yes (what follows would not be
        shown), the rounds stop (`enough` True). `spelled(tokens)`: where `allowed` holds and the code around
        drafts nothing it allows, the round's draft (the text healing asks for, as the tokenizer writes it).
        `riders`: continuations to score in the first pass beside its draft (model.cache.TreeRows; their rows in
        `rider_rows`), the decoder's canvas beside them."""
        net, device = self.net, self.net.device
        prompt = torch.as_tensor(list(prompt_ids), dtype=torch.long, device=device).reshape(1, -1)
        n = prompt.shape[1]
        cache = cache if cache is not None else net.new_cache()
        if cache.length > n - 1:
            cache.truncate(n - 1)  # the last token is fed again, for its state
        # What the cache lacks of the prompt (its last token at least) is fed with the first draft: the prefill
        # and the first verification are one pass.
        pending = prompt[0, cache.length :].tolist()
        generator = torch.Generator(device=device).manual_seed(self.seed)
        out: list[int] = []
        result = Speculation([], 0.0)
        canvas: list[int] = []  # the decoder's guesses after the last token fed, from the pass that fed it
        first = True
        while len(out) < max_tokens:
            room = max_tokens - len(out)
            draft = mix.draft(out, room, stop_ids) if mix is not None else []
            if spelled is not None and allowed is not None and (held := allowed(out)) is not None:
                if not draft or draft[0] not in held:
                    draft = spelled(out)[:room]
            looked_up = bool(draft)
            decoded = not looked_up and bool(canvas)
            if decoded or (looked_up and canvas[: len(draft)] == draft):
                draft = canvas[:room]  # the decoder's, or the code around's where the decoder agrees and goes on
            if not first and keep_going is not None and not keep_going(1):
                result.finished = False
                break
            fed = torch.tensor([[*pending, *draft]], device=device)
            base, began = cache.length, time.perf_counter()
            if first and riders:
                hidden, result.rider_rows, canvas = self._verify_with_riders(
                    fed, len(pending), cache, riders, generator, room - len(draft)
                )
            else:
                hidden, canvas = self._verify_and_draft(fed, cache, generator, room - len(draft))
            logp = torch.log_softmax(net.head(hidden[0, len(pending) - 1 :]).float(), dim=-1)
            result.passes += 1
            if len(pending) > 1:
                result.prefill_ms = (time.perf_counter() - began) * 1e3
            taken = 0
            done = False
            for i, row in enumerate(logp):  # row i predicts the token after `pending` and draft[:i]
                if mix is not None:
                    row = mix.mix(out, row)
                limit = allowed(out) if allowed is not None else None
                free, row = row, restrict(row, limit)
                if not bool(torch.isfinite(row).any()):  # nothing allowed: the answer ends here
                    done = True
                    break
                token = int(row.argmax())
                out.append(token)
                result.score += float(row[token])
                # among the allowed tokens where a constraint holds: the typed word is given, not guessed
                judged = among(out[:-1]) if among is not None and limit is not None else None
                if judged:
                    norm = log_mass(row, judged_with(judged, token))
                else:
                    norm = float(torch.logsumexp(row, 0)) if limit is not None else 0.0
                result.logprobs.append(float(row[token]) - norm)
                result.prefix_logprobs.append(
                    log_mass(free, extensions(token)) - norm if extensions else result.logprobs[-1]
                )
                done = token in stop_ids or len(out) >= max_tokens
                matched = i < len(draft) and token == draft[i]
                taken += matched
                if not matched or done:
                    break
            if looked_up:
                result.looked_up.append(taken)
            elif decoded:
                result.accepted.append(taken)
            # The decoder's canvas went on after the whole draft: it still applies when the encoder took all of it
            # and its guess of the token after agrees with the encoder's (the next round's pending token).
            whole = taken == len(draft) and not done and bool(out)
            canvas = canvas[1:] if whole and canvas[:1] == out[-1:] else []
            # The cache keeps `pending` and the accepted draft tokens; the token just chosen is pending.
            cache.truncate(base + len(pending) + taken)
            pending = out[-1:] if out else pending[-1:]
            first = False
            if done:
                break
            if enough is not None and enough(out, result.logprobs, result.prefix_logprobs):
                result.enough = True
                break
        result.tokens = out
        hold_prompt(net, prompt, cache, n)  # (encodes the prompt only when no round ran)
        return result

    def _verify_with_riders(
        self,
        fed: torch.Tensor,
        fork: int,
        cache: KVCache,
        riders: list[list[int]],
        generator: torch.Generator,
        room: int,
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[int]]:
        """The encoder's hidden states over `fed` (appended to `cache`, its first `fork` tokens the prompt's), in
        the same pass each rider's log-probability rows after the prompt (TreeRows.logps), and the decoder's
        canvas after fed's last token as `_verify_and_draft` writes it (the riders unseen)."""
        net = self.net
        tree = TreeRows(cache, fed.shape[1], [len(r) for r in riders], fed.device, fork=fork)
        row = torch.cat([fed, torch.tensor([[t for r in riders for t in r]], device=fed.device)], dim=1)
        noise = self._noise(fed, generator, room)
        if noise is None:
            hidden, guesses = net.encode(row, tree, tree.positions), []
        else:
            hidden, beside = net.encode_beside(row, noise, tree, tree.positions)
            guesses = net.head(beside[0, 1:]).argmax(-1).tolist()
        tree.commit()
        return hidden[:, : fed.shape[1]], tree.logps(net, hidden[0]), guesses

    def _noise(self, fed: torch.Tensor, generator: torch.Generator, room: int) -> torch.Tensor | None:
        """A canvas of noise pinned at fed's last token, for up to `room` guesses after it; None without the
        decoder, or with room for less than the token the encoder commits and one more."""
        size = min(self.canvas, room + 1)
        if not self.decoder or size < 3:
            return None
        noise = torch.randint(0, self.net.config.vocab_size, (1, size), generator=generator, device=fed.device)
        noise[0, 0] = fed[0, -1]
        return noise

    def _verify_and_draft(
        self, fed: torch.Tensor, cache: KVCache, generator: torch.Generator, room: int
    ) -> tuple[torch.Tensor, list[int]]:
        """The encoder's hidden states over `fed` (appended to `cache`) and, in the same pass, the decoder's
        argmax guesses of up to `room` tokens after fed's last token (pinned at the canvas's position 0, over
        noise: the layout `diffill train decoder` trains). A constraint (`allowed`) is left to the verify pass;
        without a canvas (`_noise`), the encoder's pass alone."""
        noise = self._noise(fed, generator, room)
        if noise is None:
            return self.net.encode(fed, cache), []
        hidden, beside = self.net.encode_beside(fed, noise, cache)
        return hidden, self.net.head(beside[0, 1:]).argmax(-1).tolist()
