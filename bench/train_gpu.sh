#!/usr/bin/env bash
# Train the embedded model on one GPU, unattended, in under 8 minutes, and leave the result under $OUT.
# Two phases, as on CPU (../shared/reference/embedded_training.md): next-token pre-training on plain code windows,
# then FIM examples with the canvas diffusion loss. The GPU machine reaches no network: carry the compressed
# corpus (data/corpus/{train,heldout}.jsonl.gz and sources.json, made with `bash bench/pack_corpus.sh`; CORPUS=
# data/corpus-lang for the corpus with other languages, packed with `bash bench/pack_corpus.sh data/corpus-lang`);
# the shipped tokenizer (model/weights/tokenizer.json) is in the checkout. The exported card is the shipped one's;
# the corpus memory (model/weights/memory.safetensors, same tokenizer) goes beside the weights when they ship.
# The model is a fresh `moe16` (model/presets.py): the shipped shape with 16 experts instead of 8, the same two per
# token, so it costs the daemon what the shipped model does while holding more than CPU training could fill.
#   usage: OUT=/some/dir [CORPUS=data/corpus] [SIZE=moe16] bash bench/train_gpu.sh [minutes]
# (DEVICE, BATCH and RUN default to cuda, 64 and runs/gpu: tests/training runs the script on CPU at a tiny scale.)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-6.5}
OUT=${OUT:-runs/gpu-out}
CORPUS=${CORPUS:-data/corpus}
RUN=${RUN:-runs/gpu}
DEVICE=${DEVICE:-cuda}
BATCH=${BATCH:-64}
SIZE=${SIZE:-moe16}
mkdir -p "$RUN" "$OUT"
cp -n model/weights/tokenizer.json "$RUN/tokenizer.json" 2>/dev/null || true
AR_MINUTES=$(python -c "print(round($MINUTES * 0.4, 2))")
FIM_MINUTES=$(python -c "print(round($MINUTES * 0.6, 2))")
python -m diffill.lsp.cli train run --device "$DEVICE" --corpus "$CORPUS" --out "$RUN" --objective ar --batch "$BATCH" \
    --size "$SIZE" \
    --steps 6000 --minutes "$AR_MINUTES" --save-every 120 --lr 2e-3 2>&1 | tee "$OUT/train-ar.log"
python -m diffill.lsp.cli train run --device "$DEVICE" --corpus "$CORPUS" --out "$RUN" --objective fim --batch "$BATCH" \
    --steps 6000 --minutes "$FIM_MINUTES" --save-every 120 --lr 2e-3 --diffusion-weight 2 2>&1 | tee "$OUT/train.log"
python -m diffill.lsp.cli train export --run "$RUN" --dest "$OUT/weights" --steps 4 --draft ar --entropy-bound 0.1 \
    --draft-margin 0.6 --draft-candidates 6 --min-confidence 0.6 --span-min-confidence 0.37
echo "weights in $OUT/weights"
