"""om_core's import graph: no circle anywhere (TYPE_CHECKING and function-level imports included), engine
steps never import the orchestrator, and nothing outside the standard library and om_core's own
dependencies is imported (in particular nothing of bench, litellm, DuckDB or Hydra)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "om_core"
ALLOWED_THIRD_PARTY = {"tiktoken", "xxhash", "psycopg"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> tuple[set[str], set[str]]:
    """(om_core modules imported, other top-level packages imported) by one module, from every import
    statement in it, wherever it sits (module level, TYPE_CHECKING, inside functions)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    internal: set[str] = set()
    external: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target]
            # `from pkg import sub` imports the submodule pkg.sub when there is one
            targets += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
        for t in targets:
            if t == "om_core" or t.startswith("om_core."):
                while t not in known and "." in t:  # `import om_core.x.y` where y is an attribute
                    t = t.rpartition(".")[0]
                internal.add(t)
            else:
                external.add(t.split(".")[0])
    return internal - {name}, external


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    mods = modules()
    known = set(mods)
    internal, external = {}, {}
    for name, path in mods.items():
        internal[name], external[name] = imports_of(name, path, known)
    return internal, external


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path a -> ... -> a, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_circles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_walk_sees_type_checking_and_local_imports() -> None:
    internal, _ = graph()
    # storage/ops imports the renderer only inside a function; the front door imports under TYPE_CHECKING
    assert "om_core.context" in internal["om_core.storage.ops"]
    assert "om_core.memory" in internal["om_core"]


def test_no_import_circle_in_om_core() -> None:
    internal, _ = graph()
    assert len(internal) > 30
    cycle = find_cycle(internal)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_engine_steps_never_import_the_orchestrator() -> None:
    internal, _ = graph()
    for name, deps in internal.items():
        if name.startswith("om_core.engine"):
            assert "om_core.memory" not in deps, f"{name} imports om_core.memory; use engine.state.EngineContext"


def test_nothing_inside_om_core_imports_its_front_door() -> None:
    internal, _ = graph()
    offenders = sorted(name for name, deps in internal.items() if "om_core" in deps)
    assert offenders == [], f"{offenders} import from `om_core` itself; import the defining module instead"


def test_only_stdlib_and_declared_dependencies() -> None:
    _, external = graph()
    allowed = set(sys.stdlib_module_names) | ALLOWED_THIRD_PARTY | {"__future__"}
    bad = {name: sorted(deps - allowed) for name, deps in external.items() if deps - allowed}
    assert bad == {}, f"om_core imports outside the standard library and its dependencies: {bad}"
