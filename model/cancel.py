"""The exception a cancelled generation raises (torch-free: the daemon's protocol layer catches it before torch
is loaded)."""

from __future__ import annotations

from collections.abc import Callable


class Cancelled(Exception):
    """Raised between model passes when the caller's cancel check says so."""


def check(cancel: Callable[[], bool] | None) -> None:
    """Raises Cancelled when the caller's cancel check (if any) says so: called before each model pass."""
    if cancel is not None and cancel():
        raise Cancelled()
