"""The `diffill` command line."""

from __future__ import annotations

import argparse
import os
import sys

# A daemon beside an editor and a compiler must not spin-wait on shared cores (10-20x slowdowns otherwise).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# The names in diffill.model.presets, spelt out here so that parsing a command line does not import torch.
MODEL_SIZES = ("embedded", "moe16", "tiny")


def _bench_model(args: argparse.Namespace) -> int:
    from diffill.model import bench

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


def _bench_gpu(args: argparse.Namespace) -> int:
    from diffill.model import bench_gpu

    return bench_gpu.main(
        args.dry_run, args.out, ref_layers=args.ref_layers, reps=args.reps, profile=args.profile, kernels=args.kernels
    )


def _train_corpus(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.model.corpus import build

    print(build(Path(args.out), languages=args.languages))
    return 0


def _train_pack(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.model.corpus import pack

    print(pack(Path(args.corpus), Path(args.out), args.megabytes))
    return 0


def _train_memory(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.model.memory import FILE_NAME, build_memory
    from diffill.model.tokenizer import CodeTokenizer

    model = Path(args.model)
    tokenizer = CodeTokenizer.from_file(model / "tokenizer.json")
    corpus = Path(args.corpus) / "train.jsonl"
    tokens = build_memory(corpus, model / FILE_NAME, tokenizer.encode_batch, args.chars, args.other_chars)
    print(f"{model / FILE_NAME}: {tokens:,} tokens from {args.chars + args.other_chars:,.0f} characters of {corpus}")
    return 0


def _train_run(args: argparse.Namespace) -> int:
    from diffill.model.train import TrainConfig, train

    cfg = TrainConfig(
        corpus=args.corpus,
        out=args.out,
        batch=args.batch,
        total_steps=args.steps,
        max_minutes=args.minutes,
        anneal_by_time=args.anneal_by_time,
        threads=args.threads,
        device=args.device,
        lr=args.lr,
        diffusion_weight=args.diffusion_weight,
        objective=args.objective,
        vocab_size=args.vocab,
        save_every_s=args.save_every,
        prompt_len=args.prompt_len,
        init=args.init,
        size=args.size,
        workers=args.workers,
    )
    train(cfg, log=lambda line: print(line, flush=True))
    return 0


def _train_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.model.train import export

    sampler = {"max_denoising_steps": args.steps}
    if args.draft:
        sampler["diffill_draft"] = args.draft
    if args.min_confidence:
        sampler["diffill_min_confidence"] = args.min_confidence
    if args.span_min_confidence is not None:
        sampler["diffill_span_min_confidence"] = args.span_min_confidence
    if args.draft_margin is not None:
        sampler["diffill_draft_margin"] = args.draft_margin
    if args.draft_candidates > 1:
        sampler["diffill_draft_candidates"] = args.draft_candidates
    if args.entropy_bound is not None:
        sampler["sampler_config"] = {"entropy_bound": args.entropy_bound}
    export(Path(args.run), Path(args.dest), sampler=sampler)
    print(f"exported {args.run} -> {args.dest}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    import logging

    from .server import run

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    run(tcp_port=args.tcp)
    return 0


def _complete(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.infill.document import SyntaxDocument
    from diffill.infill.engine import CompletionEngine, EngineOptions
    from diffill.infill.languages import language_for
    from diffill.model import runtime

    text = Path(args.file).read_text(encoding="utf-8")
    doc = SyntaxDocument(text, language_for(None, args.file))
    loaded = runtime.load(args.model, args.device)
    engine = CompletionEngine(
        loaded.model, loaded.tokenizer, EngineOptions.from_card(loaded, steps=args.steps), loaded.memory
    )
    offset = doc.offset_at(args.line - 1, args.col - 1, "utf-32")
    result = engine.complete(doc, offset, path=args.file)  # copies may come from the files beside it
    if result is None:
        print("(no completion)", file=sys.stderr)
        return 1
    replaced = text[result.start : result.end]
    if replaced:
        print(f"(replaces {replaced!r})", file=sys.stderr)
    print(result.text)
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import report

    for line in report(args.model):
        print(line)
    return 0


def _eval(args: argparse.Namespace) -> int:
    from diffill.model.evaluate import run

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
        dump=args.dump,
    )
    return 0


def _bench_soak(args: argparse.Namespace) -> int:
    from .soak import run

    report = run(requests=args.requests, seed=args.seed, steps=args.steps, cancel_rate=args.cancel_rate)
    return 0 if report.exit_code == 0 and report.documents_consistent else 1


def _bench_context(args: argparse.Namespace) -> int:
    from diffill.model.evaluate import run_context

    run_context(args.root, n=args.n, seed=args.seed, steps=args.steps, model=args.model)
    return 0


def _bench_edits(args: argparse.Namespace) -> int:
    from diffill.model.evaluate import run_edits

    run_edits(args.root, n=args.n, seed=args.seed, steps=args.steps, model=args.model)
    return 0


def _bench_lsp(args: argparse.Namespace) -> int:
    import json

    from .bench import run, run_typing

    if args.typing:
        run_typing(args.root, n=args.n, seed=args.seed, settings=json.loads(args.settings))
    else:
        run(args.root, n=args.n, seed=args.seed, settings=json.loads(args.settings))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="diffill", description="Local code completion with a diffusion model")
    sub = parser.add_subparsers(dest="command", required=True)
    sv = sub.add_parser("serve", help="run the language server (stdio by default)")
    sv.add_argument("--tcp", type=int, default=None, metavar="PORT", help="listen on 127.0.0.1:PORT instead")
    sv.add_argument("--log-level", default="warning")
    sv.add_argument("--stdio", action="store_true", help="use stdio (the default; accepted for clients that pass it)")
    sv.set_defaults(func=_serve)
    cp = sub.add_parser("complete", help="print the completion at FILE:LINE:COL (1-based), without an editor")
    cp.add_argument("file")
    cp.add_argument("line", type=int)
    cp.add_argument("col", type=int)
    cp.add_argument("--model", default="", help="folder or hub id (default: the embedded model)")
    cp.add_argument("--device", default="auto")
    cp.add_argument("--steps", type=int, default=8)
    cp.set_defaults(func=_complete)
    dr = sub.add_parser("doctor", help="versions, device, model, memory, grammars")
    dr.add_argument("--model", default="", help="also describe this model (folder or hub id)")
    dr.set_defaults(func=_doctor)

    ev = sub.add_parser("eval", help="completion quality on source files (exact, useful, edit similarity, valid)")
    ev.add_argument(
        "--root",
        required=True,
        action="append",
        help="folder of source files (code the model was not trained on); repeat it for several",
    )
    ev.add_argument("--n", type=int, default=200)
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--steps", type=int, default=8)
    ev.add_argument("--canvas", type=int, default=0, help="canvas length (0 = the model's)")
    ev.add_argument("--model", default="")
    ev.add_argument("--line-canvas", type=int, default=0, help="canvas for rest-of-line spans (0 = --canvas)")
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
        default=-1.0,
        help="cut answers at the first doubtful token (-1 = the model's card)",
    )
    ev.add_argument(
        "--draft-margin",
        default="model",
        help="keep drafts, change a token only when the decoder beats it by this much (model = the card; off)",
    )
    ev.add_argument(
        "--draft-candidates",
        type=int,
        default=0,
        help="beam width of rest-of-line drafts (0 = the model's card; 1 = greedy)",
    )
    ev.add_argument(
        "--copy-prior",
        type=float,
        default=None,
        help="nats a line copied from the file may trail the model's own by (-1 = no copies; default: the engine's)",
    )
    ev.add_argument(
        "--siblings",
        action="store_true",
        help="copies may also come from the files beside each case's file, as in an editor (never the file itself)",
    )
    ev.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    ev.add_argument("--no-healing", action="store_true", help="keep the prompt's partial last token (no healing)")
    ev.add_argument("--dump", default="", help="write one JSON line per case (truth, answer, source, scores) here")
    ev.set_defaults(func=_eval)

    bench = sub.add_parser("bench", help="benchmarks that print numbers").add_subparsers(dest="what", required=True)
    bm = bench.add_parser("model", help="ours vs transformers: one denoise step, prefill, one full canvas")
    bm.add_argument("--preset", default="moe16", choices=MODEL_SIZES, help="model shape (moe16: the shipped one)")
    bm.add_argument("--prompt", type=int, default=512, help="prompt tokens (cached)")
    bm.add_argument("--canvas", type=int, default=32, help="canvas length")
    bm.add_argument("--steps", type=int, default=8, help="denoising steps for the full-canvas timing")
    bm.add_argument("--reps", type=int, default=10)
    bm.add_argument("--threads", type=int, default=None)
    bm.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    bm.set_defaults(func=_bench_model)
    bg = bench.add_parser("gpu", help="int4 26B-A4B on one GPU (random weights): step, canvas, roofline, AR, ref")
    bg.add_argument("--out", default="bench/results/gpu.json", help="results file (JSON)")
    bg.add_argument("--dry-run", action="store_true", help="tiny config on the CPU: checks the script, no GPU")
    bg.add_argument("--ref-layers", type=int, default=30, help="layers of transformers' bf16 reference step")
    bg.add_argument("--reps", type=int, default=10)
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
    bl.add_argument("--typing", action="store_true", help="type lines char by char: first vs follow-up latency")
    bl.set_defaults(func=_bench_lsp)
    be = bench.add_parser("edits", help="inline-edit acceptance on rename pairs drawn from real code")
    be.add_argument("--root", required=True)
    be.add_argument("--n", type=int, default=50)
    be.add_argument("--seed", type=int, default=0)
    be.add_argument("--steps", type=int, default=8)
    be.add_argument("--model", default="")
    be.set_defaults(func=_bench_edits)
    bc = bench.add_parser("context", help="workspace probe: cross-file completions with and without context")
    bc.add_argument("--root", required=True, help="a project folder (not in the training data)")
    bc.add_argument("--n", type=int, default=40)
    bc.add_argument("--seed", type=int, default=0)
    bc.add_argument("--steps", type=int, default=8)
    bc.add_argument("--model", default="")
    bc.set_defaults(func=_bench_context)
    bs = bench.add_parser("soak", help="many requests with random edits and cancels: RSS, threads, fds, latency drift")
    bs.add_argument("--requests", type=int, default=10_000)
    bs.add_argument("--seed", type=int, default=0)
    bs.add_argument("--steps", type=int, default=4, help="denoising steps per completion")
    bs.add_argument("--cancel-rate", type=float, default=0.1, help="share of requests cancelled at once")
    bs.set_defaults(func=_bench_soak)

    train = sub.add_parser("train", help="build the corpus, train and export the embedded model")
    tsub = train.add_subparsers(dest="what", required=True)
    tc = tsub.add_parser("corpus", help="rebuild the code corpus from scratch (offline)")
    tc.add_argument("--out", default="data/corpus")
    tc.add_argument("--languages", action="store_true", help="also fetch Go, Rust, Lua, TS, JS (apt, npm)")
    tc.set_defaults(func=_train_corpus)
    tk = tsub.add_parser("pack", help="a compressed sample of the corpus that fits a size (for a GPU machine)")
    tk.add_argument("--corpus", default="data/corpus-lang")
    tk.add_argument("--out", default="data/gpu")
    tk.add_argument("--megabytes", type=float, default=13.0, help="size of the compressed training split")
    tk.set_defaults(func=_train_pack)
    tm = tsub.add_parser("memory", help="write a model folder's corpus memory (token n-grams of its training code)")
    tm.add_argument("--corpus", default="data/corpus")
    tm.add_argument("--model", default="model/weights", help="the model folder (its tokenizer.json)")
    tm.add_argument("--chars", type=float, default=40e6, help="characters of Python to keep")
    tm.add_argument(
        "--other-chars",
        type=float,
        default=13e6,
        help="characters of other languages (a corpus built with --languages)",
    )
    tm.set_defaults(func=_train_memory)
    tr = tsub.add_parser("run", help="train (resumes from <out>/checkpoint when present)")
    tr.add_argument("--corpus", default="data/corpus")
    tr.add_argument("--out", default="runs/embedded")
    tr.add_argument("--batch", type=int, default=8)
    tr.add_argument("--steps", type=int, default=20_000, help="total steps of the schedule")
    tr.add_argument("--minutes", type=float, default=0.0, help="stop (and save) after this long; 0 = no limit")
    tr.add_argument(
        "--anneal-by-time",
        action="store_true",
        help="decay the learning rate to its floor by the end of --minutes (a run that time cuts short ends annealed)",
    )
    tr.add_argument("--threads", type=int, default=0)
    tr.add_argument("--device", default="cpu")
    tr.add_argument("--lr", type=float, default=2e-3)
    tr.add_argument("--prompt-len", type=int, default=384)
    tr.add_argument(
        "--objective",
        default="fim",
        choices=["fim", "ar"],
        help="fim: AR + canvas diffusion on FIM examples; ar: next-token only on plain windows (pre-training)",
    )
    tr.add_argument("--vocab", type=int, default=4096, help="vocabulary of a tokenizer this run trains")
    tr.add_argument("--diffusion-weight", type=float, default=1.0, help="weight of the canvas loss beside the AR loss")
    tr.add_argument("--save-every", type=float, default=600.0, help="seconds between checkpoints")
    tr.add_argument("--init", default="", help="start from a model folder (e.g. model/weights) if no checkpoint")
    tr.add_argument(
        "--size",
        default="embedded",
        choices=MODEL_SIZES,
        help="shape of a fresh model (moe16: twice the experts, same compute per token; for a GPU run)",
    )
    tr.add_argument("--workers", type=int, default=0, help="processes building batches (a GPU run wants 8 or so)")
    tr.set_defaults(func=_train_run)
    te = tsub.add_parser("export", help="copy a run into a model folder (bf16 weights, tokenizer, configs)")
    te.add_argument("--run", default="runs/embedded")
    te.add_argument("--dest", default="model/weights")
    te.add_argument("--steps", type=int, default=8, help="default denoising steps written to generation_config")
    te.add_argument("--draft", default="", choices=["", "ar"], help="ask the daemon to seed canvases with AR drafts")
    te.add_argument(
        "--min-confidence", type=float, default=0.0, help="cut answers at the first token under this probability"
    )
    te.add_argument(
        "--span-min-confidence", type=float, default=None, help="the same for denoised (multi-line) answers, if other"
    )
    te.add_argument(
        "--draft-margin",
        type=float,
        default=None,
        help="keep AR drafts and let the decoder change a token only when it beats the draft by this probability",
    )
    te.add_argument(
        "--draft-candidates",
        type=int,
        default=1,
        help="beam width of rest-of-line drafts (the line the model believes most is kept; 1 = greedy)",
    )
    te.add_argument("--entropy-bound", type=float, default=None, help="the sampler's entropy bound (default 0.1)")
    te.set_defaults(func=_train_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
