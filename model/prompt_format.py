"""How a model family is prompted for the code at the cursor, chosen from its tokenizer (docs/model.md).

- `FimFormat`, diffill's own models: `<bos> [<file_sep> context]* <fim_suffix> suffix <fim_prefix> prefix`, the
  canvas holding the middle, `<eos>`, pads (model.fim).
- `ChatFormat`, Google's DiffusionGemma-it checkpoints (Gemma 4's tokenizer, no FIM tokens): one user turn carries
  a short instruction, the context blocks, the code after the cursor, then the code before it up to a cursor
  marker; the generation prompt skips thinking; the canvas holds the answer, `<turn|>`, pads. The suffix comes
  before the prefix, so typing changes the prompt only from the cursor on and the encoder cache of the previous
  keystroke is reused up to there. A chat model can also rewrite: `ChatFormat.rewrite_prompt` asks for the code
  below the user's latest edits rewritten to follow them (infill.next_edits.rewrite).

Both take the prompt's parts as ids, cut to the budget the same way (the suffix's head, the prefix's tail dropped
in whole blocks), so `infill.request` builds one request for either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .chat_tokenizer import ChatTokenizer
from .fim import build_prompt, prefix_within
from .tokenizer import EOS, CodeTokenizer

CURSOR = "<|cursor|>"
INSTRUCTION = (
    f"Write the code that goes at {CURSOR} in the code below. Answer with that code alone: no explanation, no "
    "Markdown fence, nothing that is already written before or after the cursor."
)
REWRITE_INSTRUCTION = (
    "I just made the changes below to this file. Rewrite the code that follows them so that it goes along with "
    "them: make the same change wherever it applies there, and keep every other line exactly as it is. Answer with "
    "the rewritten code alone: no explanation, no Markdown fence."
)


class PromptFormat(Protocol):
    name: str  # what `diffill doctor` shows
    end_id: int  # the id that ends an answer on the canvas (pads follow it)
    # Whether the n-gram evidence of the code around is mixed into the model's probabilities: its weights were tuned
    # with diffill's tokenizer and models.
    ngram_mixing: bool
    # Whether a block body's canvas pins the suffix's first line after the answer: an instruction model writes its
    # answer apart from the code it was shown, and the pinned line tells its decoder where the body leads.
    pins_suffix_head: bool

    def prompt(
        self,
        prefix_ids: list[int],
        suffix_ids: list[int],
        budget: int,
        *,
        max_suffix: int,
        context: Sequence[list[int]] = (),
        language: str | None = None,
    ) -> list[int]: ...


@dataclass(frozen=True)
class FimFormat:
    name: str = "diffill FIM"
    end_id: int = EOS
    ngram_mixing: bool = True
    pins_suffix_head: bool = False  # the FIM canvas follows the prefix, with the suffix in the same prompt

    def prompt(
        self,
        prefix_ids: list[int],
        suffix_ids: list[int],
        budget: int,
        *,
        max_suffix: int,
        context: Sequence[list[int]] = (),
        language: str | None = None,
    ) -> list[int]:
        """At most `budget` tokens (model.fim.build_prompt); the FIM layout names no language."""
        return build_prompt(prefix_ids, suffix_ids, budget, max_suffix, context=list(context))


@dataclass(frozen=True)
class ChatFormat:
    tokenizer: ChatTokenizer
    name: str = "DiffusionGemma chat (Gemma 4 template)"
    ngram_mixing: bool = False
    pins_suffix_head: bool = True

    @property
    def end_id(self) -> int:
        return self.tokenizer.turn_end

    def prompt(
        self,
        prefix_ids: list[int],
        suffix_ids: list[int],
        budget: int,
        *,
        max_suffix: int,
        context: Sequence[list[int]] = (),
        language: str | None = None,
    ) -> list[int]:
        """The code within `budget` tokens (the instruction and the template's markers come on top), context
        blocks only where they leave the code its room."""
        suffix = suffix_ids[:max_suffix]
        blocks = list(context)
        if len(suffix) + sum(len(b) for b in blocks) >= budget:  # context never crowds out the code itself
            blocks = []
        prefix = prefix_within(prefix_ids, max(0, budget - len(suffix) - sum(len(b) for b in blocks)))
        decode = self.tokenizer.decode
        message = user_message(decode(prefix), decode(suffix), [decode(b) for b in blocks], language)
        return self.tokenizer.chat_prompt(message)

    def rewrite_prompt(
        self, changes: Sequence[tuple[str, str]], above: str, region: str, language: str | None = None
    ) -> list[int]:
        """The prompt asking for `region` rewritten to follow `changes` (the user's latest edits, each its lines
        before and after, oldest first), with the code `above` it: the answer is the region rewritten, then
        `<turn|>`."""
        return self.tokenizer.chat_prompt(rewrite_message(changes, above, region, language))


def rewrite_message(changes: Sequence[tuple[str, str]], above: str, region: str, language: str | None) -> str:
    """The user turn of a rewrite: the instruction, each change's lines before and after, the code above the
    region, and the region itself last (the answer rewrites it)."""
    fence = "```" + (language or "")
    parts = [REWRITE_INSTRUCTION]
    for before, after in changes:
        parts.append(f"Before my change:\n{fence}\n{before.rstrip()}\n```\nAfter it:\n{fence}\n{after.rstrip()}\n```")
    if above.strip():
        parts.append(f"The file up to the code to rewrite:\n{fence}\n{above.rstrip()}\n```")
    parts.append(f"The code to rewrite:\n{fence}\n{region.rstrip()}\n```")
    return "\n\n".join(parts)


def user_message(prefix: str, suffix: str, context: Sequence[str], language: str | None) -> str:
    """The user turn: the instruction, the code elsewhere in the project, the code after the cursor, the code
    before it ending at the cursor marker (typing adds to the prompt just before the marker)."""
    fence = "```" + (language or "")
    parts = [INSTRUCTION]
    parts += [f"Code from other files of the project:\n{fence}\n{block}\n```" for block in context]
    if suffix.strip():
        parts.append(f"The code after the cursor:\n{fence}\n{suffix.rstrip()}\n```")
    parts.append(f"The code before the cursor, up to {CURSOR}:\n{fence}\n{prefix}{CURSOR}\n```")
    return "\n\n".join(parts)


def format_for(tokenizer: CodeTokenizer | ChatTokenizer) -> PromptFormat:
    """The prompt format of a model, from its tokenizer: FIM sentinels (diffill's) or a chat template (Gemma's)."""
    if isinstance(tokenizer, ChatTokenizer):
        return ChatFormat(tokenizer)
    return FimFormat()
