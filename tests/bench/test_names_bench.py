"""`diffill bench names`: a new file uses names other workspace modules define, through the real daemon."""

from diffill.bench.names import NameCase, name_cases, run, whole

MODULES = {
    "units.py": '"""Conversions."""\n\nFACTOR = 6.894757\n\n\ndef convert_psi_to_kilopascal(psi: float) -> float:\n'
    '    """Pressure in kilopascal."""\n    return psi * FACTOR\n',
    "geometry.py": '"""Meshes."""\n\n\nclass TriangulatedSurface:\n    """Triangles over shared vertices."""\n\n'
    "    def __init__(self, vertices, triangles):\n        self.vertices = vertices\n        self.triangles = triangles\n",
    "_private.py": "def _hidden_helper_function():\n    return 1\n",
}


def _workspace(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    for name, text in MODULES.items():
        (root / name).write_text(text)
    return root


def test_cases_are_public_definitions_half_typed(tmp_path):
    cases = name_cases(str(_workspace(tmp_path)), 10, 0)
    assert sorted((c.module, c.name, c.typed) for c in cases) == [
        ("geometry", "TriangulatedSurface", 9),
        ("units", "convert_psi_to_kilopascal", 12),
    ]
    case = NameCase("units", "convert_psi_to_kilopascal", 12)
    assert case.document("star") == "from units import *\n\n\nresult = convert_psi_"
    assert case.document("module") == "import units\n\n\nresult = units.convert_psi_"
    assert case.document("from") == "from units import convert_psi_"
    assert whole("to_kilopascal(psi)", case) and whole("to_kilopascal", case)
    assert not whole("to_", case) and not whole("to_kilopascals", case)


def test_the_daemon_completes_workspace_names_whole(tmp_path):
    """The embedded model never saw these names; the workspace index and the cut that stops only past a known name
    make them whole (the latency budget is generous so that a slow machine gets the same answers)."""
    lines: list[str] = []
    summary = run(str(_workspace(tmp_path)), n=10, settings={"latencyBudgetMs": 2000}, out=lines.append)
    assert summary["cases"] == 2 and len(summary["rows"]) == 6
    assert summary["star"] == sum(r["whole"] for r in summary["rows"] if r["how"] == "star")
    assert summary["star"] == summary["module"] == summary["from"] == 2, summary["rows"]
    assert any("whole with" in line for line in lines)
    assert "training overlap: 0.0 %" in lines
