#!/usr/bin/env bash
# Here, before a run on a GPU machine without network: what bench/train_gpu.sh needs there and cannot fetch (such
# a machine has python3 3.12 with torch, tokenizers, safetensors and numpy, no network, and takes 64 MiB with the checkout).
#   usage: bash bench/device_prep.sh [corpus folder, default data/corpus-lang]   (MB=30: the corpus sample's size)
# The run leaves model/weights/memory.safetensors (36 MB, the daemon's n-gram memory, unused there) behind:
# bench/device_run.sh says how.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
CORPUS=${1:-data/corpus-lang}
# The packages of ours the machine lacks (tree-sitter and its grammars for the context blocks of FIM examples,
# the workspace index's pathspec and watchdog), at the versions installed here, and transformers: the machine's
# (5.17) predates DiffusionGemma, which bench gpu's reference step needs.
wanted=$("$PY" - <<'PYEOF'
import importlib.metadata as md

names = sorted({d.metadata["Name"].lower() for d in md.distributions() if d.metadata["Name"].lower().startswith("tree-sitter")})
print(" ".join(f"{n}=={md.version(n)}" for n in [*names, "pathspec", "watchdog", "transformers"]))
PYEOF
)
rm -rf .whl
mkdir .whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "${PYVER:-3.12}" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 -d .whl $wanted
"$PY" -m diffill.training.cli train pack --corpus "$CORPUS" --out data/gpu --megabytes "${MB:-30}"
total=$(git ls-files -z | grep -zv '^model/weights/memory.safetensors$' | xargs -0 du -cb | tail -1 | cut -f1)
extra=$(du -cb .whl data/gpu | tail -1 | cut -f1)
echo "checkout without the corpus memory $((total / 1048576)) MiB + .whl and data/gpu $((extra / 1048576)) MiB (the device tool carries 64 MiB)"
[ $((total + extra)) -lt $((64 * 1048576)) ] || { echo "too big: lower MB" >&2; exit 1; }
