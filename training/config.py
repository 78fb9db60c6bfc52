"""What a training run is asked to do (`diffill train run`'s options), shared by the data pipeline and the loop."""

from __future__ import annotations

from dataclasses import dataclass

INIT_TRAINING = "init_training.json"  # a run's copy of the training.json of the weights it started from


@dataclass
class TrainConfig:
    corpus: str = "data/corpus"
    out: str = "runs/embedded"
    tokenizer: str = ""  # defaults to <out>/tokenizer.json, trained on first use
    prompt_len: int = 384
    max_suffix: int = 64
    canvas: int = 32
    # The daemon decodes rest-of-line spans on a shorter canvas (line_canvas_length): the bidirectional decoder
    # must see that length in training too, or its EOS/pad layout is one it never learnt.
    short_canvas: int = 16
    short_canvas_prob: float = 0.5
    batch: int = 8
    lr: float = 2e-3
    min_lr_frac: float = 0.1
    warmup: int = 200
    total_steps: int = 20_000
    weight_decay: float = 0.01
    ar_weight: float = 1.0
    diffusion_weight: float = 1.0
    self_cond_prob: float = 0.5
    pad_weight: float = 0.1
    context_prob: float = 0.5  # share of examples whose prompt carries sibling files' definitions
    context_tokens: int = 96
    # "ar": next-token loss only, on plain windows of code (no FIM layout, no padding, no canvas): the fast way
    # to teach a fresh network code before the diffusion phase ("fim"), as measured in embedded_training.md.
    objective: str = "fim"
    # Self-speculative drafts (model.speculative): the decoder drafts the rest of an answer after tokens the
    # encoder has committed, the last of them pinned at the canvas start. This share of FIM examples is split
    # so: the encoder reads the prompt and the first committed tokens, the canvas starts with the last one.
    split_prob: float = 0.0
    # The decoder drafts from pure noise in one or two passes: this share of canvases is noised whole (t = 1)
    # instead of at t ~ U(0, 1).
    full_noise_prob: float = 0.0
    # This share of canvases is taught the encoder's own greedy answer (sequence-level distillation: the draft
    # the encoder will accept) instead of the data; the encoder's next-token loss keeps the data.
    distill_prob: float = 0.0
    vocab_size: int = 4096  # of a tokenizer trained by this run
    save_every_s: float = 600.0
    log_every: int = 20
    max_minutes: float = 0.0  # 0 = until total_steps
    anneal_by_time: bool = False  # the cosine ends with max_minutes when that comes first (see lr_at)
    init: str = ""  # a model folder (e.g. model/weights) to start from when there is no checkpoint yet
    size: str = "embedded"  # the shape of a fresh model (model/presets.py); a checkpoint or --init keeps its own
    threads: int = 0
    # Processes building batches beside the training loop: FIM examples are costly (sibling files parsed for
    # context), which starves a GPU; on 2 CPU cores the model needs both, so 0 (in-process) there.
    workers: int = 0
    seed: int = 0
    device: str = "cpu"


@dataclass
class DecoderTrainConfig:
    """What `diffill train decoder` is asked to do (training/decoder/)."""

    corpus: str = "data/corpus"
    init: str = "model/weights"
    out: str = "runs/decoder"
    rank: int = 32
    anchors: int = 5000
    heldout_anchors: int = 300
    label_minutes: float = 0.0  # labelling the training split stops after this long (0: when it has `anchors`)
    lines_share: float = 0.25  # cursors on a fresh line (a few lines to write) among the rest-of-line ones
    batch: int = 32
    lr: float = 2e-3
    minutes: float = 45.0
    alone_share: float = 0.25  # canvases after the whole prompt, no pin: the decoder alone (`--draft none`)
    first_share: float = 0.35  # a speculative answer's first draft (the prompt's last token pinned); the rest later
    gamma: float = 5.0  # position k of a draft weighs exp(-k / gamma): its first tokens decide what is accepted
    pad_weight: float = 0.1
    second_weight: float = 1.0  # the on-policy second pass's loss beside the first's
    # the distillation term on the encoder's beliefs beside the labels' cross-entropy (0: the labels alone)
    kl_weight: float = 0.0
    # this share of canvases keeps each answer token with probability 1 - t (t ~ U(0, 1)): seeded canvases (a copy,
    # a known name, a draft), which the decoder refines rather than writes from noise
    partial_share: float = 0.0
    report_every_s: float = 900.0
    save_every_s: float = 300.0
    seed: int = 0
    threads: int = 0
    device: str = "cpu"  # where the caches are encoded and the adapters train (labels are written on CPU cores)
    workers: int = 0  # labelling processes (0: this one)
