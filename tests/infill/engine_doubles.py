"""What the engine's tests build on: a tiny tokenizer and random model, options by knob, and a model double whose
drafts and scores each test gives (tests/infill/conftest.py puts this folder on the import path)."""

from tiny import random_net, tiny_config

from diffill.infill.engine import CompletionEngine
from diffill.infill.options import EngineOptions
from diffill.model import DiffusionModel, SamplerConfig
from diffill.model.tokenizer import CodeTokenizer

CODE = ["def f(x):\n    return g(x)\n", "print(value)\nitems = [a, b]\nname = call(arg, other)\n"] * 30


def options(**knobs) -> EngineOptions:
    """The engine's options with these knobs (as the callers build them, without a model card). Greedy drafts
    come from `ar_drafts` unless a test asks for speculative rounds: the doubles answer through it."""
    return EngineOptions.from_card(None, **({"speculative": False} | knobs))


def tiny_engine() -> CompletionEngine:
    """An engine over a random tiny model (12-token canvases) and a tokenizer trained on CODE."""
    tok = CodeTokenizer.train(CODE, vocab_size=300)
    cfg = tiny_config(vocab_size=tok.vocab_size, sliding_window=16, canvas_length=12)
    net = random_net(cfg, seed=0, std=0.4)
    model = DiffusionModel(net, SamplerConfig(eos_token_ids=[1], pad_token_id=0))
    return CompletionEngine(model, tok, options(steps=4))


def twice(logps: list[float]) -> tuple[list[float], list[float]]:
    """A double's token beliefs (DiffusionModel.token_beliefs): each prefix is believed as its token is."""
    return list(logps), list(logps)


class FakeModel:
    """A model double for the engine's choices: tests give the drafts and scores; the denoiser keeps the draft
    and the encoder is sure of every token of an answer."""

    def __init__(self, net):
        self.net, self.config = net, net.config

    def prefill(self, prompt, cache):
        return 0

    def denoise(self, prompt, cache=None, init=None, **kw):
        return [t for t in init if t > 1]  # the draft as the answer

    def token_beliefs(self, prompt, tokens, cache=None, mix=None, allowed=None, extensions=None):
        return twice([0.0] * len(tokens))
