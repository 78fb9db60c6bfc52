"""`diffill bench model`: ours against transformers' DiffusionGemma on the same random checkpoint, same run.

Times one denoising step (decoder pass with self-conditioning over a cached prompt) and one full canvas
(prefill + a fixed number of steps) for both implementations and prints the ratio. transformers is only
needed here and in the tests (the `dev` extra).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from diffill.model import presets
from diffill.model.api import DiffusionModel


def hf_config(canvas_length: int, **text_kwargs):
    """A transformers DiffusionGemmaConfig for a text stack (token ids 0/1/2 as ours) with the smallest vision
    tower transformers accepts (diffill never runs it): shared by the benchmarks and the parity tests."""
    from transformers import DiffusionGemmaConfig, DiffusionGemmaTextConfig

    text = DiffusionGemmaTextConfig(**text_kwargs, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    vision = dict(model_type="gemma4_vision", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=2, head_dim=16, position_embedding_size=64)  # fmt: skip
    return DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=canvas_length)


def _timed(fn: Callable[[], object], reps: int) -> float:
    """Median milliseconds over `reps` runs after one warm-up."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run(
    preset: str = "moe16",
    prompt_len: int = 512,
    canvas: int = 32,
    steps: int = 8,
    reps: int = 10,
    threads: int | None = None,
    out: Callable[[str], None] = print,
    dtype: str = "float32",
) -> dict[str, float]:
    from transformers import DiffusionGemmaForBlockDiffusion

    if threads:
        torch.set_num_threads(threads)
    spec = presets.preset(preset)
    config = hf_config(canvas, **{**spec, "max_position_embeddings": 8192})
    torch.manual_seed(0)
    hf = DiffusionGemmaForBlockDiffusion(config).eval()
    with tempfile.TemporaryDirectory() as tmp:
        hf.save_pretrained(tmp)
        ours = DiffusionModel.from_pretrained(Path(tmp), dtype=dtype)
    hf = hf.to(getattr(torch, dtype))
    vocab = spec["vocab_size"]
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(3, vocab, (1, prompt_len), generator=g)
    x = torch.randint(0, vocab, (1, canvas), generator=g)
    pos = torch.arange(prompt_len, prompt_len + canvas)[None]
    results: dict[str, float] = {}
    with torch.inference_mode():
        ref = hf(input_ids=prompt, decoder_input_ids=x)
        hf_cache, prev = ref.past_key_values, ref.logits
        cache = ours.net.new_cache()
        ours.net.encode(prompt, cache)
        results["step_ms_transformers"] = _timed(
            lambda: hf(
                past_key_values=hf_cache, decoder_input_ids=x, self_conditioning_logits=prev, decoder_position_ids=pos
            ),
            reps,
        )
        results["step_ms_ours"] = _timed(lambda: ours.net.decode(x, cache, prev, pos), reps)
        results["prefill_ms_transformers"] = _timed(lambda: hf.model.encoder(input_ids=prompt), max(3, reps // 3))
        results["prefill_ms_ours"] = _timed(lambda: ours.net.encode(prompt, ours.net.new_cache()), max(3, reps // 3))
        fixed = dict(max_denoising_steps=steps, stability_threshold=None, confidence_threshold=None)
        results["canvas_ms_transformers"] = _timed(
            lambda: hf.generate(prompt, max_new_tokens=canvas, eos_token_id=None, **fixed), max(3, reps // 3)
        )
        results["canvas_ms_ours"] = _timed(
            lambda: ours.generate(
                prompt[0],
                max_new_tokens=canvas,
                seed=0,
                steps=steps,
                stability_threshold=None,
                confidence_threshold=None,
            ),
            max(3, reps // 3),
        )
    out(
        f"preset={preset} prompt={prompt_len} canvas={canvas} steps={steps} threads={torch.get_num_threads()} "
        f"dtype={dtype}"
    )
    out(f"{'measure':<28}{'ours ms':>10}{'transformers ms':>18}{'speed-up':>10}")
    for what in ("step", "prefill", "canvas"):
        a, b = results[f"{what}_ms_ours"], results[f"{what}_ms_transformers"]
        results[f"{what}_speedup"] = b / a
        out(f"{what:<28}{a:>10.2f}{b:>18.2f}{b / a:>9.2f}x")
    return results
