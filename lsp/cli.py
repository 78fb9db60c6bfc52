"""The `diffill` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

# A daemon beside an editor and a compiler must not spin-wait on shared cores (docs/benchmarks.md, "Tuned constants").
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _serve(args: argparse.Namespace) -> int:
    import logging

    from . import gc_pause, heap

    heap.tune_heap()  # before any thread of the daemon's allocates
    gc_pause.pause()  # until the model has loaded (ModelLoader.load)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    early = None
    if args.tcp is None:  # the editor waits on `initialize`: answered before the protocol's imports
        from .early import answer_initialize, prefetch

        early = answer_initialize(sys.stdin.buffer, sys.stdout.buffer)
        prefetch(early.options)  # what loading needs no torch for starts on the other core now
    from .server import run

    run(tcp_port=args.tcp, early=early)
    return 0


def _complete(args: argparse.Namespace) -> int:
    from pathlib import Path

    from diffill.infill.document import SyntaxDocument
    from diffill.infill.engine import CompletionEngine
    from diffill.infill.languages import language_for
    from diffill.model import runtime
    from diffill.model.config import CheckpointError

    from .settings import Settings, engine_options

    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"diffill complete: cannot read {path}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    doc = SyntaxDocument(text, language_for(None, args.file))
    try:
        loaded = runtime.load(args.model, args.device)
    except (CheckpointError, OSError, ValueError) as exc:
        print(f"diffill complete: cannot load model {args.model or 'embedded'!r}: {exc}", file=sys.stderr)
        return 2
    settings = Settings() if args.steps is None else Settings(steps=args.steps)
    engine = CompletionEngine(loaded.model, loaded.tokenizer, engine_options(settings, loaded), loaded.memory)
    engine.warm_up()  # the latency budget holds here as in the daemon
    if not 1 <= args.line <= text.count("\n") + 1:
        print(f"diffill complete: {path} has no line {args.line}", file=sys.stderr)
        return 2
    offset = doc.offset_at(args.line - 1, max(0, args.col - 1), "utf-32")
    doc.focus(offset)  # a large file's tree covers the place asked about
    result = engine.answer(doc, offset, path=args.file)  # copies may come from the files beside it
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

    for line in report(args.model, served_files=args.served_model_files):
        print(line)
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
    cp.add_argument("--model", default="", help="folder, hub id or server URL (default: the embedded model)")
    cp.add_argument("--device", default="auto")
    cp.add_argument("--steps", type=int, default=None, help="denoising steps (default: the server's setting)")
    cp.set_defaults(func=_complete)
    dr = sub.add_parser("doctor", help="versions, device, model, memory, grammars")
    dr.add_argument(
        "--model",
        default="",
        help="also describe this model (folder, hub id, or a server URL: checked with a test completion)",
    )
    dr.add_argument(
        "--served-model-files",
        default=None,
        help="a server model's tokenizer and card from this folder or hub id (the servedModelFiles setting)",
    )
    dr.set_defaults(func=_doctor)

    for command in entry_points(group="diffill.commands"):  # diffill.training and diffill.bench add theirs
        command.load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


def standalone(register: Callable[[argparse._SubParsersAction], None], argv: list[str] | None = None) -> int:
    """One package's commands alone (`python -m diffill.bench.cli bench gpu ...`): for a checkout where diffill is
    not installed, whose entry points `build_parser` cannot find."""
    parser = argparse.ArgumentParser(prog="diffill")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
