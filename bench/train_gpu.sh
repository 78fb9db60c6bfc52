#!/usr/bin/env bash
# Train the embedded model on one GPU, unattended, in under 8 minutes, and leave the result under $OUT.
# Two phases, as on CPU (../shared/reference/embedded_training.md): next-token pre-training on plain code windows,
# then FIM examples with the canvas diffusion loss. The model is a fresh `moe16` (model/presets.py): the shipped
# shape with 16 experts instead of 8, the same two per token, so it costs the daemon what the shipped model does
# while holding more than CPU training could fill. The exported card is the shipped one's; the corpus memory
# (model/weights/memory.safetensors, same tokenizer) goes beside the weights when they ship.
#
# On a GPU machine with its own python3 and torch, no network (64 MiB copied there in all, files back <= 16 MiB):
#   here:   bash bench/device_prep.sh         # wheels the machine lacks -> .whl, a 13 MB corpus sample -> data/gpu
#   there:  CORPUS=data/gpu SPLIT_MB=15 bash bench/train_gpu.sh   (the checkout with .whl and data/gpu)
#   back:   mkdir -p runs/gpu-out; cat weights.tar.part-* | tar x -C runs/gpu-out
#           cp model/weights/memory.safetensors runs/gpu-out/weights/   # same tokenizer: the shipped corpus memory
#           diffill eval --model runs/gpu-out/weights ...   # against the shipped model, before shipping it
# Anywhere else:  OUT=/some/dir [CORPUS=data/corpus] [SIZE=moe16] bash bench/train_gpu.sh [minutes]
# (DEVICE, BATCH, WORKERS and RUN default to cuda, 256, 12 and runs/gpu: tests/training runs the script on CPU at a
# tiny scale.)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-6.5}
OUT=${OUT:-runs/gpu-out}
CORPUS=${CORPUS:-data/corpus}
RUN=${RUN:-runs/gpu}
DEVICE=${DEVICE:-cuda}
BATCH=${BATCH:-256} # a step of this small model is launch-bound on a GPU: 64 and 256 cost about the same
SIZE=${SIZE:-moe16}
WORKERS=${WORKERS:-12} # batch-building processes: one core builds ~97k FIM tokens/s, too few to feed a GPU
SPLIT_MB=${SPLIT_MB:-} # set: the weights come back as a tar in parts of this many MB (no folder)
. bench/device_env.sh
mkdir -p "$RUN" "$OUT"
cp -n model/weights/tokenizer.json "$RUN/tokenizer.json" 2>/dev/null || true
AR_MINUTES=$("$PY" -c "print(round($MINUTES * 0.4, 2))")
FIM_MINUTES=$("$PY" -c "print(round($MINUTES * 0.6, 2))")
train=("$PY" -m diffill.training.cli train run --device "$DEVICE" --corpus "$CORPUS" --out "$RUN" --batch "$BATCH"
    --workers "$WORKERS" --steps 6000 --save-every 120 --lr 2e-3 --anneal-by-time)
"${train[@]}" --objective ar --size "$SIZE" --minutes "$AR_MINUTES" 2>&1 | tee "$OUT/train-ar.log"
"${train[@]}" --objective fim --minutes "$FIM_MINUTES" --diffusion-weight 2 2>&1 | tee "$OUT/train.log"
"$PY" -m diffill.training.cli train export --run "$RUN" --dest "$OUT/weights" --steps 4 --draft ar --entropy-bound 0.1 \
    --draft-margin 0.6 --draft-candidates 6 --min-confidence 0.5 --span-min-confidence 0.37
if [ -n "$SPLIT_MB" ]; then
    tar -C "$OUT" -c weights | split -b "${SPLIT_MB}m" - "$OUT/weights.tar.part-"
    rm -r "$OUT/weights"
    echo "weights in $OUT/weights.tar.part-* (cat them | tar x)"
else
    echo "weights in $OUT/weights"
fi
