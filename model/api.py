"""`DiffusionModel`: the public face of the model core (load, generate, one denoising pass)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from . import scoring
from .beam import beam_drafts
from .cache import KVCache, hold_prompt
from .card import ModelCard
from .config import DiffusionGemmaConfig
from .diffusion_gemma import DiffusionGemma
from .loader import load_model, resolve_checkpoint
from .ngram import NgramMixer
from .quant import QuantSpec, lay_out_for_kernels
from .quant_io import QuantizeOnLoad, quantization_entry
from .sampler import GenerationOutput, SamplerConfig, before_unsure, ended, generate, trim_after_eos
from .speculative import Allowed, Extensions


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
    """A loaded DiffusionGemma text stack with the sampler it runs (its card's, else the reference's defaults) and
    its card (model.card)."""

    def __init__(
        self, net: DiffusionGemma, sampler: SamplerConfig, path: Path | None = None, card: ModelCard | None = None
    ):
        self.net = net
        self.sampler = sampler
        self.path = path
        self.card = card if card is not None else ModelCard()

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
        card = ModelCard.read(folder)
        sampler = card.sampler or SamplerConfig(eos_token_ids=net.config.eos_ids, pad_token_id=net.config.pad_token_id)
        return cls(net, sampler, folder, card)

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
        return self._answer(out, min_confidence, trim)

    @torch.inference_mode()
    def denoise(
        self,
        prompt_ids: list[int],
        cache: KVCache,
        *,
        canvas: int,
        steps: int,
        seed: int,
        canvases: int = 1,
        init: list[int] | None = None,
        pins: dict[int, int] | None = None,
        first_allowed: list[int] | None = None,
        min_confidence: float = 0.0,
        cancel: Callable[[], bool] | None = None,
        mix: NgramMixer | None = None,
    ) -> list[int]:
        """The answer of up to `canvases` canvases of `canvas` tokens denoised after the prompt in at most `steps`
        steps (model.session.PromptSession.denoise says what each option does), up to its EOS."""
        out = generate(
            self.net,
            prompt_ids,
            self._config(steps),
            max_new_tokens=canvas * canvases,
            seed=seed,
            canvas_length=canvas,
            cache=cache,
            pinned=pins,
            cancel=cancel,
            init=init,
            first_allowed=first_allowed,
            mix=mix,
        )
        return self._answer(out, min_confidence)

    @torch.inference_mode()
    def rewrite(
        self,
        prompt_ids: list[int],
        cache: KVCache,
        *,
        init: list[int],
        steps: int,
        seed: int,
        cancel: Callable[[], bool] | None = None,
    ) -> tuple[list[int], list[float]] | None:
        """One canvas of len(`init`) tokens denoised from `init` (the text to rewrite, as it reads) and each token's
        probability, up to its EOS; None when the canvas holds no EOS (the rewrite did not fit)."""
        out = generate(
            self.net,
            prompt_ids,
            self._config(steps),
            max_new_tokens=len(init),
            seed=seed,
            canvas_length=len(init),
            cache=cache,
            cancel=cancel,
            init=init,
        )
        return ended(out.tokens, out.confidence, self.sampler.eos_token_ids)

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
        return generate(
            self.net,
            prompt_ids,
            self._config(steps, **sampler_overrides),
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

    def _config(self, steps: int | None, **overrides: Any) -> SamplerConfig:
        """The card's sampler with `steps` and `overrides` (an explicit None switches a stopping rule or the
        temperature schedule off)."""
        cfg = self.sampler.with_overrides(max_denoising_steps=steps, **overrides)
        for key in ("stability_threshold", "confidence_threshold", "t_min", "t_max"):
            if key in overrides and overrides[key] is None:
                cfg = replace(cfg, **{key: None})
        return cfg

    def _answer(self, out: GenerationOutput, min_confidence: float, trim: bool = True) -> list[int]:
        """The generated tokens cut before the first under `min_confidence`; with `trim`, up to the first EOS."""
        tokens = before_unsure(out.tokens, out.confidence, min_confidence)
        if trim:
            return trim_after_eos(tokens, self.sampler.eos_token_ids, self.sampler.pad_token_id)
        return tokens

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
        logps_out: dict | None = None,
    ) -> list[float]:
        """Log-probability (summed, nats) of each token sequence right after the prompt under the encoder's LM
        head: how much the model believes each candidate text (a workspace symbol, its own draft). With `end_ids`,
        each score also counts the probability that one of those ids comes next (the line ends there), so whole
        lines compare with the beam's drafts, which end in a stop token. `mix`: as in `ar_drafts`. `logps_out`: as
        scoring.continuation_rows fills it (each continuation's rows, for its beliefs without another pass)."""
        rows = scoring.continuation_rows(self.net, prompt_ids, continuations, cache, end_ids, mix, logps_out=logps_out)
        return [sum(row) for row in rows]

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
        return scoring.token_beliefs(self.net, prompt_ids, tokens, cache, mix, allowed, extensions)

    @torch.inference_mode()
    def prefill(self, prompt_ids, cache: KVCache) -> int:
        """Encodes what `cache` lacks of the prompt but its last token (every call after it feeds that token
        again with what follows, for its hidden state); returns how many tokens it encoded. A completion's
        prefill is then a stage of its own, and the passes after it are the short ones its deadline plans."""
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=self.net.device).reshape(1, -1)
        todo = prompt.shape[1] - 1 - cache.length
        hold_prompt(self.net, prompt, cache, prompt.shape[1] - 1)
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

    def time_passes(self, prompt_tokens: int = 64, canvas: int = 16, reps: int = 3) -> float:
        """Milliseconds one pass of a completion costs here: single-token encoder steps and a decoder pass over a
        canvas, timed on a throwaway prompt (infill.deadline.PassClock calibrates the deadline with it)."""
        net = self.net
        prompt = [2 + i % (net.config.vocab_size - 2) for i in range(prompt_tokens)]
        graphs = getattr(net, "graphs", None)  # CUDA graphs: time the passes as completions will run them
        cache = graphs.cache if graphs is not None else net.new_cache()
        cache.truncate(0)
        self.ar_drafts(prompt, 2, set(), cache)  # warm-up: first calls allocate
        start, passes = time.perf_counter(), net.passes
        for _ in range(reps):
            self.ar_drafts(prompt, 4, set(), cache)
            self.denoise_step(prompt, canvas, cache)
        ms = (time.perf_counter() - start) * 1e3 / max(1, net.passes - passes)
        cache.truncate(0)  # (the working cache is left empty for the prompt cache's first owner)
        return ms

    @torch.inference_mode()
    def denoise_step(self, prompt_ids, canvas_length: int, cache: KVCache) -> torch.Tensor:
        """One decoder pass over a noise canvas after the cached prompt (encoded first where the cache lacks it):
        what a denoising step costs, for timing."""
        device = self.net.device
        prompt = torch.as_tensor(prompt_ids, dtype=torch.long, device=device).reshape(1, -1)
        hold_prompt(self.net, prompt, cache, prompt.shape[1])
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
        hold_prompt(self.net, prompt, cache, prompt.shape[1])
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
