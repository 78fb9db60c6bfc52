"""Weight-only quantization of the text stack: int8, int4 (group-wise) and fp8 (e4m3), for memory and bandwidth.

What is quantized: the attention projections, the dense and self-conditioning MLPs and the experts' 3-D tensors
(where almost all the bytes are). What is not: embeddings (also the tied head), norms, the router (a flipped
top-k choice costs more than its few bytes save) and the layer scalars. Scales are per group of `group_size`
inputs (int4: 128, or the largest power of two dividing the input width, e.g. 64 for 704 and 2112) or per output
channel (int8 and fp8 by default). The packed layout is in kernels/qformat.py.
On CUDA with triton the modules call the Triton kernels; elsewhere they dequantize on the fly (torch reference).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from diffill.kernels import tiles
from diffill.kernels._triton import use_triton
from diffill.kernels.moe import QuantizedExperts, fused_moe
from diffill.kernels.qformat import FP8_DTYPE, SCALE_DTYPE, dequantize, in_features, pack_int4, row_major, tile_major
from diffill.kernels.qlinear import qlinear
from diffill.kernels.tiles import k_block

from .modules import Experts

SCHEMES = ("int8", "int4", "fp8")
LINEAR_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
QMAX = {"int8": 127.0, "int4": 7.0, "fp8": 448.0}


@dataclass(frozen=True)
class QuantSpec:
    """A quantization recipe; `group_size` 0 means one scale per output channel."""

    scheme: str
    group_size: int = 0

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown quantization {self.scheme!r} (one of {', '.join(SCHEMES)})")
        if self.scheme == "fp8" and FP8_DTYPE is None:
            raise ValueError("fp8 needs a torch with float8_e4m3fn")

    @classmethod
    def of(cls, value: str | QuantSpec | dict[str, Any]) -> QuantSpec:
        """From a scheme name (with its default grouping), a spec, or a config.json `quantization` entry."""
        if isinstance(value, QuantSpec):
            return value
        if isinstance(value, dict):
            return cls(value["scheme"], int(value.get("group_size", 0)))
        return cls(value, 128 if value == "int4" else 0)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def group_for(self, k: int) -> int | None:
        """The group size used for a weight with `k` inputs (None: cannot be stored in this scheme; keep dense)."""
        if self.scheme == "int4" and k % 2:
            return None
        if self.group_size <= 0 or self.scheme == "fp8":
            return k
        g = self.group_size
        while g > 1 and k % g:
            g //= 2
        return g if g >= 2 or self.scheme != "int4" else None


def quantize_tensor(w: torch.Tensor, spec: QuantSpec, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(qweight, scales) for a weight [..., N, K]: symmetric, scale = absmax / qmax per group, in fp32."""
    k = w.shape[-1]
    grouped = w.float().reshape(*w.shape[:-1], k // group, group)
    qmax = QMAX[spec.scheme]
    scales = (grouped.abs().amax(dim=-1) / qmax).clamp(min=2.0**-24).to(SCALE_DTYPE)
    scaled = grouped / scales.float()[..., None]
    if spec.scheme == "fp8":
        q = scaled.clamp(-qmax, qmax).to(FP8_DTYPE)
    else:
        q = scaled.round().clamp(-qmax - 1, qmax).to(torch.int8)
    q = q.reshape(w.shape)
    return (pack_int4(q) if spec.scheme == "int4" else q), scales


def qweight_shape(shape: tuple[int, ...], spec: QuantSpec, group: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shapes of (qweight, scales) for a dense weight of `shape`."""
    *lead, k = shape
    q_k = k // 2 if spec.scheme == "int4" else k
    return (*lead, q_k), (*lead, k // group)


def qweight_dtype(spec: QuantSpec) -> torch.dtype:
    return {"int8": torch.int8, "int4": torch.uint8, "fp8": FP8_DTYPE}[spec.scheme]


class QuantLinear(nn.Module):
    """A bias-free nn.Linear whose weight is stored quantized (buffers `qweight`, `scales`)."""

    def __init__(self, in_features: int, out_features: int, spec: QuantSpec, device: Any = None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.spec = spec
        group = spec.group_for(in_features)
        if group is None:
            raise ValueError(f"{spec.scheme} cannot store a weight with {in_features} inputs")
        q_shape, s_shape = qweight_shape((out_features, in_features), spec, group)
        self.register_buffer("qweight", torch.zeros(q_shape, dtype=qweight_dtype(spec), device=device))
        self.register_buffer("scales", torch.ones(s_shape, dtype=SCALE_DTYPE, device=device))

    @classmethod
    def from_weight(cls, weight: torch.Tensor, spec: QuantSpec) -> QuantLinear:
        out_f, in_f = weight.shape
        mod = cls(in_f, out_f, spec, device="meta")
        mod.qweight, mod.scales = quantize_tensor(weight, spec, spec.group_for(in_f))
        return mod

    def dequantized(self, dtype: torch.dtype) -> torch.Tensor:
        return dequantize(self.qweight, self.scales, self.spec.scheme, dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return qlinear(x, self.qweight, self.scales, self.spec.scheme)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, {self.spec.scheme}, group={self.scales.shape[-1]}"


class QuantExperts(nn.Module):
    """Experts with quantized gate_up [E, 2*Ie, H] and down [E, H, Ie] tensors; same forward contract."""

    def __init__(self, num_experts: int, hidden: int, intermediate: int, spec: QuantSpec, device: Any = None):
        super().__init__()
        self.num_experts = num_experts
        self.spec = spec
        for name, shape in (
            ("gate_up", (num_experts, 2 * intermediate, hidden)),
            ("down", (num_experts, hidden, intermediate)),
        ):
            group = spec.group_for(shape[-1])
            if group is None:
                raise ValueError(f"{spec.scheme} cannot store expert weights with {shape[-1]} inputs")
            q_shape, s_shape = qweight_shape(shape, spec, group)
            self.register_buffer(f"{name}_qweight", torch.zeros(q_shape, dtype=qweight_dtype(spec), device=device))
            self.register_buffer(f"{name}_scales", torch.ones(s_shape, dtype=SCALE_DTYPE, device=device))

    @classmethod
    def from_tensors(cls, gate_up: torch.Tensor, down: torch.Tensor, spec: QuantSpec) -> QuantExperts:
        e, two_ie, h = gate_up.shape
        mod = cls(e, h, two_ie // 2, spec, device="meta")
        mod.gate_up_qweight, mod.gate_up_scales = quantize_tensor(gate_up, spec, spec.group_for(h))
        mod.down_qweight, mod.down_scales = quantize_tensor(down, spec, spec.group_for(two_ie // 2))
        return mod

    def packed(self) -> QuantizedExperts:
        return QuantizedExperts(
            self.gate_up_qweight, self.gate_up_scales, self.down_qweight, self.down_scales, self.spec.scheme
        )

    def forward(self, x: torch.Tensor, weights: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return fused_moe(x, weights, index, self.packed())


def is_target(name: str, module: nn.Module) -> bool:
    """The modules quantize_model replaces (by name, so that the router's `proj` stays in full precision)."""
    if isinstance(module, Experts):
        return True
    return isinstance(module, nn.Linear) and module.bias is None and name.rsplit(".", 1)[-1] in LINEAR_TARGETS


def storable(module: nn.Module, spec: QuantSpec) -> bool:
    """Whether the spec can hold this module's weights (e.g. int4 needs an even input width)."""
    if isinstance(module, Experts):
        _, two_ie, h = module.gate_up_proj.shape
        return spec.group_for(h) is not None and spec.group_for(two_ie // 2) is not None
    return spec.group_for(module.in_features) is not None


def quantized_module(module: nn.Module, spec: QuantSpec, tensors: dict[str, torch.Tensor]) -> nn.Module:
    """The quantized replacement of `module`, from its dense tensors (`weight`, or `gate_up_proj`/`down_proj`)."""
    if isinstance(module, Experts):
        return QuantExperts.from_tensors(tensors["gate_up_proj"], tensors["down_proj"], spec)
    return QuantLinear.from_weight(tensors["weight"], spec)


def set_submodule(root: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, child, module)


@torch.no_grad()
def quantize_model(net: nn.Module, scheme: str | QuantSpec) -> nn.Module:
    """Replaces the target modules of a loaded model in place, one at a time (the dense weight is freed at once)."""
    spec = QuantSpec.of(scheme)
    for name, module in list(net.named_modules()):
        if not is_target(name, module) or not storable(module, spec):
            continue
        tensors = dict(module.named_parameters(recurse=False))
        set_submodule(net, name, quantized_module(module, spec, tensors))
    net.quantization = spec
    return net


# ----- the kernels' layout -----
_PACKED = (("qweight", "scales"), ("gate_up_qweight", "gate_up_scales"), ("down_qweight", "down_scales"))


def _packed_pairs(net: nn.Module):
    """(module, qweight name, scales name) of every int4/int8 packed weight in `net`."""
    for module in net.modules():
        if isinstance(module, (QuantLinear, QuantExperts)) and module.spec.scheme in ("int4", "int8"):
            for q, sc in _PACKED:
                if hasattr(module, q):
                    yield module, q, sc


def tile_weights(net: nn.Module) -> int:
    """Rearranges every int4/int8 weight tile-major (kernels/qformat.py) for the K tile its kernel reads, so that
    each weight tile is one contiguous run of memory; returns how many were. Only where the Triton kernels run
    (the torch paths read either layout, at the cost of a copy). Weights whose K does not split are left."""
    done = 0
    for module, q, sc in _packed_pairs(net):
        qweight, scales = getattr(module, q), getattr(module, sc)
        if qweight.ndim == scales.ndim + 1:
            continue
        k = in_features(qweight, module.spec.scheme)
        bk = k_block(k // scales.shape[-1], k)
        try:
            setattr(module, q, tile_major(qweight, module.spec.scheme, bk) if bk else qweight)
        except ValueError:
            continue
        done += bk is not None
    return done


def untile_weights(net: nn.Module) -> int:
    """The row-major layout back (what checkpoints store); returns how many weights were tile-major."""
    done = 0
    for module, q, sc in _packed_pairs(net):
        qweight, scales = getattr(module, q), getattr(module, sc)
        if qweight.ndim == scales.ndim + 1:
            setattr(module, q, row_major(qweight, scales).contiguous())
            done += 1
    return done


def lay_out_for_kernels(net: nn.Module) -> nn.Module:
    """The quantized weights in the layout the Triton kernels read best, where they run (kernels.tiles
    TILE_MAJOR: tile-major, off until a GPU run says otherwise)."""
    weight = next(net.parameters(), None)
    if tiles.TILE_MAJOR and weight is not None and use_triton(weight):
        tile_weights(net)
    return net
