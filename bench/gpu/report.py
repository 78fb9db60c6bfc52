"""The human-readable lines `diffill bench gpu` ends with, from its results dict alone.

Apart so that the wording of the report reads only the results (no model, no device) and can be checked on any
dict of figures.
"""

from __future__ import annotations

from typing import Any


def summary(res: dict[str, Any]) -> list[str]:
    """One line per part: the device and weights, the step against its roofline, each canvas, AR decoding, the
    CUDA-graph passes (or why not measured), transformers' step (or why not measured)."""
    lines = [
        f"device {res['device']}, {res['scheme']} weights {res['weight_GB']:.2f} GB, canvas {res['canvas']}, "
        f"prompt {res['prompt']}",
        f"denoise step: {res['step_ms']:.2f} ms (roofline {res['roofline_step_ms']:.2f} ms at "
        f"{res['copy_bandwidth_GBps']:.0f} GB/s: {100 * res['step_fraction_of_roofline']:.0f} %)",
    ]
    for key in sorted(k for k in res if k.startswith("canvas_ms_")):
        n = key.split("_")[2]
        lines.append(
            f"canvas at {n} steps: {res[key]:.1f} ms, {res[f'tokens_per_s_{n}_steps']:.0f} tok/s "
            f"({res[f'speedup_vs_ar_{n}_steps']:.1f}x AR)"
        )
    lines.append(f"AR batch 1: {res['ar_ms_per_token']:.2f} ms/token, {res['ar_tokens_per_s']:.0f} tok/s")
    if "graphed_decoder_pass_ms" in res:
        lines.append(
            f"as CUDA graphs: decoder pass {res['graphed_decoder_pass_ms']:.2f} ms (eager "
            f"{res['decoder_pass_ms']:.2f}), self-conditioned {res['graphed_self_conditioned_pass_ms']:.2f} ms, "
            f"AR {res['graphed_ar_ms_per_token']:.2f} ms/token"
            + (
                f"; whole denoise step {res['graphed_step_ms']:.2f} ms (eager {res['step_ms']:.2f}), 16 steps "
                f"{res['graphed_canvas_ms_16_steps']:.1f} ms"
                if "graphed_step_ms" in res
                else ""
            )
        )
    elif "graphed_error" in res:
        lines.append(f"CUDA graphs: not measured ({res['graphed_error']})")
    ref = res["transformers"]
    if "error" in ref:
        lines.append(f"transformers: not measured ({ref['error']})")
    else:
        scaled = "" if ref["layers"] == 30 else f" ({ref['layers']} layers, scaled to all)"
        lines.append(
            f"transformers bf16 step: {ref['step_ms_scaled_to_all_layers']:.2f} ms{scaled}; "
            f"ours {res['step_speedup_vs_transformers']:.2f}x faster"
        )
    return lines
