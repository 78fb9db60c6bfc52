"""Self-speculative decoding: the canvas decoder drafts, the causal encoder verifies and commits.

The decoder writes a whole canvas at once (one or two parallel passes over noise, reading the encoder's cache).
The encoder, being causal, then scores every position of that draft in one pass: its own next-token choice after
each prefix of the draft. The longest prefix on which the two agree, plus the encoder's token where they first
differ, is committed; the agreed tokens' keys/values are already in the cache from the verifying pass, and the
encoder's token starts the next canvas, pinned, so it costs no pass of its own. The answer is therefore exactly
the encoder's greedy answer under the same evidence mixing and constraints (what `DiffusionModel.ar_drafts`
with k=1 writes, one encoder pass per token): the decoder only decides how many tokens each encoder pass
commits. A draft the decoder gets right end to end commits a canvas and one token more in two passes.

A draft may also come from the n-gram evidence (`NgramMixer.draft`: what the code around says follows, the lookup
drafts of prompt lookup decoding): it costs no pass, so a round that has one is the verifying pass alone. Where
neither drafts, a round is one encoder pass that commits one token, as plain greedy decoding does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import torch

from .beam import restrict
from .cache import KVCache, hold_prompt
from .diffusion_gemma import DiffusionGemma
from .ngram import NgramMixer
from .sampler import SamplerConfig, denoise_canvas

# A draft constraint: the ids the next token may take after the tokens so far (None: any). Token healing
# holds an answer to the text taken back from the prompt until it is written.
Allowed = Callable[[list[int]], Sequence[int] | None]
Extensions = Callable[[int], Sequence[int]]  # a token -> the ids whose text starts with its text


@dataclass
class Speculation:
    tokens: list[int]  # the committed answer, its stop token included when one was reached
    score: float  # summed log-probability of `tokens` under the encoder's head (mixed and constrained)
    # each token's log-probability; where `allowed` constrained it, among the allowed tokens (`score` is not)
    logprobs: list[float] = field(default_factory=list)
    # each token's log-probability that the text goes on as its text does (`extensions`), on the same footing
    prefix_logprobs: list[float] = field(default_factory=list)
    passes: int = 0  # sequential model passes: decoder drafts plus encoder verifications
    accepted: list[int] = field(default_factory=list)  # draft tokens the encoder accepted, per decoder draft
    looked_up: list[int] = field(default_factory=list)  # the same, per draft from the n-gram evidence
    finished: bool = True  # False when `keep_going` stopped it early: `tokens` is then a verified prefix


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
    """Runs the draft/verify loop for one net; `draft_steps` decoder passes per draft (self-conditioned after
    the first), on a canvas of `canvas` tokens. The n-gram evidence drafts first where it has a draft; the
    decoder drafts the other rounds when `decoder` is on (else they commit one token each)."""

    def __init__(
        self, net: DiffusionGemma, canvas: int = 16, draft_steps: int = 1, seed: int = 0, decoder: bool = True
    ) -> None:
        self.net = net
        self.canvas = canvas
        self.seed = seed
        self.decoder = decoder
        # No temperature and no early stop: the draft is the decoder's argmax after exactly `draft_steps` passes.
        self.sampler = SamplerConfig(
            max_denoising_steps=draft_steps,
            t_min=None,
            t_max=None,
            stability_threshold=None,
            confidence_threshold=None,
            eos_token_ids=[],
        )

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
    ) -> Speculation:
        """The encoder's greedy continuation of `prompt_ids` (up to a stop id, included, or `max_tokens`).
        `cache` may hold a prefix of the prompt and is left holding the prompt. `keep_going(passes)` is asked
        before each round after the first with the passes it would make (a decoder draft and the verification,
        or the verification alone); when it says no, the tokens verified so far come back (`finished` False).
        `extensions(token)`: the ids whose text starts with that token's, for `Speculation.prefix_logprobs`
        (without it, each token's own log-probability); `among(tokens)`: where `allowed` holds, the ids the
        logprobs are judged among (default: the allowed ones)."""
        net, device = self.net, self.net.device
        prompt = torch.as_tensor(list(prompt_ids), dtype=torch.long, device=device).reshape(1, -1)
        n = prompt.shape[1]
        cache = cache if cache is not None else net.new_cache()
        hold_prompt(net, prompt, cache, n - 1)  # its last token is fed again with the first draft, for its state
        generator = torch.Generator(device=device).manual_seed(self.seed)
        out: list[int] = []
        result = Speculation([], 0.0)
        pending = int(prompt[0, -1])  # the last committed token, re-encoded by each verifying pass for its state
        first = True
        while len(out) < max_tokens:
            room = max_tokens - len(out)
            draft = mix.draft(out, room, stop_ids) if mix is not None else []
            looked_up = bool(draft)
            decoded = not looked_up and self.decoder
            if not first and keep_going is not None and not keep_going(1 + decoded):
                result.finished = False
                break
            if decoded:
                draft = self._draft(cache, pending, generator, room)
                result.passes += 1
            fed = torch.tensor([[pending, *draft]], device=device)
            base = cache.length
            logp = torch.log_softmax(net.head(net.encode(fed, cache)[0]).float(), dim=-1)
            result.passes += 1
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
            # The cache keeps `pending` and the accepted draft tokens; the token just chosen is pending.
            cache.truncate(base + 1 + taken)
            pending = out[-1] if out else pending
            first = False
            if done:
                break
        result.tokens = out
        cache.truncate(n)
        return result

    def _draft(self, cache: KVCache, pending: int, generator: torch.Generator, room: int) -> list[int]:
        """The decoder's draft of at most `room` tokens after `pending`: the cache holds everything before it, and
        it starts the canvas, pinned (on the first draft `pending` is the prompt's last token, so no pass encodes
        it first: the layout `diffill train decoder` trains). A constraint (`allowed`) is left to the verify pass."""
        net, device = self.net, self.net.device
        start = cache.length
        size = min(self.canvas, room + 1)
        pin_mask = torch.zeros(1, size, dtype=torch.bool, device=device)
        pin_mask[0, 0] = True
        pin_ids = torch.full((1, size), pending, dtype=torch.long, device=device)
        positions = torch.arange(start, start + size, device=device)[None]
        result = denoise_canvas(
            net, cache, positions, self.sampler, generator, size, pin_mask=pin_mask, pin_ids=pin_ids
        )
        return result.tokens[0, 1:].tolist()
