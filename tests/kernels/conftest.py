"""Kernel tests run the Triton kernels on the CPU through Triton's interpreter (TRITON_INTERPRET=1)."""

import os
import sys
from pathlib import Path

import torch

# Must be set before triton is first imported; on a CUDA machine the kernels are compiled for real.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).parent))
