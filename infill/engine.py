"""The completion engine: document + cursor -> request -> plan (sources, priors, cut) -> filtered edit.

`CompletionEngine.answer` is the one entry of the daemon, `diffill complete` and `diffill eval`: a rename in
progress comes first (carried into the lines below, if the model agrees), then a parameter list being edited (the
calls below follow), then a completion at the cursor. A completion reads top to bottom as its stages: the request
(span, prompt, token healing: infill.request), the code around that copies and the n-gram evidence come from
(infill.context), a session on the prompt (model.session: the only way to the network), the plan its request
chose (infill.plans), and the post-processing filters (infill.postprocess).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from diffill.model.api import DiffusionModel
from diffill.model.chat_tokenizer import ChatTokenizer
from diffill.model.corpus_memory import CorpusMemory
from diffill.model.fim import build_canvas, prefix_within
from diffill.model.ngram import NgramMixer
from diffill.model.prompt_format import ChatFormat
from diffill.model.session import Speculation, prompter_for
from diffill.model.tokenizer import CodeTokenizer

from . import call_sites, edits, plans, tuning
from .completion import Completion, edit_key
from .context.folder import FolderFiles
from .context.neighbours import Neighbours, neighbours_of
from .context.ngram_evidence import NgramEvidence
from .context.prompt_context import PromptContext
from .context.recent_edits import RecentEdits
from .context.workspace import WorkspaceIndex
from .cost import Cost
from .deadline import Deadline, PassClock
from .document import SyntaxDocument, count_errors
from .edits import RenameTracker
from .filters.base import Candidate
from .next_edits import Edit, Proposal, parse_clean, rewrite
from .options import EngineOptions
from .postprocess import postprocess
from .request import CHARS_PER_TOKEN, Request, build_request, prompt_ids
from .signatures import SignatureChange, SignatureTracker
from .sources import draft, line_search
from .sources.names import KnownNames, known_names
from .vocabulary import Vocabulary


class CompletionEngine:
    def __init__(
        self,
        model: DiffusionModel,
        tokenizer: CodeTokenizer | ChatTokenizer,
        options: EngineOptions | None = None,
        memory: CorpusMemory | None = None,
    ):
        self.model = model
        self.memory = memory  # the model's corpus memory (model.corpus_memory), when it has one
        self.tokenizer = tokenizer
        self.vocabulary = Vocabulary(tokenizer)
        self.options = options or EngineOptions()  # replaced whole when settings change; read once a completion
        self.prompter = prompter_for(model)  # sessions on prompts, their caches kept across keystrokes
        self.prompt_context = PromptContext()
        self.folder = FolderFiles()
        self.evidence = NgramEvidence(tokenizer.encode, model.config.vocab_size)
        self.pass_clock = PassClock()  # what a model pass costs here (infill.deadline): calibrated, then measured
        # Set by the server: the workspace's definitions and the recent edits (prompt context, known names).
        self.workspace: WorkspaceIndex | None = None
        self.recent: RecentEdits | None = None
        # The editor's open documents (file path -> text), set by the server: copies come from them too, and
        # their unsaved text replaces what the disk has.
        self.open_documents: Callable[[], dict[str, str]] | None = None
        # Folders whose files may be read beside the document (the server sets the workspace roots: nothing
        # outside them is read); None: any folder (the CLI and `diffill eval`, given a path by the user).
        self.read_roots: list[Path] | None = None

    def warm_up(self) -> None:
        """Before the first completion: CUDA graphs captured for the shapes completions replay (model.graphs), then
        the pass clock calibrated on the passes as they will run."""
        d = self.options.drafts
        canvas = d.canvas_length or self.model.config.canvas_length
        self.model.warm_graphs((canvas, d.line_canvas_length or canvas))
        self.pass_clock.calibrate(self.model)

    def answer(
        self,
        doc: SyntaxDocument,
        offset: int,
        *,
        renames: RenameTracker | None = None,
        signatures: SignatureTracker | None = None,
        cancel: Callable[[], bool] | None = None,
        key: str | None = None,
        path: str | None = None,
        cost: Cost | None = None,
        start: float | None = None,
    ) -> Completion | None:
        """The answer at `offset`, or None: a rename carried on, calls following a signature, else a completion.
        `renames` / `signatures`: what the editor's edits of this document showed (absent for a document seen
        once, as in `diffill eval`); the rest as `complete` takes them. Raises Cancelled when `cancel()` says so."""
        rename = renames.rename_at(doc.text, offset) if renames is not None else None
        if rename is not None and (edited := self.edit(doc, offset, rename, cancel=cancel, key=key)) is not None:
            return edited
        changed = signatures.change_at(doc, offset) if signatures is not None else None
        if changed is not None and (followed := self.follow_signature(doc, offset, changed)) is not None:
            return followed
        return self.complete(doc, offset, cancel=cancel, key=key, path=path, cost=cost, start=start)

    def complete(
        self,
        doc: SyntaxDocument,
        offset: int,
        cancel: Callable[[], bool] | None = None,
        key: str | None = None,
        path: str | None = None,
        cost: Cost | None = None,
        start: float | None = None,
    ) -> Completion | None:
        """A completion at `offset`, or None. Raises diffill.model.cancel.Cancelled when `cancel()` says so.
        `key` (the document URI) selects the encoder cache reused across keystrokes; `path` is where the
        document is saved (copies and evidence come from the files beside it); `cost` gets what it cost.
        `start` (time.perf_counter) is when the request arrived: the latency budget counts from there."""
        o = self.options
        cost = cost if cost is not None else Cost()
        cost.pass_count = lambda: self.prompter.passes
        budget = o.budget.latency_budget_ms
        deadline = Deadline(budget, self.pass_clock, start) if budget is not None else None
        passes = self.prompter.passes
        offset = max(0, min(offset, len(doc.text)))
        with cost.stage("context"):
            context = self.prompt_context.blocks(
                doc, offset, key, path, self.workspace, self.recent, o.prompt.context_tokens
            )
        with cost.stage("prompt"):
            request = build_request(doc, offset, context, self.vocabulary, o.prompt)
        with cost.stage("evidence"):
            others, mix = self.around(request, path, o)
        plan = plans.plan_for(request, o)
        given = {"healing": request.healing, "mix": mix, "budget": deadline, "cancel": cancel}
        try:
            opened_at = time.perf_counter()
            with self.prompter.session(key or "", request.prompt, **given, **self._session_options(o)) as model:
                cost.record("prefill", opened_at)
                answer_from, answer_passes = time.perf_counter(), self.prompter.passes
                with cost.stage("names"):
                    names = self._known_names(request, path, o) if request.line else None
                canvas = draft.canvas_length(request.line, self.model.config.canvas_length, o.drafts)
                inputs = plans.Inputs(model, request, o, canvas, o.drafts.beam_width(budget), others, names, cost)
                answer = plans.PLANS[plan](inputs)
                # the pass clock times planned passes: a prefill run inside the answer is left out
                prefilled = model.counts
                self.pass_clock.observe(
                    (time.perf_counter() - answer_from) * 1e3 - prefilled.prefill_ms,
                    self.prompter.passes - answer_passes - prefilled.prefill_passes,
                )
                cost.count_drafts(model.counts)
                with cost.stage("filters"):  # (in the session: a filter may ask for the rest of the answer's line)
                    return self._filtered(doc, request, answer)
        finally:
            cost.passes += self.prompter.passes - passes

    def _session_options(self, o: EngineOptions) -> dict:
        """What a session is given besides the request's: the speculative rounds (when the options ask for them)
        and the vocabulary's extensions, by which a token's belief counts the texts that go on alike."""
        d = o.drafts
        spec = Speculation(tuning.SPECULATIVE_CANVAS, tuning.SEED, d.decoder_drafts) if d.speculative else None
        return {"speculation": spec, "extensions": self.vocabulary.extensions, "tokenizer": self.tokenizer}

    def _known_names(self, request: Request, path: str | None, o: EngineOptions) -> KnownNames | None:
        """The names the project knows that extend the word being typed, for a rest of line (the encoder's draft
        or the decoder's canvas may start with one)."""
        return known_names(request.text, request.offset, request.healed, self.workspace, path, o.names.symbol_prior)

    def around(self, request: Request, path: str | None, o: EngineOptions) -> tuple[list[str], NgramMixer | None]:
        """The texts copies come from and the n-gram evidence, for a rest of line and for spans the encoder
        drafts: a decoder-only model's rest of line gets both too (a copy seeds its canvas, draft.copy_seed, and
        the cut judges the answer with the encoder's beliefs mixed as the encoder's plan mixes them), its other
        spans neither. The files around are read only when copies could match here or the evidence learns from
        them."""
        kind = request.span.kind
        with_copies = o.copies.copy_prior is not None and line_search.could_match(request.text, request.offset, kind)
        if not o.drafts.ar and not request.line:
            return [], None
        mixing = self.vocabulary.format.ngram_mixing  # tuned with diffill's tokenizer and models only
        around = self._neighbours(path) if with_copies or (mixing and tuning.NGRAM_WEIGHT is not None) else None
        others = around.texts() if with_copies and around is not None else []
        if not mixing:
            return others, None
        mix = self.evidence.mixer(request.text, request.offset, request.prompt, around, self.memory)
        return others, mix

    def _filtered(self, doc: SyntaxDocument, request: Request, answer: plans.Answer) -> Completion | None:
        """The edit the filters make of the answer, or None when it would change nothing. The edit starts as a
        plain insertion; the suffix-overlap filter extends it over the rest of the line when the model rewrote
        that rest (as it was trained to), so closing brackets are never doubled. An answer cut short at doubt is
        judged for syntax as the line it was cut from (see filters.syntax_guard), written to its end only if
        the syntax guard asks for it (plans.Answer.whole)."""
        ids, cut, decode = answer.ids, answer.cut, self.tokenizer.decode
        raw = request.unhealed(decode(cut if cut is not None else ids))
        cut_from = request.unhealed(decode(ids)) if cut is not None else ""
        rest_of_whole = None
        if answer.whole is not None:
            whole = answer.whole
            rest_of_whole = lambda: request.unhealed(decode(whole()))  # noqa: E731
        offset = request.offset
        at = Candidate.at(
            doc.text,
            offset,
            request.span,
            doc.language,
            raw,
            tree=doc.tree,
            whole=cut_from,
            rest_of_whole=rest_of_whole,
            source=doc.source,
            offset_byte=doc.byte_offset(offset),
        )
        out = postprocess(at)
        if not out.text and out.replace_end == offset:
            return None
        if doc.text[offset : out.replace_end] == out.text:  # the edit would change nothing
            return None
        return Completion(offset, out.replace_end, out.text, request.span.kind, answer.source)

    def _neighbours(self, path: str | None) -> Neighbours:
        """The open documents and the folder's files around `path` (infill.context.neighbours)."""
        return neighbours_of(path, self.open_documents, self.folder, self.read_roots)

    def warm_sources(self, path: str | None) -> None:
        """Tokenize and index the texts a completion in `path` learns from (infill.context.ngram_evidence) ahead."""
        if tuning.NGRAM_WEIGHT is not None:
            around = self._neighbours(path)
            self.evidence.warm(around.opened, around.folder)

    def edit(
        self,
        doc: SyntaxDocument,
        offset: int,
        rename: tuple[str, str],
        cancel: Callable[[], bool] | None = None,
        key: str | None = None,
        max_canvas: int = 192,
    ) -> Completion | None:
        """An inline edit that carries a rename (old -> new) into the lines below the cursor, or None.

        The region below the cursor goes on the canvas twice, each occurrence of the old name noised: once to
        be filled with the new name, once with the old one. One decoder pass per candidate scores every slot, and
        each occurrence takes the name the model believes more (denoising restricted to the two candidates: a
        small model cannot spell a new identifier on its own, but it can tell which one the code needs). A region
        longer than `max_canvas` tokens renames every use in the code (names only: not strings or comments)."""
        o = self.options
        old, new = rename
        text = doc.text
        region = edits.find_region(text, offset, old, limit_at=edits.scope_end(doc, offset))
        region = edits.names_only(doc, region, (offset - len(new), offset), old) if region is not None else None
        if region is None:
            return None
        encode = self.tokenizer.encode
        ids_new, _, slots_new = edits.canvas_layout(text, region, encode(new), encode)
        ids_old, _, slots_old = edits.canvas_layout(text, region, encode(old), encode)
        if max(len(ids_new), len(ids_old)) + 1 > max_canvas:  # too long to judge on one canvas: every use renamed
            fills = [new] * len(region.occurrences)
        else:
            prompt, _ = prompt_ids(text, offset, region.end, self.vocabulary, o.prompt, language=doc.language)
            end = self.vocabulary.format.end_id
            with self.prompter.session(edit_key(key), prompt, cancel=cancel) as model:
                score_new = model.slot_scores(ids_new + [end], slots_new, tuning.SEED)
                score_old = model.slot_scores(ids_old + [end], slots_old, tuning.SEED)
            prior = tuning.RENAME_PRIOR
            fills = [new if n + prior >= was else old for n, was in zip(score_new, score_old, strict=True)]
        if new not in fills:
            return None
        replacement = edits.apply_fill(text, region, fills)
        edited = text[: region.start] + replacement + text[region.end :]
        if doc.language and count_errors(doc.language, edited) > count_errors(doc.language, text):
            return None
        return Completion(start=region.start, end=region.end, text=replacement, kind="edit")

    @property
    def rewrites(self) -> bool:
        """Whether the model can rewrite code it is shown (a chat checkpoint, here or on a server): it then writes
        next edits too (rewrite_below)."""
        return isinstance(self.vocabulary.format, ChatFormat)

    def rewrite_below(
        self,
        doc: SyntaxDocument,
        recent: Sequence[Edit],
        cancel: Callable[[], bool] | None = None,
        key: str | None = None,
    ) -> list[Proposal]:
        """The next edits the model writes in the lines below the last of the user's `recent` edits (finished, in
        the order made; infill.next_edits.rewrite): those it is sure of that add no parse error; none from a model
        that cannot rewrite. Raises Cancelled when `cancel()` says so."""
        fmt = self.vocabulary.format
        if not isinstance(fmt, ChatFormat) or not recent:
            return []
        o, text, encode, decode = self.options, doc.text, self.tokenizer.encode, self.tokenizer.decode
        canvas = self.model.config.canvas_length
        last = recent[-1]
        below = rewrite.region_below(text, last.start + len(last.after))
        fitted = rewrite.fit_region(below, text, encode, canvas) if below is not None else None
        if fitted is None:
            return []
        (start, end), region_ids = fitted
        budget = o.prompt.max_prompt_tokens
        changes: list[tuple[str, str]] = []
        for e in reversed(recent[-rewrite.RECENT_EDITS :]):  # the newest first, while they fit the prompt's budget
            cost = len(encode(e.before + e.after))
            if cost > budget:
                break
            budget -= cost
            changes.insert(0, (e.before, e.after))
        above = decode(prefix_within(encode(text[max(0, start - budget * CHARS_PER_TOKEN) : start]), budget))
        prompt = fmt.rewrite_prompt(changes, above, text[start:end], doc.language)
        with self.prompter.session(edit_key(key), prompt, cancel=cancel) as model:
            written = model.rewrite(build_canvas(region_ids, canvas, fmt.end_id), o.drafts.steps, tuning.SEED)
        if written is None:
            return []
        ids, probs = written
        confidence = rewrite.char_confidence(ids, probs, decode)
        found = rewrite.proposals(text, (start, end), decode(ids), confidence, o.rank.rewrite_min_confidence)
        return parse_clean(doc, found)

    def follow_signature(self, doc: SyntaxDocument, offset: int, change: SignatureChange) -> Completion | None:
        """An inline edit that passes an added parameter on (or drops a removed one) at the calls below the
        cursor (see infill.call_sites: the syntax tree decides, no model call)."""
        found = call_sites.follow_signature(doc, offset, change)
        if found is None:
            return None
        start, end, text = found
        return Completion(start=start, end=end, text=text, kind="edit")
