"""Cross-file context for the prompt: the definitions the cursor's code names and the recent edits, under a
budget, gathered again only when the cursor line or the index changes."""

from diffill.infill.context.prompt_context import PromptContext, gather, query_terms
from diffill.infill.context.recent_edits import RecentEdits
from diffill.infill.context.workspace import WorkspaceIndex
from diffill.infill.document import SyntaxDocument


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def workspace(tmp_path):
    root = tmp_path / "proj"
    write(root / "util.py", "def parse_header(line):\n    return line\n\n\nclass HeaderError(Exception):\n    pass\n")
    write(root / "web" / "app.ts", "export function renderPage(title: string): string { return title }\n")
    index = WorkspaceIndex([root])
    index.scan()
    return root, index


def test_gather_packs_definitions_and_recent_edits_under_budget(tmp_path):
    ws, index = workspace(tmp_path)
    recent = RecentEdits(capacity=4)
    recent.record(str(ws / "web" / "app.ts"), "a\nb\nconst page = renderPage('x')\nc\n", 2, radius=1)
    text = "from util import parse_header\n\nkey = parse_head"
    blocks = gather(text, len(text), str(ws / "main.py"), index, recent, max_chars=400)
    assert blocks[0].startswith("# util.py\ndef parse_header(line):")
    assert blocks[-1].startswith("# web/app.ts\n") and "renderPage('x')" in blocks[-1]
    assert sum(len(b) for b in blocks) <= 400
    assert gather(text, len(text), str(ws / "main.py"), index, recent, max_chars=10) == []


def test_query_terms_weigh_the_cursor_line():
    terms = query_terms("import os\nvalue = compute_total(items)", 34)
    assert terms.count("compute_total") == 3 and terms.count("os") == 1


def test_the_blocks_stay_the_same_along_a_line_and_change_with_the_line_or_the_index(tmp_path):
    """The prompt (and with it the encoder cache) must not change with every keystroke along a line."""
    ws, index = workspace(tmp_path)
    context, path = PromptContext(), str(ws / "main.py")
    text = "from util import parse_header\n\nkey = parse_head"
    doc = SyntaxDocument(text, "python")
    first = context.blocks(doc, len(text), "k", path, index, None, budget_tokens=96)
    assert first and first[0].startswith("# util.py")
    typed = SyntaxDocument(text + "er(x)", "python")  # on the same line: the same blocks, not gathered again
    assert context.blocks(typed, len(typed.text), "k", path, index, None, budget_tokens=96) is first
    below = SyntaxDocument(text + "\nrender", "python")
    assert context.blocks(below, len(below.text), "k", path, index, None, budget_tokens=96) is not first
    assert context.blocks(doc, len(text), "k", path, index, None, budget_tokens=0) == []  # no budget: none
    assert context.blocks(doc, len(text), "k", path, None, None, budget_tokens=96) == []  # nothing to draw on


def test_query_terms_read_a_bounded_window_of_a_long_line():
    """The 30 lines above the cursor, unless they are long: a minified line's identifiers are read from its last
    QUERY_CHARS characters only."""
    from diffill.infill.context.prompt_context import QUERY_CHARS

    text = "import os\n" + "alpha(beta); " * 100_000 + "gamma"
    terms = query_terms(text, len(text))
    assert len(terms) <= 6 * (QUERY_CHARS // len("alpha(beta); ") + 2)  # (two names a repeat, the line's thrice)
    assert "gamma" in terms and "os" not in terms
