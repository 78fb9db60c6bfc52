"""Decoder adapters: weights that act in the canvas decoder's pass only (modules.LowRank on each layer's q/k/v/o
and beside its dense MLP), so the decoder can learn to draft what the encoder writes while every shared weight,
and so every encoder logit, stays as it was. A checkpoint has them when its config names their rank
(config.ADAPTER_KEY); `diffill train decoder` (training/decoder/) attaches and trains them."""

from __future__ import annotations

from torch import nn

from .diffusion_gemma import DiffusionGemma
from .modules import AttentionAdapters, LowRank


def attach_decoder_adapters(net: DiffusionGemma, rank: int) -> None:
    """Gives a model without adapters fresh ones of `rank` (each a zero update until trained), on its device
    and dtype; its config then saves the rank with it."""
    if net.config.decoder_adapter_rank:
        raise ValueError(f"the model has decoder adapters already (rank {net.config.decoder_adapter_rank})")
    h = net.config.hidden_size
    for layer in net.layers:
        layer.self_attn.decoder_adapters = AttentionAdapters(layer.self_attn, h, rank)
        layer.decoder_mlp_adapter = LowRank(h, h, rank)
    net.config.decoder_adapter_rank = rank
    net.to(device=net.device, dtype=net.dtype)


def decoder_only_parameters(net: DiffusionGemma) -> list[tuple[str, nn.Parameter]]:
    """The parameters only the decoder's pass reads: its adapters and the self-conditioning MLP (the encoder
    never self-conditions). Training these and nothing else cannot change the encoder."""
    return [
        (name, p)
        for name, p in net.named_parameters()
        if ".decoder_adapters." in name or ".decoder_mlp_adapter." in name or name.startswith("self_conditioning.")
    ]
