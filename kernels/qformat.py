"""The packed weight formats shared by the quantized modules and the kernels (layout and dequantization only).

A weight [..., N, K] (N outputs, K inputs) is stored as `qweight` plus `scales` [..., N, K // group] (fp16):
- int8: int8 values in [-127, 127]; `group == K` is per-output-channel.
- int4: values in [-8, 7] stored as value + 8, two per uint8 along K (even k in the low nibble): [..., N, K // 2].
- fp8: torch.float8_e4m3fn values, per-output-channel scales.
w = value * scale for every element of a group. Symmetric, no zero points: the kernels then need one multiply.
On a GPU the int4/int8 bytes may be rearranged tile-major at load (`tile_major`), the layout the kernels then read
in whole contiguous tiles; `dequantize` and `row_major` take either layout.
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


def block_bytes(scheme: str, bk: int) -> int:
    """Bytes of one row's K tile of `bk` inputs."""
    return bk // 2 if scheme == "int4" else bk


def is_tile_major(qweight: torch.Tensor, scales: torch.Tensor) -> bool:
    """Whether `qweight` is in the kernels' tile-major layout [..., K / BK, N, BK bytes] (one axis more than its
    scales [..., N, groups]) rather than row-major [..., N, K bytes]."""
    return qweight.ndim == scales.ndim + 1


def tile_major(qweight: torch.Tensor, scheme: str, bk: int) -> torch.Tensor:
    """Row-major [..., N, Kq] -> tile-major [..., Kq / b, N, b] (b = block_bytes): the bytes of one K tile of all
    N rows side by side, so that a kernel's [BN rows x BK] weight tile is one contiguous run of memory."""
    kq = qweight.shape[-1]
    b = min(block_bytes(scheme, bk), kq)  # a tile wider than K: one tile, masked by the kernels
    if kq % b:
        raise ValueError(f"{kq} bytes a row do not split into K tiles of {b}")
    return qweight.unflatten(-1, (kq // b, b)).transpose(-3, -2).contiguous()


def row_major(qweight: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """The row-major bytes [..., N, Kq] of either layout."""
    if not is_tile_major(qweight, scales):
        return qweight
    return qweight.transpose(-3, -2).flatten(-2)


def in_features(qweight: torch.Tensor, scheme: str, scales: torch.Tensor | None = None) -> int:
    """K of a packed weight (pass `scales` when it may be tile-major)."""
    kq = qweight.shape[-1] * (qweight.shape[-3] if scales is not None and is_tile_major(qweight, scales) else 1)
    return kq * 2 if scheme == "int4" else kq


def dequantize(qweight: torch.Tensor, scales: torch.Tensor, scheme: str, dtype: torch.dtype) -> torch.Tensor:
    """The dense weight [..., N, K] in `dtype` (computed in fp32, then cast once), from either layout."""
    qweight = row_major(qweight, scales)
    values = unpack_int4(qweight) if scheme == "int4" else qweight
    k = values.shape[-1]
    groups = scales.shape[-1]
    grouped = values.float().reshape(*values.shape[:-1], groups, k // groups)
    return (grouped * scales.float()[..., None]).reshape(values.shape).to(dtype)


def weight_strides(qweight: torch.Tensor, scales: torch.Tensor, scheme: str, bk: int) -> tuple[int, int]:
    """(stride between rows, stride between K tiles) of a packed weight in either layout, in bytes: what the
    kernels' `stride_wn` and `stride_wb` take."""
    if is_tile_major(qweight, scales):
        return qweight.stride(-2), qweight.stride(-3)
    return qweight.stride(-2), block_bytes(scheme, bk) * qweight.stride(-1)
