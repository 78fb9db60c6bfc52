"""diffill's user settings: typed, validated, from `initializationOptions` and `workspace/didChangeConfiguration`.

Invalid values are reported with one clear message naming each bad key; the previous settings then stay.
Both flat options (`{"steps": 8}`) and a `{"diffill": {...}}` section are accepted, in camelCase or snake_case.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diffill.infill.options import EngineOptions
    from diffill.model.runtime import LoadedModel

LANGUAGES = ("python", "javascript", "typescript", "tsx", "go", "rust", "c", "cpp", "java", "lua", "plaintext")
DEVICES = ("auto", "cpu", "cuda", "mps")
QUANTIZATION = ("auto", "none", "int8", "int4", "fp8")
PRECISIONS = ("auto", "float32", "bfloat16")


@dataclass(frozen=True)
class Settings:
    model: str = ""  # "" = the embedded model; else a local folder, a Hugging Face hub id or a server URL
    device: str = "auto"
    quantization: str = "auto"  # the device's best fit (model.runtime.pick_quantization); "none" = as stored
    precision: str = "auto"  # activations/weights: auto = bf16 on GPUs, fp32 on CPUs
    steps: int = 4  # denoising steps per canvas (the sampler also stops early when stable)
    canvas_length: int | None = None  # None: the model's own canvas length
    languages: tuple[str, ...] = field(default=LANGUAGES)
    latency_budget_ms: int = 200
    max_prompt_tokens: int = 256
    enabled: bool = True
    next_edits: bool = True  # after a change, hint where it applies again (code actions apply them)
    threads: int | None = None  # None: automatic (1 for small models on few cores)
    min_confidence: float | None = None  # cut answers at the first token under this probability; None: the card's
    draft_candidates: int | None = None  # beam width of rest-of-line drafts (1: greedy, fastest); None: the card's
    # A server `model` (http:// or https://): its API key (None: the DIFFILL_API_KEY environment variable; never
    # logged), a CA file for its certificate, TLS verification (off only when asked), a request's time limit.
    api_key: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    tls_verify: bool = True
    request_timeout_ms: int = 10_000
    # Where a server model's tokenizer and card are read when neither its served name nor its root (`/v1/models`)
    # is a folder here or a hub id: a local folder or a hub id. None: those two.
    served_model_files: str | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["languages"] = list(self.languages)
        d["api_key"] = "(set)" if self.api_key else None  # shown to no one
        return d


# The settings that may be null (not set), and what they then follow.
UNSET = {
    "canvas_length": "the model's own",
    "threads": "automatic",
    "min_confidence": "the model's own",
    "draft_candidates": "the model's own",
    "api_key": "the DIFFILL_API_KEY environment variable",
    "ca_file": "the system's certificates",
    "served_model_files": "the server's own names for its model",
}


INTEGERS = {
    "steps": (1, 128),
    "canvas_length": (1, 256),
    "latency_budget_ms": (10, 60_000),
    "max_prompt_tokens": (16, 32_768),
    "threads": (1, 256),
    "draft_candidates": (1, 16),
    "request_timeout_ms": (100, 600_000),
}  # the integer settings and their bounds


class SettingsError(ValueError):
    """Invalid settings; the message lists every problem."""


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _check(name: str, value: Any) -> tuple[Any, str | None]:
    """(converted value, error message or None) for one setting."""
    if name in ("model",):
        return (value, None) if isinstance(value, str) else (value, "must be a string (path, hub id or server URL)")
    if name in ("api_key", "ca_file", "served_model_files"):
        ok = value is None or isinstance(value, str)
        return (value or None, None) if ok else (None, f"must be a string, or null for {UNSET[name]}")
    if name == "device":
        ok = isinstance(value, str) and (value in DEVICES or re.fullmatch(r"cuda:\d+", value))
        return value, None if ok else f"must be one of {', '.join(DEVICES)} or cuda:N"
    if name == "precision":
        return value, None if value in PRECISIONS else f"must be one of {', '.join(PRECISIONS)}"
    if name == "quantization":
        return value, None if value in QUANTIZATION else f"must be one of {', '.join(QUANTIZATION)}"
    if value is None and name in UNSET:
        return None, None
    if name in INTEGERS:
        bounds = INTEGERS[name]
        unset = f", or null for {UNSET[name]}" if name in UNSET else ""
        if isinstance(value, bool) or not isinstance(value, int):
            return value, f"must be an integer in [{bounds[0]}, {bounds[1]}]{unset}"
        if not bounds[0] <= value <= bounds[1]:
            return value, f"must be in [{bounds[0]}, {bounds[1]}]{unset} (got {value})"
        return value, None
    if name == "min_confidence":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1
        return (float(value), None) if ok else (value, "must be a number in [0, 1], or null for the model's own")
    if name in ("enabled", "tls_verify", "next_edits"):
        return value, None if isinstance(value, bool) else "must be true or false"
    if name == "languages":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return value, "must be a list of language names"
        unknown = [v for v in value if v not in LANGUAGES]
        if unknown:
            return value, f"unknown languages {', '.join(unknown)} (known: {', '.join(LANGUAGES)})"
        return tuple(value), None
    return value, "unknown setting"


def parse_settings(raw: Any, base: Settings | None = None) -> Settings:
    """New settings from `raw` applied over `base`; raises SettingsError listing every invalid key."""
    base = base or Settings()
    if raw is None:
        return base
    if not isinstance(raw, dict):
        raise SettingsError(f"settings must be an object, got {type(raw).__name__}")
    if "diffill" in raw and (raw["diffill"] is None or isinstance(raw["diffill"], dict)):
        raw = raw["diffill"] or {}  # an editor with no settings of its own sends an empty (or null) section
    known = {f.name for f in fields(Settings)}
    changes: dict[str, Any] = {}
    errors: list[str] = []
    for key, value in raw.items():
        name = _snake(str(key))
        if name not in known:
            errors.append(f"{key}: unknown setting")
            continue
        converted, problem = _check(name, value)
        if problem:
            errors.append(f"{key}: {problem}")
        else:
            changes[name] = converted
    if errors:
        raise SettingsError("invalid diffill settings: " + "; ".join(errors))
    return replace(base, **changes)


def engine_options(settings: Settings, loaded: LoadedModel | None, **experiment: Any) -> EngineOptions:
    """The engine's options for these settings over a loaded model's card: its draft mode, its answer cut-off
    unless the user set one, cross-file context only for models trained with it. The daemon, `diffill complete`,
    `diffill eval` and the benchmarks all build them here, so that what is measured is what ships; `experiment`:
    engine knobs a benchmark sets on top (flat names, as EngineOptions.from_card takes them; the daemon sets
    none)."""
    from diffill.infill.options import EngineOptions

    user = {"min_confidence": settings.min_confidence, "draft_candidates": settings.draft_candidates}
    chosen = {
        "steps": settings.steps,
        "canvas_length": settings.canvas_length,
        "max_prompt_tokens": settings.max_prompt_tokens,
        "latency_budget_ms": settings.latency_budget_ms,
    }
    user = {name: value for name, value in user.items() if value is not None}  # None: the card's
    return EngineOptions.from_card(loaded.card if loaded is not None else None, **(chosen | user | experiment))


def connection(settings: Settings):
    """How to reach a server `model` (model.vllm_server.Connection); None for any other model."""
    from diffill.model.server_url import is_server_url

    if not is_server_url(settings.model):
        return None
    from diffill.model.vllm_server import Connection

    return Connection(
        settings.model,
        api_key=settings.api_key,
        ca_file=settings.ca_file,
        verify=settings.tls_verify,
        timeout_s=settings.request_timeout_ms / 1e3,
        model_files=settings.served_model_files,
    )
