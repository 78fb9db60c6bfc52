"""How well a model's decoder drafts for its encoder (model.speculative), on rest-of-line cases drawn from source
folders with the engine's own prompts: tokens accepted per draft (the first draft, after the prompt, apart from
the later ones, after committed tokens), passes per answer, and the greedy answer's exact matches.

`python -m diffill.bench.speculation --root FOLDER [--root ...] [--model DIR] [--n 80]`
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from diffill.infill.document import SyntaxDocument
from diffill.infill.languages import language_for
from diffill.infill.options import PromptOptions
from diffill.infill.request import build_request
from diffill.infill.vocabulary import Vocabulary
from diffill.model import runtime
from diffill.model.speculative import Speculator

from .evaluate import draw_cases


def run(roots: list[str], model: str = "", n: int = 80, seed: int = 0, canvas: int = 16, out=print) -> list[dict]:
    cases = [c for c in draw_cases(roots, 3 * n, random.Random(seed)) if c.kind == "line"][:n]
    loaded = runtime.load(model, "cpu", dtype="float32")
    vocab = Vocabulary(loaded.tokenizer)
    stops = vocab.line_stops()
    rows = []
    for steps in (1, 2):
        spec = Speculator(loaded.model.net, canvas=canvas, draft_steps=steps)
        first, later, passes, exact, spent = [], [], [], 0, 0.0
        for c in cases:
            doc = SyntaxDocument(c.text, language_for(None, c.path))
            request = build_request(doc, c.offset, [], vocab, PromptOptions())
            t0 = time.perf_counter()
            found = spec.greedy(request.prompt, 15, stops, allowed=request.first)
            spent += time.perf_counter() - t0
            first.append(found.accepted[0] if found.accepted else 0)
            later += found.accepted[1:]
            passes.append(found.passes)
            text = request.unhealed(loaded.tokenizer.decode([t for t in found.tokens if t not in stops]))
            exact += text.strip() == c.truth.strip()
        row = {
            "draft_steps": steps,
            "first_accepted": round(statistics.mean(first), 2),
            "first_at_least_one": round(sum(a >= 1 for a in first) / len(first), 2),
            "later_accepted": round(statistics.mean(later), 2) if later else 0.0,
            "passes": round(statistics.mean(passes), 1),
            "greedy_exact": round(exact / len(cases), 3),
            "ms": round(spent / len(cases) * 1e3, 1),
        }
        out(str(row))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m diffill.bench.speculation")
    parser.add_argument("--root", action="append", required=True)
    parser.add_argument("--model", default="")
    parser.add_argument("--n", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    run(args.root, args.model, args.n, args.seed)


if __name__ == "__main__":
    main()
