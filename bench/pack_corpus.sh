#!/usr/bin/env bash
# Compress the corpus so that it can travel to a machine without network (the trainer reads .jsonl.gz).
set -euo pipefail
cd "$(dirname "$0")/.."
for split in train heldout; do gzip -9 -c "data/corpus/$split.jsonl" > "data/corpus/$split.jsonl.gz"; done
ls -la data/corpus/*.gz
