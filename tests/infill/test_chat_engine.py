"""The engine on a checkpoint laid out like google/diffusiongemma-26B-A4B-it (tests/gemma_style.py): every request
answered or empty, the known tail pinned, and the prompt cache reused as the user types."""

import dataclasses

import pytest
from engine_doubles import tiny_engine
from gemma_style import CODE, TURN_END

from diffill.infill.document import SyntaxDocument
from diffill.infill.engine import CompletionEngine
from diffill.infill.next_edits import Edit
from diffill.infill.options import PromptOptions
from diffill.infill.request import build_request
from diffill.lsp.settings import Settings, engine_options
from diffill.model import DiffusionModel, runtime
from diffill.model.chat_tokenizer import ChatTokenizer
from diffill.model.fim import build_canvas


@pytest.fixture(scope="module")
def loaded(gemma_checkpoint):
    return runtime.load(str(gemma_checkpoint), "cpu")


def engine_for(loaded, **knobs):
    options = engine_options(Settings(), loaded, latency_budget_ms=None, **knobs)
    return CompletionEngine(loaded.model, loaded.tokenizer, options, loaded.memory)


def test_every_request_is_answered_or_empty(loaded):
    engine = engine_for(loaded, steps=2)
    assert isinstance(loaded.tokenizer, ChatTokenizer) and not engine.options.drafts.ar  # the decoder writes
    cursors = [
        CODE.index(s) + len(s) for s in ("import o", "return json.", "def save(", "    def __init__(self, root):\n")
    ]
    cursors += [len(CODE), 0, CODE.index("with open(path) as fh:") + 5]
    for offset in cursors:
        got = engine.complete(SyntaxDocument(CODE, "python"), offset, key="doc")
        assert got is None or (got.start <= offset <= got.end and isinstance(got.text, str)), (offset, got)


def test_pinned_positions_come_back_unchanged(loaded):
    """The known tail pinned on the canvas (infill.sources.draft.with_known_tail) is what the canvas holds there."""
    tokenizer, model = loaded.tokenizer, loaded.model
    fmt = engine_for(loaded).vocabulary.format
    prompt = fmt.prompt(tokenizer.encode("values = [1, 2"), [], 256, max_suffix=64, language="python")
    closer = tokenizer.encode("])")
    pins = {4 + i: t for i, t in enumerate(closer)} | {4 + len(closer): TURN_END}
    for seed in range(3):
        out = model.denoise(prompt, model.net.new_cache(), canvas=16, steps=3, seed=seed, pins=pins)
        assert out[4 : 4 + len(closer)] == closer and len(out) == 4 + len(closer)  # cut at the pinned end


def test_keystrokes_reuse_the_prompt_cache(loaded):
    """Typing at the cursor changes the prompt from the cursor on: a follow-up encodes at most a fifth of the first
    prompt: a keystroke re-encodes what it changed, not the file."""
    engine = engine_for(loaded, steps=1)
    cache = engine.prompter.prompt_cache
    text = CODE + "\n\ndef main():\n    store = Store(os.getcwd())\n    "
    engine.complete(SyntaxDocument(text, "python"), len(text), key="typed")
    first = cache.encoded_tokens
    follow_ups = []
    for ch in "print(store.path(":
        text += ch
        before = cache.encoded_tokens
        engine.complete(SyntaxDocument(text, "python"), len(text), key="typed")
        follow_ups.append(cache.encoded_tokens - before)
    assert first > 100 and max(follow_ups) <= 0.2 * first, (first, follow_ups)


def test_a_block_body_pins_the_line_it_leads_to(loaded):
    """The chat format pins the suffix's first line after a block body's answer (draft.with_suffix_head)."""
    text = CODE.replace("        return json.load(fh)\n", "        \n")
    offset = text.index("fh:\n") + 4 + 8
    request = build_request(SyntaxDocument(text, "python"), offset, [], engine_for(loaded).vocabulary, PromptOptions())
    assert not request.line and request.suffix_head == "\ndef save(path, data):"


def test_a_local_rewrite_that_keeps_the_code_proposes_nothing(loaded):
    """The canvas starts from the code below the edit; a sampler that changes a token only where the decoder's top
    choice beats it by more than a probability of 1 (never) writes it back as it reads, each token with the
    decoder's probability, and nothing is proposed."""
    engine = engine_for(loaded, steps=2)
    assert engine.rewrites and not tiny_engine().rewrites  # a FIM model writes no rewrites
    text = "def f():\n    eq(a, 1)\n    eq(b)\n"
    below = text.index("    eq(b)")
    region = loaded.tokenizer.encode(text[below:])
    canvas = loaded.model.config.canvas_length
    keeps = dataclasses.replace(loaded.model.sampler, draft_margin=1.0)
    model = DiffusionModel(loaded.model.net, keeps, card=loaded.model.card)
    written = model.rewrite([2, 3], model.net.new_cache(), init=build_canvas(region, canvas, TURN_END), steps=2, seed=0)
    assert written is not None and written[0] == region and all(0 < p <= 1 for p in written[1])
    edit = Edit(text.index("    eq(a"), "    eq(a, 1)\n", "    eq(a, 1)\n")
    kept = CompletionEngine(model, loaded.tokenizer, engine.options)
    assert kept.rewrite_below(SyntaxDocument(text, "python"), [edit], key="doc") == []
