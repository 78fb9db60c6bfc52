"""Whether a `model` setting names a server (torch- and HTTP-free: the daemon checks it before either loads)."""

SERVER_SCHEMES = ("http://", "https://")


def is_server_url(model: str) -> bool:
    """Whether the `model` setting names a server rather than a folder or a hub id."""
    return model.strip().lower().startswith(SERVER_SCHEMES)
