#!/usr/bin/env bash
# `diffill train decoder` on one GPU, unattended, in under 9 minutes, the result under $OUT: the CPU recipe
# (training/decoder/) at a larger scale. The labels (the encoder's greedy answers, one pass a token) are written
# by the machine's CPU cores, a labelling process each, for LABEL_MINUTES; the caches are encoded and the adapters
# train on the GPU, with a wider rank and a larger batch than two CPU cores afford.
#
# On a GPU machine with its own python3 and torch, no network (64 MiB copied there in all, files back <= 16 MiB):
#   here:   diffill train corpus --out data/corpus            # if data/corpus is absent (the training split)
#           bash bench/device_prep.sh data/corpus             # wheels the machine lacks -> .whl, a sample -> data/gpu
#           mv model/weights/memory.safetensors /tmp/         # 36 MB the run does not read
#   there:  the checkout with .whl and data/gpu: `OUT=out SPLIT_MB=15 bash bench/train_decoder_gpu.sh` (590 s at most)
#   back:   mv /tmp/memory.safetensors model/weights/
#           mkdir -p runs/dec-gpu; cat <files>/model.tar.part-* | tar x -C runs/dec-gpu
#           cp model/weights/memory.safetensors runs/dec-gpu/model/
#           diffill eval --model runs/dec-gpu/model --root R --n 200 [--draft none]   # against the shipped model
#   decoder.log has the held-out reports (tokens accepted per decoder draft, 1 and 2 passes) before and after.
# Anywhere else:  OUT=/some/dir DEVICE=cpu WORKERS=2 [CORPUS=data/corpus] bash bench/train_decoder_gpu.sh [minutes]
# (INIT, RUN, ANCHORS, HELD, LABEL_MINUTES, BATCH, RANK and LR have defaults below: tests/training runs the script
# on CPU at a tiny scale.)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-3.5} # training, after the labels and the caches
OUT=${OUT:-runs/decoder-gpu-out}
CORPUS=${CORPUS:-data/gpu}
INIT=${INIT:-model/weights}
RUN=${RUN:-runs/decoder-gpu}
DEVICE=${DEVICE:-cuda}
WORKERS=${WORKERS:-15}        # labelling processes, a CPU core each
LABEL_MINUTES=${LABEL_MINUTES:-2.5}
ANCHORS=${ANCHORS:-100000}    # at most; LABEL_MINUTES decides how many
HELD=${HELD:-600}
BATCH=${BATCH:-256}
RANK=${RANK:-128}
LR=${LR:-2e-3}
SPLIT_MB=${SPLIT_MB:-}        # set: the model folder comes back as a tar in parts of this many MB
. bench/device_env.sh
export PYTHONUNBUFFERED=1
mkdir -p "$RUN" "$OUT"
"$PY" -m diffill.training.cli train decoder --device "$DEVICE" --workers "$WORKERS" --corpus "$CORPUS" \
    --init "$INIT" --out "$RUN" --anchors "$ANCHORS" --label-minutes "$LABEL_MINUTES" --heldout-anchors "$HELD" \
    --batch "$BATCH" --rank "$RANK" --lr "$LR" --minutes "$MINUTES" --alone-share 0.5 --first-share 0.25 \
    2>&1 | tee "$OUT/decoder.log"
cp "$RUN/state.json" "$OUT/state.json"
if [ -n "$SPLIT_MB" ]; then
    tar -C "$RUN" -c model | split -b "${SPLIT_MB}m" - "$OUT/model.tar.part-"
    echo "the model folder in $OUT/model.tar.part-* (cat them | tar x)"
else
    cp -r "$RUN/model" "$OUT/model"
    echo "the model folder in $OUT/model"
fi
