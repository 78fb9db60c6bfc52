"""The workspace index's initial scan, run as a process of its own (`python -m diffill.infill.context.scan LIMITS`):
it reads and parses the wanted files under the roots at a low priority, on a core the completions do not use, and
writes each file's key and definitions as a JSON line ([key, [[path, name, kind, line, text], ...]]) for the
daemon's index to take in (infill.context.workspace). The same rules as the index's own: only files inside the
roots, none ignored, binary or too large, at most `max_files`."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import astuple

from .workspace import WorkspaceIndex

NICE = 10  # what the scan adds to its niceness: the daemon's completions come first


def main(argv: list[str]) -> int:
    limits = json.loads(argv[0])
    try:
        os.nice(NICE)
    except OSError:  # not allowed here: it runs as it is
        pass
    index = WorkspaceIndex(limits["roots"], max_files=limits["max_files"], max_file_bytes=limits["max_bytes"])
    out = sys.stdout
    try:
        for path in index.files():
            key, chunks = index.read(path)
            if chunks is not None:
                out.write(json.dumps([key, [astuple(c) for c in chunks]]) + "\n")
        out.flush()
    except BrokenPipeError:  # the daemon is gone, or stopped the scan
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
