"""One source of truth for the settings' defaults (lsp.settings.Settings): the README's table, the editor plugins'
shipped configurations, the VS Code extension's declared defaults and `diffill complete` say the same, or say
nothing and leave the server's default."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

from diffill.lsp.cli import build_parser
from diffill.lsp.settings import UNSET, Settings

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = Settings()


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def as_readme(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "":
        return '`""`'
    if value is None:
        return "null"
    return str(value)


def test_the_readme_table_gives_the_servers_defaults():
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", (ROOT / "README.md").read_text(), flags=re.M))
    for f in fields(Settings):
        key = camel(f.name)
        assert key in rows, f"README settings table lacks {key}"
        value = getattr(DEFAULTS, f.name)
        if f.name == "languages":
            assert rows[key] == "all"
            continue
        shown = rows[key].strip("`")
        same = float(shown) == value if isinstance(value, int | float) and not isinstance(value, bool) else None
        assert same if same is not None else shown == as_readme(value).strip("`"), f"{key}: {shown!r} vs {value!r}"


def test_the_vscode_extension_declares_the_servers_defaults():
    """Every server setting is declared, with the server's default or null; null is "not set" for the settings that
    have one (the server then decides) and otherwise means the extension leaves it out (so the server's applies)."""
    props = json.loads((ROOT / "editors/vscode/package.json").read_text())["contributes"]["configuration"]["properties"]
    declared = {key.removeprefix("diffill."): spec for key, spec in props.items()}
    for f in fields(Settings):
        key, value = camel(f.name), getattr(DEFAULTS, f.name)
        assert key in declared, f"package.json lacks diffill.{key}"
        shown = declared[key].get("default")
        if f.name == "languages":  # VS Code lists the languages it has a document selector for
            assert set(shown) <= set(value)
        elif f.name in UNSET:
            assert shown is None and value is None, f"{key}: package.json {shown!r}, server {value!r}"
        else:
            assert shown in (None, value), f"{key}: package.json {shown!r}, server {value!r}"


def test_the_editor_plugins_ship_no_settings_of_their_own():
    """Their shipped configurations send nothing, so the server's defaults apply (a user adds what they change)."""
    helix = (ROOT / "editors/helix/languages.toml").read_text()
    assert re.search(r"(?m)^config = \{\}$", helix)
    emacs = (ROOT / "editors/emacs/diffill.el").read_text()
    assert re.search(r"\(defcustom diffill-settings '\(\)", emacs)
    nvim = (ROOT / "editors/nvim/lua/diffill/init.lua").read_text()
    assert re.search(r"(?m)^  settings = \{\},", nvim)


def test_diffill_complete_uses_the_servers_defaults():
    args = build_parser().parse_args(["complete", "f.py", "1", "1"])
    assert args.steps is None  # None: the server's setting (Settings) decides
    assert (args.model, args.device) == (DEFAULTS.model, DEFAULTS.device)
