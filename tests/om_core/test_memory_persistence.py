"""Reopening a SQLite store in a new process reproduces the same Actor context; checkpoints round-trip."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from om_core.config import OMConfig
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns
from om_core.memory import ObservationalMemory
from om_core.storage import InMemoryStorage, SQLiteStorage
from om_core.types import Message

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"profile": "m31", "observation": {"message_tokens": 3000}, "reflection": {"observation_tokens": 1500}}

CHILD = textwrap.dedent("""
    import asyncio, json, sys
    from datetime import datetime
    from om_core.config import OMConfig
    from om_core.testing import ScriptedObserver, ScriptedReflector
    from om_core.memory import ObservationalMemory
    from om_core.storage import SQLiteStorage

    path, config, now = sys.argv[1], json.loads(sys.argv[2]), datetime.fromisoformat(sys.argv[3])
    observer = ScriptedObserver()
    om = ObservationalMemory(OMConfig.from_dict(config), SQLiteStorage(path), observer, ScriptedReflector())
    ctx = asyncio.run(om.context("r", "t", now))
    assert observer.calls == []
    print(json.dumps({"generation": ctx.generation, "pending": ctx.pending_tokens,
                      "messages": [[m.role, m.content, m.key, m.breakpoint] for m in ctx.messages]}))
""")


def dump(ctx) -> dict:
    return {"generation": ctx.generation, "pending": ctx.pending_tokens,
            "messages": [[m.role, m.content, m.key, m.breakpoint] for m in ctx.messages]}


async def fill(om: ObservationalMemory, n: int = 40):
    last = None
    for i, (at, user, assistant) in enumerate(synthetic_turns(n, words=120, turns_per_day=20)):
        await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at + timedelta(seconds=9))],
                             at + timedelta(seconds=9))
        await om.wait_idle()
        last = at
    return last + timedelta(hours=3)


@pytest.mark.slow  # a second Python process
async def test_reopen_in_new_process_gives_same_context(tmp_path):
    path = tmp_path / "om.db"
    om = ObservationalMemory(OMConfig.from_dict(CONFIG), SQLiteStorage(path), ScriptedObserver(), ScriptedReflector())
    now = await fill(om)
    here = dump(await om.context("r", "t", now))
    assert any(key.startswith("om:chunk:") for _, _, key, _ in here["messages"]) and here["generation"] >= 1
    om.storage.close()
    child = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(CONFIG), now.isoformat()],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout) == here


async def test_export_import_checkpoint_reproduces_context(tmp_path):
    om = ObservationalMemory(OMConfig.from_dict(CONFIG), SQLiteStorage(tmp_path / "a.db"), ScriptedObserver(),
                             ScriptedReflector())
    now = await fill(om, 30)
    state = json.loads(json.dumps(om.storage.export_state("r")))
    copy = InMemoryStorage()
    copy.import_state(state)
    om2 = ObservationalMemory(OMConfig.from_dict(CONFIG), copy, ScriptedObserver(), ScriptedReflector())
    assert dump(await om2.context("r", "t", now)) == dump(await om.context("r", "t", now))
