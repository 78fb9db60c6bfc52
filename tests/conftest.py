import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def hf_checkpoints(tmp_path_factory):
    """{name: (folder, transformers model)} for every tiny oracle config."""
    pytest.importorskip("transformers")
    from hf_oracle import CONFIGS, build_hf_checkpoint

    out = {}
    for i, name in enumerate(CONFIGS):
        folder = tmp_path_factory.mktemp(f"hf_{name}")
        out[name] = (folder, build_hf_checkpoint(name, folder, seed=i))
    return out


@pytest.fixture(scope="session")
def gemma_checkpoint(tmp_path_factory):
    """A tiny checkpoint folder laid out like google/diffusiongemma-26B-A4B-it (tests/gemma_style.py)."""
    pytest.importorskip("transformers")
    from gemma_style import build_gemma_style_checkpoint

    return build_gemma_style_checkpoint(tmp_path_factory.mktemp("gemma_style"))
