"""Emacs 30 with editors/emacs/diffill.el against `diffill serve`:

- lsp-mode 10 (in a terminal, in tmux): typing the prompt's last character makes `lsp-inline-completion-mode`
  ask for ghost text after diffill's 0.2 s idle delay; the overlay is shown, TAB accepts it, C-x C-s saves.
- Eglot (batch): `completion-at-point` inserts diffill's completion item (its textEdit); typed while the model
  loads, the mode line shows the loading and the item comes once the model is ready.
"""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from editor_support import (
    EDITORS_DIR,
    MID_WORD,
    ROOT,
    LspLog,
    check_proposal,
    proposal_for,
    require_editor,
    server_settings,
    tap_command,
    wait_for,
)
from next_edit_sample import SIGNING_FOUR
from tmux_driver import Tmux

HERE = Path(__file__).parent


def emacs_bin() -> str:
    emacs = require_editor("emacs", "Emacs")
    out = subprocess.run([emacs, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"GNU Emacs (\d+)", out)
    if not m or int(m[1]) < 29:
        pytest.skip(
            f"{emacs} is {out.splitlines()[0] if out else '?'}: needs Emacs >= 29 (`bash editors/install.sh emacs`)"
        )
    return emacs


def lsp_mode_dir() -> Path:
    src = EDITORS_DIR / "elisp" / "usr" / "share" / "emacs" / "site-lisp" / "elpa-src"
    if not list(src.glob("lsp-mode-1[0-9]*")):
        pytest.skip(f"lsp-mode >= 10 not in {src}: install it with `bash editors/install.sh emacs`")
    return src


def events(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def run_lsp_mode(tmp_path, request, early: bool = False) -> None:
    """lsp-mode in a terminal Emacs: type the prompt's last character, wait for the ghost text overlay, TAB accepts,
    save: the file is the proposal applied. `early`: typed as soon as lsp-mode has opened the file, while the
    model loads: the overlay must come once it is ready, with no other key."""
    emacs = emacs_bin()
    elisp = lsp_mode_dir()
    direct, prompt = request.getfixturevalue("direct"), request.getfixturevalue("prompt")
    path = tmp_path / "example.py"
    path.write_text(prompt[:-1] + "\n")  # the last character is typed
    log, ready, out = tmp_path / "lsp.jsonl", tmp_path / "ready.json", tmp_path / "events.jsonl"
    env = {
        "DIFFILL_ROOT": str(ROOT),
        "ELISP_DIR": str(elisp),
        "DIFFILL_E2E_CMD": json.dumps(tap_command(log, ready)),
        "DIFFILL_E2E_SETTINGS": json.dumps(server_settings()),
        "DIFFILL_E2E_OUT": str(out),
        "HOME": str(tmp_path / "home"),
        "TERM": "xterm-256color",
    }
    (tmp_path / "home").mkdir()
    tm = Tmux("emacs", [emacs, "-nw", "-Q", "-l", str(HERE / "emacs_lsp_init.el"), str(path)], tmp_path, env)
    try:
        if not early:
            wait_for(lambda: ready.exists(), 120, what="diffill's model (ready file from the tap)")
        wait_for(lambda: any(e.get("event") == "opened" for e in events(out)), 60, what="lsp-mode to open the file")
        opened = next(e for e in events(out) if e["event"] == "opened")
        assert opened["inline-mode"] is True, opened
        tm.keys("M->")
        tm.keys("C-p")
        tm.keys("C-e")
        tm.keys(prompt[-1], literal=True, pause=0)
        typed_before_ready = not ready.exists()
        shown = wait_for(
            lambda: [e for e in events(out) if e["event"] == "shown"],
            60,
            what=f"the ghost text overlay; screen:\n{tm.screen()}",
        )[-1]
        assert shown["idle-delay"] == 0.2
        time.sleep(0.3)
        screen = tm.screen()
        tm.keys("TAB")  # diffill-accept-key
        wait_for(
            lambda: any(e["event"] == "accepted" for e in events(out)),
            10,
            what=f"TAB to accept; screen:\n{tm.screen()}",
        )
        tm.keys("C-x", "C-s")
        wait_for(lambda: any(e["event"] == "saved" for e in events(out)), 10, what=f"the save; screen:\n{tm.screen()}")
        tm.keys("C-x", "C-c")
        tm.wait_exit(10)
    finally:
        tm.close()
    diag = f"events={events(out)}\nlsp log: {LspLog(log).methods()}"
    p = proposal_for(LspLog(log), "textDocument/inlineCompletion", prompt + "\n")
    accepted = next(e for e in events(out) if e["event"] == "accepted")
    assert accepted["text"] == p.text
    # the overlay showed the proposal (lsp-mode puts the character before point into `display`)
    assert (shown["display"] + shown["after-string"]).endswith(p.text), (shown, p.text)
    first_line = p.text.split("\n")[0].strip()
    if first_line:
        assert first_line[:20] in screen, f"ghost text not on the screen:\n{screen}"
    assert path.read_text() == p.applied(), diag
    assert typed_before_ready or not early, "the model was ready before the key: nothing was asked while loading"
    check_proposal(direct, p)


def test_emacs_lsp_mode_inline_overlay_accepted(tmp_path, request):
    run_lsp_mode(tmp_path, request)


def test_emacs_lsp_mode_first_ghost_text_comes_when_the_model_is_ready_without_another_key(tmp_path, request):
    run_lsp_mode(tmp_path, request, early=True)


EGLOT_SCRIPT = r"""
(require 'json)
(add-to-list 'load-path (expand-file-name "editors/emacs" (getenv "DIFFILL_ROOT")))
(require 'diffill)
(require 'python)
(setq diffill-server-command (json-parse-string (getenv "DIFFILL_E2E_CMD") :array-type 'list)
      diffill-settings (json-parse-string (getenv "DIFFILL_E2E_SETTINGS") :object-type 'plist)
      make-backup-files nil)
(diffill-eglot-setup)
(setq eglot-sync-connect t eglot-autoshutdown t)
(defun out (obj) (princ (concat "E2E " (json-encode obj) "\n")))
(defun mode-line-text ()  ; Eglot's indicator as shown ("eglot:proj/0%"), with its tooltips in []
  (mode-line-flat (eglot--mode-line-format)))
(defun mode-line-flat (x)
  (cond ((stringp x)
           (let ((h (get-text-property 0 'help-echo x)))
             (concat (substring-no-properties x) (if (stringp h) (format "[%s]" h) ""))))
          ((and (consp x) (eq (car x) :propertize))
           (let ((h (plist-get (cddr x) 'help-echo)))
             (concat (mode-line-flat (cadr x)) (if (stringp h) (format "[%s]" h) ""))))
          ((consp x) (mapconcat #'mode-line-flat x ""))
          (t "")))
(let ((file (getenv "DIFFILL_E2E_FILE")) (ready (getenv "DIFFILL_E2E_READY")))
  (with-current-buffer (find-file-noselect file)
    (python-mode)
    (call-interactively #'eglot)            ; eglot-ensure only fires from a command loop
    (let ((server (eglot-current-server)) (deadline (+ (float-time) 120)))
      (unless server (out '(:error "no server")) (kill-emacs 1))
      (if (getenv "DIFFILL_E2E_EARLY")  ; type while the model loads, once Eglot's mode line shows the loading
          (progn
            (while (and (zerop (hash-table-count (eglot--progress-reporters server)))
                        (not (file-exists-p ready)) (< (float-time) deadline))
              (accept-process-output nil 0.05))
            (out (list :event "loading" :typed-before-ready (not (file-exists-p ready))
                       :mode-line (mode-line-text))))
        (while (and (not (file-exists-p ready)) (< (float-time) deadline)) (accept-process-output nil 0.1))
        (out (list :event "ready" :status (diffill-status))))
      (goto-char (point-max))
      (skip-chars-backward "\n")
      (insert (getenv "DIFFILL_E2E_LAST"))   ; type the prompt's last character
      (eglot--signal-textDocument/didChange)
      (let ((completion-auto-help nil) (before (buffer-string)))
        (completion-at-point)
        (out (list :event "completed" :before before :after (buffer-string))))
      (while (and (> (hash-table-count (eglot--progress-reporters server)) 0) (< (float-time) deadline))
        (accept-process-output nil 0.05))  ; the loading's end clears it from the mode line
      (out (list :event "after" :mode-line (mode-line-text)))
      (save-buffer)
      (out (list :event "saved"))
      (eglot-shutdown server))))
(kill-emacs 0)
"""


def run_eglot(tmp_path: Path, script: str, path: Path, **extra: str) -> tuple[list[dict], str, Path]:
    """Batch Emacs running `script` (Eglot) on `path`, the server through the recording tap: (the script's E2E
    events, a diagnosis for failed checks, the LSP log), once Emacs has exited with 0."""
    emacs = emacs_bin()
    (tmp_path / "e2e.el").write_text(script)
    log, ready = tmp_path / "lsp.jsonl", tmp_path / "ready.json"
    env = dict(
        os.environ,
        DIFFILL_ROOT=str(ROOT),
        DIFFILL_E2E_CMD=json.dumps(tap_command(log, ready)),
        DIFFILL_E2E_SETTINGS=json.dumps(server_settings()),
        DIFFILL_E2E_FILE=str(path),
        DIFFILL_E2E_READY=str(ready),
        HOME=str(tmp_path),
        **extra,
    )
    proc = subprocess.run(
        [emacs, "--batch", "-Q", "-l", str(tmp_path / "e2e.el")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    lines = [json.loads(x[4:]) for x in proc.stdout.splitlines() if x.startswith("E2E ")]
    diag = f"rc={proc.returncode}\nout={proc.stdout[-3000:]}\nerr={proc.stderr[-3000:]}\nlsp: {LspLog(log).methods()}"
    assert proc.returncode == 0, diag
    return lines, diag, log


def complete_with_eglot(tmp_path, direct, document: str, early: bool = False) -> list[dict]:
    """Eglot in batch Emacs: open `document` without its last character, type it, `completion-at-point` (one
    candidate: it is inserted, its textEdit applied), save: the buffer and the file must be the proposal applied.
    `early`: typed as soon as Eglot shows the model's loading, and completed with no other key."""
    path = tmp_path / "example.py"
    path.write_text(document[:-1] + "\n")
    extra = {"DIFFILL_E2E_EARLY": "1"} if early else {}
    lines, diag, log = run_eglot(tmp_path, EGLOT_SCRIPT, path, DIFFILL_E2E_LAST=document[-1], **extra)
    completed = next(e for e in lines if e.get("event") == "completed")
    p = proposal_for(LspLog(log), "textDocument/completion", document + "\n")
    assert completed["before"] == document + "\n"
    assert completed["after"] == p.applied(), (completed, p)
    assert path.read_text() == p.applied()
    check_proposal(direct, p)
    return lines


def test_emacs_eglot_completion_at_point(tmp_path, request):
    complete_with_eglot(tmp_path, request.getfixturevalue("direct"), request.getfixturevalue("prompt"))


def test_emacs_eglot_accepts_an_item_typed_mid_word(tmp_path, request):
    """After `self.tot`, completion-at-point filters candidates by the word at point: diffill's item starts with
    it and replaces it from its start, so the name is written once."""
    complete_with_eglot(tmp_path, request.getfixturevalue("direct"), MID_WORD)


def test_emacs_eglot_shows_the_loading_and_completes_once_the_model_is_ready(tmp_path, request):
    """Typed while the model loads: Eglot's mode line carries the loading ($/progress), completion-at-point waits
    for the model's answer (no second try), and the mode line drops the loading once it is ready."""
    lines = complete_with_eglot(tmp_path, request.getfixturevalue("direct"), request.getfixturevalue("prompt"), True)
    loading = next(e for e in lines if e.get("event") == "loading")
    assert loading["typed-before-ready"] is True, loading
    assert "Loading embedded model" in loading["mode-line"], loading
    after = next(e for e in lines if e.get("event") == "after")
    assert "Loading" not in after["mode-line"], after


EGLOT_NEXT_EDITS = r"""
(require 'json)
(add-to-list 'load-path (expand-file-name "editors/emacs" (getenv "DIFFILL_ROOT")))
(require 'diffill)
(require 'python)
(setq diffill-server-command (json-parse-string (getenv "DIFFILL_E2E_CMD") :array-type 'list)
      diffill-settings (json-parse-string (getenv "DIFFILL_E2E_SETTINGS") :object-type 'plist)
      make-backup-files nil
      eglot-confirm-server-edits nil)  ; (batch: no one to answer a prompt)
(diffill-eglot-setup)
(setq eglot-sync-connect t eglot-autoshutdown t)
(defun out (obj) (princ (concat "E2E " (json-encode obj) "\n")))
(defvar deadline (+ (float-time) 150))
(defun hints ()  ; diffill's hints as Flymake shows them, top to bottom
  (sort (seq-filter (lambda (d) (string-match-p "_lazy_sha1" (flymake-diagnostic-text d))) (flymake-diagnostics))
        (lambda (a b) (< (flymake-diagnostic-beg a) (flymake-diagnostic-beg b)))))
(defun wait-hints (n)  ; (batch Emacs has no idle time: Flymake is asked to run by hand)
  (while (and (/= (length (hints)) n) (< (float-time) deadline))
    (flymake-start)
    (accept-process-output nil 0.05))
  (vconcat (mapcar (lambda (d) (1- (line-number-at-pos (flymake-diagnostic-beg d)))) (hints))))  ; ([] for none)
(defun apply-action (server hint word)  ; eglot-code-actions at the hint, then the action whose title has WORD
  (let* ((actions (eglot-code-actions (flymake-diagnostic-beg hint) (flymake-diagnostic-end hint)))
         (chosen (seq-find (lambda (a) (string-match-p (regexp-quote word) (plist-get a :title))) actions)))
    (out (list :event "actions" :titles (mapcar (lambda (a) (plist-get a :title)) actions)))
    (eglot-execute server chosen)
    (eglot--signal-textDocument/didChange)))
(let ((file (getenv "DIFFILL_E2E_FILE")) (ready (getenv "DIFFILL_E2E_READY")))
  (with-current-buffer (find-file-noselect file)
    (python-mode)
    (call-interactively #'eglot)
    (let ((server (eglot-current-server)))
      (unless server (out '(:error "no server")) (kill-emacs 1))
      (while (and (not (file-exists-p ready)) (< (float-time) deadline)) (accept-process-output nil 0.1))
      (goto-char (point-min))
      (forward-line 4)
      (forward-char 10)
      (delete-region (point) (+ (point) 12))  ; hashlib.sha1 -> _lazy_sha1, as typed
      (insert "_lazy_sha1")
      (eglot--signal-textDocument/didChange)
      (out (list :event "hints" :lines (wait-hints 3)))
      (apply-action server (car (hints)) "here")
      (out (list :event "hints" :lines (wait-hints 2)))
      (apply-action server (car (hints)) "at all 2 places")
      (out (list :event "hints" :lines (wait-hints 0)))
      (save-buffer)
      (eglot-shutdown server))))
(kill-emacs 0)
"""


def test_emacs_eglot_next_edits_applied_here_and_at_all_places(tmp_path):
    """A name changed on one line: Eglot hands diffill's hints to Flymake, and its code actions (eglot-code-actions,
    eglot-execute) apply one there, then the rest at once; the file holds the change everywhere it applies."""
    text = SIGNING_FOUR
    path = tmp_path / "signing.py"
    path.write_text(text)
    lines, diag, _ = run_eglot(tmp_path, EGLOT_NEXT_EDITS, path)
    assert [e["lines"] for e in lines if e.get("event") == "hints"] == [[9, 18, 22], [18, 22], []], diag
    titles = [e["titles"] for e in lines if e.get("event") == "actions"]
    assert len(titles) == 2 and any("here" in t for t in titles[0]) and any("all 2 places" in t for t in titles[1])
    assert path.read_text() == text.replace("mac = hashlib.sha1(key)", "mac = _lazy_sha1(key)"), diag
