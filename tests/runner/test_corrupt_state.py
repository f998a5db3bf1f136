"""Corrupt or foreign state is never fatal and never used: every kind of bad checkpoint is discarded with one
warning line and its question replayed (the results equal a clean run's), a checkpoint copied under another
question's name is never answered from, temporaries of a killed writer are cleaned, and bad response-cache rows
are asked again and replaced."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Callable

import pytest

from bench import notices
from bench.fsio import remove_orphans, temp_path
from bench.runner.app import run_job
from bench.runner.checkpoint import CHECKPOINT_FORMAT, CheckpointStore
from bench.runner.question import parse_checkpoint
from bench.strategies.om import OMStrategy
from tests.helpers.figures import differences, figures
from tests.helpers.runner import compose_cfg

RUN = ("dataset.limit=2", "run_strategies=[om]", "run.concurrency=1")


def _edit(key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def edit(d: dict[str, Any]) -> Any:
        d[key] = value
        return d
    return edit


def _turn_field(d: dict[str, Any]) -> dict[str, Any]:
    d["turns"][0]["prompt_tokens"] = "many"
    return d


def _call_cache(d: dict[str, Any]) -> dict[str, Any]:
    d["calls"][0]["cache"] = {"openai": {"cached": "lots"}}
    return d


def _drop(key: str) -> Callable[[dict[str, Any]], Any]:
    def drop(d: dict[str, Any]) -> Any:
        d.pop(key)
        return d
    return drop


# kind -> (how the file is damaged: a payload edit, or raw bytes from the valid text; a word the warning says)
BAD: dict[str, tuple[Callable[[Any], Any], str]] = {
    "truncated": (lambda text: text[: len(text) // 2], "not valid JSON"),
    "empty object": (lambda d: {}, "holds no checkpoint"),
    "json list": (lambda d: [d], "JSON list"),
    "wrong-typed turn field": (_turn_field, "turns.0: invalid literal for int"),
    "wrong-typed call cache": (_call_cache, "calls.0.cache.openai.cached"),
    "turns not a list": (_edit("turns", "abc"), "turns: expected a JSON array"),
    "missing prompt": (_drop("question_prompt"), "'question_prompt' is missing"),
    "unreadable state": (_edit("state", {"om": {"records": "x"}}), "state: the strategy cannot read it"),
    "another question's": (None, "holds question"),  # type: ignore[dict-item]  (built from the other file)
    "older format": (_edit("format_version", 1), "have format 1"),
}


def _damage(path: Path, other: Path, kind: str) -> None:
    edit, _ = BAD[kind]
    if kind == "another question's":
        shutil.copyfile(other, path)
    elif kind == "truncated":
        path.write_text(edit(path.read_text()))
    else:
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))


def _warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("ombench: warning:") and "dataset.limit" not in ln]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clean")
    run_job(compose_cfg(out, *RUN))
    return out


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_checkpoint_is_parsed_never_and_warned_once(clean: Path, tmp_path: Path, kind: str, capsys) -> None:
    """Unit level: the store refuses the damaged file with one line naming the file and the cause."""
    (ck_dir,) = (clean / "checkpoints").iterdir()
    a, b = sorted(ck_dir.glob("*.json"))
    work = tmp_path / ck_dir.name
    shutil.copytree(ck_dir, work)
    _damage(work / a.name, work / b.name, kind)
    notices.reset()
    store = CheckpointStore(tmp_path, ck_dir.name)
    got = store.restore(a.stem, lambda p: parse_checkpoint(p, OMStrategy.memory_view))
    assert got is None
    lines = _warnings(capsys.readouterr().err)
    assert len(lines) == 1 and BAD[kind][1] in lines[0], lines
    assert store.restore(b.stem, lambda p: parse_checkpoint(p, OMStrategy.memory_view)) is not None  # its neighbour


@pytest.mark.slow  # a run per kind of damage (about 3 s each)
@pytest.mark.parametrize("kind", list(BAD))
def test_a_run_replays_the_damaged_question_and_matches_a_clean_run(clean: Path, tmp_path: Path, kind: str,
                                                                    capsys) -> None:
    shutil.copytree(clean / "checkpoints", tmp_path / "checkpoints")
    (ck_dir,) = (tmp_path / "checkpoints").iterdir()
    a, b = sorted(ck_dir.glob("*.json"))
    _damage(a, b, kind)
    orphan = temp_path(ck_dir / a.name)  # a killed writer's temporary...
    os.rename(orphan, ck_dir / f".tmp-999999-x-{a.name}")  # ...of a process that is gone
    notices.reset()
    capsys.readouterr()

    out = run_job(compose_cfg(tmp_path, *RUN))

    assert out[0].computed == 2 and out[0].failed == 0
    lines = _warnings(capsys.readouterr().err)
    assert len(lines) == 1 and BAD[kind][1] in lines[0], lines
    assert differences(figures(clean / "bench.duckdb"), figures(tmp_path / "bench.duckdb")) == []
    restored = dict(_restored(tmp_path / "bench.duckdb"))
    assert restored[a.stem] is False  # replayed
    assert restored[b.stem] is True  # its neighbour came from its checkpoint
    assert json.loads(a.read_text())["question_id"] == a.stem  # rewritten, valid
    assert not list(ck_dir.glob(".tmp-*"))  # the orphan is gone


def _restored(db: Path) -> list[tuple[str, bool]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT question_id, checkpoint_restored FROM samples").fetchall()
    finally:
        con.close()


def test_a_checkpoint_under_another_name_never_answers(clean: Path, tmp_path: Path) -> None:
    """Copied under another question's name, a checkpoint is refused even when everything else in it is valid."""
    (ck_dir,) = (clean / "checkpoints").iterdir()
    a, b = sorted(ck_dir.glob("*.json"))
    work = tmp_path / "ck"
    work.mkdir()
    shutil.copyfile(b, work / a.name)
    assert CheckpointStore(tmp_path, "ck").load(a.stem) is None
    assert json.loads(b.read_text())["format_version"] == CHECKPOINT_FORMAT


def test_orphaned_temporaries_of_dead_writers_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    mine = temp_path(tmp_path / "q.json")  # this process is alive: kept
    dead = tmp_path / ".tmp-999999-abc-q.json"
    dead.write_text("{")
    legacy = tmp_path / ".tmp-k2j3h4.json"  # an older version's name, no pid: removed once an hour old
    legacy.write_text("{")
    os.utime(legacy, (1, 1))
    assert remove_orphans(tmp_path) == 1 and mine.exists() and not dead.exists()
    CheckpointStore(tmp_path.parent, tmp_path.name)
    assert not legacy.exists() and mine.exists()


async def test_bad_response_cache_rows_are_asked_again_and_replaced(make_gateway, fake_server, tmp_path, capsys):
    gw = make_gateway()
    msgs = [{"role": "user", "content": "what colour is the sky?"}]
    first = (await gw.model("actor").complete(msgs)).text
    path = Path(gw.config.cache_path)
    con = sqlite3.connect(path)
    (key, payload), = con.execute("SELECT key, payload FROM responses").fetchall()
    damage = {
        "truncated row": ("UPDATE responses SET payload = ?", payload[: len(payload) // 2], "not valid JSON"),
        "wrong-typed usage": ("UPDATE responses SET payload = ?",
                              json.dumps({**json.loads(payload), "usage": {"prompt_tokens": "x"}}),
                              "usage.prompt_tokens"),
        "another model's row": ("UPDATE responses SET model = ?", "openai/other", "stored for a chat request to"),
        "no reply": ("UPDATE responses SET payload = ?", json.dumps({"usage": {}}), "holds no reply"),
    }
    for name, (stmt, value, says) in damage.items():
        con.execute(stmt, (value,))
        con.commit()
        before = fake_server.stats.requests
        notices.reset()
        capsys.readouterr()
        again = (await gw.model("actor").complete(msgs)).text
        lines = _warnings(capsys.readouterr().err)
        assert again == first and fake_server.stats.requests == before + 1, name  # asked again, same answer
        assert len(lines) == 1 and says in lines[0] and key[:12] in lines[0], (name, lines)
        hit = await gw.model("actor").complete(msgs)  # the fresh response replaced the bad row
        assert hit.meta["response_cache_hit"] and fake_server.stats.requests == before + 1, name
    con.close()
