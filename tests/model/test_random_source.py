"""`random:<scheme>[:<preset>]` model sources (model.runtime): random weights of a real shape for speed runs, loaded
and served like a checkpoint; anything else under the prefix is a clear error."""

import pytest
import torch

from diffill.bench.wire import RawClient
from diffill.model import runtime
from diffill.model.config import CheckpointError
from diffill.model.quant import QuantExperts


@pytest.mark.parametrize("source,quantized", [("random:int4:tiny", True), ("random:bf16:tiny", False)])
def test_a_random_model_loads_and_runs(source, quantized):
    loaded = runtime.load(source, "cpu")
    net = loaded.model.net
    assert loaded.source == source and net.config.vocab_size >= loaded.tokenizer.vocab_size
    assert any(isinstance(m, QuantExperts) for m in net.modules()) == quantized
    with torch.inference_mode():
        logits = net.decode(torch.tensor([[5, 6, 7]]), net.new_cache())
    assert logits.shape == (1, 3, net.config.vocab_size) and torch.isfinite(logits).all()


@pytest.mark.parametrize("source", ["random:int3", "random:int4:huge", "random:"])
def test_other_random_sources_are_refused_clearly(source):
    with pytest.raises(CheckpointError, match="random:<bf16"):
        runtime.load(source, "cpu")


def test_the_daemon_serves_a_random_model():
    client = RawClient()
    try:
        client.initialize({"model": "random:int4:tiny"})
        status = client.wait_ready()
        assert status["ready"] and "random:int4:tiny" in status["model"], status
    finally:
        client.shutdown()
        client.close()
