"""A served model as the engine meets it (model.remote): loaded from a server URL with the served model's own
tokenizer and card, its canvas cut where it ends and where it doubts, its pins kept, the healed text held, a late
answer dropped (a stand-in server: tests/vllm_stub.py)."""

import math

import pytest
from gemma_style import TURN_END
from vllm_stub import StubServer

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.next_edits import Edit
from diffill.lsp.settings import Settings, engine_options
from diffill.model import runtime
from diffill.model.chat_tokenizer import ChatTokenizer
from diffill.model.loader import CheckpointError
from diffill.model.remote import RemoteSession
from diffill.model.session import Healing
from diffill.model.vllm_server import Connection, ServerError


@pytest.fixture
def served(gemma_checkpoint):
    stub = StubServer(models=[str(gemma_checkpoint)])
    loaded = runtime.load(stub.url)
    yield stub, loaded
    loaded.model.close()
    stub.close()


def answering(stub, tokens, logprobs=None):
    """The stub writes `tokens` then pads, with `logprobs` (default -0.01 each)."""

    def behave(body):
        width = body["vllm_xargs"]["diffusion_canvas_length"]
        ids = (tokens + [0] * width)[:width]
        lps = ((logprobs or [-0.01] * len(tokens)) + [0.0] * width)[:width]
        choice = {"token_ids": ids, "logprobs": {"token_logprobs": lps}, "text": "", "finish_reason": "length"}
        return 200, {"choices": [choice]}, 0.0

    stub.behave = behave


def test_a_server_url_loads_the_served_models_tokenizer_and_a_card_whose_decoder_writes(served):
    stub, loaded = served
    assert loaded.device == "server" and isinstance(loaded.tokenizer, ChatTokenizer)
    assert loaded.model.served == stub.models[0] and loaded.model.token_ids == loaded.tokenizer.vocab_size
    assert loaded.card.draft == "" and not loaded.card.speculative  # no encoder drafts over the network
    assert not engine_options(Settings(), loaded).drafts.ar


def test_the_canvas_ends_at_the_end_id_and_where_the_server_doubts(served):
    stub, loaded = served
    ids = loaded.tokenizer.encode("x = 1")
    answering(stub, ids + [TURN_END, 9, 9])
    session = RemoteSession(loaded.model, [2, 3], tokenizer=loaded.tokenizer)
    assert session.denoise(16, 4, 0) == ids
    answering(stub, ids, [-0.01, math.log(0.2)] + [-0.01] * (len(ids) - 2))
    assert session.denoise(16, 4, 0, min_confidence=0.5) == ids[:1]
    logprobs, goes_on = session.beliefs(ids[:1] + [7])
    assert logprobs[0] == pytest.approx(-0.01) and logprobs[1] == 0.0 and goes_on == logprobs


def test_pins_come_back_as_pinned_and_the_request_carries_them(served):
    stub, loaded = served
    answering(stub, [40] * 6)
    session = RemoteSession(loaded.model, [2, 3], tokenizer=loaded.tokenizer)
    out = session.denoise(16, 4, 0, pins={3: 41, 4: TURN_END})
    assert out == [40, 40, 40, 41]
    assert stub.bodies[-1]["vllm_xargs"]["diffusion_pinned"] == [3, 4]


def test_an_answer_that_leaves_the_healed_text_is_no_answer(served):
    stub, loaded = served
    answering(stub, [40, 41])
    held = Healing(allowed=lambda written: [41, 42] if not written else None)
    assert RemoteSession(loaded.model, [2], healing=held, tokenizer=loaded.tokenizer).denoise(8, 2, 0) == []


def test_a_late_answer_is_dropped(served):
    stub, loaded = served

    class NoTime:
        def left_ms(self):
            return -1e9  # past the budget: only the network's allowance is left

        def affords(self, passes):
            return False

    answering(stub, [40])
    inner = stub.behave
    stub.behave = lambda body: (*inner(body)[:2], 0.5)
    assert RemoteSession(loaded.model, [2], budget=NoTime(), tokenizer=loaded.tokenizer).denoise(8, 2, 0) is None


def test_the_engine_answers_through_the_server(served):
    stub, loaded = served
    answering(stub, loaded.tokenizer.encode("    return 1") + [TURN_END])  # the healed indentation first
    engine = CompletionEngine(loaded.model, loaded.tokenizer, engine_options(Settings(), loaded))
    engine.warm_up()
    text = "def f():\n    "
    got = engine.complete(SyntaxDocument(text, "python"), len(text), key="doc")
    assert got is not None and got.text == "return 1"
    assert stub.bodies and stub.bodies[-1]["prompt"][:1] == [2]  # Gemma's chat prompt, from <bos>


def test_a_server_without_models_or_with_an_unknown_one_is_a_clear_error(tmp_path):
    stub = StubServer(models=[])
    try:
        with pytest.raises(ServerError, match="serves no model"):
            runtime.load(stub.url)
        stub.models = [str(tmp_path / "nowhere")]
        with pytest.raises(CheckpointError, match="the server's model"):
            runtime.load(stub.url)
    finally:
        stub.close()


def test_a_served_name_is_found_through_its_root_or_the_setting(gemma_checkpoint, tmp_path):
    """A team's server serves `/models/dg` as `dg`: the name is no folder here nor a hub id, so the tokenizer and
    card come from the model's root (`/v1/models`); where neither can be read, from servedModelFiles; the error
    names what was tried and the setting."""
    stub = StubServer(models=["./dg"], roots={"./dg": str(gemma_checkpoint)})
    try:
        loaded = runtime.load(stub.url)
        files = loaded.model.files
        assert (files.folder, files.name, files.how) == (gemma_checkpoint, str(gemma_checkpoint), "its root")
        assert loaded.model.served == "./dg"  # requests still name the model as the server serves it
        loaded.model.close()
        stub.roots = {"./dg": "/models/dg"}  # a folder of the server's machine
        with pytest.raises(CheckpointError) as failed:
            runtime.load(stub.url)
        message = str(failed.value)
        assert "its served name './dg'" in message and "its root '/models/dg'" in message
        assert "set servedModelFiles" in message
        loaded = runtime.load(stub.url, connection=Connection(stub.url, model_files=str(gemma_checkpoint)))
        assert loaded.model.files.how == "the servedModelFiles setting"
        assert isinstance(loaded.tokenizer, ChatTokenizer) and loaded.model.served == "./dg"
        loaded.model.close()
        with pytest.raises(CheckpointError, match="the servedModelFiles setting") as failed:
            runtime.load(stub.url, connection=Connection(stub.url, model_files=str(tmp_path / "none")))
        assert "set servedModelFiles" not in str(failed.value)
    finally:
        stub.close()


def test_warming_asks_the_server_for_each_canvas_shape_once_and_survives_a_failure(served):
    stub, loaded = served
    before = len(stub.bodies)
    assert loaded.model.warm_graphs((32, 16, 16)) == 3
    assert [b["vllm_xargs"]["diffusion_canvas_length"] for b in stub.bodies[before:]] == [1, 16, 32]
    stub.behave = lambda body: (503, {"error": {"message": "loading"}}, 0.0)
    assert loaded.model.warm_graphs((32,)) == 0  # logged; the first completion reports the server's state


def test_a_line_the_code_around_continues_the_same_way_seeds_the_servers_canvas(served):
    stub, loaded = served
    engine = CompletionEngine(loaded.model, loaded.tokenizer, engine_options(Settings(), loaded))
    text = "total = f(a, b)\nprint(total)\ntotal = f"
    engine.complete(SyntaxDocument(text, "python"), len(text), key="copy")
    sent = stub.bodies[-1]["vllm_xargs"]
    seed = loaded.tokenizer.decode(sent["diffusion_seed_canvas"])
    assert seed.startswith("f(a, b)"), seed  # the healed word, then the copy


def test_a_rewrite_comes_back_with_each_tokens_probability_up_to_its_end(served):
    stub, loaded = served
    ids = loaded.tokenizer.encode("x = 2\n")
    answering(stub, ids + [TURN_END], [math.log(0.5)] + [-0.01] * len(ids))
    session = RemoteSession(loaded.model, [2, 3], tokenizer=loaded.tokenizer)
    init = loaded.tokenizer.encode("x = 1\n") + [TURN_END] + [0] * 9
    written, probs = session.rewrite(init, 4, 0)
    assert written == ids and probs[0] == pytest.approx(0.5) and len(probs) == len(ids)
    assert stub.bodies[-1]["vllm_xargs"]["diffusion_seed_canvas"] == init  # the canvas starts from the code
    answering(stub, ids * 20)  # no end on the canvas: the rewrite did not fit
    assert session.rewrite(init, 4, 0) is None


CALLS = "def test():\n    eq(a, 1)\n    eq(b)\n    eq(c)\n"  # (the tiny checkpoint's canvas: 32 tokens)


def test_the_engine_offers_the_rewrite_below_the_edit_where_the_model_is_sure(served):
    """The user renamed the first call; the served model rewrites the lines below: each change it is sure of is a
    proposal, the one it doubts is not, one that adds a parse error is not either, and its prompt holds the change
    and the code."""
    stub, loaded = served
    tok = loaded.tokenizer
    engine = CompletionEngine(loaded.model, tok, engine_options(Settings(), loaded))
    assert engine.rewrites
    edited = CALLS.replace("eq(a", "equal(a")
    line = edited.index("    eq")
    edit = Edit(line, CALLS[line : CALLS.index("\n", line) + 1], edited[line : edited.index("\n", line) + 1])
    below = edited.index("\n", line) + 1
    written = edited[below:].replace("eq(", "equal(")
    ids = tok.encode(written)
    doubted = len(tok.encode(written[: written.index("equal(c")]))  # the first token of the last call
    answering(stub, ids + [TURN_END], [-0.01] * doubted + [math.log(0.3)] + [-0.01] * len(ids))
    doc = SyntaxDocument(edited, "python")
    got = engine.rewrite_below(doc, [edit], key="doc")
    assert [(p.old, p.text, p.start) for p in got] == [("eq", "equal", edited.index("eq(b"))]
    region = tok.encode(edited[below:])  # the canvas starts from the code as it reads
    assert stub.bodies[-1]["vllm_xargs"]["diffusion_seed_canvas"][: len(region) + 1] == region + [TURN_END]
    prompt = tok.decode(stub.bodies[-1]["prompt"])
    assert "Before my change:\n```python\n    eq(a, 1)\n```\nAfter it:\n```python\n    equal(a, 1)\n```" in prompt
    assert prompt.index("After it:") < prompt.index("The code to rewrite:\n```python\n" + edited[below:] + "```")
    answering(stub, tok.encode(written.replace("equal(b)", "equal(b")) + [TURN_END])  # a parse error: never offered
    assert [p.text for p in engine.rewrite_below(doc, [edit], key="doc")] == ["equal"]
