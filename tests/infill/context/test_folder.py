"""The folder's files beside the edited one: same extension, never the file itself, re-read only when changed."""

import os

from diffill.infill.context.folder import LISTING_TTL_S, MAX_FILE_BYTES, FolderFiles


def test_siblings_are_the_same_kind_of_file_beside_this_one(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    (tmp_path / "c.js").write_text("let z = 3\n")
    (tmp_path / "big.py").write_text("#" * (MAX_FILE_BYTES + 1))
    (tmp_path / "blob.py").write_bytes(b"\x00\x01binary")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.py").write_text("w = 4\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "b.py")
    texts = FolderFiles().texts(tmp_path / "a.py")
    assert [(p.name, t) for p, t in texts] == [("b.py", "y = 2\n")]


def test_the_folder_is_listed_again_after_a_while_and_a_changed_sibling_read_again(tmp_path):
    now = [0.0]
    sib = FolderFiles(clock=lambda: now[0])
    (tmp_path / "b.py").write_text("y = 2\n")
    assert [t for _, t in sib.texts(tmp_path / "a.py")] == ["y = 2\n"]
    (tmp_path / "b.py").write_text("y = 22\n")
    stat = (tmp_path / "b.py").stat()
    os.utime(tmp_path / "b.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    (tmp_path / "c.py").write_text("z = 3\n")
    assert [t for _, t in sib.texts(tmp_path / "a.py")] == ["y = 2\n"]  # within LISTING_TTL_S: the last listing
    now[0] += LISTING_TTL_S
    assert sorted(t for _, t in sib.texts(tmp_path / "a.py")) == ["y = 22\n", "z = 3\n"]
    assert sib.texts(tmp_path / "gone" / "a.py") == []
