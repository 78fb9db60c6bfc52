"""How many passes self-speculative decoding (model.speculative) saves, and what they cost, on rest-of-line and
multi-line cases drawn from source folders with the engine's own prompts and n-gram evidence: the encoder's plain
greedy draft against draft/verify rounds whose drafts come from the code around (lookups) alone or with the
decoder's drafts. Per mode: passes and milliseconds per answer, tokens accepted per draft of each kind (the
decoder's first draft, after the prompt, apart from its later ones, after committed tokens), and how many answers
are token for token the greedy one (all of them, or the loop is wrong).

`python -m diffill.bench.speculation --root FOLDER [--root ...] [--model DIR] [--n 80] [--siblings]
[--decoder-canvas N]`
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.languages import language_for
from diffill.infill.options import EngineOptions
from diffill.infill.request import build_request
from diffill.model import runtime
from diffill.model.speculative import Speculator

from .cases import draw_cases

MODES = ("greedy", "lookups", "lookups+decoder")


def run(
    roots: list[str],
    model: str = "",
    n: int = 80,
    seed: int = 0,
    canvas: int = 16,
    siblings: bool = False,
    decoder_canvas: int | None = None,
    out=print,
) -> list[dict]:
    cases = draw_cases(roots, n, random.Random(seed))
    loaded = runtime.load(model, "cpu", dtype="float32")
    engine = CompletionEngine(loaded.model, loaded.tokenizer, EngineOptions.from_card(loaded.card), loaded.memory)
    asks = []
    for c in cases:
        doc = SyntaxDocument(c.text, language_for(None, c.path))
        request = build_request(doc, c.offset, [], engine.vocabulary, engine.options.prompt)
        path = c.path if siblings else None
        if siblings:
            engine.warm_sources(path)
        _, mix = engine.around(request, path, engine.options)
        stops = request.stops
        asks.append((c.kind, request, mix, stops, canvas - 1 if request.line else 2 * canvas))
    rows, greedy = [], {}
    for mode in MODES:
        spec = Speculator(loaded.model.net, canvas=decoder_canvas or canvas, decoder=mode == "lookups+decoder")
        by_kind: dict[str, dict[str, list]] = {}
        for i, (kind, request, mix, stops, room) in enumerate(asks):
            got = by_kind.setdefault(kind, {k: [] for k in ("passes", "ms", "same", "first", "later", "lookups")})
            cache = loaded.model.net.new_cache()
            passes = loaded.model.net.passes
            t0 = time.perf_counter()
            if mode == "greedy":
                tokens = loaded.model.ar_drafts(
                    request.prompt, room, stops, cache, request.healing.allowed, k=1, mix=mix
                )[0][0]
                greedy[i] = tokens
            else:
                found = spec.greedy(request.prompt, room, stops, cache, request.healing.allowed, mix)
                tokens = found.tokens
                got["first"] += found.accepted[:1]
                got["later"] += found.accepted[1:]
                got["lookups"] += found.looked_up
            got["ms"].append((time.perf_counter() - t0) * 1e3)
            got["passes"].append(loaded.model.net.passes - passes)
            got["same"].append(tokens == greedy[i])
        for kind, got in by_kind.items():
            row = {"mode": mode, "kind": kind, "answers": len(got["ms"])}
            row["passes"] = round(statistics.mean(got["passes"]), 2)
            row["ms"] = round(statistics.mean(got["ms"]), 1)
            row["same_as_greedy"] = round(sum(got["same"]) / len(got["same"]), 3)
            for key in ("lookups", "first", "later"):
                row[f"{key}_per_answer"] = round(len(got[key]) / len(got["ms"]), 2)
                row[f"{key}_accepted"] = round(statistics.mean(got[key]), 2) if got[key] else 0.0
            out(str(row))
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m diffill.bench.speculation")
    parser.add_argument("--root", action="append", required=True)
    parser.add_argument("--model", default="")
    parser.add_argument("--n", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--siblings", action="store_true", help="evidence from the files beside each case's too")
    parser.add_argument("--decoder-canvas", type=int, help="the decoder's canvas beside each pass (default 16)")
    args = parser.parse_args(argv)
    run(args.root, args.model, args.n, args.seed, siblings=args.siblings, decoder_canvas=args.decoder_canvas)


if __name__ == "__main__":
    main()
