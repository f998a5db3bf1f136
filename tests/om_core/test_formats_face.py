"""om_core's second face, `om_core.formats`: the formatting and read-back functions tools use without running
the engine. The offline engine imports om_core only through the two faces, and every om_core name that bench
or the scripts use is on one of them (a name used from a private module fails here, not in a later refactor)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import om_core
import om_core.formats as formats

ROOT = Path(__file__).resolve().parents[2]
FACES = {"om_core", "om_core.formats"}


def _type_checking_names() -> dict[str, tuple[str, str]]:
    tree = ast.parse(Path(formats.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {a.asname or a.name: (node.module or "", a.name) for node in block.body
            if isinstance(node, ast.ImportFrom) for a in node.names}


def test_all_exports_and_type_checking_imports_agree() -> None:
    assert len(formats.__all__) == len(set(formats.__all__))
    assert set(formats.__all__) == set(formats._EXPORTS)
    assert _type_checking_names() == formats._EXPORTS
    for name, (module, attr) in formats._EXPORTS.items():
        assert getattr(formats, name) is getattr(importlib.import_module(module), attr), name
    assert not set(formats.__all__) & set(om_core.__all__), "a name lives on one face"


def _om_core_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from om_core... import name` in a file, wherever it sits."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "om_core":
            out += [(node.module or "", a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.split(".")[0] == "om_core"]
    return out


def test_the_offline_engine_reads_om_core_through_its_faces_only() -> None:
    deep = [(p.name, m, n) for p in sorted((ROOT / "bench" / "offline").glob("*.py"))
            for m, n in _om_core_imports(p) if m not in FACES]
    assert deep == []


def test_every_om_core_name_bench_and_the_scripts_use_is_on_a_public_face() -> None:
    public = set(om_core.__all__) | set(formats.__all__)
    files = [*sorted((ROOT / "bench").rglob("*.py")), *sorted((ROOT / "scripts").glob("*.py"))]
    off_face = [(str(p.relative_to(ROOT)), m, n) for p in files for m, n in _om_core_imports(p)
                if n and n not in public and m != "om_core.testing"]
    assert off_face == []
