"""A tiny random DiffusionGemma for the quantization tests (imported by name: tests/model is on sys.path)."""

import torch
from tiny import tiny_config as shared_tiny_config

from diffill.model import DiffusionGemma, DiffusionGemmaConfig

# The shared tiny shape (tests/tiny.py), wider: 96 inputs to the down projection give int4 groups of 32 (the
# largest power of two dividing it), and a 32-token canvas gives the error statistics enough positions.
QUANT_SHAPE = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_key_value_heads=2,
    global_head_dim=32,
    moe_intermediate_size=64,
    sliding_window=8,
    canvas_length=32,
)


def tiny_config(**kw) -> DiffusionGemmaConfig:
    return shared_tiny_config(**{**QUANT_SHAPE, **kw})


def tiny_model(seed: int = 0) -> DiffusionGemma:
    """Random weights (std 0.05); the router gets std 1 so that its top-k choices are not near-ties, as in a
    trained model (with near-uniform routing any perturbation flips experts and the comparison measures that)."""
    torch.manual_seed(seed)
    net = DiffusionGemma(tiny_config()).eval()
    for name, p in net.named_parameters():
        if p.dim() > 1:
            torch.nn.init.normal_(p, 0, 1.0 if "router" in name else 0.05)
    return net


def canvas_logits(net: DiffusionGemma, seed: int = 0, prompt_len: int = 24, canvas: int = 32) -> torch.Tensor:
    """fp32 logits [C, V] of one decoder step (then one self-conditioned step) over a random canvas."""
    g = torch.Generator().manual_seed(seed)
    vocab = net.config.vocab_size
    prompt = torch.randint(3, vocab, (1, prompt_len), generator=g)
    x = torch.randint(0, vocab, (1, canvas), generator=g)
    with torch.inference_mode():
        cache = net.new_cache()
        net.encode(prompt, cache)
        first = net.decode(x, cache)
        return net.decode(x, cache, first / 0.8)[0]


TIE = 0.05  # logits: a reference top-1 that leads its runner-up by less is a tie any rounding may flip


def errors(got: torch.Tensor, want: torch.Tensor) -> tuple[float, float, float]:
    """(max abs logit error, RMS error relative to the logits' spread, top-1 agreement over the canvas positions
    whose reference top-1 is no tie)."""
    diff = got - want
    rel = (diff.pow(2).mean().sqrt() / want.std()).item()
    top2 = want.topk(2, dim=-1).values
    clear = (top2[..., 0] - top2[..., 1]) > TIE
    agree = got.argmax(-1) == want.argmax(-1)
    top1 = agree[clear].float().mean().item() if clear.any() else 1.0
    return diff.abs().max().item(), rel, top1
