#!/usr/bin/env bash
# GPU benchmark: the int4 26B-A4B text stack with random weights built on the GPU (nothing downloaded or
# installed). Reports step/canvas times against the copy-bandwidth roofline, AR decoding and transformers' bf16
# step, and writes them to a JSON file. Needs torch (CUDA) and triton; transformers for the reference step. On a GPU
# machine where diffill is not installed, bench/device_env.sh runs it from the checkout.
# Usage: bench/gpu.sh [OUT.json] [extra `diffill bench gpu` options, e.g. --ref-layers 6]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .venv/bin/activate ]; then . .venv/bin/activate; fi
. bench/device_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
out="${1:-bench/results/gpu-$(date +%Y%m%d-%H%M%S).json}"
shift || true
# A run gets 8 minutes on one GPU; stop at 7.5 so that a hang cannot eat the whole run.
exec timeout 450 "$PY" -m diffill.bench.cli bench gpu --out "$out" "$@"
