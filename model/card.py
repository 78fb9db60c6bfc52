"""A checkpoint's card, read once: its generation_config.json (the sampler's defaults and diffill's own keys,
docs/model.md) and its training.json (whether it was trained with cross-file context)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sampler import SamplerConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelCard:
    """What a checkpoint asks of diffill (the engine's options start from it: infill.options)."""

    sampler: SamplerConfig | None = None  # the card's sampler, None without a generation_config.json
    draft: str = ""  # "ar": canvases seeded by the encoder's drafts (diffill_draft)
    min_confidence: float = 0.0  # cut answers at the first token under this probability (diffill_min_confidence)
    draft_candidates: int = 1  # beam width of rest-of-line drafts (diffill_draft_candidates)
    span_min_confidence: float | None = None  # min_confidence of denoised answers, if other
    rewrite_min_confidence: float | None = None  # a rewrite's cut for next edits, if other than the engine's
    speculative: bool = False  # its decoder drafts what its encoder accepts (diffill_speculative)
    trained_with_context: bool = False  # its prompts may carry cross-file context blocks (training.json)

    @classmethod
    def read(cls, folder: Path) -> ModelCard:
        """The card of a checkpoint folder. A generation_config.json that is no JSON object is an error (the
        sampler would run on guesses); a diffill key of the wrong type is logged and left at its default."""
        raw = _json(folder / "generation_config.json")
        sampler = SamplerConfig.from_generation_config(raw) if raw is not None else None
        return cls(sampler=sampler, trained_with_context=_trained_with_context(folder), **_diffill_keys(raw or {}))


def _json(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not a JSON object")
    return raw


def _diffill_keys(raw: dict[str, Any]) -> dict[str, Any]:
    try:
        keys: dict[str, Any] = {
            "draft": str(raw.get("diffill_draft", "")),
            "min_confidence": float(raw.get("diffill_min_confidence", 0.0)),
            "draft_candidates": max(1, min(16, int(raw.get("diffill_draft_candidates", 1)))),
            "speculative": raw.get("diffill_speculative", False) is True,
        }
        if "diffill_rewrite_min_confidence" in raw:
            keys["rewrite_min_confidence"] = float(raw["diffill_rewrite_min_confidence"])
        if "diffill_span_min_confidence" in raw:
            keys["span_min_confidence"] = float(raw["diffill_span_min_confidence"])
        return keys
    except (ValueError, TypeError) as exc:
        log.warning("the card's diffill keys are ignored: %s", exc)
        return {}


def _trained_with_context(folder: Path) -> bool:
    try:
        raw = _json(folder / "training.json")
        return bool(raw.get("config", {}).get("context_prob", 0)) if raw is not None else False
    except (ValueError, AttributeError):
        return False
