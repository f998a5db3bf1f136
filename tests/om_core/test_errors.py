"""One `OMError` base for every error om_core raises: checked on the source (every `raise` statement) and on
behaviour (config, input, tokenizer, storage errors reach the caller as OMErrors, and as the builtin they
were before, so `except ValueError` handlers keep working)."""

from __future__ import annotations

import ast
import builtins
import importlib
import typing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import om_core
from om_core import (
    ConfigError,
    DegenerateOutputError,
    EmptyReflectionError,
    FormatVersionError,
    InputError,
    Message,
    ModelOutputError,
    ObservationalMemory,
    OMConfig,
    OMError,
    SQLiteStorage,
    StorageError,
    TokenizerError,
)
from om_core.testing import ScriptedObserver, ScriptedReflector

PACKAGE = Path(om_core.__file__).parent


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _raised(module: Any, cls_node: ast.ClassDef | None, call: ast.Call) -> Any:
    """The class (or factory function) a `raise X(...)` / `raise self.x(...)` / `raise mod.X(...)` calls."""
    func = call.func
    if isinstance(func, ast.Name):
        return vars(module).get(func.id) or getattr(builtins, func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "self" and cls_node is not None:
            return getattr(getattr(module, cls_node.name), func.attr)
        return getattr(getattr(module, func.value.id), func.attr)
    raise AssertionError(f"cannot resolve {ast.unparse(call)}")


def _raise_sites() -> list[tuple[str, int, str, Any, str | None]]:
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = _module(path)
        module = importlib.import_module(name)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue  # bare `raise` and `raise exc` re-raise what was caught
            cls_node, func_name, up = None, None, parents.get(node)
            while up is not None:
                if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) and func_name is None:
                    func_name = up.name
                if isinstance(up, ast.ClassDef):
                    cls_node = up
                    break
                up = parents.get(up)
            sites.append((name, node.lineno, ast.unparse(node.exc.func), _raised(module, cls_node, node.exc),
                          func_name))
    return sites


def _error_class(target: Any) -> Any:
    if isinstance(target, type):
        return target
    hints = typing.get_type_hints(target)  # a factory such as `format_mismatch` / `SQLiteStorage._failed`
    return hints.get("return")


def test_every_raise_in_om_core_is_an_om_error() -> None:
    sites = _raise_sites()
    assert len(sites) > 60  # the walk does see the package
    bad = []
    for module, line, text, target, func in sites:
        if func == "__getattr__" and target is AttributeError:  # the module attribute protocol
            continue
        cls = _error_class(target)
        if not (isinstance(cls, type) and issubclass(cls, OMError)):
            bad.append(f"{module}:{line} raises {text}")
    assert bad == [], "raise an om_core.errors class instead: " + "; ".join(bad)


def test_hierarchy_keeps_the_builtins_callers_caught_before() -> None:
    for cls in (ConfigError, InputError, FormatVersionError):
        assert issubclass(cls, OMError) and issubclass(cls, ValueError)
    for cls in (StorageError, ModelOutputError, TokenizerError, DegenerateOutputError, EmptyReflectionError):
        assert issubclass(cls, OMError) and issubclass(cls, RuntimeError)
    assert issubclass(FormatVersionError, StorageError)
    assert issubclass(DegenerateOutputError, ModelOutputError) and issubclass(EmptyReflectionError, ModelOutputError)
    # the old import locations still work
    from om_core.degenerate import DegenerateOutputError as from_degenerate
    from om_core.reflector import EmptyReflectionError as from_reflector
    from om_core.storage import StorageError as from_storage

    assert (from_degenerate, from_reflector, from_storage) == (DegenerateOutputError, EmptyReflectionError,
                                                               StorageError)


@pytest.mark.parametrize("data, knob", [
    ({"bogus_knob": 1}, "bogus_knob"),
    ({"observation": {"temperature": "hot"}}, "temperature"),  # was a TypeError from a comparison
    ({"observation": {"max_tokens_per_batch": "many"}}, "max_tokens_per_batch"),
    ({"profile": "m99"}, "profile"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
])
def test_config_errors(data: dict[str, Any], knob: str) -> None:
    with pytest.raises(ConfigError, match=knob) as info:
        OMConfig.from_dict(data)
    assert "\n" not in str(info.value)


async def test_input_errors_from_the_engine(tmp_path: Path) -> None:
    om = ObservationalMemory(OMConfig(), SQLiteStorage(tmp_path / "om.db"), ScriptedObserver(), ScriptedReflector())
    naive = datetime(2026, 3, 1, 9, 0)
    with pytest.raises(InputError, match="timezone-aware"):
        await om.prepare_turn("r", "t", [Message("m1", "user", "hi", naive)], naive)
    with pytest.raises(OMError, match="belongs to thread"):
        aware = naive.astimezone()
        await om.prepare_turn("r", "t", [Message("m1", "user", "hi", aware, thread_id="other")], aware)


def test_tokenizer_error_names_the_encoding() -> None:
    from om_core.tokens import get_encoding

    with pytest.raises(TokenizerError, match="no_such_encoding"):
        get_encoding("no_such_encoding")
