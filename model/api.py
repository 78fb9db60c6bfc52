"""`DiffusionModel`: the public face of the model core (load, generate, one denoising pass)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path

import torch

from .beam import beam_drafts
from .cache import KVCache
from .config import DiffusionGemmaConfig
from .diffusion_gemma import DiffusionGemma
from .loader import load_model, resolve_checkpoint
from .ngram import NgramMixer
from .quant import QuantSpec, lay_out_for_kernels
from .quant_io import QuantizeOnLoad, quantization_entry
from .sampler import GenerationOutput, SamplerConfig, before_unsure, generate, trim_after_eos
from .speculative import Allowed, Extensions, log_mass


def _dtype(value: str | torch.dtype | None) -> torch.dtype | None:
    if value is None or isinstance(value, torch.dtype):
        return value
    names = {
        "float32": torch.float32,
        "fp32": torch.float32,
        "bfloat16": torch.bfloat16,
        "bf16": torch.bfloat16,
        "float16": torch.float16,
        "fp16": torch.float16,
    }
    if value not in names:
        raise ValueError(f"unknown dtype {value!r} (one of {', '.join(names)})")
    return names[value]


class DiffusionModel:
    """A loaded DiffusionGemma text stack with its sampler defaults (from generation_config.json)."""

    def __init__(self, net: DiffusionGemma, sampler: SamplerConfig, path: Path | None = None):
        self.net = net
        self.sampler = sampler
        self.path = path

    @property
    def config(self) -> DiffusionGemmaConfig:
        return self.net.config

    @classmethod
    def from_pretrained(
        cls,
        path_or_hub_id: str | os.PathLike,
        device: str | torch.device = "cpu",
        dtype: str | torch.dtype | None = None,
        progress: Callable[[int, int], None] | None = None,
        quantization: str | None = None,
    ) -> DiffusionModel:
        """Loads a local folder or a hub id (downloaded into the Hugging Face cache). Safetensors only.

        `quantization` ("int4", "int8", "fp8") quantizes the weights while they are read (see model/quant.py);
        a checkpoint saved by `save_quantized` loads quantized whatever this says (a different scheme is an error).
        """
        folder = resolve_checkpoint(path_or_hub_id)
        net = lay_out_for_kernels(_load_net(folder, device, _dtype(dtype), progress, quantization))
        gen_path = folder / "generation_config.json"
        sampler = SamplerConfig(eos_token_ids=net.config.eos_ids, pad_token_id=net.config.pad_token_id)
        if gen_path.exists():
            sampler = SamplerConfig.from_generation_config(json.loads(gen_path.read_text()))
        return cls(net, sampler, folder)

    @torch.inference_mode()
    def generate(
        self,
        prompt_ids: list[int] | torch.Tensor,
        max_new_tokens: int = 256,
        seed: int | None = None,
        steps: int | None = None,
        canvas_length: int | None = None,
        pinned: dict[int, int] | None = None,
        cancel: Callable[[], bool] | None = None,
        on_draft: Callable[[torch.Tensor, int], None] | None = None,
        trim: bool = True,
        cache: KVCache | None = None,
        init: list[int] | None = None,
        min_confidence: float = 0.0,
        first_allowed: list[int] | None = None,
        **sampler_overrides,
    ) -> list[int]:
        """New token ids for `prompt_ids`. With `trim` (default) the first EOS and what follows are dropped;
        without it, whole canvases come back as the reference emits them (EOS kept, then pad).
        `min_confidence` > 0 cuts the answer before the first token the model gave a lower probability."""
        out = self.generate_full(
            prompt_ids,
            max_new_tokens=max_new_tokens,
            seed=seed,
            steps=steps,
            canvas_length=canvas_length,
            pinned=pinned,
            cancel=cancel,
            on_draft=on_draft,
            cache=cache,
            init=init,
            first_allowed=first_allowed,
            **sampler_overrides,
        )
        tokens = before_unsure(out.tokens, out.confidence, min_confidence)
        if trim:
            return trim_after_eos(tokens, self.sampler.eos_token_ids, self.sampler.pad_token_id)
        return tokens

    @torch.inference_mode()
    def generate_full(
        self,
        prompt_ids,
        *,
        max_new_tokens: int = 256,
        seed: int | None = None,
        steps: int | None = None,
        canvas_length: int | None = None,
        pinned: dict[int, int] | None = None,
        cancel: Callable[[], bool] | None = None,
        on_draft: Callable[[torch.Tensor, int], None] | None = None,
        cache: KVCache | None = None,
        init: list[int] | None = None,
        first_allowed: list[int] | None = None,
        **sampler_overrides,
    ) -> GenerationOutput:
        """`cache` may hold the keys/values of a prefix of `prompt_ids` (see PromptCache): only the rest is
        encoded. It is left holding the prompt plus any committed canvases."""
        cfg = self.sampler.with_overrides(max_denoising_steps=steps, **sampler_overrides)
        for key in ("stability_threshold", "confidence_threshold", "t_min", "t_max"):
            if key in sampler_overrides and sampler_overrides[key] is None:
                cfg = _set(cfg, key, None)  # an explicit None switches the feature off
        return generate(
            self.net,
            prompt_ids,
            cfg,
            max_new_tokens=max_new_tokens,
            seed=seed,
            canvas_length=canvas_length,
            pinned=pinned,
            cancel=cancel,
            on_draft=on_draft,
            cache=cache,
            init=init,
            first_allowed=first_allowed,
        )

    @torch.inference_mode()
    def ar_drafts(
        self,
        prompt_ids,
        max_tokens: int,
        stop_ids: set[int],
        cache: KVCache | None = None,
        first_allowed: list[int] | Callable[[list[int]], Sequence[int] | None] | None = None,
        k: int = 1,
        mix: NgramMixer | None = None,
        keep_going: Callable[[], bool] | None = None,
    ) -> list[tuple[list[int], float]]:
        """The best draft of a beam search of width `k` over the encoder's head, then the other drafts that finished
        before it was sure (at most `k` in all), each with its summed log-probability (nats, its stop token
        included), likeliest first; k=1 is the greedy draft. A draft ends at a
        stop id or after `max_tokens`. Greedy decoding goes wrong most at the first word (mid-word, several fit):
        scoring whole continuations picks the one the model believes as a whole. The cache is left holding the
        prompt; the beams extend copies of it. `mix` blends a cache n-gram model of the code around into each
        next-token distribution (see model.ngram). `first_allowed`: the only ids the first token may take, or a
        function of a draft's tokens so far giving the ids its next token may take (None: any; token healing
        over several tokens). `keep_going` is asked before each further step: when it says no, the drafts so far
        (finished or not) are ranked as they stand."""
        return beam_drafts(self.net, prompt_ids, max_tokens, stop_ids, cache, first_allowed, k, mix, keep_going)

    def continuation_logprobs(
        self,
        prompt_ids,
        continuations: list[list[int]],
        cache: KVCache | None = None,
        end_ids: Collection[int] | None = None,
        mix: NgramMixer | None = None,
    ) -> list[float]:
        """Log-probability (summed, nats) of each token sequence right after the prompt under the encoder's LM
        head: how much the model believes each candidate text (a workspace symbol, its own draft). With `end_ids`,
        each score also counts the probability that one of those ids comes next (the line ends there), so whole
        lines compare with the beam's drafts, which end in a stop token. `mix`: as in `ar_drafts`."""
        return [sum(row) for row in self._continuation_rows(prompt_ids, continuations, cache, end_ids, mix)]

    def token_beliefs(
        self,
        prompt_ids,
        tokens: list[int],
        cache: KVCache | None = None,
        mix: NgramMixer | None = None,
        allowed: Allowed | None = None,
        extensions: Extensions | None = None,
    ) -> tuple[list[float], list[float]]:
        """(each token's log-probability after the prompt and the tokens before it, under the encoder's head: where
        the model stops being sure of an answer; and each position's log-probability that the text goes on as
        that token's text does: the ids `extensions(token)` together, ` None` and ` NoneType` both going on with
        ` None`). Where `allowed` (ids, given the tokens before) names ids, a probability is among them: the word
        being typed is given, not guessed."""
        beliefs: list[list[float]] = []
        logps = self._continuation_rows(prompt_ids, [tokens], cache, None, mix, allowed, extensions, beliefs)[0]
        return logps, beliefs[0] if beliefs else list(logps)

    @torch.inference_mode()
    def _continuation_rows(
        self,
        prompt_ids,
        continuations: list[list[int]],
        cache: KVCache | None,
        end_ids: Collection[int] | None,
        mix: NgramMixer | None = None,
        allowed: Allowed | None = None,
        extensions: Extensions | None = None,
        prefix_rows: list[list[float]] | None = None,
    ) -> list[list[float]]:
        """Per-token log-probabilities of each continuation (then log p(an end id) when `end_ids` are given).
        Every continuation goes through the encoder in one batched pass, each row the prompt's last token and
        the continuation (right-padded: the encoder is causal, so padding changes nothing before it), on copies
        of the prompt's cached keys/values; the cache is left holding the prompt. With `extensions`, each row's
        prefix beliefs (DiffusionModel.token_beliefs) are appended to `prefix_rows`."""
        rows: list[list[float]] = [[] for _ in continuations]
        asked = [i for i, tokens in enumerate(continuations) if tokens]
        if not asked:
            return rows
        device = self.net.device
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
        n = prompt.shape[1]
        cache = cache if cache is not None else self.net.new_cache()
        if cache.length >= n:
            cache.truncate(n - 1)  # the last token is fed again, with each continuation, for its hidden state
        elif cache.length < n - 1:
            self.net.encode(prompt[:, cache.length : n - 1], cache)
        last = int(prompt[0, -1])
        ends = None if end_ids is None else torch.as_tensor(sorted(end_ids), dtype=torch.long, device=device)
        # the last token's state is needed only for the end id's probability
        fed = [[last, *(continuations[i] if ends is not None else continuations[i][:-1])] for i in asked]
        width = max(len(f) for f in fed)
        batch = torch.tensor([f + [0] * (width - len(f)) for f in fed], device=device)
        copies = cache.expanded(len(fed))
        logps = torch.log_softmax(self.net.head(self.net.encode(batch, copies)).float(), dim=-1)
        cache.adopt(copies, n)  # the prompt's last token, fed again with each continuation
        for b, i in enumerate(asked):
            tokens = continuations[i]
            logp = logps[b, : len(fed[b])]
            ids = torch.tensor(tokens, device=device)
            if mix is None:
                row = logp[: len(tokens)].gather(-1, ids.unsqueeze(-1)).squeeze(-1).tolist()
            else:  # each token's mixed probability alone (NgramMixer.mix_at)
                row = [float(mix.mix_at(tokens[:j], logp[j], ids[j : j + 1])[0]) for j in range(len(tokens))]
            norms = [0.0] * len(tokens)
            if allowed is not None:
                norms = [
                    self._mass(_with(allowed(tokens[:j]), t), logp[j], tokens[:j], mix) for j, t in enumerate(tokens)
                ]
                row = [lp - norm for lp, norm in zip(row, norms, strict=True)]
            if prefix_rows is not None and extensions is not None:
                prefix_rows.append(
                    [self._mass(extensions(t), logp[j], tokens[:j], mix) - norms[j] for j, t in enumerate(tokens)]
                )
            if ends is not None:
                end = logp[len(tokens)]
                end = end.index_select(0, ends) if mix is None else mix.mix_at(tokens, end, ends)
                row.append(float(torch.logsumexp(end, 0)))
            rows[i] = row
        return rows

    @staticmethod
    def _mass(ids: Sequence[int] | None, logp: torch.Tensor, before: list[int], mix: NgramMixer | None) -> float:
        """log P(one of `ids` next) for a row of log-probabilities (0 when `ids` is None: anything is)."""
        if not ids:
            return 0.0
        if mix is None:
            return log_mass(logp, ids)
        keep = torch.as_tensor(list(ids), dtype=torch.long, device=logp.device)
        return float(torch.logsumexp(mix.mix_at(before, logp, keep), 0))

    @torch.inference_mode()
    def prefill(self, prompt_ids, cache: KVCache) -> int:
        """Encodes what `cache` lacks of the prompt but its last token (every call after it feeds that token
        again with what follows, for its hidden state); returns how many tokens it encoded. A completion's
        prefill is then a stage of its own, and the passes after it are the short ones its deadline plans."""
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=self.net.device).reshape(1, -1)
        n = prompt.shape[1]
        if cache.length > n:
            cache.truncate(n)
        todo = n - 1 - cache.length
        if todo > 0:
            self.net.encode(prompt[:, cache.length : n - 1], cache)
        return max(0, todo)

    @torch.inference_mode()
    def warm_graphs(self, canvas_lengths: Collection[int]) -> int:
        """Captures, before the first completion, the CUDA graphs completions replay (model/graphs.py): the
        passes, then whole denoise steps at each canvas length (the first step and the self-conditioned ones,
        with the first token free or restricted, as token healing asks) under this model's sampler rule. Other
        kinds (pinned canvases) are captured when first used. Returns how many graphs are held."""
        graphs = self.net.graphs
        if graphs is None:
            return 0
        graphs.warm(tuple(canvas_lengths))
        if self.sampler.fast and graphs.enabled:
            vocab = self.config.vocab_size
            for c in sorted(set(canvas_lengths)):
                for first in (None, [2 % vocab]):
                    graphs.cache.reset()
                    self.generate_full([2 % vocab] * 4, max_new_tokens=c, seed=0, steps=2, canvas_length=c, cache=graphs.cache,
                                       first_allowed=first)  # fmt: skip
            graphs.cache.reset()
        return graphs.held()

    @torch.inference_mode()
    def denoise_step(self, prompt_ids, canvas_length: int, cache: KVCache) -> torch.Tensor:
        """One decoder pass over a noise canvas after the cached prompt (encoded first where the cache lacks it):
        what a denoising step costs, for timing."""
        device = self.net.device
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
        if cache.length > prompt.shape[1]:
            cache.truncate(prompt.shape[1])
        if cache.length < prompt.shape[1]:
            self.net.encode(prompt[:, cache.length :], cache)
        canvas = torch.randint(0, self.config.vocab_size, (1, canvas_length), device=device)
        return self.net.decode(canvas, cache)[0]

    @torch.inference_mode()
    def denoise_logits(self, prompt_ids, canvas_ids, prev_logits: torch.Tensor | None = None) -> torch.Tensor:
        """One decoder pass over `canvas_ids` after encoding `prompt_ids`: fp32 logits [C, V]."""
        device = self.net.device
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
        canvas = torch.as_tensor(canvas_ids, dtype=torch.long, device=device).reshape(1, -1)
        cache = self.net.new_cache()
        self.net.encode(prompt, cache)
        prev = None if prev_logits is None else prev_logits.reshape(1, *prev_logits.shape[-2:])
        return self.net.decode(canvas, cache, prev)[0]

    @torch.inference_mode()
    def slot_logprobs(
        self,
        prompt_ids,
        canvas_ids: list[int],
        slots: list[tuple[int, int]],
        cache: KVCache | None = None,
        seed: int = 0,
    ) -> list[float]:
        """How much the model believes each slot of a candidate canvas: the slots' tokens are noised (uniform
        random ids, as in training) and one decoder pass scores the candidate's ids there (mean log-probability
        per token, one value per slot). Comparing candidates this way is denoising restricted to them."""
        device = self.net.device
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
        cache = cache if cache is not None else self.net.new_cache()
        if cache.length > prompt.shape[1]:
            cache.truncate(prompt.shape[1])
        if cache.length < prompt.shape[1]:
            self.net.encode(prompt[:, cache.length :], cache)
        clean = torch.as_tensor(canvas_ids, dtype=torch.long, device=device).reshape(1, -1)
        noisy = clean.clone()
        gen = torch.Generator(device=device).manual_seed(seed)
        for a, b in slots:
            noisy[0, a:b] = torch.randint(0, self.config.vocab_size, (b - a,), generator=gen, device=device)
        logprobs = self.net.decode(noisy, cache)[0].log_softmax(dim=-1)
        picked = logprobs.gather(-1, clean[0].unsqueeze(-1)).squeeze(-1)
        return [float(picked[a:b].mean()) if b > a else 0.0 for a, b in slots]

    @torch.inference_mode()
    def encode(self, prompt_ids) -> torch.Tensor:
        """Encoder pass over the prompt; the final-normed hidden states [T, H] (for parity checks)."""
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=self.net.device).reshape(1, -1)
        return self.net.encode(prompt, self.net.new_cache())[0]


def _with(ids: Sequence[int] | None, token: int) -> Sequence[int] | None:
    """`ids` with `token` among them (None stays None: no constraint)."""
    if ids is None or token in ids:
        return ids
    return [*ids, token]


def _load_net(folder: Path, device, dtype: torch.dtype | None, progress, quantization: str | None) -> DiffusionGemma:
    """Dense load, quantize-on-load (dense checkpoint + a scheme), or a saved quantized checkpoint."""
    config_path = folder / "config.json"
    saved = quantization_entry(config_path) if config_path.exists() else None
    if quantization is None or saved is not None:
        if quantization is not None and QuantSpec.of(quantization).scheme != saved.scheme:
            raise ValueError(f"{folder} is quantized as {saved.scheme}, not {quantization}")
        return load_model(folder, device=device, dtype=dtype, progress=progress)
    hook = QuantizeOnLoad(quantization, DiffusionGemmaConfig.from_file(config_path), device)
    net = load_model(folder, device=device, dtype=dtype, on_tensor=hook, progress=progress)
    return hook.finish(net, net.embed_tokens.weight.dtype)


def _set(cfg: SamplerConfig, key: str, value) -> SamplerConfig:
    return replace(cfg, **{key: value})
