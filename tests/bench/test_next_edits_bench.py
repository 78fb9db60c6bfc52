"""`diffill bench next-edits` on a history made here: hunks read from git, replayed in order, scored."""

from __future__ import annotations

import json
import subprocess

from next_edit_sample import SIGNING

from diffill.bench.history import file_changes
from diffill.bench.next_edits import Score, replay, run
from diffill.infill.next_edits import Proposal

V1 = (
    SIGNING.replace("    return hashlib.sha1(secret)\n", "    mac = hashlib.sha1(secret)\n    return mac\n")
    + "\n\nDEFAULT = hashlib.sha256\nFALLBACK = hashlib.sha256\n"
)

# the same name replaced at three places (a repeated change), and an unrelated line
V2 = V1.replace("hashlib.sha1", "_lazy_sha1").replace("import hashlib\n", "import hashlib  # noqa: F401\n")
# one hunk: the other `hashlib.sha256` is proposed and is wrong (it stays)
V3 = V2.replace("DEFAULT = hashlib.sha256", "DEFAULT = _sha256")


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _history(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    for i, text in enumerate([V1, V2, V3]):
        (repo / "sign.py").write_text(text)
        (repo / "notes.txt").write_text(f"v{i}\n")  # a file in no served language
        _git(repo, "add", ".")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"v{i}")
    return repo


def test_history_gives_each_commits_hunks_in_order(tmp_path):
    changes = list(file_changes(str(_history(tmp_path))))
    assert [c.path for c in changes] == ["sign.py", "sign.py"]  # newest first; notes.txt and the first commit out
    newest, older = changes
    assert older.before == V1 and newest.before == V2
    assert [h.old_start for h in older.hunks] == [0, 4, 9, 14]
    assert older.hunks[1].new_lines == ("    mac = _lazy_sha1(key)\n",) and older.hunks[1].old_count == 1


def test_the_replay_scores_proposals_against_the_hunks_to_come(tmp_path):
    lines: list[str] = []
    summary = run([str(_history(tmp_path))], out=lines.append)
    assert json.loads(lines[-1]) == summary
    assert lines[-2] == f"training overlap: {100 * summary['training_overlap']:.1f} %"
    # V1 -> V2: after the first sha1 hunk both other sha1 lines are proposed, exactly (the import's hunk first)
    # V2 -> V3: the other `hashlib.sha256` is proposed, and wrong
    assert summary["edits"] == 5
    assert summary["proposals"] == 3
    assert summary["precision"] == round(2 / 3, 3)
    assert summary["recall_repeated"] == 1.0
    assert summary["recall"] == round(2 / 3, 3)
    assert summary["wrong_per_100_edits"] == 20.0
    assert summary["p95_ms"] > 0


def test_a_models_rewrites_join_the_proposals_and_are_scored_with_them(tmp_path):
    """A rewriter (the engine's rewrite_below, bound; here one that writes `_lazy_sha1` at the next `hashlib.sha1`
    below the last edit) is asked after each hunk with the latest edits: what it adds is scored, what a rule
    proposed already is not shown twice."""
    asked: list[int] = []

    def rewriter(doc, recent):
        asked.append(len(recent))
        at = doc.text.find("hashlib.sha1", recent[-1].start + len(recent[-1].after))
        return [] if at < 0 else [Proposal(at, at + len("hashlib.sha1"), "_lazy_sha1", "hashlib.sha1")]

    plain, joined = Score(), Score()
    for change in file_changes(str(_history(tmp_path))):
        replay(change, plain)
        replay(change, joined, rewriter)
    assert asked == [1, 1, 2, 3, 3]  # V2 -> V3 (one hunk), then V1 -> V2 (four hunks): at most the last three
    assert (plain.proposals, plain.right, plain.later_proposed) == (3, 2, 2)
    # the first sha1 hunk is proposed after the import's too (its line reads as the next one's: one proposal shown)
    assert (joined.proposals, joined.right, joined.later_proposed) == (3, 2, 3)
