#!/usr/bin/env bash
# Compress the corpus so that it can travel to a machine without network (the trainer reads .jsonl.gz).
set -euo pipefail
#   usage: bash bench/pack_corpus.sh [corpus folder, default data/corpus]
cd "$(dirname "$0")/.."
CORPUS=${1:-data/corpus}
for split in train heldout; do gzip -9 -c "$CORPUS/$split.jsonl" > "$CORPUS/$split.jsonl.gz"; done
ls -la "$CORPUS"/*.gz
