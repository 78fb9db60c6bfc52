"""The engine's tuned numbers: no user setting and no model-card key moves them.

Each was chosen by a benchmark on the tuning set (not on the held-out code the figures are reported on): its row
in the "Tuned constants" table of docs/benchmarks.md gives the command and what the values beside it measured.
The engine reads them from here at the moment it uses them (`tuning.NAME`), so that an experiment or a test may
set one for a run; a user's knobs are the settings (lsp.settings) and a model's are its card (docs/model.md).
"""

from __future__ import annotations

# --- the prompt (infill.request) -------------------------------------------------------------------------------
MAX_SUFFIX_TOKENS = 64  # the prompt's suffix budget
# A word typed in several tokens (`su|pe` for `super`) is taken back whole, up to this many tokens, so the model
# writes it in its own tokens.
HEAL_TOKENS = 4
CONTEXT_TOKENS = 96  # cross-file context budget of models trained with it

# --- the model's own answer (infill.sources.draft, model.speculative) --------------------------------------------
LINE_CANVAS_LENGTH = 16  # a rest of line's canvas: it rarely needs more, and a step costs less
SEED = 0  # the denoiser's and the rename scorer's noise: the same answer for the same buffer
# The rest-of-line beam makes a pass per token where speculative greedy drafts verify several at once: it runs only
# under a latency budget at least this long.
BEAM_FROM_BUDGET_MS = 300.0
SPECULATIVE_CANVAS = 16  # tokens the decoder drafts beside each speculative pass

# --- copies of lines (infill.sources.copies, infill.priors, infill.doubt) ---------------------------------------
# Rest of line: other copies within this many nats of the best make the answer the start they share (`assertEqual(`).
COPY_HEDGE = 1.0
COPY_MIN_CONFIDENCE = 0.35  # a copy is cut before its first token under this
# A copy is shown only as far as its tokens together keep this probability, in a comment or a string this, and
# when only one place continues that way this.
COPY_ANSWER_CONFIDENCE = 0.35
COPY_PROSE_CONFIDENCE = 0.6
LONE_COPY_CONFIDENCE = 0.55
NEXT_LINE_CONFIDENCE = 0.1  # the same for a copied next line

# --- where an answer ends (infill.doubt) ----------------------------------------------------------------------
# The model's own answer is shown only as far as the encoder gives its tokens together this probability.
ANSWER_CONFIDENCE = 0.6

# --- renames (CompletionEngine.edit) -----------------------------------------------------------------------------
# The new name wins a slot unless the model believes the old one by more than this (mean log-probability per
# token, nats).
RENAME_PRIOR = 4.0

# --- the n-gram evidence mixed into every model call (infill.context.ngram_evidence, model.ngram) ------------------
# The code around, where two tokens of context match, plus the per-order weight per further token; None: off.
NGRAM_WEIGHT: float | None = 0.2
NGRAM_PER_ORDER = 0.1
# The model's corpus memory, where four tokens match, plus its per-order weight; None: off (it helps most on
# languages only the memory has).
MEMORY_WEIGHT: float | None = 0.2
MEMORY_PER_ORDER = 0.05
