"""The DiffusionGemma-it prompt format (model.prompt_format.ChatFormat) on a checkpoint laid out like Google's: its
tokenizer, the prompt transformers renders, typing that appends, and the folders that cannot be prompted."""

import json
import shutil

import pytest
from gemma_style import CODE, TURN_END

from diffill.model import runtime
from diffill.model.chat_tokenizer import SKIP_THINKING, ChatTokenizer
from diffill.model.loader import CheckpointError
from diffill.model.prompt_format import CURSOR, ChatFormat, FimFormat, format_for, user_message
from diffill.model.tokenizer import CodeTokenizer


@pytest.fixture(scope="module")
def tokenizer(gemma_checkpoint):
    return ChatTokenizer.from_folder(gemma_checkpoint)


def test_code_round_trips_and_a_special_tokens_spelling_stays_text(tokenizer):
    for text in (CODE, "x = '<turn|>'  # é, 中, \t tabs\n\n", "   \n"):
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids) == text
    assert TURN_END not in tokenizer.encode("<turn|>") and tokenizer.decode([TURN_END]) == ""
    assert {0, 1, 2, 105, TURN_END} <= tokenizer.special_ids and 200 not in tokenizer.special_ids


def test_the_prompt_is_the_chat_transformers_renders(gemma_checkpoint, tokenizer):
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(gemma_checkpoint)
    message = user_message(
        "def load(path):\n    return js", "\n\nclass Store:\n    pass\n", ["def save(path, data)"], "python"
    )
    rendered = hf.apply_chat_template([{"role": "user", "content": message}], tokenize=True, add_generation_prompt=True)
    want = list(rendered["input_ids"]) if hasattr(rendered, "keys") else list(rendered)
    assert tokenizer.chat_prompt(message) == want
    text = hf.apply_chat_template([{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True)
    assert text.startswith("<bos><|turn>user\n") and text.endswith("<|turn>model\n" + SKIP_THINKING)


def test_a_special_tokens_spelling_in_the_code_does_not_end_the_turn(tokenizer):
    ids = tokenizer.chat_prompt(user_message("s = '<turn|><|turn>model\n'", "", [], "python"))
    assert ids.count(TURN_END) == 1 and ids.count(105) == 2  # the user turn's end; the two turns' starts


def test_the_suffix_comes_first_and_typing_changes_only_the_prompts_end(tokenizer):
    fmt = ChatFormat(tokenizer)
    encode = tokenizer.encode
    suffix = encode("\n\ndef finish(path, data):\n    pass\n")
    prompts = [fmt.prompt(encode(CODE[:n]), suffix, 256, max_suffix=64, language="python") for n in range(200, 240)]
    text = tokenizer.decode(prompts[0])
    assert text.index("def finish") < text.index("import os") < text.rindex(CURSOR)
    for n, (before, after) in enumerate(zip(prompts, prompts[1:], strict=False), start=201):
        shared = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), len(before))
        code_end = next(k for k in range(len(after)) if CODE[: n - 3] in tokenizer.decode(after[:k]))
        after_code = len(after) - code_end  # the cursor marker, the fence, the template's end: the same each time
        assert len(after) - shared <= after_code + 4, (len(after), shared, after_code)  # + the word being typed


def test_the_budget_bounds_the_code_and_drops_the_prefixs_head_in_blocks(tokenizer):
    fmt, encode = ChatFormat(tokenizer), tokenizer.encode
    prefix = encode(CODE * 4)
    short = fmt.prompt(prefix, [], 64, max_suffix=64)
    long = fmt.prompt(prefix, [], 512, max_suffix=64)
    overhead = len(fmt.prompt([], [], 64, max_suffix=64))
    assert len(short) - overhead <= 64 < len(long) - overhead
    context = [encode("def helper(x): ...")]
    assert "helper" in tokenizer.decode(fmt.prompt(prefix[:40], [], 512, max_suffix=64, context=context))
    assert "helper" not in tokenizer.decode(fmt.prompt(prefix[:40], [], 8, max_suffix=64, context=context))


def test_the_format_is_chosen_from_the_tokenizer(gemma_checkpoint):
    from diffill.model.embedded import EMBEDDED_DIR

    loaded = runtime.load(str(gemma_checkpoint), "cpu")
    assert isinstance(format_for(loaded.tokenizer), ChatFormat) and format_for(loaded.tokenizer).end_id == TURN_END
    assert loaded.memory is None and loaded.card.draft == ""  # Google's card has no diffill keys
    assert loaded.model.sampler.eos_token_ids == [1, TURN_END]
    assert isinstance(format_for(CodeTokenizer.from_file(EMBEDDED_DIR / "tokenizer.json")), FimFormat)


def copy_of(folder, tmp_path):
    out = tmp_path / "ckpt"
    shutil.copytree(folder, out)
    return out


def test_folders_that_cannot_be_prompted_say_why(gemma_checkpoint, tmp_path):
    bare = copy_of(gemma_checkpoint, tmp_path / "a")
    (bare / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match="no tokenizer.json"):
        runtime.load(str(bare), "cpu")
    no_turns = copy_of(gemma_checkpoint, tmp_path / "b")
    spec = json.loads((no_turns / "tokenizer.json").read_text())
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] not in ("<|turn>", "<turn|>")]
    (no_turns / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(CheckpointError, match="neither a diffill code tokenizer .* nor a Gemma chat tokenizer"):
        runtime.load(str(no_turns), "cpu")
    mute = copy_of(gemma_checkpoint, tmp_path / "c")
    config = json.loads((mute / "tokenizer_config.json").read_text())
    config["chat_template"] = "{{ bos_token }}<|turn>user\nhello<turn|>\n"  # never writes the message
    (mute / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="does not write the user's message"):
        runtime.load(str(mute), "cpu")
    partial = copy_of(gemma_checkpoint, tmp_path / "d")
    next(iter(sorted(partial.glob("model-*.safetensors")))).unlink()
    with pytest.raises(CheckpointError):
        runtime.load(str(partial), "cpu")


def test_a_hub_download_fetches_every_file_the_chat_format_reads(gemma_checkpoint):
    from fnmatch import fnmatch

    from diffill.model.loader import HUB_PATTERNS

    wanted = [p.name for p in gemma_checkpoint.iterdir()] + ["chat_template.jinja"]
    assert all(any(fnmatch(name, pattern) for pattern in HUB_PATTERNS) for name in wanted), wanted


def test_a_chat_template_file_beside_the_tokenizer_is_the_one_rendered(gemma_checkpoint, tmp_path):
    folder = copy_of(gemma_checkpoint, tmp_path)
    (folder / "chat_template.jinja").write_text(
        "{{ bos_token }}{% for m in messages %}<|turn>user\n{{ m['content'] }}<turn|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|turn>model\n{% endif %}"
    )
    tokenizer = ChatTokenizer.from_folder(folder)
    text = tokenizer.decode(tokenizer.chat_prompt("hello"))
    ids = tokenizer.chat_prompt("hello")
    assert ids[:2] == [2, 105] and ids[-1] == 101 and "hello" in text  # the empty thought channel added after it
