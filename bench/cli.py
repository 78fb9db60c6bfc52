"""`diffill eval` and `diffill bench ...`: completion quality and speed figures (docs/benchmarks.md).

Registered into the `diffill` command through the `diffill.commands` entry point (pyproject.toml); also runs
alone (`python -m diffill.bench.cli bench gpu ...`) from a checkout where diffill is not installed. The handlers
import their modules when they run, so that `diffill serve` (which loads every command's parser) starts without
torch.
"""

from __future__ import annotations

import argparse
import sys

from diffill.lsp.cli import standalone
from diffill.training.cli import MODEL_SIZES


def _milliseconds_or_off(text: str) -> float | None:
    """A latency budget flag: positive milliseconds, or "off" (None: no deadline)."""
    if text == "off":
        return None
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"a budget is positive milliseconds, or 'off' for none (got {text})")
    return value


def _bench_model(args: argparse.Namespace) -> int:
    from . import model as bench

    bench.run(
        preset=args.preset,
        prompt_len=args.prompt,
        canvas=args.canvas,
        steps=args.steps,
        reps=args.reps,
        threads=args.threads,
        dtype=args.dtype,
    )
    return 0


def _bench_cost(args: argparse.Namespace) -> int:
    from . import cost

    cost.run(
        prompt=args.prompt,
        follow_up=args.follow_up,
        canvases=args.canvas,
        steps=args.steps,
        dtype=args.dtype,
        scheme=args.scheme,
        threads=args.threads,
        reps=args.reps,
        out_path=args.out,
    )
    return 0


def _bench_gpu(args: argparse.Namespace) -> int:
    from . import gpu as bench_gpu

    return bench_gpu.main(
        args.dry_run,
        args.out,
        ref_layers=args.ref_layers,
        reps=args.reps,
        profile=args.profile,
        kernels=args.kernels,
        scheme=args.scheme,
        prompt=args.prompt,
    )


def _eval(args: argparse.Namespace) -> int:
    from diffill.bench.evaluate import run

    run(
        args.root,
        n=args.n,
        seed=args.seed,
        steps=args.steps,
        canvas=args.canvas,
        model=args.model,
        line_canvas=args.line_canvas,
        prompt_tokens=args.prompt_tokens,
        draft=args.draft,
        min_confidence=args.min_confidence,
        dtype=args.dtype,
        token_healing=not args.no_healing,
        draft_margin=args.draft_margin,
        draft_candidates=args.draft_candidates,
        siblings=args.siblings,
        copy_prior=args.copy_prior,
        copies=not args.no_copies,
        dump=args.dump,
        speculative={"model": None, "on": True, "off": False}[args.speculative],
        decoder_drafts={"model": None, "on": True, "off": False}[args.decoder_drafts],
        latency_budget=args.latency_budget,
        blocks=args.blocks,
    )
    return 0


def _bench_soak(args: argparse.Namespace) -> int:
    from .soak import run

    report = run(
        requests=args.requests,
        seed=args.seed,
        steps=args.steps,
        cancel_rate=args.cancel_rate,
        allocations=args.allocations,
    )
    return 0 if report.exit_code == 0 and report.documents_consistent else 1


def _bench_context(args: argparse.Namespace) -> int:
    from diffill.bench.context import run_context

    run_context(args.root, n=args.n, seed=args.seed, steps=args.steps, model=args.model)
    return 0


def _bench_prompts(args: argparse.Namespace) -> int:
    from diffill.bench.prompts import run_prompts

    run_prompts(args.root, model=args.model, n=args.n, seed=args.seed)
    return 0


def _bench_edits(args: argparse.Namespace) -> int:
    from diffill.bench.edits import run_edits

    run_edits(args.root, n=args.n, seed=args.seed, steps=args.steps, model=args.model)
    return 0


def _bench_lsp(args: argparse.Namespace) -> int:
    from .lsp import run, run_typing

    if args.typing or args.big:
        big = int(args.big * 1e6)
        run_typing(args.root, n=args.n, seed=args.seed, settings=_with_model(args), big_chars=big)
    else:
        run(args.root, n=args.n, seed=args.seed, settings=_with_model(args), dump=args.dump)
    return 0


def _with_model(args: argparse.Namespace) -> dict:
    """--settings with --model on top (a folder, hub id or server URL)."""
    import json

    settings = json.loads(args.settings)
    return settings | ({"model": args.model} if args.model else {})


def _bench_typing(args: argparse.Namespace) -> int:
    from .typing import run

    run(args.root, n=args.n, seed=args.seed, lines=args.lines, settings=_with_model(args), dump=args.dump)
    return 0


def _bench_names(args: argparse.Namespace) -> int:
    import json

    from .names import run

    run(args.root, n=args.n, seed=args.seed, settings=json.loads(args.settings))
    return 0


def _bench_heldout(args: argparse.Namespace) -> int:
    from .heldout import run

    run(args.out, model=args.model)
    return 0


def _bench_next_edits(args: argparse.Namespace) -> int:
    from .next_edits import run

    run(args.repo, max_commits=args.max_commits, model=args.model)
    return 0


def _bench_startup(args: argparse.Namespace) -> int:
    import json

    from .startup import run, run_first_answers

    settings = json.loads(args.settings)
    if args.first_answer:
        run_first_answers(args.root, runs=args.runs, settings=settings)
    else:
        run(args.root, runs=args.runs, settings=settings)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds `eval` and `bench` with its subcommands to the `diffill` parser."""
    ev = sub.add_parser("eval", help="completion quality on source files (exact, useful, edit similarity, valid)")
    ev.add_argument(
        "--root",
        required=True,
        action="append",
        help="folder of source files (code the model was not trained on); repeat it for several",
    )
    ev.add_argument("--n", type=int, default=200)
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--steps", type=int, default=None, help="denoising steps per canvas (default: the daemon's)")
    ev.add_argument("--canvas", type=int, default=None, help="canvas length (default: the model's)")
    ev.add_argument("--model", default="")
    ev.add_argument(
        "--line-canvas", type=int, default=None, help="canvas for rest-of-line spans (default: the daemon's)"
    )
    ev.add_argument("--prompt-tokens", type=int, default=256, help="prompt budget (the daemon's maxPromptTokens)")
    ev.add_argument(
        "--draft",
        default="model",
        choices=["model", "none", "ar"],
        help="seed canvases with the encoder's AR draft (model = as the model's card says)",
    )
    ev.add_argument(
        "--min-confidence",
        type=float,
        default=None,
        help="cut answers at the first doubtful token (default: the model's card)",
    )
    ev.add_argument(
        "--draft-margin",
        default="model",
        help="keep drafts, change a token only when the decoder beats it by this much (model = the card; off)",
    )
    ev.add_argument(
        "--draft-candidates",
        type=int,
        default=None,
        help="beam width of rest-of-line drafts (1 = greedy; default: the model's card)",
    )
    ev.add_argument(
        "--copy-prior",
        type=float,
        default=None,
        help="nats a line copied from the file may trail the model's own by (default: the engine's)",
    )
    ev.add_argument("--no-copies", action="store_true", help="no answer copied from the code around")
    ev.add_argument(
        "--siblings",
        action="store_true",
        help="copies may also come from the files beside each case's file, as in an editor (never the file itself)",
    )
    ev.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    ev.add_argument("--no-healing", action="store_true", help="keep the prompt's partial last token (no healing)")
    ev.add_argument("--dump", default="", help="write one JSON line per case (truth, answer, source, scores) here")
    ev.add_argument(
        "--blocks",
        action="store_true",
        help="block-body cases: a Python function's body removed, the cursor under its signature",
    )
    ev.add_argument(
        "--latency-budget",
        type=_milliseconds_or_off,
        default=200.0,
        help="milliseconds each answer may take, as the daemon's latencyBudgetMs ('off': no deadline)",
    )
    ev.add_argument(
        "--speculative",
        default="model",
        choices=["model", "on", "off"],
        help="greedy drafts by self-speculative decoding (drafts from the code around or the decoder, verified by "
        "the encoder); model = the engine's default",
    )
    ev.add_argument(
        "--decoder-drafts",
        default="model",
        choices=["model", "on", "off"],
        help="in speculative rounds without a draft from the code around, the decoder drafts; model = the card",
    )
    ev.set_defaults(func=_eval)

    bench = sub.add_parser("bench", help="benchmarks that print numbers").add_subparsers(dest="what", required=True)
    bm = bench.add_parser("model", help="ours vs transformers: one denoise step, prefill, one full canvas")
    bm.add_argument("--preset", default="moe16", choices=MODEL_SIZES, help="model shape (moe16: the shipped one)")
    bm.add_argument(
        "--prompt", type=int, default=512, help="prompt tokens (cached; a model's own: `diffill bench prompts`)"
    )
    bm.add_argument("--canvas", type=int, default=32, help="canvas length")
    bm.add_argument("--steps", type=int, default=8, help="denoising steps for the full-canvas timing")
    bm.add_argument("--reps", type=int, default=10)
    bm.add_argument("--threads", type=int, default=None)
    bm.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    bm.set_defaults(func=_bench_model)
    bk = bench.add_parser("cost", help="one completion with the real 26B-A4B shape here (random weights, scaled)")
    bk.add_argument("--prompt", type=int, default=512, help="first prompt's tokens (`diffill bench prompts`)")
    bk.add_argument("--follow-up", type=int, default=32, help="tokens a keystroke re-encodes (`bench prompts`)")
    bk.add_argument("--canvas", type=int, nargs="+", default=[32, 256], help="canvas widths")
    bk.add_argument("--steps", type=int, nargs="+", default=[4, 16], help="denoise steps per completion")
    bk.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    bk.add_argument("--scheme", default=None, choices=["int8", "int4"], help="quantized weights (default: none)")
    bk.add_argument("--threads", type=int, default=None)
    bk.add_argument("--reps", type=int, default=3, help="timed runs per figure (the median; after one warm-up)")
    bk.add_argument("--out", default=None, help="also write the figures as JSON here")
    bk.set_defaults(func=_bench_cost)
    bg = bench.add_parser("gpu", help="26B-A4B on one GPU (random weights): step, canvas, roofline, AR, graphs, ref")
    bg.add_argument("--out", default="bench/results/gpu.json", help="results file (JSON)")
    bg.add_argument("--dry-run", action="store_true", help="tiny config on the CPU: checks the script, no GPU")
    bg.add_argument("--ref-layers", type=int, default=30, help="layers of transformers' bf16 reference step")
    bg.add_argument("--reps", type=int, default=10)
    bg.add_argument(
        "--prompt", type=int, default=None, help="prompt tokens (default 512; a model's own: `diffill bench prompts`)"
    )
    bg.add_argument(
        "--scheme", default="int4", choices=["int4", "fp8"], help="weights: int4 Triton or fp8 grouped GEMM"
    )
    bg.add_argument(
        "--profile", metavar="TXT", help="instead: torch profiler tables of one denoise step and one AR token -> TXT"
    )
    bg.add_argument(
        "--kernels", metavar="TXT", help="instead: the int4 kernels alone at the real shapes, each tile-read variant"
    )
    bg.set_defaults(func=_bench_gpu)
    bl = bench.add_parser("lsp", help="drive `diffill serve` like an editor: keystroke-to-answer latency")
    bl.add_argument("--root", required=True, help="folder of real source files (not in the training data)")
    bl.add_argument("--n", type=int, default=100)
    bl.add_argument("--seed", type=int, default=0)
    bl.add_argument("--settings", default="{}", help="initializationOptions as JSON")
    bl.add_argument("--model", default="", help="the daemon's model (a server URL: its time and diffill's split)")
    bl.add_argument("--dump", default=None, help="write one JSON line per case (truth, answer) to this file")
    bl.add_argument("--typing", action="store_true", help="type lines char by char: first vs follow-up latency")
    bl.add_argument(
        "--big", type=float, default=0.0, metavar="MB", help="--typing in documents this many MB long (e.g. 3)"
    )
    bl.set_defaults(func=_bench_lsp)
    bt = bench.add_parser("typing", help="a user types real lines with ghost text: keystrokes saved, wrong shown")
    bt.add_argument("--root", required=True, action="append", help="folder of real source files; repeat for several")
    bt.add_argument("--n", type=int, default=30, help="cases (one per file)")
    bt.add_argument("--lines", type=int, default=3, help="consecutive lines deleted and typed back per case")
    bt.add_argument("--seed", type=int, default=0)
    bt.add_argument("--settings", default="{}", help="initializationOptions as JSON")
    bt.add_argument("--model", default="", help="the daemon's model (folder, hub id or server URL)")
    bt.add_argument("--dump", default=None, help="one JSON line per case with the suggestions shown")
    bt.set_defaults(func=_bench_typing)
    bn = bench.add_parser("names", help="workspace names completed whole in a new file (star, module, from imports)")
    bn.add_argument("--root", required=True, help="a Python project folder: the workspace, and where the names are")
    bn.add_argument("--n", type=int, default=10, help="names (one per module)")
    bn.add_argument("--seed", type=int, default=0)
    bn.add_argument("--settings", default="{}", help="initializationOptions as JSON")
    bn.set_defaults(func=_bench_names)
    bu = bench.add_parser("startup", help="launches of `diffill serve`: to the initialize answer and to ready")
    bu.add_argument("--root", default=".", help="the workspace folder the editor opens")
    bu.add_argument("--runs", type=int, default=5)
    bu.add_argument("--settings", default="{}", help="initializationOptions as JSON")
    bu.add_argument(
        "--first-answer",
        action="store_true",
        help="time the first answer after initialize, and keystrokes while the workspace is indexed and after",
    )
    bu.set_defaults(func=_bench_startup)
    bp = bench.add_parser("prompts", help="prompt tokens in the model's format, and what a keystroke re-encodes")
    bp.add_argument("--root", required=True, action="append", help="folder of source files; repeat for several")
    bp.add_argument("--model", default="", help="folder or hub id whose tokenizer is used (default: the embedded)")
    bp.add_argument("--n", type=int, default=100)
    bp.add_argument("--seed", type=int, default=0)
    bp.set_defaults(func=_bench_prompts)
    be = bench.add_parser("edits", help="inline-edit acceptance on rename pairs drawn from real code")
    be.add_argument("--root", required=True)
    be.add_argument("--n", type=int, default=50)
    be.add_argument("--seed", type=int, default=0)
    be.add_argument("--steps", type=int, default=None, help="(default: the daemon's)")
    be.add_argument("--model", default="")
    be.set_defaults(func=_bench_edits)
    bc = bench.add_parser("context", help="workspace probe: cross-file completions with and without context")
    bc.add_argument("--root", required=True, help="a project folder (not in the training data)")
    bc.add_argument("--n", type=int, default=40)
    bc.add_argument("--seed", type=int, default=0)
    bc.add_argument("--steps", type=int, default=None, help="(default: the daemon's)")
    bc.add_argument("--model", default="")
    bc.set_defaults(func=_bench_context)
    bh = bench.add_parser("heldout", help="fetch the held-out code the quality figures use; its training overlap")
    bh.add_argument("--out", default="data/heldout", help="folder to fetch into (reused when there)")
    bh.add_argument("--model", default="", help="whose training fingerprints (default: the embedded model's)")
    bh.set_defaults(func=_bench_heldout)
    bs = bench.add_parser("soak", help="many requests with random edits and cancels: RSS, threads, fds, latency drift")
    bs.add_argument("--requests", type=int, default=20_000)
    bs.add_argument("--seed", type=int, default=0)
    bs.add_argument("--steps", type=int, default=4, help="denoising steps per completion")
    bs.add_argument("--cancel-rate", type=float, default=0.1, help="share of requests cancelled at once")
    bs.add_argument(
        "--allocations",
        action="store_true",
        help="trace the server's Python allocations and print the sites that grew most (slows the server)",
    )
    bs.set_defaults(func=_bench_soak)
    bx = bench.add_parser("next-edits", help="a repository's history replayed: the next edits proposed after each hunk")
    bx.add_argument("--repo", action="append", required=True, help="a git directory (or a work tree); may repeat")
    bx.add_argument("--max-commits", type=int, default=None, help="the newest this many commits of each")
    bx.add_argument("--model", default=None, help="a checkpoint or server URL that can rewrite: its rewrites join in")
    bx.set_defaults(func=_bench_next_edits)


if __name__ == "__main__":
    sys.exit(standalone(register))
