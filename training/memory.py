"""Building a model's corpus memory (diffill.model.corpus_memory reads it): a sample of the training corpus, tokenized
into one safetensors file, and its section of the model's data card."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from diffill.model.corpus_memory import SEPARATOR

from .card import set_section
from .corpus import iter_docs, package_of

DATA_SECTION = "## Corpus memory"


def save_memory(path: str | Path, streams: Iterable[Iterable[int]]) -> int:
    """Writes token streams as one memory file; returns its length in tokens (separators included)."""
    parts = []
    for s in streams:
        parts += [np.asarray(list(s), dtype=np.uint16), np.array([SEPARATOR], dtype=np.uint16)]
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint16)
    save_file({"ids": ids}, str(path), metadata={"format": "diffill-memory", "separator": str(SEPARATOR)})
    return len(ids)


def sample_corpus(
    docs: Sequence[dict], chars: float, share: float = 0.15, seed: int = 0, python: bool = True
) -> tuple[list[str], Counter[str]]:
    """Texts of a training corpus's documents (model.corpus.iter_docs: path, text), its Python files (or,
    `python` False, the others) drawn at random up to `chars` characters, no package over `share` of them
    (transformers alone is half the Python) and no text over 200 KB (generated tables); with the characters taken
    from each package."""
    rows = [row for row in docs if row["path"].endswith(".py") == python]
    random.Random(seed).shuffle(rows)
    per: Counter[str] = Counter()
    texts, total = [], 0
    for row in rows:
        if total >= chars:
            break
        text, package = row["text"], package_of(row["path"])
        if len(text) > 200_000 or per[package] + len(text) > share * chars:
            continue
        per[package] += len(text)
        texts.append(text)
        total += len(text)
    return texts, per


def build_memory(
    corpus: str | Path,
    out: str | Path,
    encode_batch: Callable[[list[str]], list[list[int]]],
    chars: float,
    other_chars: float = 0,
) -> int:
    """Samples `chars` characters of the corpus's Python (at most 15 % from one package) and `other_chars` of
    its other languages (at most 13 % from one source: the model never trained on them, the memory is what it
    knows of them), tokenizes them and writes the memory to `out`. A DATA.md beside it (the model's data card)
    gets a section that says what went in."""
    docs = list(iter_docs(Path(corpus)))
    python, per_python = sample_corpus(docs, chars)
    others, per_other = sample_corpus(docs, other_chars, share=0.13, python=False) if other_chars else ([], Counter())
    tokens = save_memory(out, encode_batch(python + others))
    card = Path(out).parent / "DATA.md"
    if card.exists():
        licences = _licences(Path(corpus).parent / "sources.json")
        rows = "".join(
            f"| {name} | {licences.get(name, '(listed above)')} | {n:,} |\n"
            for name, n in (per_python + per_other).most_common()
        )
        note = (
            f"`{Path(out).name}`: {tokens:,} tokens of the training split, drawn at random by "
            f"`diffill train memory`: {sum(per_python.values()):,} characters of Python (at most 15 % from one "
            f"package) and {sum(per_other.values()):,} of other languages (at most 13 % from one source). The "
            f"held-out packages and folders are not in it.\n\n| package | licence | characters |\n|---|---|---|\n{rows}"
        )
        set_section(card, DATA_SECTION, note)
    return tokens


def _licences(sources: Path) -> dict[str, str]:
    """Source name -> licence, from the sources.json `diffill train corpus` writes beside the corpus."""
    try:
        listed = json.loads(sources.read_text(encoding="utf-8"))["sources"]
        return {s["name"]: s["licence"] for s in listed if s.get("split") == "train"}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
