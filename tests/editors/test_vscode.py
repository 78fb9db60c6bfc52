"""VS Code (code-server 4.100.3 = VS Code 1.100.3, in headless Chromium driven by playwright-core) with the
extension from editors/vscode: the ghost text from `diffill serve` is rendered, Tab accepts it, Ctrl+S saves,
and the status bar item shows the model's latency.

Needs `bash editors/install.sh vscode` (code-server built from npm, chromium from apt, playwright-core, the
packaged extension); skipped otherwise."""

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from editor_support import EDITORS_DIR, LspLog, check_proposal, proposal_for, server_settings, tap_command, wait_for
from next_edit_sample import SIGNING_FOUR

HERE = Path(__file__).parent
CODE_SERVER = EDITORS_DIR / "code-server"
VSIX = EDITORS_DIR / "diffill.vsix"
NODE_MODULES = EDITORS_DIR / "node" / "node_modules"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def requirements() -> tuple[str, str]:
    hint = "install with `bash editors/install.sh vscode`"
    node = shutil.which("node")
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    missing = [
        what
        for what, ok in [
            ("node", node),
            ("chromium", chromium),
            (f"code-server in {CODE_SERVER}", (CODE_SERVER / "out/node/entry.js").exists()),
            (f"playwright-core in {NODE_MODULES}", (NODE_MODULES / "playwright-core").exists()),
            (f"the extension {VSIX}", VSIX.exists()),
        ]
        if not ok
    ]
    if missing:
        pytest.skip(f"VS Code e2e needs {', '.join(missing)}: {hint}")
    return node, chromium


def drive(tmp_path, name: str, text: str, script: str, driver_env: dict[str, str]) -> tuple[dict, LspLog, Path, str]:
    """code-server with the extension on a workspace holding `text` as `name`, driven by `script` (a playwright
    driver in this folder, given `driver_env` besides the URL, file, ready file, output and screenshots): (its JSON
    result, the LSP log, the file, a diagnosis for assertion messages)."""
    node, chromium = requirements()
    ws = tmp_path / "ws"
    data = tmp_path / "data"
    exts = tmp_path / "exts"
    for d in (ws, data / "User", exts):
        d.mkdir(parents=True)
    path = ws / name
    path.write_text(text)
    log, ready, out = tmp_path / "lsp.jsonl", tmp_path / "ready.json", tmp_path / "result.json"
    cmd = tap_command(log, ready)
    s = server_settings()
    settings = {
        "diffill.server.command": cmd[0],
        "diffill.server.args": cmd[1:],
        "diffill.model": s["model"],
        "diffill.device": s["device"],
        "diffill.steps": s["steps"],
        "diffill.threads": s["threads"],
        "diffill.statusPollSeconds": 1,
        # ghost text only: no suggest widget competing for Tab
        "editor.inlineSuggest.enabled": True,
        "editor.quickSuggestions": {"other": "off", "comments": "off", "strings": "off"},
        "editor.suggestOnTriggerCharacters": False,
        # the file on disk changes only by the driver's Ctrl+S (code-server saves after a second's delay otherwise:
        # an answer that comes later, as when typed while the model loads, found the typed key saved already)
        "files.autoSave": "off",
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "workbench.tips.enabled": False,
        "chat.disableAIFeatures": True,
    }
    (data / "User" / "settings.json").write_text(json.dumps(settings, indent=1))
    (tmp_path / "config.yaml").write_text("auth: none\ncert: false\n")
    env = dict(
        os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_DATA_HOME=str(tmp_path / "xdgd")
    )
    cs_args = [
        node,
        str(CODE_SERVER / "out/node/entry.js"),
        "--config",
        str(tmp_path / "config.yaml"),
        "--user-data-dir",
        str(data),
        "--extensions-dir",
        str(exts),
    ]
    subprocess.run([*cs_args, "--install-extension", str(VSIX)], check=True, env=env, capture_output=True, timeout=120)
    port = free_port()
    cs_log = open(tmp_path / "code-server.log", "w")
    cs = subprocess.Popen(
        [
            *cs_args,
            "--auth",
            "none",
            "--bind-addr",
            f"127.0.0.1:{port}",
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-workspace-trust",
            str(ws),
        ],
        env=env,
        stdout=cs_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def healthy():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        wait_for(healthy, 60, 0.2, "code-server to listen")
        shots = tmp_path / "shots"
        shots.mkdir()
        drv = subprocess.run(
            [node, str(HERE / script)],
            env=dict(
                env,
                NODE_PATH=str(NODE_MODULES),
                CS_URL=f"http://127.0.0.1:{port}/?folder={ws}",
                CS_FILE=str(path),
                READY=str(ready),
                OUT=str(out),
                SHOTS=str(shots),
                CHROMIUM=chromium,
                **driver_env,
            ),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        os.killpg(cs.pid, 15)
        try:
            cs.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(cs.pid, 9)
        cs_log.close()
        time.sleep(0.5)
    result = json.loads(out.read_text()) if out.exists() else {}
    diag = (
        f"driver rc={drv.returncode} result={result}\nstdout={drv.stdout[-2000:]}\nstderr={drv.stderr[-2000:]}\n"
        f"lsp: {LspLog(log).methods()}\nscreenshots in {tmp_path / 'shots'}"
    )
    return result, LspLog(log), path, diag


def run_vscode(tmp_path, request, early: bool = False) -> dict:
    """vscode_e2e.js on the prompt: its result, after checking the ghost text was the server's proposal and Tab
    applied it. `early`: it types as soon as the extension's status bar item is there, while the model loads."""
    direct, prompt = request.getfixturevalue("direct"), request.getfixturevalue("prompt")
    before = prompt[:-1] + "\n"
    driver_env = {"LAST_CHAR": prompt[-1], "BEFORE": before, "EARLY": "1" if early else "0"}
    result, log, path, diag = drive(tmp_path, "example.py", before, "vscode_e2e.js", driver_env)
    assert result.get("code") == 0, diag
    p = proposal_for(log, "textDocument/inlineCompletion", prompt + "\n")
    # the rendered ghost text is the proposal (VS Code renders it in pieces, wrapped; spaces are non-breaking)
    shown = "".join(result["ghost"]).replace("\u00a0", " ")
    assert shown.strip() and shown == p.text.replace("\n", ""), (shown, p.text)
    # Tab accepted it and Ctrl+S saved it: the file is the document with the proposal applied
    assert result["file"] == p.applied(), diag
    assert path.read_text() == p.applied()
    assert "diffill" in result.get("status", ""), diag
    check_proposal(direct, p)
    return result


def test_vscode_ghost_text_tab_accepts(tmp_path, request):
    run_vscode(tmp_path, request)


def test_vscode_first_ghost_text_comes_when_the_model_is_ready_without_another_key(tmp_path, request):
    """The last character typed while the model loads (the status bar says so): VS Code's one inline request
    waits for the model, its answer shows as ghost text with no other key, and Tab accepts it."""
    result = run_vscode(tmp_path, request, early=True)
    assert result["typed_before_ready"] is True, result
    assert "loading" in result["status_when_typed"], result


def test_vscode_next_edits_applied_here_and_at_all_places(tmp_path):
    """A name changed on one line: VS Code draws diffill's hints, and its quick fixes (Ctrl+.) apply one there,
    then the rest at once; Ctrl+S saves the change everywhere it applies."""
    text = SIGNING_FOUR
    result, log, path, diag = drive(tmp_path, "signing.py", text, "vscode_next_edits.js", {})
    assert result.get("code") == 0, diag
    assert result["hints"] == [3, 2], diag
    assert any("here" in m for m in result["menus"][0]) and any("all 2 places" in m for m in result["menus"][1]), diag
    assert path.read_text() == text.replace("mac = hashlib.sha1(key)", "mac = _lazy_sha1(key)"), diag
    assert log.methods().count("textDocument/codeAction") >= 2, diag
