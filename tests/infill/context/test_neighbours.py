"""The texts around a document: the other open documents (their unsaved text first) and the folder's files."""

from diffill.infill.context.folder import FolderFiles
from diffill.infill.context.neighbours import neighbours_of


def test_copies_come_from_open_documents_and_the_files_beside_but_never_the_file_itself(tmp_path):
    """The open documents' text wins over the disk's (unsaved edits); the edited file's own path is left out,
    and a failing source of open documents costs nothing."""
    here, beside, opened = tmp_path / "here.py", tmp_path / "beside.py", tmp_path / "opened.py"
    here.write_text("secret_truth = 1\n")
    beside.write_text("on disk\n")
    opened.write_text("stale\n")
    folder = FolderFiles()

    def editor():
        return {str(opened): "unsaved\n", str(here): "the editor's copy of this file\n"}

    assert sorted(neighbours_of(str(here), editor, folder, None).texts()) == ["on disk\n", "unsaved\n"]
    assert neighbours_of(None, editor, folder, None).texts() == ["unsaved\n", "the editor's copy of this file\n"]

    def broken():
        raise RuntimeError("boom")

    assert sorted(neighbours_of(str(here), broken, folder, None).texts()) == ["on disk\n", "stale\n"]  # the disk's
    # the server names the workspace roots: files beside a document outside them are not read
    assert neighbours_of(str(here), broken, folder, [(tmp_path / "elsewhere").resolve()]).texts() == []
    inside = neighbours_of(str(here), broken, folder, [tmp_path.resolve()])
    assert sorted(inside.texts()) == ["on disk\n", "stale\n"]
    assert inside.here == here.resolve() and here.resolve() in {p for p, _ in inside.folder}  # for the n-grams
