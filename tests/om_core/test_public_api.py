"""om_core's front door: the documented API imports from `om_core`, cheaply, with type information shipped."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import tomllib
from datetime import timedelta
from pathlib import Path

import pytest

import om_core

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("tiktoken", "sqlite3", "asyncio", "litellm", "psycopg", "zoneinfo")


def _python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow  # a fresh Python process, to see what `import om_core` loads
def test_the_issue_one_liner_and_a_cheap_import() -> None:
    loaded = json.loads(_python(
        "import json, sys\n"
        "import om_core\n"
        f"bare = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "from om_core import ObservationalMemory, OMConfig, SQLiteStorage, Message\n"
        "from om_core import *\n"
        "print(json.dumps({'bare': bare, 'all': sorted(m for m in ('litellm', 'psycopg') if m in sys.modules)}))\n"
    ))
    assert loaded == {"bare": [], "all": []}  # no tiktoken/sqlite until used; never litellm, psycopg on demand


def _type_checking_names() -> dict[str, str]:
    """name -> module of the imports under `if TYPE_CHECKING:` in om_core/__init__.py."""
    tree = ast.parse(Path(om_core.__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {a.asname or a.name: node.module or "" for node in block.body if isinstance(node, ast.ImportFrom)
            for a in node.names}


def test_all_exports_and_type_checking_imports_agree() -> None:
    exports = om_core._EXPORTS
    assert len(om_core.__all__) == len(set(om_core.__all__))
    assert set(om_core.__all__) == set(exports) | {"__version__"}
    assert _type_checking_names() == exports
    for name, module in exports.items():
        obj = getattr(om_core, name)
        assert obj is getattr(importlib.import_module(module), name), name
    assert {"ObservationalMemory", "OMConfig", "SQLiteStorage", "Message", "OMError"} <= set(om_core.__all__)
    # importing a submodule binds its name on the package: an export of the same name would be shadowed
    package = Path(om_core.__file__).parent
    clashes = [n for n in om_core.__all__ if (package / f"{n}.py").exists() or (package / n).is_dir()]
    assert clashes == []


def test_unknown_names_raise_attribute_error() -> None:
    try:
        om_core.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("om_core.NoSuchThing resolved")
    assert "ObservationalMemory" in dir(om_core)


def test_py_typed_ships_with_the_package() -> None:
    assert (Path(om_core.__file__).parent / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["om_core"]


def test_every_export_is_documented() -> None:
    doc = (ROOT / "docs" / "om-engine.md").read_text(encoding="utf-8")
    missing = [name for name in om_core.__all__ if name != "__version__" and f"`{name}" not in doc]
    assert missing == [], f"docs/om-engine.md does not mention {missing}"


async def test_a_library_user_needs_only_the_front_door(tmp_path: Path) -> None:
    from om_core import InMemoryStorage, Message, ObservationalMemory, OMConfig, SQLiteStorage
    from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns

    config = OMConfig.from_dict({"observation": {"message_tokens": 2000}, "reflection": {"observation_tokens": 900}})
    contexts = []
    for storage in (SQLiteStorage(tmp_path / "om.db"), InMemoryStorage()):
        om = ObservationalMemory(config, storage, ScriptedObserver(), ScriptedReflector())
        events: list[str] = []
        for i, (at, user, reply) in enumerate(synthetic_turns(24, words=80)):
            events += (await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)).events
            events += await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", reply, at)], at)
            await om.wait_idle()
        ctx = await om.context("r", "t", at + timedelta(hours=1))
        assert {"buffer", "activate"} <= set(events) and om.errors == []
        contexts.append([(m.key, m.content) for m in ctx.messages])
    assert contexts[0] == contexts[1] and any(key.startswith("om:chunk:") for key, _ in contexts[0])
