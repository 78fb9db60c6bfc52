"""The request: span, prompt window and suffix, token healing and its draft constraint."""

import pytest

from diffill.infill import tuning
from diffill.infill.document import SyntaxDocument
from diffill.infill.options import PromptOptions
from diffill.infill.request import (
    _suffix_ids,
    build_request,
    healing,
    is_known_tail,
    prompt_ids,
    spelled,
    suffix_head,
    typed_word,
)

PROMPT = PromptOptions()


@pytest.mark.parametrize(
    "tail, known",
    [
        (")", True),
        ("):", True),
        ('")', True),
        ("]:", True),
        ("", False),
        ("x)", False),
        (") + y", False),
        (")" * 9, False),
    ],
)
def test_known_tail(tail, known):
    assert is_known_tail(tail) is known


@pytest.mark.parametrize(
    "text, head",
    [
        ("def f():\n    |\n\ndef g():\n    pass\n", "\ndef g():"),  # blank lines skipped, the line whole
        ("if x:\n    |   \n    y = 1  \n", "\n    y = 1"),  # its indentation kept, trailing blanks off
        ("def f():\n    |\n\n\n", ""),  # nothing after
        ("call(|value)\nnext\n", ""),  # inside a line: the rest of the line is no head
    ],
)
def test_suffix_head_is_the_first_non_blank_line_after_the_cursors_line(text, head):
    assert suffix_head(text.replace("|", ""), text.index("|")) == head


def test_a_fim_request_pins_no_suffix_head(engine):
    text = "def f(x):\n    \n\ndef g():\n    pass\n"
    request = build_request(SyntaxDocument(text, "python"), text.index("    \n") + 4, [], engine.vocabulary, PROMPT)
    assert not request.line and request.suffix_head == ""


def test_a_rest_of_line_request_heals_and_its_suffix_starts_at_the_line_end(engine):
    """Mid-line: the rest of the line is regenerated (the suffix starts after it), the partial token is taken
    back and both constraints hold the answer to it; the known tail is what the line must end with."""
    vocab = engine.vocabulary
    text = "def f(x):\n    return g(x)\n\nname = call(arg)\nitems = [a]\n"
    offset = text.index("arg") + 3
    request = build_request(SyntaxDocument(text, "python"), offset, [], vocab, PROMPT)
    assert request.line and request.suffix_start == text.index(")\nitems") + 1 and request.known_tail == ")"
    assert request.healed and text[:offset].endswith(request.healed)
    assert request.prompt == prompt_ids(text, offset, request.suffix_start, vocab, PROMPT, heal=True)[0]
    assert request.healing.first_ids == request.healing.allowed([]) == vocab.consistent_with(request.healed)
    assert request.unhealed(request.healed + "s, b)") == "s, b)" and request.unhealed("other") == ""


def test_a_block_request_keeps_its_suffix_whole_and_writes_its_indentation_again(engine):
    """A block body on a fresh line: the prompt's suffix starts at the cursor, and the indentation typed so far is
    taken back (the prompt ends at the line start, as the model's training middles began), to be written again
    exactly: no deeper, since the cursor's line is where the code goes."""
    vocab = engine.vocabulary
    text = "def f(x):\n    \n"
    request = build_request(SyntaxDocument(text, "python"), text.index("    \n") + 4, [], vocab, PROMPT)
    assert not request.line and request.suffix_start == request.offset and request.known_tail == ""
    assert request.healed == "    "
    assert engine.tokenizer.decode(request.prompt).endswith("def f(x):\n")
    assert request.healing.first_ids == vocab.indenting("    ")
    unhealed = build_request(
        SyntaxDocument("x = call(arg", "python"), 12, [], vocab, PromptOptions(token_healing=False)
    )
    assert unhealed.line and unhealed.healed == "" and unhealed.healing.allowed is None
    at_column_0 = build_request(SyntaxDocument("x = 1\n\n", "python"), 6, [], vocab, PROMPT)
    assert (
        at_column_0.healed == "" and at_column_0.healing.allowed is None
    )  # nothing typed on the line: nothing to heal


def test_context_blocks_go_into_the_prompt(engine):
    text = "name = call(arg"
    doc = SyntaxDocument(text, "python")
    plain = build_request(doc, len(text), [], engine.vocabulary, PROMPT).prompt
    with_context = build_request(doc, len(text), ["# util.py\ndef call(a):"], engine.vocabulary, PROMPT).prompt
    assert len(with_context) > len(plain)


def test_suffix_is_cut_at_a_line_boundary(engine):
    vocab = engine.vocabulary
    suffix = "\n".join(f"v{i} = f(a)" for i in range(12)) + "\n"
    ids = _suffix_ids(suffix, vocab, 12)
    text = engine.tokenizer.decode(ids)
    assert text and len(ids) <= 12 and suffix.startswith(text) and text.endswith("\n")
    assert _suffix_ids("x = 1\n", vocab, 12) == engine.tokenizer.encode("x = 1\n")


def test_token_healing_takes_back_the_partial_token(engine):
    vocab = engine.vocabulary
    text = "def f(x):\n    return g(x)\n\nname = call(arg"
    healed_prompt, healed = prompt_ids(text, len(text), len(text), vocab, PROMPT, heal=True)
    plain, none = prompt_ids(text, len(text), len(text), vocab, PROMPT)
    assert none == "" and healed and text.endswith(healed) and "\n" not in healed
    assert healed_prompt == plain[:-1]  # the prompt ends one token earlier
    first = vocab.starting_with(healed)
    assert first and all(engine.tokenizer.decode([i]).startswith(healed) for i in first)


def test_token_healing_takes_back_a_word_typed_in_pieces(engine, monkeypatch):
    """`argume|` is several tokens: the word is taken back whole (at most HEAL_TOKENS), so the model may write
    it in its own tokens; a name typed whole after a dot or a space is one piece and stays as before."""
    tok, vocab = engine.tokenizer, engine.vocabulary
    text = "def f(x):\n    return g(x)\n\nname = call(argume"
    pieces = [tok.decode([i]) for i in tok.encode("name = call(argume")]
    assert len(tok.encode("argume")) > 1  # (the test's premise: the tiny tokenizer splits the word)
    plain = prompt_ids(text, len(text), len(text), vocab, PROMPT)[0]
    for limit in (1, 2, 8):
        monkeypatch.setattr(tuning, "HEAL_TOKENS", limit)
        prompt, healed = prompt_ids(text, len(text), len(text), vocab, PROMPT, heal=True)
        taken = len(plain) - len(prompt)
        assert text.endswith(healed) and healed.endswith(pieces[-1]) and 1 <= taken <= limit
        assert healed == "".join(pieces[-taken:]) and healed.strip().isidentifier()
        assert taken == limit or healed == "argume"
    assert healed == "argume"  # the whole word, not the `(` before it


def test_healing_constraint_holds_each_token_to_the_healed_text(engine):
    """Until a draft's text covers the healed text, its next token must start with what is left of it or be a
    start of it; then anything goes. The beam's drafts all write the healed text again."""
    tok, vocab = engine.tokenizer, engine.vocabulary
    healed = " argume"
    allowed = healing(healed, vocab)
    first = [tok.decode([i]) for i in allowed([])]
    assert first and all(t.startswith(healed) or healed.startswith(t) for t in first)
    assert " " in first or any(len(t) > 1 for t in first)
    piece = max((i for i in allowed([]) if healed.startswith(tok.decode([i]))), key=lambda i: len(tok.decode([i])))
    rest = healed[len(tok.decode([piece])) :]
    if rest:
        assert all(tok.decode([i]).startswith(rest) or rest.startswith(tok.decode([i])) for i in allowed([piece]))
    assert allowed(tok.encode(healed + "nt")) is None
    assert healing("", vocab) is None
    text = "def f(x):\n    return g(x)\n\nname = call(argume"
    prompt, healed = prompt_ids(text, len(text), len(text), vocab, PROMPT, heal=True)
    drafts = engine.model.ar_drafts(prompt, 8, vocab.line_stops(), None, healing(healed, vocab), k=3)
    assert drafts and all(tok.decode(ids).startswith(healed) for ids, _ in drafts)


def test_the_text_healing_asks_for_is_spelled_as_the_tokenizer_writes_it(engine):
    """spelled: what is left of the healed text after the tokens so far, in the tokenizer's own ids (a speculative
    draft while the constraint holds); nothing once it is written, and no speller without healing."""
    tok, vocab = engine.tokenizer, engine.vocabulary
    healed = " argume"
    spell = spelled(healed, vocab)
    assert spell([]) == tok.encode(healed)
    first = tok.encode(" ")
    assert tok.decode(first + spell(first)) == healed
    assert spell(tok.encode(healed)) == [] and spell(tok.encode(healed + "nt")) == []
    assert spelled("", vocab) is None


def test_a_typed_word_is_judged_among_the_tokens_that_write_it_whole(engine):
    """typed_word: after a piece of a word, the ids a first token's belief is judged among write that piece whole
    (those that write a start of it are other spellings, not rivals), or all the healing constraint allows when no
    token does; once it is written, nothing constrains."""
    tok, vocab = engine.tokenizer, engine.vocabulary
    word = vocab.texts()[tok.encode(" return")[-1]]
    piece = word[:-1]
    among = typed_word(piece, vocab)
    assert among([]) == vocab.starting_with(piece) and all(vocab.texts()[i].startswith(piece) for i in among([]))
    assert set(among([])) < set(healing(piece, vocab)([]))  # fewer: no start of the piece
    assert among(tok.encode(word)) is None and typed_word("", vocab) is None
    odd = " zqxj"  # no token writes it whole
    assert not vocab.starting_with(odd) and typed_word(odd, vocab)([]) == healing(odd, vocab)([])


def test_the_vocabulary_names_the_tokens_that_go_on_as_a_token_does(engine):
    tok, vocab = engine.tokenizer, engine.vocabulary
    for token in tok.encode("def value(argument): return argument"):
        text = vocab.texts()[token]
        assert sorted(vocab.extensions(token)) == sorted(vocab.starting_with(text))
        assert token in vocab.extensions(token)


def test_token_healing_takes_back_a_trailing_space_and_a_fresh_lines_indentation(engine):
    """`return |`: the space is a token the model rarely saw end a prefix (it writes ` x`, space first), so it is
    taken back and the answer must start with it. On a fresh line the indentation is taken back whole: the prompt
    then ends with the newline, the line's start, where the model learnt whole lines begin."""
    vocab = engine.vocabulary
    text = "def f(x):\n    return "
    assert prompt_ids(text, len(text), len(text), vocab, PROMPT, heal=True)[1] == " "
    text = "def f(x):\n    "
    prompt, healed = prompt_ids(text, len(text), len(text), vocab, PROMPT, heal=True)
    assert healed == "    " and engine.tokenizer.decode(prompt).endswith("def f(x):\n")
    assert prompt_ids(text, len(text), len(text), vocab, PROMPT, heal=False)[1] == ""


@pytest.mark.parametrize(
    "text, at, prose",
    [
        ('def f():\n    """Return the \n    """\n', "the ", True),  # a docstring
        ("x = 1  # the count of \ny = 2\n", "of ", True),  # a comment
        ('name = "hello wor"\n', "wor", True),  # a string
        ("name = call(ar\n", "ar", False),  # code
        ('x = "done"\n', '"done"', False),  # after a string
        ("x = 1  # the end\n", "x = 1", False),  # before a comment
    ],
)
def test_a_request_knows_when_it_writes_prose(engine, text, at, prose):
    offset = text.index(at) + len(at)
    assert build_request(SyntaxDocument(text, "python"), offset, [], engine.vocabulary, PROMPT).prose is prose
