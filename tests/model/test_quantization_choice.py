"""`quantization: auto` (model.runtime.pick_quantization): the weight format a device gets by default."""

import pytest

from diffill.model import runtime
from diffill.model.config import DiffusionGemmaConfig
from diffill.model.footprint import weight_footprint
from diffill.model.runtime import pick_quantization

BIG = DiffusionGemmaConfig()  # the 26B-A4B's shape
GB = 10**9


@pytest.mark.parametrize(
    "free,hopper,want",
    [
        (141 * GB, True, "fp8"),  # an H200: fp8 through the grouped GEMM
        (40 * GB, True, "fp8"),
        (30 * GB, True, "int4"),  # fp8's 26 GB do not fit with room to work
        (80 * GB, False, None),  # an A100 80 GB: bf16 fits
        (24 * GB, False, "int4"),  # a 24 GB card
    ],
)
def test_auto_fits_the_format_to_the_gpu(free, hopper, want):
    assert pick_quantization("auto", "cuda", BIG, free, hopper) == want


def test_the_margin_is_the_weights_and_a_fifth():
    fp8 = weight_footprint(BIG, "fp8").total_bytes
    assert pick_quantization("auto", "cuda:1", BIG, int(fp8 * 1.21), True) == "fp8"
    assert pick_quantization("auto", "cuda:1", BIG, int(fp8 * 1.19), True) == "int4"


def test_cpus_small_models_and_explicit_choices_are_left_alone():
    assert pick_quantization("auto", "cpu", BIG) is None
    assert pick_quantization("auto", "mps", BIG) is None
    embedded = DiffusionGemmaConfig.from_file(runtime.EMBEDDED_DIR / "config.json")
    assert pick_quantization("auto", "cuda", embedded, 100 * GB, True) is None
    assert pick_quantization("auto", "cuda", None, 100 * GB, True) is None  # a quantized checkpoint: as stored
    assert pick_quantization("none", "cuda", BIG, GB, False) is None
    assert pick_quantization(None, "cuda", BIG, GB, False) is None
    assert pick_quantization("int8", "cpu", BIG) == "int8"
