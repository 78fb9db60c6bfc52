"""A run's weights into a model folder: bf16 weights, tokenizer, generation config, data card, training record."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from diffill.model.api import DiffusionModel
from diffill.model.corpus_memory import FILE_NAME as MEMORY_FILE
from diffill.model.loader import save_model

from .card import section
from .config import INIT_TRAINING
from .fingerprints import DATA_SECTION as FINGERPRINTS_SECTION
from .fingerprints import FILE_NAME as FINGERPRINTS_FILE
from .memory import DATA_SECTION as MEMORY_SECTION

KEPT_SECTIONS = ((MEMORY_SECTION, MEMORY_FILE), (FINGERPRINTS_SECTION, FINGERPRINTS_FILE))


def _training_line(state: dict) -> str:
    """A run's steps, tokens, minutes and corpus, for the data card."""
    return (
        f"{state.get('step', 0)} steps, {state.get('tokens', 0) / 1e6:.1f}M tokens, "
        f"{state.get('seconds', 0) / 60:.0f} minutes on {state.get('config', {}).get('corpus', '?')}"
    )


def write_data_card(corpus_dir: Path, state: dict, dest: Path, earlier: dict | None = None) -> None:
    """model/weights/DATA.md: every source of the training corpus with its version and licence. `earlier`: the
    training.json of the weights the run started from (`--init`)."""
    info = json.loads((corpus_dir / "sources.json").read_text())
    history = f"Training: {_training_line(state)}"
    if earlier:
        history += f", on top of {_training_line(earlier)}"
    lines = [
        "# The embedded model's training data",
        "",
        "Rebuilt from scratch with `diffill train corpus` (offline: the CPython standard library and the Python",
        "sources of permissively licensed distributions installed with diffill's dev extra; with `--languages`,",
        "Debian source packages and npm packages of the other languages), deduplicated by content. Whole packages",
        "(and one folder in 20 of the other languages' sources) are held out for evaluation and never trained on.",
        "",
        history + ".",
        "",
        "| split | source | version | licence | files |",
        "|---|---|---|---|---|",
    ]
    for src in info["sources"]:
        lines.append(f"| {src['split']} | {src['name']} | {src['version']} | {src['licence']} | {src['files']} |")
    summary = info.get("summary", {})
    lines += [
        "",
        "After deduplication: "
        + ", ".join(f"{k} {v['files']} files ({v['bytes'] / 1e6:.1f} MB)" for k, v in summary.items()),
        "",
    ]
    card = dest / "DATA.md"
    old = card.read_text(encoding="utf-8") if card.exists() else ""
    # The sections of `diffill train memory` and `diffill train fingerprints` stay while their files do.
    kept = [section(old, heading) for heading, name in KEPT_SECTIONS if (dest / name).exists()]
    card.write_text("\n".join(lines) + "".join("\n" + s for s in kept if s), encoding="utf-8")


def export(run_dir: Path, dest: Path, dtype: torch.dtype = torch.bfloat16, sampler: dict | None = None) -> None:
    """Copies a run's weights (in `dtype`), config, tokenizer and generation config into a model folder."""
    model = DiffusionModel.from_pretrained(run_dir / "checkpoint" / "model", dtype=dtype)
    dest.mkdir(parents=True, exist_ok=True)
    save_model(model.net, dest)
    (dest / "tokenizer.json").write_bytes((run_dir / "tokenizer.json").read_bytes())
    gen = {
        "max_denoising_steps": 8,
        "sampler_config": {"entropy_bound": 0.1},
        "t_min": 0.4,
        "t_max": 0.8,
        "stability_threshold": 1,
        "confidence_threshold": 0.005,
        "eos_token_id": [1],
        "pad_token_id": 0,
    }
    gen.update(sampler or {})
    (dest / "generation_config.json").write_text(json.dumps(gen, indent=1) + "\n")
    state = json.loads((run_dir / "checkpoint" / "state.json").read_text())
    earlier_file = run_dir / INIT_TRAINING
    earlier = json.loads(earlier_file.read_text()) if earlier_file.exists() else None
    write_data_card(Path(state["config"]["corpus"]), state, dest, earlier)
    kept = {k: state[k] for k in ("step", "tokens", "seconds", "history", "config", "runs") if k in state}
    if earlier:
        kept["init"] = earlier
    (dest / "training.json").write_text(json.dumps(kept, indent=1) + "\n")
