#!/usr/bin/env bash
# Train the embedded model on one GPU, unattended, in under 8 minutes, and leave the result under $OUT.
# The GPU machine reaches no network: carry the compressed corpus (data/corpus/{train,heldout}.jsonl.gz and
# sources.json, made with `bash bench/pack_corpus.sh`) and the tokenizer (runs/embedded/tokenizer.json).
#   usage: OUT=/some/dir bash bench/train_gpu.sh [minutes]
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-6.5}
OUT=${OUT:-runs/gpu-out}
RUN=runs/gpu
mkdir -p "$RUN" "$OUT"
cp -n runs/embedded/tokenizer.json "$RUN/tokenizer.json" 2>/dev/null || true
python -m diffill.lsp.cli train run --device cuda --corpus data/corpus --out "$RUN" --batch 64 \
    --steps 6000 --minutes "$MINUTES" --save-every 120 --lr 2e-3 2>&1 | tee "$OUT/train.log"
python -m diffill.lsp.cli train export --run "$RUN" --dest "$OUT/weights"
echo "weights in $OUT/weights"
