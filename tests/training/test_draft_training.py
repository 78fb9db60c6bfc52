"""Training the decoder to draft what the encoder will accept (model.speculative): split examples whose canvas
starts with the last committed token, canvases noised whole, and the encoder's own greedy answers as targets."""

from __future__ import annotations

import random

import torch
from tiny import random_model, tiny_config

from diffill.model.tokenizer import EOS, PAD, CodeTokenizer
from diffill.training.config import TrainConfig
from diffill.training.data import make_example
from diffill.training.train import distilled, losses

CODE = "def walk(root):\n    for name in sorted(os.listdir(root)):\n        yield os.path.join(root, name)\n" * 3


def _unpadded(ids):
    return [t for t in ids if t != PAD]


def test_a_split_example_is_the_same_text_with_the_committed_tokens_moved_into_the_prompt():
    tok = CodeTokenizer.train([CODE] * 20, vocab_size=300)
    plain_cfg = TrainConfig(prompt_len=64, max_suffix=16, canvas=16, context_prob=0.0)
    split_cfg = TrainConfig(prompt_len=64, max_suffix=16, canvas=16, context_prob=0.0, split_prob=1.0)
    splits = 0
    for seed in range(40):
        plain = make_example(CODE, tok, random.Random(seed), plain_cfg)
        split = make_example(CODE, tok, random.Random(seed), split_cfg)
        if plain is None:
            assert split is None
            continue
        assert len(plain[0]) == 64 and len(split[0]) == 64 + 16 and not plain[2]
        whole = _unpadded(plain[0]) + [t for t in plain[1] if t not in (PAD, EOS)]
        assert _unpadded(split[0]) + [t for t in split[1] if t not in (PAD, EOS)] == whole
        splits += split[2]
    assert splits > 10  # a split at 0 committed tokens is a plain example


def test_the_known_first_token_is_never_noised_nor_a_target(monkeypatch):
    model = random_model(tiny_config(), seed=0)
    net = model.net.train()
    cfg = TrainConfig(full_noise_prob=1.0, self_cond_prob=0.0)
    prompt = torch.randint(3, 300, (2, 12))
    canvas = torch.randint(3, 300, (2, 8))
    split = torch.tensor([True, False])
    seen = {}
    real = net.decode

    def decode(x, cache, prev=None, positions=None):
        seen["x"] = x.clone()
        return real(x, cache, prev, positions)

    monkeypatch.setattr(net, "decode", decode)
    ar, diff = losses(net, prompt, canvas, cfg, torch.Generator().manual_seed(0), split)
    assert seen["x"][0, 0] == canvas[0, 0]  # the split row's first token stays
    assert (seen["x"][1] != canvas[1]).sum() >= 6  # t = 1: the other row is noise (a draw may repeat a token)
    assert torch.isfinite(ar) and torch.isfinite(diff)


def test_distilled_targets_are_the_encoders_greedy_answer():
    model = random_model(tiny_config(), seed=1, eos=[EOS])
    prompt = torch.randint(3, 300, (3, 10))
    canvas = torch.randint(3, 300, (3, 6))
    split = torch.tensor([False, True, False])
    got = distilled(model.net, prompt, canvas, split, 1.0, torch.Generator().manual_seed(0))
    for row in range(3):
        head = [int(canvas[row, 0])] if split[row] else []
        want = model.ar_drafts(prompt[row].tolist() + head, 6 - len(head), {EOS}, k=1)[0][0]
        want = (head + want + [PAD] * 6)[:6]
        assert got[row].tolist() == want
    assert torch.equal(distilled(model.net, prompt, canvas, split, 0.0, torch.Generator()), canvas)
