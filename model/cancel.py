"""The exception a cancelled generation raises (torch-free: the daemon's protocol layer catches it before torch
is loaded)."""


class Cancelled(Exception):
    """Raised between model passes when the caller's cancel check says so."""
