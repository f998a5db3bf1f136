"""bench's import graph has no circle (module-level, TYPE_CHECKING and function-level imports alike), as
om_core's (tests/om_core/test_import_graph.py): a module that needs one of its importers' names is in the
wrong place. bench imports om_core, never the reverse (om_core's test checks that side)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.om_core.test_import_graph import find_cycle

PACKAGE = Path(__file__).resolve().parents[1] / "bench"


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = p.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
                # `from pkg import submodule` needs the submodule, not what the package's __init__ defines
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            for t in targets:
                if t.split(".")[0] != "bench":
                    continue
                while t not in known and "." in t:
                    t = t.rpartition(".")[0]
                deps.add(t)
        edges[name] = deps - {name}
    return edges


def test_no_import_circle_in_bench() -> None:
    edges = _graph()
    assert len(edges) > 100 and "bench.assemble" in edges["bench.runner.app"]
    cycle = find_cycle(edges)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])
