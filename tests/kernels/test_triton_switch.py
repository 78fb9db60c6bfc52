"""DIFFILL_NO_TRITON=1 turns the Triton kernels off (a broken Triton on a user's GPU must not stop the daemon)."""

import os
import subprocess
import sys

import pytest

CHECK = "from diffill.kernels._triton import triton_available; print(triton_available())"


def _available(**env: str) -> str:
    full = {k: v for k, v in os.environ.items() if k != "DIFFILL_NO_TRITON"} | env
    return subprocess.run([sys.executable, "-c", CHECK], env=full, capture_output=True, text=True, check=True).stdout


def test_no_triton_switch_turns_the_kernels_off():
    pytest.importorskip("triton")
    assert _available().strip() == "True"
    assert _available(DIFFILL_NO_TRITON="1").strip() == "False"
    assert _available(DIFFILL_NO_TRITON="0").strip() == "True"
