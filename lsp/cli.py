"""The `diffill` command line."""

from __future__ import annotations

import argparse
import os
import sys

# A daemon beside an editor and a compiler must not spin-wait on shared cores (10-20x slowdowns otherwise).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _bench_model(args: argparse.Namespace) -> int:
    from diffill.model import bench

    bench.run(
        preset=args.preset,
        prompt_len=args.prompt,
        canvas=args.canvas,
        steps=args.steps,
        reps=args.reps,
        threads=args.threads,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="diffill", description="Local code completion with a diffusion model")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="benchmarks that print numbers").add_subparsers(dest="what", required=True)
    bm = bench.add_parser("model", help="ours vs transformers: one denoise step, prefill, one full canvas")
    bm.add_argument("--preset", default="embedded", choices=["embedded", "tiny"])
    bm.add_argument("--prompt", type=int, default=512, help="prompt tokens (cached)")
    bm.add_argument("--canvas", type=int, default=32, help="canvas length")
    bm.add_argument("--steps", type=int, default=8, help="denoising steps for the full-canvas timing")
    bm.add_argument("--reps", type=int, default=10)
    bm.add_argument("--threads", type=int, default=None)
    bm.set_defaults(func=_bench_model)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
