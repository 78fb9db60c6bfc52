"""`diffill train ...`: build the corpus, pack a sample for a GPU machine, write the corpus memory, train, export.

Registered into the `diffill` command through the `diffill.commands` entry point (pyproject.toml); also runs
alone (`python -m diffill.training.cli train run ...`) from a checkout where diffill is not installed. The
handlers import their modules when they run, so that `diffill serve` (which loads every command's parser)
starts without torch.
"""

from __future__ import annotations

import argparse
import sys

from diffill.lsp.cli import standalone

from .config import DecoderTrainConfig

# The names in diffill.model.presets, spelt out here so that parsing a command line does not import torch.
MODEL_SIZES = ("embedded", "moe16", "tiny")
DECODER = DecoderTrainConfig()  # `train decoder`'s defaults


def _train_corpus(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.training.corpus import build

    print(build(Path(args.out), languages=args.languages))
    return 0


def _train_pack(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.training.corpus import pack

    print(pack(Path(args.corpus), Path(args.out), args.megabytes))
    return 0


def _train_memory(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.model.corpus_memory import FILE_NAME
    from diffill.model.tokenizer import CodeTokenizer
    from diffill.training.memory import build_memory

    model = Path(args.model)
    tokenizer = CodeTokenizer.from_file(model / "tokenizer.json")
    corpus = Path(args.corpus) / "train.jsonl"
    tokens = build_memory(corpus, model / FILE_NAME, tokenizer.encode_batch, args.chars, args.other_chars)
    print(f"{model / FILE_NAME}: {tokens:,} tokens from {args.chars + args.other_chars:,.0f} characters of {corpus}")
    return 0


def _train_fingerprints(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.training.fingerprints import FILE_NAME, build_fingerprints

    out = Path(args.model) / FILE_NAME
    files, prints = build_fingerprints(Path(args.corpus) / "train.jsonl", out)
    print(f"{out}: {prints:,} fingerprints of {files:,} training files")
    return 0


def _train_run(args: argparse.Namespace) -> int:
    from diffill.training.train import TrainConfig, train

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
        split_prob=args.split_prob,
        full_noise_prob=args.full_noise_prob,
        distill_prob=args.distill_prob,
    )
    train(cfg, log=lambda line: print(line, flush=True))
    return 0


def _train_decoder(args: argparse.Namespace) -> int:
    from dataclasses import fields

    from diffill.training.decoder import DecoderTrainConfig, train

    # each flag is named after the config field it sets (--heldout-anchors: heldout_anchors)
    cfg = DecoderTrainConfig(
        **{f.name: getattr(args, f.name) for f in fields(DecoderTrainConfig) if hasattr(args, f.name)}
    )
    train(cfg, log=lambda line: print(line, flush=True))
    return 0


def _train_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.training.export import export

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
    if args.speculative:
        sampler["diffill_speculative"] = True
    export(Path(args.run), Path(args.dest), sampler=sampler)
    print(f"exported {args.run} -> {args.dest}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Adds `train` and its subcommands to the `diffill` parser."""
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
    tf = tsub.add_parser("fingerprints", help="write a model folder's training fingerprints (the contamination check)")
    tf.add_argument("--corpus", default="data/corpus-lang", help="the corpus the model and its memory came from")
    tf.add_argument("--model", default="model/weights", help="the model folder")
    tf.set_defaults(func=_train_fingerprints)
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
    tr.add_argument(
        "--split-prob",
        type=float,
        default=0.0,
        help="share of FIM examples whose canvas starts after committed tokens (speculative drafts)",
    )
    tr.add_argument("--full-noise-prob", type=float, default=0.0, help="share of canvases noised whole (t = 1)")
    tr.add_argument(
        "--distill-prob",
        type=float,
        default=0.0,
        help="share of canvases taught the encoder's own greedy answer instead of the data",
    )
    tr.set_defaults(func=_train_run)
    td = tsub.add_parser(
        "decoder",
        help="train the decoder's adapters to draft the encoder's own answers (shared weights frozen; resumes)",
    )
    td.add_argument("--corpus", default=DECODER.corpus, help="a corpus folder (train.jsonl, heldout.jsonl)")
    td.add_argument("--init", default=DECODER.init, help="the model folder whose decoder learns to draft")
    td.add_argument("--out", default=DECODER.out, help="labels, checkpoint, reports; the result in <out>/model")
    td.add_argument("--rank", type=int, default=DECODER.rank, help="the adapters' rank")
    td.add_argument("--anchors", type=int, default=DECODER.anchors, help="training cursors labelled by the encoder")
    td.add_argument(
        "--heldout-anchors", type=int, default=DECODER.heldout_anchors, help="held-out cursors the reports are on"
    )
    td.add_argument(
        "--label-minutes",
        type=float,
        default=DECODER.label_minutes,
        help="stop labelling training cursors after this long and train on those written (0: all --anchors)",
    )
    td.add_argument("--batch", type=int, default=DECODER.batch)
    td.add_argument("--lr", type=float, default=DECODER.lr)
    td.add_argument(
        "--minutes", type=float, default=DECODER.minutes, help="training time after labelling (all runs together)"
    )
    td.add_argument(
        "--alone-share",
        type=float,
        default=DECODER.alone_share,
        help="share of canvases after the whole prompt with no pin: the decoder alone (--draft none)",
    )
    td.add_argument(
        "--first-share", type=float, default=DECODER.first_share, help="share of a speculative answer's first drafts"
    )
    td.add_argument(
        "--kl-weight",
        type=float,
        default=DECODER.kl_weight,
        help="weight of the distillation term on the encoder's own beliefs beside the labels",
    )
    td.add_argument(
        "--partial-share",
        type=float,
        default=DECODER.partial_share,
        help="share of canvases partly noised (seeded canvases the decoder refines)",
    )
    td.add_argument("--threads", type=int, default=0)
    td.add_argument("--device", default=DECODER.device, help="where the caches are encoded and the adapters train")
    td.add_argument(
        "--workers", type=int, default=DECODER.workers, help="labelling processes, a CPU core each (0: this one)"
    )
    td.set_defaults(func=_train_decoder)
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
    te.add_argument(
        "--speculative",
        action="store_true",
        help="ask the daemon to write greedy drafts by self-speculative decoding (a decoder trained to draft)",
    )
    te.set_defaults(func=_train_export)


if __name__ == "__main__":
    sys.exit(standalone(register))
