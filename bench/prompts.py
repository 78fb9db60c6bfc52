"""`diffill bench prompts`: how long a model's completion prompts are in its own format (model.prompt_format), and how
many tokens a keystroke makes the encoder encode again, on cases drawn from real files. Only the checkpoint's
tokenizer is read (no weights), so the real checkpoint's figures need its tokenizer files alone; the lengths are
what `bench model --prompt N` and `bench gpu` then time."""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable
from pathlib import Path

from diffill.infill.document import SyntaxDocument
from diffill.infill.languages import language_for
from diffill.infill.request import build_request
from diffill.infill.vocabulary import Vocabulary
from diffill.lsp.settings import Settings, engine_options
from diffill.model import runtime
from diffill.model.loader import resolve_checkpoint
from diffill.model.prompt_cache import common_prefix

from .cases import draw_cases


def _percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_prompts(
    root: str | list[str], model: str = "", n: int = 100, seed: int = 0, out: Callable[[str], None] = print
) -> dict:
    """Prompt tokens of `n` cases with the daemon's prompt options (no cross-file context), and the tokens a
    follow-up keystroke (one more character typed at the cursor) encodes past the cached prompt."""
    folder = runtime.EMBEDDED_DIR if not model else resolve_checkpoint(model)
    vocabulary = Vocabulary(runtime.load_tokenizer(Path(folder)))
    prompt_options = engine_options(Settings(), None).prompt
    lengths, follow_ups = [], []
    for case in draw_cases(root, n, random.Random(seed)):
        language = language_for(None, case.path)
        first = build_request(SyntaxDocument(case.text, language), case.offset, (), vocabulary, prompt_options)
        typed = case.text[: case.offset] + case.truth[:1] + case.text[case.offset :]
        after = build_request(SyntaxDocument(typed, language), case.offset + 1, (), vocabulary, prompt_options)
        lengths.append(len(first.prompt))
        follow_ups.append(len(after.prompt) - common_prefix(first.prompt, after.prompt))
    summary = {
        "format": vocabulary.format.name,
        "cases": len(lengths),
        "budget": prompt_options.max_prompt_tokens,
        "prompt_p50": int(statistics.median(lengths)),
        "prompt_p95": _percentile(lengths, 0.95),
        "follow_up_p50": int(statistics.median(follow_ups)),
        "follow_up_p95": _percentile(follow_ups, 0.95),
        "follow_up_share": round(sum(follow_ups) / sum(lengths), 3),
    }
    out(f"prompt format: {summary['format']}; {summary['cases']} cases, maxPromptTokens {summary['budget']}")
    out(f"prompt tokens p50 {summary['prompt_p50']}, p95 {summary['prompt_p95']}")
    out(
        f"a keystroke encodes again p50 {summary['follow_up_p50']}, p95 {summary['follow_up_p95']} tokens "
        f"({summary['follow_up_share']:.1%} of the prompts)"
    )
    out(json.dumps(summary))
    return summary
