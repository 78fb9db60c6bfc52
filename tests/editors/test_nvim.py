"""Neovim 0.12 (headless, real main loop) with editors/nvim: ghost text from `diffill serve` is shown by the
built-in vim.lsp.inline_completion, accepted with <Tab>, and the buffer/file then hold exactly the proposal."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from editor_support import (
    ROOT,
    LspLog,
    check_proposal,
    editor_bin,
    proposal_for,
    require_editor,
    server_settings,
    tap_command,
)
from next_edit_sample import SIGNING_FOUR

HERE = Path(__file__).parent


def nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(m[1]), int(m[2])) if m else (0, 0)


def run_nvim(nvim: str, driver: str, path: Path, **extra: str) -> tuple[dict, str, Path]:
    """Neovim headless on `path` with the plugin from this checkout (nvim_init.lua) and `driver` (a Lua script
    here), the server through the recording tap, its state and data kept beside `path`: (the driver's result, a
    diagnosis for failed checks, the LSP log), once the driver has finished with code 0."""
    tmp_path = path.parent
    log, ready, out = tmp_path / "lsp.jsonl", tmp_path / "ready.json", tmp_path / "result.json"
    env = dict(
        os.environ,
        DIFFILL_ROOT=str(ROOT),
        DIFFILL_E2E_CMD=json.dumps(tap_command(log, ready)),
        DIFFILL_E2E_SETTINGS=json.dumps(server_settings()),
        DIFFILL_E2E_READY=str(ready),
        DIFFILL_E2E_OUT=str(out),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        **extra,
    )
    argv = [nvim, "--headless", "-n", "-i", "NONE", "-u", str(HERE / "nvim_init.lua"), "-S", str(HERE / driver), str(path)]  # fmt: skip
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    result = json.loads(out.read_text()) if out.exists() else {}
    diag = f"nvim rc={proc.returncode} result={result}\nstderr={proc.stderr[-2000:]}\nlsp log: {LspLog(log).methods()}"
    assert result.get("code") == 0, diag
    return result, diag, log


def run_nvim_ghost_text(tmp_path, request, early: bool = False) -> tuple[dict, object]:
    """nvim_e2e.lua on the prompt: (its result, the proposal it accepted), after checking the ghost text was the
    server's proposal and <Tab> applied it. `early`: it types before the model is ready."""
    nvim = require_editor("nvim", "Neovim")
    if nvim_version(nvim) < (0, 12):
        pytest.skip(f"{nvim} is Neovim {nvim_version(nvim)}: ghost text needs >= 0.12 (`bash editors/install.sh nvim`)")
    direct, prompt = request.getfixturevalue("direct"), request.getfixturevalue("prompt")
    path = tmp_path / "example.py"
    path.write_text(prompt + "\n")
    result, diag, log = run_nvim(nvim, "nvim_e2e.lua", path, DIFFILL_E2E_EARLY="1" if early else "0")
    assert result["inline_enabled"] is True
    assert result["mode"] == "i", diag
    # the server's answer to the inline completion request that Neovim made on InsertEnter
    p = proposal_for(LspLog(log), "textDocument/inlineCompletion", prompt + "\n")
    # ghost text shown = the proposal (what follows the cursor)
    assert (
        result["ghost"]
        and p.text.endswith(result["ghost"])
        and result["ghost"].split("\n")[-1] == p.text.split("\n")[-1]
    ), diag
    # accepted with <Tab>: the buffer and the written file are the document with the proposal applied
    assert result["buffer"] + "\n" == p.applied(), diag
    assert path.read_text() == p.applied()
    # and the same request asked directly gives the same proposal (the server is deterministic)
    check_proposal(direct, p)
    return result, p


def test_nvim_ghost_text_accepted(tmp_path, request):
    run_nvim_ghost_text(tmp_path, request)


def test_nvim_first_ghost_text_comes_when_the_model_is_ready_without_another_key(tmp_path, request):
    """Insert mode entered while the model still loads: Neovim's one request (on InsertEnter) waits for the
    model and its answer shows as ghost text with no other key pressed; the loading was shown as LSP progress
    (begin, then end: what `LspProgress` and the statusline show)."""
    result, _ = run_nvim_ghost_text(tmp_path, request, early=True)
    assert result["typed_before_ready"] is True, result
    assert result["progress"][:1] == ["begin"] and "end" in result["progress"], result


def test_nvim011_completion_menu_fallback(tmp_path, request):
    """Neovim 0.11 has no ghost text: the plugin falls back to the LSP completion menu, and picking diffill's
    item inserts the whole proposal (Neovim itself would insert only its first word)."""
    nvim = editor_bin("nvim-0.11")
    if not nvim:
        pytest.skip("Neovim 0.11 not installed (.editors/bin/nvim-0.11): `bash editors/install.sh nvim`")
    direct, prompt = request.getfixturevalue("direct"), request.getfixturevalue("prompt")
    path = tmp_path / "example.py"
    path.write_text(prompt + "\n")
    result, diag, log = run_nvim(nvim, "nvim_menu_e2e.lua", path)
    assert result["uses_inline"] is False
    p = proposal_for(LspLog(log), "textDocument/completion", prompt + "\n")
    assert result["menu"] and result["menu"][0] == p.text.split("\n")[0], diag
    assert result["pum_visible"], diag  # else <C-y> is no accept: it types the character above the cursor
    assert result["buffer"] + "\n" == p.applied(), diag
    assert path.read_text() == p.applied()
    check_proposal(direct, p)


def test_nvim_root_is_the_git_folder_else_the_files_own(tmp_path):
    """Without a .git above it, a file's own folder is the workspace root (the server then reads the project's
    files); with one, the folder holding it."""
    nvim = require_editor("nvim", "Neovim")
    loose = tmp_path / "loose" / "pkg"
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    loose.mkdir(parents=True)
    out = tmp_path / "roots.json"
    script = (
        f"set rtp^={ROOT / 'editors' / 'nvim'}\n"
        "lua << EOF\n"
        "local d = require('diffill'); d.config = vim.deepcopy(d.defaults)\n"
        f"vim.cmd.edit('{loose / 'a.py'}'); local a = d.root_of(0)\n"
        f"vim.cmd.edit('{repo / 'src' / 'b.py'}'); local b = d.root_of(0)\n"
        f"vim.fn.writefile({{vim.json.encode({{a, b}})}}, '{out}')\n"
        "EOF\n"
        "qa!\n"
    )
    init = tmp_path / "init.vim"
    init.write_text(script)
    subprocess.run([nvim, "--headless", "-u", str(init)], timeout=60, capture_output=True, check=False)
    roots = json.loads(out.read_text())
    assert [Path(r).resolve() for r in roots] == [loose.resolve(), repo.resolve()]


def test_nvim_next_edits_applied_here_and_at_all_places(tmp_path):
    """A name changed on one line: Neovim shows diffill's hints at the other places (vim.diagnostic), and its code
    actions (vim.lsp.buf.code_action) apply one there, then the rest at once; the file then holds the change
    everywhere it applies (not in `return hashlib.sha1(secret)`, another shape)."""
    nvim = require_editor("nvim", "Neovim")
    text = SIGNING_FOUR
    path = tmp_path / "signing.py"
    path.write_text(text)
    result, diag, log = run_nvim(nvim, "nvim_next_edits.lua", path)
    assert [h["lnum"] for h in result["hints"]] == [9, 18, 22], diag
    assert all("_lazy_sha1" in h["message"] for h in result["hints"]), diag
    expected = text.replace("mac = hashlib.sha1(key)", "mac = _lazy_sha1(key)")
    assert "return hashlib.sha1(secret)" in expected
    assert path.read_text() == expected, diag
    assert LspLog(log).methods().count("textDocument/codeAction") >= 2, diag
