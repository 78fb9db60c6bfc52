#!/usr/bin/env bash
# Every GPU check of the project in one call of the lent machine (15 minutes of device time per session, a machine
# start included, so one call of about 9 minutes), in the order their timings need a quiet GPU:
#   1. `diffill bench gpu` (#6) alone on the GPU; if the Triton kernels fail there, once more on the torch paths
#      (DIFFILL_NO_TRITON=1) so that the run still measures something;
#   2. bench/train_gpu.sh (#3) with the time left, while the kernel tests run on CUDA beside it (correctness only).
# STAGES picks among bench, kernels (`bench gpu --kernels`: the int4 kernels alone, each tile-read variant), profile
# (`bench gpu --profile`: where a step's time goes) and train; default "kernels bench profile train". Everything
# lands in $OUT (at most 8 files come back): device.log, gpu.json [gpu-torch.json], kernels.txt, profile.txt,
# train-ar.log, train.log, weights.tar.part-*.
#
# here:   bash bench/device_prep.sh                              # .whl and data/gpu
#         mv model/weights/memory.safetensors /tmp/               # 36 MB the machine does not need (64 MiB travel)
# call:   carry [".whl", "data/gpu"], command `bash bench/device_run.sh`, timeout_s 590
# after:  mv /tmp/memory.safetensors model/weights/; then unpack the weights as bench/train_gpu.sh says.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT}
BUDGET=${BUDGET:-540} # seconds for the whole script
BENCH_S=${BENCH_S:-240}
STAGES=${STAGES:-kernels bench profile train}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec > >(tee -a "$OUT/device.log") 2>&1
. bench/device_env.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
"$PY" -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__)"

if [[ " $STAGES " == *" kernels "* ]]; then
    echo "== bench gpu --kernels ($(date +%T))"
    timeout 240 "$PY" -m diffill.bench.cli bench gpu --kernels "$OUT/kernels.txt"
fi
if [[ " $STAGES " == *" bench "* ]]; then
    echo "== bench gpu ($(date +%T))"
    timeout "$BENCH_S" "$PY" -m diffill.bench.cli bench gpu --out "$OUT/gpu.json"
    if ! grep -q '"step_ms"' "$OUT/gpu.json" 2>/dev/null && [ "$SECONDS" -lt $((BUDGET / 3)) ]; then
        echo "== bench gpu on the torch paths ($(date +%T))"
        DIFFILL_NO_TRITON=1 timeout $((BUDGET / 3)) "$PY" -m diffill.bench.cli bench gpu --out "$OUT/gpu-torch.json" \
            --ref-layers 4
    fi
fi
if [[ " $STAGES " == *" profile "* ]]; then
    echo "== bench gpu --profile ($(date +%T))"
    timeout 120 "$PY" -m diffill.bench.cli bench gpu --profile "$OUT/profile.txt" >/dev/null
    grep -E "^== |Self CUDA time total|Self CPU time total" "$OUT/profile.txt"
fi
[[ " $STAGES " == *" train "* ]] || exit 0

left=$((BUDGET - SECONDS))
minutes=$("$PY" -c "print(max(1.5, round(($left - 80) / 60, 2)))")
echo "== train_gpu.sh $minutes minutes, kernel tests beside it ($(date +%T))"
CORPUS=data/gpu SPLIT_MB=15 bash bench/train_gpu.sh "$minutes" >/tmp/train-all.log 2>&1 &
trainer=$!
timeout 150 "$PY" -m pytest -q -p no:cacheprovider tests/kernels
wait "$trainer"
echo "train_gpu.sh exit $? ($(date +%T)); its last lines:"
tail -25 /tmp/train-all.log
ls -la "$OUT"
