#!/usr/bin/env bash
# Every GPU check of the project in one run of at most 9 minutes on a GPU machine (no network, the checkout and
# .whl copied there), stages in the order their timings need a quiet GPU:
#   checks   the kernel, static-cache and fp8 grouped-GEMM tests compiled for CUDA (correctness: pytest)
#   kernels  `bench gpu --kernels`: int4 tile reads, fp8 grouped MoE, the tile sweep -> kernels.txt, and the
#            fastest tiles per (kernel, tokens) -> kernels.json (ship it as kernels/tiles.json)
#   bench    `bench gpu` int4: step, canvas, roofline, AR, the CUDA-graph passes, transformers' bf16 step
#            (if the Triton kernels fail there, once more on the torch paths: DIFFILL_NO_TRITON=1)
#   lsp      `bench lsp` against `diffill serve` with the random-weight 26B (model "random:int4"): keystroke to answer
#   fp8      `bench gpu --scheme fp8 --ref-layers 0`: the same figures with fp8 experts through the grouped GEMM
#   profile  `bench gpu --profile`: where a step's time goes (off by default)
#   train    bench/train_gpu.sh with the time left (off by default)
#   decoder  bench/train_decoder_gpu.sh with the time left (off by default: STAGES=decoder, data/gpu copied too)
# STAGES picks them (default "checks kernels bench lsp fp8"); a stage that would not end within BUDGET is skipped.
# Everything lands in $OUT (8 files at most): device.log, checks.log, kernels.txt, kernels.json, gpu.json
# [gpu-torch.json], lsp.txt, gpu-fp8.json, profile.txt.
#
# here:   bash bench/device_prep.sh                              # .whl (and data/gpu for the train stage)
#         mv model/weights/memory.safetensors /tmp/               # 36 MB the machine does not need
# there:  the checkout with .whl: `OUT=out bash bench/device_run.sh` (a limit of 590 s)
# after:  mv /tmp/memory.safetensors model/weights/; copy kernels.json to kernels/tiles.json; a second, short run
#         `STAGES=bench BENCH_S=200 bash bench/device_run.sh` measures the step with those tiles (with
#         DIFFILL_TILE_MAJOR=1 in front if kernels.txt shows the tile-major rows faster: then make it the default
#         in kernels/tiles.py).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
BUDGET=${BUDGET:-540} # seconds for the whole script
BENCH_S=${BENCH_S:-180}
STAGES=${STAGES:-checks kernels bench lsp fp8}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec > >(tee -a "$OUT/device.log") 2>&1
. bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
"$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
"$PY" -c "import transformers; print('transformers', transformers.__version__)" || true

# stage NAME SECONDS: whether NAME is asked for and fits in what is left of BUDGET
stage() {
    [[ " $STAGES " == *" $1 "* ]] || return 1
    if [ $((SECONDS + $2)) -gt "$BUDGET" ]; then
        echo "== $1 skipped: ${2} s would pass the budget (${SECONDS} of ${BUDGET} s used)"
        return 1
    fi
    echo "== $1 ($(date +%T), ${SECONDS} s in)"
}

if stage checks 80; then
    timeout 80 "$PY" -m pytest -q -p no:cacheprovider tests/kernels tests/model/test_static_cache.py \
        >"$OUT/checks.log" 2>&1
    tail -5 "$OUT/checks.log"
fi
if stage kernels 120; then
    timeout 120 "$PY" -m diffill.bench.cli bench gpu --kernels "$OUT/kernels.txt"
fi
if stage bench "$BENCH_S"; then
    timeout "$BENCH_S" "$PY" -m diffill.bench.cli bench gpu --out "$OUT/gpu.json"
    if ! grep -q '"step_ms"' "$OUT/gpu.json" 2>/dev/null && stage bench 120; then
        echo "== bench gpu on the torch paths"
        DIFFILL_NO_TRITON=1 timeout 120 "$PY" -m diffill.bench.cli bench gpu --out "$OUT/gpu-torch.json" \
            --ref-layers 0
    fi
fi
if stage lsp 120; then
    timeout 120 "$PY" -m diffill.bench.cli bench lsp --root infill --n 40 --settings '{"model": "random:int4"}' \
        | tee "$OUT/lsp.txt"
fi
if stage fp8 90; then
    timeout 90 "$PY" -m diffill.bench.cli bench gpu --scheme fp8 --ref-layers 0 --out "$OUT/gpu-fp8.json"
fi
if stage profile 100; then
    timeout 100 "$PY" -m diffill.bench.cli bench gpu --profile "$OUT/profile.txt" >/dev/null
    grep -E "^== |Self CUDA time total|Self CPU time total" "$OUT/profile.txt"
fi
if stage train 120; then
    left=$((BUDGET - SECONDS))
    minutes=$("$PY" -c "print(max(1.5, round(($left - 80) / 60, 2)))")
    echo "== train_gpu.sh $minutes minutes"
    CORPUS=data/gpu SPLIT_MB=15 bash bench/train_gpu.sh "$minutes" >/tmp/train-all.log 2>&1
    echo "train_gpu.sh exit $? ($(date +%T)); its last lines:"
    tail -25 /tmp/train-all.log
fi
if stage decoder 240; then
    left=$((BUDGET - SECONDS))
    # what is left after the labels (LABEL_MINUTES, 2.5 by default) and about a minute for the caches and export
    minutes=$("$PY" -c "print(max(1.0, round(($left - 150 - 70) / 60, 2)))")
    echo "== train_decoder_gpu.sh $minutes minutes"
    SPLIT_MB=15 bash bench/train_decoder_gpu.sh "$minutes" >/tmp/decoder-all.log 2>&1
    echo "train_decoder_gpu.sh exit $? ($(date +%T)); its last lines:"
    tail -8 /tmp/decoder-all.log
fi
ls -la "$OUT"
