"""A chat model's tokenizer: a Hugging Face `tokenizer.json` with the chat template beside it (Gemma 4's, for
Google's DiffusionGemma checkpoints). Code is always encoded as text: a special token's spelling in a file
(`<turn|>` in a test fixture) stays text and never ends the user's turn.

The template is rendered once, at load, around a placeholder for the user's message, the way transformers renders
it (a sandboxed Jinja environment, `trim_blocks`/`lstrip_blocks`); a prompt is then the rendered head, the message
and the rendered tail, tokenized as transformers tokenizes a rendered chat (`apply_chat_template(tokenize=True)`),
so the ids are the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from .tokenizer import bound_word_cache

TURN_START, TURN_END = "<|turn>", "<turn|>"
# The empty thought channel Gemma 4's own template writes after `<|turn>model\n` when thinking is off (and Google's
# serving code with it): the answer starts right after it, with no reasoning first.
SKIP_THINKING = "<|channel>thought\n<channel|>"
# Gemma 4's layout for one user message and the generation prompt, for a checkpoint that ships no template.
GEMMA4_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{- '<|turn>' + role + '\\n' -}}{{- message['content'] | trim -}}{{- '<turn|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|turn>model\\n' -}}"
    "{%- if not enable_thinking | default(false) -%}{{- '<|channel>thought\\n<channel|>' -}}{%- endif -%}"
    "{%- endif -%}"
)
_PLACEHOLDER = "diffill-user-message-b0e1c9"


class ChatTokenizer:
    """Encode and decode a chat model's ids; `chat_prompt` renders one user message as the model's prompt."""

    def __init__(self, tok: Tokenizer, template: str, special_tokens: dict[str, str]) -> None:
        self._parsed = bound_word_cache(tok)  # special tokens in the text are parsed: the template's markers
        self._literal = bound_word_cache(Tokenizer.from_str(tok.to_str()))  # the user's code: all of it text
        self._literal.encode_special_tokens = True
        added = tok.get_added_tokens_decoder()
        self.special_ids = frozenset(i for i, t in added.items() if t.special)
        special_texts = {t.content for t in added.values() if t.special}
        for marker in (TURN_START, TURN_END):
            if marker not in special_texts:
                raise ValueError(f"no {marker} special token: not a Gemma-style chat tokenizer")
        self.turn_end = tok.token_to_id(TURN_END)
        rendered = _render(template, _PLACEHOLDER, special_tokens)
        if rendered.count(_PLACEHOLDER) != 1:
            raise ValueError("the chat template does not write the user's message once")
        self._head, self._tail = rendered.split(_PLACEHOLDER)
        if not self._tail.endswith(SKIP_THINKING):
            self._tail += SKIP_THINKING
        self._head_ids = self._parsed.encode(self._head, add_special_tokens=False).ids
        self._tail_ids = self._parsed.encode(self._tail, add_special_tokens=False).ids
        self._template_specials = self._specials_in(self._head_ids) + self._specials_in(self._tail_ids)

    @classmethod
    def from_folder(cls, folder: Path) -> ChatTokenizer:
        """The tokenizer of a checkpoint folder: tokenizer.json, its tokenizer_config.json's special tokens, and
        the chat template (chat_template.jinja, else tokenizer_config.json's, else Gemma 4's layout)."""
        config_path = folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.exists() else {}
        if not isinstance(config, dict):
            raise ValueError(f"{config_path}: not a JSON object")
        jinja = folder / "chat_template.jinja"
        template = jinja.read_text() if jinja.exists() else config.get("chat_template") or GEMMA4_TEMPLATE
        if isinstance(template, list):  # several named templates: the default one
            template = next((t["template"] for t in template if t.get("name") == "default"), GEMMA4_TEMPLATE)
        specials = {k: _content(v) for k, v in config.items() if k.endswith("_token") and v is not None}
        specials.setdefault("bos_token", "<bos>")
        return cls(Tokenizer.from_file(str(folder / "tokenizer.json")), template, specials)

    @property
    def vocab_size(self) -> int:
        return self._parsed.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """The ids of `text` as text (a special token's spelling in it is not that token)."""
        return self._literal.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._literal.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of `ids`, special tokens dropped."""
        return self._parsed.decode([i for i in ids if i not in self.special_ids], skip_special_tokens=True)

    def decode_each(self, ids: list[int]) -> list[str]:
        """The text of each id alone (a whole vocabulary in one call)."""
        return self._parsed.decode_batch([[i] for i in ids], skip_special_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self._parsed.token_to_id(token)

    def chat_prompt(self, message: str) -> list[int]:
        """The prompt ids of one user turn carrying `message` (trimmed, as the template trims it), then the
        generation prompt with thinking skipped: the answer is written after them."""
        message = message.strip()
        ids = self._parsed.encode(self._head + message + self._tail, add_special_tokens=False).ids
        if self._specials_in(ids) > self._template_specials:  # a special token's spelling in the code: keep it text
            return self._head_ids + self.encode(message) + self._tail_ids
        return ids

    def _specials_in(self, ids: list[int]) -> int:
        return sum(i in self.special_ids for i in ids)


def _content(value: Any) -> str:
    """A tokenizer_config special token: a string, or an AddedToken's dict."""
    return value["content"] if isinstance(value, dict) else str(value)


def _render(template: str, message: str, special_tokens: dict[str, str]) -> str:
    """The template rendered for one user message with the generation prompt and thinking off, in the sandboxed
    environment transformers renders chat templates in."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(text: str) -> None:
        raise ValueError(f"the chat template refused the prompt: {text}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda x, indent=None, **_: json.dumps(x, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    messages = [{"role": "user", "content": message}]
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True, enable_thinking=False, **special_tokens
    )
