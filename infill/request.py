"""A completion's request as the model sees it: where the answer goes (the span) and the prompt that asks for it.

The span decides the canvas: mid-line, the rest of the line is regenerated (the model was trained on rest-of-line
middles that run to the line end, so the edit replaces what follows the cursor on that line, and the prompt's
suffix starts at the line end); after a block opener or in an empty body, a multi-line body; on an empty line, a
few lines. Mid-line, the prompt's partial last token is taken back (token healing): the answer must start with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from diffill.model.session import Allowed, Healing, Spelled

from . import tuning
from .document import SyntaxDocument
from .options import PromptOptions
from .spans import Span, in_docstring, in_prose, select_span
from .text import is_line_start, line_window
from .vocabulary import Vocabulary

CHARS_PER_TOKEN = 6  # generous: slice this many characters per budget token before tokenizing
WORD_PIECE = re.compile(r" ?\w+")  # a token inside a word (the first of a word may carry its leading space)
KNOWN_TAIL = frozenset(")]}>\"'`;:,. ")

NO_HEALING = Healing()


@dataclass(frozen=True)
class Request:
    """One completion at `offset` of `text`: its span, its prompt and what healing took back from it."""

    text: str
    offset: int
    span: Span
    suffix_start: int  # where the prompt's suffix starts: the line end for a rest of line (regenerated)
    prompt: list[int]
    healed: str  # text before the cursor taken back from the prompt: the answer starts with it
    line_stops: frozenset[int]  # the ids that end a line (the end id among them: Vocabulary.line_stops)
    end: int  # the id that ends an answer (the prompt format's: EOS, or Gemma's `<turn|>`)
    specials: frozenset[int]  # the ids that are no text
    # token healing's hold on the answer: each token consistent with the healed text until it is written
    # (`healing`), its belief judged among the ids that write it whole (`typed_word`)
    healing: Healing = NO_HEALING
    prose: bool = False  # the cursor writes a comment or a string (spans.in_prose)
    # whether an offset of the text is inside a triple-quoted string, when a syntax tree can tell (spans.in_docstring)
    in_docstring: Callable[[int], bool] | None = None
    # the line after a block body that its canvas pins after the answer ("\n" and the suffix's first non-blank
    # line), or "" (a rest of line, a format that pins none: PromptFormat.pins_suffix_head)
    suffix_head: str = ""

    @property
    def line(self) -> bool:
        """Whether the answer is the rest of the line (else a block or a few lines)."""
        return self.span.kind == "line"

    @property
    def stops(self) -> frozenset[int]:
        """The ids that end this span's answer: a line's end for a rest of line, else the end id alone."""
        return self.line_stops if self.line else frozenset({self.end})

    @property
    def known_tail(self) -> str:
        """The text after the cursor that a rest of line must end with (closers, punctuation), or ""."""
        tail = self.text[self.offset : self.suffix_start].rstrip() if self.line else ""
        return tail if is_known_tail(tail) else ""

    def unhealed(self, raw: str) -> str:
        """The text of an answer after the healed text it starts with (already in the buffer); "" when it does not."""
        if self.healed:
            return raw[len(self.healed) :] if raw.startswith(self.healed) else ""
        return raw


def is_known_tail(tail: str) -> bool:
    """Text after the cursor that a completion must end with: short runs of closers and punctuation."""
    return 0 < len(tail) <= 8 and set(tail) <= KNOWN_TAIL


def build_request(
    doc: SyntaxDocument, offset: int, context: Sequence[str], vocabulary: Vocabulary, options: PromptOptions
) -> Request:
    """The request at `offset` (within the text) with the cross-file `context` blocks in its prompt."""
    span = select_span(doc, offset)
    suffix_start = span.end if span.kind == "line" else offset  # a line span ends at the line end
    fresh = fresh_indentation(doc.text, offset) is not None
    heal = options.token_healing and (span.kind == "line" or fresh)
    prompt, healed = prompt_ids(
        doc.text, offset, suffix_start, vocabulary, options, context, heal=heal, language=doc.language
    )
    held = Healing(
        healing(healed, vocabulary, indentation=fresh), typed_word(healed, vocabulary), spelled(healed, vocabulary)
    )
    prose = in_prose(doc, offset)
    docstring = (lambda at: in_docstring(doc, at)) if doc.tree is not None else None
    stops = vocabulary.line_stops()
    end, specials = vocabulary.format.end_id, vocabulary.specials
    head = suffix_head(doc.text, suffix_start) if span.kind != "line" and vocabulary.format.pins_suffix_head else ""
    return Request(
        doc.text, offset, span, suffix_start, prompt, healed, stops, end, specials, held, prose, docstring, head
    )


def suffix_head(text: str, suffix_start: int) -> str:
    """ "\n" and the first non-blank line after the cursor's line, when the rest of the cursor's line is blank (else
    the answer is inserted inside a line, and nothing is pinned): "" when there is none."""
    first, *rest = text[suffix_start:].split("\n")
    if first.strip():
        return ""
    line = next((line for line in rest if line.strip()), "")
    return "\n" + line.rstrip() if line else ""


def prompt_ids(
    text: str,
    offset: int,
    suffix_start: int,
    vocabulary: Vocabulary,
    options: PromptOptions,
    context: Sequence[str] = (),
    heal: bool = False,
    language: str | None = None,
) -> tuple[list[int], str]:
    """(prompt ids in the model's format, healed text). With `heal`, the prefix's last token is taken back when it is a piece of the
    current line (`foo.ba` ends in ` ba`, a token the model rarely saw before a middle; `return ` ends in a space,
    which the model writes as the start of the next word): the answer must then start with that text (see
    `healing`), so the model writes the whole natural token. On a fresh line (nothing typed but indentation) the
    indentation is taken back: the model learnt whole lines as middles that start at the line start, with their
    indentation merged into their first word (`       ` + ` if`)."""
    tokenizer = vocabulary.tokenizer
    prefix = _prefix_window(text, offset, options.max_prompt_tokens * CHARS_PER_TOKEN)
    suffix_budget = tuning.MAX_SUFFIX_TOKENS
    suffix = text[suffix_start : suffix_start + suffix_budget * CHARS_PER_TOKEN]
    suffix_ids = _suffix_ids(suffix, vocabulary, suffix_budget)
    blocks = [tokenizer.encode(b) for b in context]
    healed = ""
    indentation = fresh_indentation(prefix, len(prefix)) if heal else None
    fresh = indentation is not None
    if fresh:  # a line with nothing typed but its indentation: the prompt ends at the line start, as in training
        prefix, healed = prefix[: len(prefix) - len(indentation)], indentation
    prefix_ids = tokenizer.encode(prefix)
    if heal and not fresh and len(prefix_ids) > 1:
        last = tokenizer.decode(prefix_ids[-1:])
        typed_before = prefix[: len(prefix) - len(last)].rsplit("\n", 1)[-1].strip()
        # a trailing space after code is taken back too (`return |`); a line's indentation is not
        partial = last.strip() or typed_before
        if partial and "\n" not in last and prefix.endswith(last) and vocabulary.starting_with(last):
            prefix_ids, healed = prefix_ids[:-1], last
            taken = 1
            while taken < tuning.HEAL_TOKENS and len(prefix_ids) > 1 and WORD_PIECE.fullmatch(healed):
                piece = tokenizer.decode(prefix_ids[-1:])
                if healed.startswith(" ") or not WORD_PIECE.fullmatch(piece) or not prefix.endswith(piece + healed):
                    break
                prefix_ids, healed, taken = prefix_ids[:-1], piece + healed, taken + 1
    budget = options.max_prompt_tokens
    prompt = vocabulary.format.prompt(
        prefix_ids, suffix_ids, budget, max_suffix=suffix_budget, context=blocks, language=language
    )
    return prompt, healed


def fresh_indentation(text: str, offset: int) -> str | None:
    """The indentation before `offset` when nothing else is typed on its line (a fresh line), else None."""
    start, _ = line_window(text, offset)
    head = text[start:offset]
    return head if is_line_start(text, start) and not head.strip() else None


def healing(healed: str, vocabulary: Vocabulary, indentation: bool = False) -> Allowed | None:
    """The draft constraint of token healing: the ids a draft's next token may take until its text covers
    `healed` (None after: any), so that a word taken back in pieces is written again in whichever tokens the
    model likes. A fresh line's `indentation` taken back is written again as it was, no deeper."""
    if not healed:
        return None
    ids = vocabulary.indenting if indentation else vocabulary.consistent_with

    def allowed(tokens: list[int]) -> list[int] | None:
        rest = _left_to_write(healed, tokens, vocabulary)
        return ids(rest) if rest else None

    return allowed


def typed_word(healed: str, vocabulary: Vocabulary) -> Allowed | None:
    """Where the healing constraint holds, the ids a token's probability is judged among: those that write the
    rest of the healed text whole (` None`, ` NoneType` after ` Non`), when there are any, else all the constraint
    allows. A token that writes only a piece of it (` No`) is another way of spelling what is typed, not a rival
    answer: counting it would make the model look unsure of a word it knows."""
    if not healed:
        return None

    def among(tokens: list[int]) -> list[int] | None:
        rest = _left_to_write(healed, tokens, vocabulary)
        return (vocabulary.starting_with(rest) or vocabulary.consistent_with(rest)) if rest else None

    return among


def spelled(healed: str, vocabulary: Vocabulary) -> Spelled | None:
    """Where the healing constraint holds, what of the healed text is left to write, as the tokenizer writes it: a
    speculative draft (the model often writes a word taken back as the tokenizer would, a pass a token otherwise)."""
    if not healed:
        return None
    encode = vocabulary.tokenizer.encode

    def rest(tokens: list[int]) -> list[int]:
        left = _left_to_write(healed, tokens, vocabulary)
        return encode(left) if left else []

    return rest


def _left_to_write(healed: str, tokens: list[int], vocabulary: Vocabulary) -> str:
    """What of the healed text `tokens` have not written yet ("" once they cover it)."""
    done = vocabulary.tokenizer.decode(tokens) if tokens else ""
    return healed[len(done) :] if len(done) < len(healed) else ""


def _prefix_window(text: str, offset: int, chars: int) -> str:
    """The text before the cursor, cut at a line start so the first token is not a fragment. The cut point
    moves in steps of 1 KiB, not with every keystroke, so that consecutive prompts share their beginning."""
    start = max(0, (offset - chars) // 1024 * 1024)
    if start:
        nl = text.find("\n", start, offset)
        start = nl + 1 if nl >= 0 else start
    return text[start:offset]


def _suffix_ids(suffix: str, vocabulary: Vocabulary, budget: int) -> list[int]:
    """The suffix's head in whole lines (a syntax boundary, not a token count, ends it) within the budget."""
    ids = vocabulary.tokenizer.encode(suffix)
    while len(ids) > budget and "\n" in suffix.rstrip("\n"):
        suffix = suffix[: suffix.rstrip("\n").rfind("\n") + 1]
        ids = vocabulary.tokenizer.encode(suffix)
    return ids
