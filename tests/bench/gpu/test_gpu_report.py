"""The report's lines from a results dict built here by hand: the roofline share is the bytes at the copy
bandwidth over the measured step, one line per canvas, and the graphed and transformers lines say why a part was
not measured."""

from diffill.bench.gpu.report import summary

STEP_BYTES = 2e9  # 2 GB a step
BANDWIDTH_GBPS = 4000.0  # 4 TB/s: the roofline is 0.5 ms
STEP_MS = 2.0  # measured: the step runs at 25 % of the roofline
AR_MS = 10.0  # 100 tokens/s


def results(**extra):
    roofline_ms = STEP_BYTES / (BANDWIDTH_GBPS * 1e9) * 1e3
    res = {
        "device": "H200", "scheme": "int4", "weight_GB": 12.345, "canvas": 256, "prompt": 512,
        "copy_bandwidth_GBps": BANDWIDTH_GBPS, "step_ms": STEP_MS, "decoder_pass_ms": 1.5,
        "roofline_step_ms": roofline_ms, "step_fraction_of_roofline": roofline_ms / STEP_MS,
        "ar_ms_per_token": AR_MS, "ar_tokens_per_s": 1e3 / AR_MS,
        "transformers": {"layers": 30, "step_ms": 8.0, "step_ms_scaled_to_all_layers": 8.0},
        "step_speedup_vs_transformers": 8.0 / STEP_MS,
    }  # fmt: skip
    for n, ms in ((16, 40.0), (32, 80.0)):
        res[f"canvas_ms_{n}_steps"] = ms
        res[f"tokens_per_s_{n}_steps"] = 256 / (ms / 1e3)  # 6400, 3200
        res[f"speedup_vs_ar_{n}_steps"] = res[f"tokens_per_s_{n}_steps"] / (1e3 / AR_MS)  # 64x, 32x
    res.update(extra)
    return res


def test_header_and_roofline_share():
    lines = summary(results())
    assert lines[0] == "device H200, int4 weights 12.35 GB, canvas 256, prompt 512"
    assert lines[1] == "denoise step: 2.00 ms (roofline 0.50 ms at 4000 GB/s: 25 %)"


def test_one_line_per_canvas_then_ar():
    lines = summary(results())
    assert lines[2:5] == [
        "canvas at 16 steps: 40.0 ms, 6400 tok/s (64.0x AR)",
        "canvas at 32 steps: 80.0 ms, 3200 tok/s (32.0x AR)",
        "AR batch 1: 10.00 ms/token, 100 tok/s",
    ]


def test_graphed_line_with_and_without_the_whole_step():
    graphed = {"graphed_decoder_pass_ms": 1.0, "graphed_self_conditioned_pass_ms": 1.25, "graphed_ar_ms_per_token": 5.0}
    part = "as CUDA graphs: decoder pass 1.00 ms (eager 1.50), self-conditioned 1.25 ms, AR 5.00 ms/token"
    assert part in summary(results(**graphed))
    whole = results(**graphed, graphed_step_ms=1.75, graphed_canvas_ms_16_steps=28.0)
    assert part + "; whole denoise step 1.75 ms (eager 2.00), 16 steps 28.0 ms" in summary(whole)


def test_graphed_error_only_without_graphed_figures():
    assert "CUDA graphs: not measured (RuntimeError: no)" in summary(results(graphed_error="RuntimeError: no"))
    assert not any(line.startswith("CUDA graphs") or line.startswith("as CUDA") for line in summary(results()))


def test_transformers_line():
    assert summary(results())[-1] == "transformers bf16 step: 8.00 ms; ours 4.00x faster"  # all 30 layers run
    scaled = results(transformers={"layers": 6, "step_ms": 1.6, "step_ms_scaled_to_all_layers": 8.0})
    assert summary(scaled)[-1] == "transformers bf16 step: 8.00 ms (6 layers, scaled to all); ours 4.00x faster"
    missing = results(transformers={"error": "ImportError: no transformers"})
    del missing["step_speedup_vs_transformers"]
    assert summary(missing)[-1] == "transformers: not measured (ImportError: no transformers)"
