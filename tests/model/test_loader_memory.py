"""Loading never needs much more memory than the model itself (measured in a fresh process)."""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, sys
    from diffill.model import DiffusionGemma, DiffusionGemmaConfig, DiffusionModel, save_model

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1]) / 1024

    folder = sys.argv[1]
    if sys.argv[2] == "make":
        cfg = DiffusionGemmaConfig(vocab_size=16000, hidden_size=384, intermediate_size=768, num_hidden_layers=4,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=96, global_head_dim=96,
                                   num_global_key_value_heads=1, num_experts=16, top_k_experts=2,
                                   moe_intermediate_size=384, sliding_window=64)
        save_model(DiffusionGemma(cfg), folder)
    else:
        size = os.path.getsize(os.path.join(folder, "model.safetensors")) / 2**20
        small = folder + "-small"
        save_model(DiffusionGemma(DiffusionGemmaConfig(vocab_size=64, hidden_size=16, intermediate_size=16,
                   num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1, head_dim=16,
                   global_head_dim=16, num_global_key_value_heads=1, num_experts=2, top_k_experts=1,
                   moe_intermediate_size=8)), small)
        DiffusionModel.from_pretrained(small)  # libraries and allocator warmed up: measure the scaling only
        before = status("VmRSS")
        model = DiffusionModel.from_pretrained(folder)
        largest = max(p.numel() * p.element_size() for p in model.net.parameters()) / 2**20
        print(size, status("VmHWM") - before, largest)
""")


def test_peak_memory_is_model_plus_one_tensor(tmp_path):
    folder = str(tmp_path / "ckpt")
    subprocess.run([sys.executable, "-c", SCRIPT, folder, "make"], check=True)
    out = subprocess.run([sys.executable, "-c", SCRIPT, folder, "load"], check=True, capture_output=True, text=True)
    size, peak, largest = map(float, out.stdout.split())
    assert size > 100
    assert peak <= 1.2 * size + largest, (size, peak, largest)
