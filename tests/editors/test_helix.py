"""Helix (in a terminal, in tmux) with editors/helix/languages.toml: typing the prompt's last character (a
trigger character) opens the completion popup with diffill's item; C-n + Enter accepts it (its textEdit),
`:wq` saves. Helix has no inline completion, so this is the textEdit path."""

import json
import re
import time
from pathlib import Path

from editor_support import (
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

SNIPPET = ROOT / "editors" / "helix" / "languages.toml"


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)  # strings, numbers and lists of them are valid TOML as JSON


def helix_languages(command: list[str], settings: dict) -> str:
    """editors/helix/languages.toml with the server command and settings of this test."""
    text = SNIPPET.read_text()
    text, n1 = re.subn(r'(?m)^command = "diffill"$', f"command = {toml_value(command[0])}", text)
    text, n2 = re.subn(r'(?m)^args = \["serve"\]$', f"args = {toml_value(command[1:])}", text)
    text, n3 = re.subn(r"(?m)^config = \{.*\}$", f"config = {toml_value(settings)}", text)
    assert (n1, n2, n3) == (1, 1, 1), "editors/helix/languages.toml changed shape"
    return text


def helix_env(tmp_path: Path, languages: str) -> dict[str, str]:
    """The environment of a Helix run in `tmp_path`: `languages` as its languages.toml, its config, cache and data
    kept in `tmp_path`."""
    cfg = tmp_path / "cfg" / "helix"
    cfg.mkdir(parents=True)
    (cfg / "languages.toml").write_text(languages)
    return {
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "TERM": "xterm-256color",
        "HOME": str(tmp_path),
    }


def accept_in_helix(tmp_path, direct, document: str, early: bool = False) -> None:
    """Open `document` without its last character, type that character at its end (Helix asks for completions
    after a trigger character, or after two characters of a word), wait for diffill's item in the popup, select
    it (C-n), accept it (Enter) and save (:wq): the file must be the proposal applied. `early`: the character is
    typed once the server has answered `initialize`, while the model still loads: the one request Helix makes
    then must bring the popup once the model is ready, with no other key."""
    hx = require_editor("hx", "Helix")
    path = tmp_path / "example.py"
    path.write_text(document[:-1] + "\n")
    log, ready = tmp_path / "lsp.jsonl", tmp_path / "ready.json"
    env = helix_env(tmp_path, helix_languages(tap_command(log, ready), server_settings()))
    tm = Tmux("hx", [hx, "-v", "--log", str(tmp_path / "hx.log"), str(path)], tmp_path, env, width=120, height=20)
    screen = ""
    try:
        if early:
            wait_for(lambda: "initialized" in LspLog(log).methods(), 60, what="the server initialized")
        else:
            wait_for(lambda: ready.exists(), 120, what="diffill's model (ready file from the tap)")
        tm.keys("g", "e")
        tm.keys("A")
        tm.keys(document[-1], literal=True)
        typed_before_ready = not ready.exists()
        proposal = wait_for(
            lambda: [p for p in LspLog(log).proposals("textDocument/completion") if p.document == document + "\n"],
            60,
            what=f"a completion answer; screen:\n{tm.screen()}",
        )[-1]
        label = proposal.text.strip().split("\n")[0][:12]

        def popup():
            s = tm.screen()
            return s if label in s else None

        screen = wait_for(popup, 20, what=f"the popup with {label!r}; screen:\n{tm.screen()}")
        tm.keys("C-n", pause=0.3)  # select diffill's item
        tm.keys("Enter", pause=0.3)  # accept
        tm.keys("Escape")
        tm.keys(":wq", literal=True)
        tm.keys("Enter")
        assert tm.wait_exit(15), f"helix did not exit; screen:\n{tm.screen()}"
    finally:
        tm.close()
    time.sleep(0.2)
    diag = f"screen at popup:\n{screen}\nlsp: {LspLog(log).methods()}"
    p = proposal_for(LspLog(log), "textDocument/completion", document + "\n")
    assert path.read_text() == p.applied(), diag
    assert typed_before_ready or not early, "the model was ready before the key: nothing was asked while loading"
    check_proposal(direct, p)


def test_helix_completion_accepted_and_saved(tmp_path, request):
    accept_in_helix(tmp_path, request.getfixturevalue("direct"), request.getfixturevalue("prompt"))


def test_helix_accepts_an_item_typed_mid_word(tmp_path, request):
    """After `self.tot` (the popup filters by the word being typed): diffill's item replaces the word from its
    start, so Helix keeps it, and accepting it writes the whole name once."""
    accept_in_helix(tmp_path, request.getfixturevalue("direct"), MID_WORD)


def test_helix_first_popup_comes_when_the_model_is_ready_without_another_key(tmp_path, request):
    accept_in_helix(tmp_path, request.getfixturevalue("direct"), request.getfixturevalue("prompt"), early=True)


def _hints(log: LspLog) -> list[dict] | None:
    """The diagnostics of diffill's last publishDiagnostics to the editor (None before any)."""
    published = [e["msg"] for e in log.entries() if e["dir"] == "s2c" and e["msg"].get("method") == "textDocument/publishDiagnostics"]  # fmt: skip
    return published[-1]["params"]["diagnostics"] if published else None


def test_helix_next_edits_applied_here_and_at_all_places(tmp_path):
    """A name changed on one line (select, `c`, type): Helix shows diffill's hints, and `space a` lists the code
    actions: the first (apply here) applies one, then the second at another hint (apply at all 2 places) the rest;
    `:wq` saves the change everywhere it applies."""
    hx = require_editor("hx", "Helix")
    text = SIGNING_FOUR
    path = tmp_path / "signing.py"
    path.write_text(text)
    log_path, ready = tmp_path / "lsp.jsonl", tmp_path / "ready.json"
    languages = helix_languages(tap_command(log_path, ready), server_settings())
    # diffill alone for Python: another server's code actions (ruff's, where it is installed) would come first
    languages, n = re.subn(r'(?m)^language-servers = \["ruff", "jedi", "pylsp", "diffill"\]$', 'language-servers = ["diffill"]', languages)  # fmt: skip
    assert n == 1, "editors/helix/languages.toml changed shape"
    env = helix_env(tmp_path, languages)
    log = LspLog(log_path)
    tm = Tmux("hx-next", [hx, "--log", str(tmp_path / "hx.log"), str(path)], tmp_path, env, width=120, height=30)

    def goto(line: int, column: int) -> None:
        tm.keys(":", literal=True)
        tm.keys(str(line), literal=True)
        tm.keys("Enter")
        tm.keys("g", "h")
        if column:
            tm.keys(f"{column}l", literal=True)

    try:
        wait_for(lambda: ready.exists(), 120, what="diffill's model (ready file from the tap)")
        goto(5, 10)
        tm.keys("v", literal=True)
        tm.keys("11l", literal=True)
        tm.keys("c", literal=True)
        for ch in "_lazy_sha1":  # a key at a time, as a user types (Helix may reorder a burst's changes)
            tm.keys(ch, literal=True, pause=0.05)
        tm.keys("Escape")
        three = wait_for(lambda: (h := _hints(log)) and len(h) == 3 and h, 30, what=f"3 hints; screen:\n{tm.screen()}")
        assert [h["range"]["start"]["line"] for h in three] == [9, 18, 22]
        goto(10, 10)
        tm.keys("Space", "a", pause=1.0)
        wait_for(lambda: "here" in tm.screen(), 20, what=f"the code actions; screen:\n{tm.screen()}")
        tm.keys("Enter", pause=0.5)  # the first, selected: apply here
        wait_for(lambda: (h := _hints(log)) is not None and len(h) == 2, 30, what=f"2 hints; screen:\n{tm.screen()}")
        goto(19, 10)
        tm.keys("Space", "a", pause=1.0)
        wait_for(lambda: "all 2 places" in tm.screen(), 20, what=f"the code actions; screen:\n{tm.screen()}")
        tm.keys("C-n", pause=0.3)  # the second: apply at all 2 places
        tm.keys("Enter", pause=0.5)
        wait_for(lambda: _hints(log) == [], 30, what=f"no hints left; screen:\n{tm.screen()}")
        tm.keys(":wq", literal=True)
        tm.keys("Enter")
        assert tm.wait_exit(15), f"helix did not exit; screen:\n{tm.screen()}"
    finally:
        tm.close()
    assert path.read_text() == text.replace("mac = hashlib.sha1(key)", "mac = _lazy_sha1(key)")
    assert log.methods().count("textDocument/codeAction") >= 2
