"""A repository's history as a user would have typed it: each commit's change to a file as its hunks, in order.

`git log -p -U0` gives every hunk with no context lines; the file before the commit comes from its blob
(`--full-index`, then `git cat-file --batch`). Merges, renames, binary files and languages diffill does not
serve are left out.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from diffill.infill.languages import language_for

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
LINE = re.compile(r"[^\n]*\n|[^\n]+")
MAX_FILE_BYTES = 512 * 1024  # a bigger file is generated or vendored, not typed


@dataclass(frozen=True)
class Hunk:
    old_start: int  # 0-based line of the file before the commit where the hunk's old lines start
    old_count: int
    new_lines: tuple[str, ...]  # with their line ends


@dataclass(frozen=True)
class FileChange:
    commit: str
    path: str
    language: str
    before: str  # the file's text before the commit
    hunks: tuple[Hunk, ...]


def lines_of(text: str) -> list[str]:
    """The lines of `text`, each with its "\\n" (the last one may have none)."""
    return LINE.findall(text)


def _blobs(git_dir: str) -> subprocess.Popen:
    return subprocess.Popen(
        ["git", "-C", git_dir, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


def _read_blob(cat: subprocess.Popen, blob: str) -> bytes | None:
    cat.stdin.write(blob.encode() + b"\n")  # type: ignore[union-attr]
    cat.stdin.flush()  # type: ignore[union-attr]
    header = cat.stdout.readline().split()  # type: ignore[union-attr]
    if len(header) < 3 or header[1] != b"blob":
        return None
    data = cat.stdout.read(int(header[2]))  # type: ignore[union-attr]
    cat.stdout.read(1)  # type: ignore[union-attr]
    return data


def file_changes(git_dir: str, max_commits: int | None = None, rev: str = "HEAD") -> Iterator[FileChange]:
    """The changes of `rev`'s history, newest commit first, one per (commit, file) in a served language."""
    git_dir = str(Path(git_dir))
    argv = ["git", "-C", git_dir, "log", "-p", "-U0", "--no-merges", "--no-renames", "--full-index"]
    argv += ["--no-color", "--format=commit %H", "--diff-filter=M", "--no-ext-diff"]
    if max_commits:
        argv.append(f"-n{max_commits}")
    argv.append(rev)
    log = subprocess.Popen(argv, stdout=subprocess.PIPE, encoding="utf-8", errors="replace")
    cat = _blobs(git_dir)
    try:
        commit = path = blob = ""
        hunks: list[Hunk] = []
        pending: list[str] | None = None  # the new lines of the hunk being read

        def flush() -> FileChange | None:
            if not (path and blob and hunks):
                return None
            language = language_for(None, path)
            data = _read_blob(cat, blob) if language else None
            if data is None or len(data) > MAX_FILE_BYTES or b"\0" in data:
                return None
            try:
                before = data.decode("utf-8")
            except UnicodeDecodeError:
                return None
            return FileChange(commit, path, language, before, tuple(hunks))

        for raw in log.stdout:  # type: ignore[union-attr]
            line = raw
            if line.startswith("commit ") or line.startswith("diff --git "):
                if pending is not None:
                    hunks[-1] = Hunk(hunks[-1].old_start, hunks[-1].old_count, tuple(pending))
                    pending = None
                change = flush()
                if change is not None:
                    yield change
                hunks, blob = [], ""
                if line.startswith("commit "):
                    commit, path = line.split()[1], ""
                else:
                    path = line.rstrip("\n").split(" b/", 1)[-1]
                continue
            if line.startswith("index ") and ".." in line:
                blob = line.split()[1].split("..")[0]
            elif line.startswith("Binary files"):
                blob = ""
            elif m := HUNK.match(line):
                if pending is not None:
                    hunks[-1] = Hunk(hunks[-1].old_start, hunks[-1].old_count, tuple(pending))
                start, count = int(m.group(1)), int(m.group(2) or "1")
                hunks.append(Hunk(start - 1 if count else start, count, ()))
                pending = []
            elif pending is not None and line.startswith("+"):
                pending.append(line[1:])
            elif pending is not None and line.startswith("\\") and pending:
                pending[-1] = pending[-1].rstrip("\n")  # "\ No newline at end of file" after an added line
        if pending is not None:
            hunks[-1] = Hunk(hunks[-1].old_start, hunks[-1].old_count, tuple(pending))
        change = flush()
        if change is not None:
            yield change
    finally:
        log.stdout.close()  # type: ignore[union-attr]
        log.kill()
        log.wait()
        cat.stdin.close()  # type: ignore[union-attr]
        cat.kill()
        cat.wait()
