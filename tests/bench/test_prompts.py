"""`diffill bench prompts`: prompt lengths in a model's own format and what a keystroke encodes again."""

from pathlib import Path

from diffill.bench.prompts import run_prompts

ROOT = str(Path(__file__).resolve().parents[2] / "infill")  # the project's own code: files to draw cases from


def test_prompt_lengths_in_both_formats(gemma_checkpoint):
    lines: list[str] = []
    fim = run_prompts(ROOT, n=20, out=lines.append)
    chat = run_prompts(ROOT, model=str(gemma_checkpoint), n=20, out=lines.append)
    assert fim["format"] == "diffill FIM" and chat["format"].startswith("DiffusionGemma chat")
    assert fim["cases"] == chat["cases"] == 20
    assert 0 < fim["prompt_p50"] <= fim["prompt_p95"] <= fim["budget"]  # the FIM prompt is the budget at most
    assert chat["prompt_p50"] > chat["budget"] // 2  # the code, then the instruction and the template on top
    assert fim["follow_up_p50"] <= chat["follow_up_p50"] < chat["prompt_p50"] // 5  # a keystroke re-encodes little
    assert any(line.startswith("prompt format: DiffusionGemma chat") for line in lines)
