"""The packed weight formats shared by the quantized modules and the kernels (layout and dequantization only).

A weight [..., N, K] (N outputs, K inputs) is stored as `qweight` plus `scales` [..., N, K // group] (fp16):
- int8: int8 values in [-127, 127]; `group == K` is per-output-channel.
- int4: values in [-8, 7] stored as value + 8, two per uint8 along K (even k in the low nibble): [..., N, K // 2].
- fp8: torch.float8_e4m3fn values, per-output-channel scales.
w = value * scale for every element of a group. Symmetric, no zero points: the kernels then need one multiply.
"""

from __future__ import annotations

import torch

SCALE_DTYPE = torch.float16
FP8_DTYPE = getattr(torch, "float8_e4m3fn", None)
BITS = {"int8": 8, "int4": 4, "fp8": 8}


def pack_int4(values: torch.Tensor) -> torch.Tensor:
    """int values in [-8, 7], shape [..., K] (K even) -> uint8 [..., K // 2], even k in the low nibble."""
    u = (values.to(torch.int16) + 8).to(torch.uint8)
    return u[..., 0::2] | (u[..., 1::2] << 4)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """uint8 [..., K // 2] -> int8 [..., K] in [-8, 7] (inverse of pack_int4)."""
    lo = (packed & 0xF).to(torch.int8) - 8
    hi = (packed >> 4).to(torch.int8) - 8
    return torch.stack((lo, hi), dim=-1).flatten(-2)


def in_features(qweight: torch.Tensor, scheme: str) -> int:
    return qweight.shape[-1] * 2 if scheme == "int4" else qweight.shape[-1]


def dequantize(qweight: torch.Tensor, scales: torch.Tensor, scheme: str, dtype: torch.dtype) -> torch.Tensor:
    """The dense weight [..., N, K] in `dtype` (computed in fp32, then cast once)."""
    values = unpack_int4(qweight) if scheme == "int4" else qweight
    k = values.shape[-1]
    groups = scales.shape[-1]
    grouped = values.float().reshape(*values.shape[:-1], groups, k // groups)
    return (grouped * scales.float()[..., None]).reshape(values.shape).to(dtype)
