"""The conformance comparison can fail: om_core replayed through conformance/omcore_replay.py on a fabricated
two-thread conversation against the conformance fake model, then compared (conformance/compare.py) with itself as
Mastra would send it (raw thread ids, the history as one text part per message) and with deliberately broken
copies. No npm, no data: the real-package runs are `make conformance` (docs/conformance.md)."""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import om_core.observer_format as observer_format
import om_core.observer_prompt as observer_prompt
from conformance.compare import THREAD, compare_case
from conformance.fake_model import FakeModel, answer
from conformance.omcore_replay import replay

WORDS = ("sofa lamp table shelf rug pillow chair desk bed mirror plant curtain frame vase clock basket stool "
         "cabinet dresser bench").split()


def _text(seed: int, n: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n)) + "."


def _fabricated_run(folder: Path) -> Path:
    """A Mastra driver output folder (schedule.json, record.json) for a two-thread resource-scope conversation: thread
    t-a observed twice, thread t-b left unobserved with one message long enough to be cut in the OTHER block."""
    start = datetime(2023, 5, 20, 9, 0, tzinfo=timezone.utc)
    schedule, stored = [], {"t-a": [], "t-b": []}
    plan = [("t-a", (60, 60))] * 9 + [("t-b", (0, 10))]
    for k, (tid, sizes) in enumerate(plan):
        pair = []
        for j, (role, n) in enumerate(zip(("user", "assistant"), sizes)):
            at = (start + timedelta(days=k // 3, minutes=k * 5, seconds=5 * j)).isoformat().replace("+00:00", "Z")
            # t-b's user message: over the OTHER block's 500-character cut, but few tokens (no trigger)
            text = _text(k * 2 + j, n) if n else "My lamp list: " + "=" * 600
            pair.append({"role": role, "content": text, "createdAt": at})
            stored[tid].append({"id": f"{tid}-{len(stored[tid])}", "role": role, "text": text, "createdAt": at,
                                "partTypes": ["text"]})
        schedule.append({"pair": k, "threadId": tid, "messages": pair})
    run = folder / "mastra"
    run.mkdir(parents=True)
    (run / "schedule.json").write_text(json.dumps({
        "scope": "resource", "messageTokens": 400, "observationTokens": 100, "resourceId": "r-1",
        "questionDate": "2023-05-25T18:00:00.000Z", "evalThreadId": "eval-1",
        "question": "Current Date: 2023/05/25 (Thu) 18:00\nQuestion: Which lamp did I pick?", "schedule": schedule}))
    (run / "record.json").write_text(json.dumps({"stored": stored}))
    return run


def _replayed(tmp: Path, name: str) -> dict[str, Any]:
    """om_core m11 on the fabricated run: its request log, pair marks, question-time and per-pair Actor contexts."""
    run = tmp / "mastra" if (tmp / "mastra").is_dir() else _fabricated_run(tmp)
    out = tmp / name
    with FakeModel() as fm:
        asyncio.run(replay(run, out, fm.base_url(name), "m11", "twostep", "gpt-4o"))
        log = fm.requests.get(name, [])
    return {
        "log": log,
        "marks": [e["requests_before"] for e in json.loads((out / "events.json").read_text())],
        "actor": json.loads((out / "final_context.json").read_text()),
        "prep": [json.loads(x)["messages"] for x in (out / "actor_contexts.jsonl").read_text().splitlines()],
    }


def _as_mastra(side: dict[str, Any], raw_ids: dict[str, str]) -> dict[str, Any]:
    """The same requests shaped as Mastra sends them: raw thread ids in the history tags, the history as one text
    part per message, no context keys."""
    m = copy.deepcopy(side)
    for r in m["log"]:
        if r["kind"] != "observer":
            continue
        msgs = r["body"]["messages"]
        u = msgs[-1]["content"]
        for hashed, raw in raw_ids.items():
            u = u.replace(f'<thread id="{hashed}">\n**', f'<thread id="{raw}">\n**')
        head, sep, hist = u.partition("## New Message History to Observe")
        msgs[-1]["content"] = u if not sep else [{"type": "text", "text": head + sep}, {"type": "text", "text": hist}]
    m["actor"] = [{"role": x["role"], "content": x["content"]} for x in m["actor"]]
    m["prep"] = [[{"role": x["role"], "content": x["content"]} for x in p] for p in m["prep"]]
    return m


def _checks(m: dict[str, Any], o: dict[str, Any], wording: bool = False) -> dict[str, Any]:
    got = compare_case(m["log"], o["log"], m["marks"], o["marks"], {"t-a", "t-b"}, m["actor"], o["actor"],
                       list(zip(m["prep"], o["prep"])), wording=wording)
    return {c.name: c for c in got}


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("conformance")
    om = _replayed(tmp, "omcore")
    from om_core.scopes import display_id

    mastra = _as_mastra(_replayed(tmp, "mastra"), {display_id(t, True): t for t in ("t-a", "t-b")})
    return mastra, om


def test_the_fabricated_run_reaches_every_check(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    mastra, om = sides
    kinds = "".join(r["kind"][0] for r in om["log"])
    assert kinds.count("o") >= 2 and "r" in kinds, kinds
    assert any("[truncated" in x["content"] for x in om["actor"]), "the OTHER block has no cut part"
    assert isinstance(mastra["log"][0]["body"]["messages"][-1]["content"], list)


def test_identical_runs_pass_every_check(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    checks = _checks(*sides)
    assert set(checks) == {"triggers", "observer", "reflector", "params", "actor at question time", "actor per pair"}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]


def test_one_character_in_an_observer_history_fails(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    mastra, om = sides
    broken = copy.deepcopy(om)
    req = next(r for r in broken["log"] if r["kind"] == "observer")
    u = req["body"]["messages"][-1]["content"]
    tid, hist = THREAD.findall(u)[0]
    req["body"]["messages"][-1]["content"] = u.replace(hist, hist.replace("lamp", "lamps", 1), 1)
    checks = _checks(mastra, broken)
    assert not checks["observer"].ok and "lamps" in checks["observer"].detail
    assert checks["triggers"].ok


def test_a_moved_trigger_fails(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    mastra, om = sides
    moved = copy.deepcopy(om)
    first = next(k for k in range(len(moved["marks"]) - 1) if moved["marks"][k + 1] > moved["marks"][k])
    moved["marks"][first + 1] -= 1  # the first Observer request now falls one pair later
    checks = _checks(mastra, moved)
    assert not checks["triggers"].ok and f"({first}," in checks["triggers"].detail


def test_a_one_character_change_of_om_core_cut_marker_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    mastra, _ = sides
    real_cut = observer_format._cut

    def cut(text: str, max_chars: int | None) -> str:
        return real_cut(text, max_chars).replace("\n... [truncated", "\n.. [truncated")

    monkeypatch.setattr(observer_format, "_cut", cut)
    checks = _checks(mastra, _replayed(tmp_path, "omcore"))
    assert not checks["actor at question time"].ok
    assert "other_conversations" in checks["actor at question time"].detail


def test_a_changed_request_parameter_fails(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    mastra, om = sides
    changed = copy.deepcopy(om)
    for r in changed["log"]:
        if r["kind"] == "reflector":
            r["body"]["max_tokens"] = 16384
    check = _checks(mastra, changed)["params"]
    assert not check.ok and "16384" in check.detail


def test_with_wording_identical_requests_pass_in_full(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    checks = _checks(*sides, wording=True)
    assert {"observer request", "reflector request"} <= set(checks)
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]
    assert "byte-identical" in checks["observer request"].detail


def test_with_wording_one_character_of_a_system_prompt_fails(sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    mastra, om = sides
    changed = copy.deepcopy(om)
    for r in changed["log"]:
        if r["kind"] == "reflector":
            system = r["body"]["messages"][0]
            assert system["role"] == "system"
            system["content"] = system["content"].replace("e", "E", 1)
    checks = _checks(mastra, changed, wording=True)
    assert not checks["reflector request"].ok and "pair" in checks["reflector request"].detail
    assert checks["reflector"].ok and checks["observer request"].ok  # the data and the other kind still agree
    assert all(c.ok for c in _checks(mastra, changed).values())  # without wording the text is not compared


def test_with_wording_one_character_of_om_core_history_layout_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sides: tuple[dict[str, Any], dict[str, Any]]) -> None:
    mastra, _ = sides
    monkeypatch.setattr(observer_prompt, "HISTORY_END", "\n\n--")
    checks = _checks(mastra, _replayed(tmp_path, "omcore"), wording=True)
    assert not checks["observer request"].ok
    assert checks["reflector request"].ok and checks["triggers"].ok


def test_the_fake_model_answers_from_the_history_alone() -> None:
    m11 = "## New Message History to Observe\n\n**User (May 20, 2023, 2:21 PM):**\nI bought a lamp\n\n## Your Task\n"
    m31 = "## New Message History to Observe\n\nMay 20 2023:\nUser (2:21 PM): I bought a lamp\n## Your Task\n"
    bodies = [{"messages": [{"role": "system", "content": s}, {"role": "user", "content": u}]}
              for s, u in (("one wording", m11), ("another wording", m31))]
    (k1, a1), (k2, a2) = answer(bodies[0]), answer(bodies[1])
    assert k1 == k2 == "observer" and a1 == a2 and "* 🔴 (14:21) User said: I bought a lamp" in a1


def _replayed_131(tmp: Path, name: str) -> dict[str, Any]:
    """om_core m31 on the fabricated run reading the 1.31.0 texts cached under `tmp` (prompt_source="mastra")."""
    run = tmp / "mastra" if (tmp / "mastra").is_dir() else _fabricated_run(tmp)
    out = tmp / name
    with FakeModel() as fm:
        asyncio.run(replay(run, out, fm.base_url(name), "m31", "single", "gpt-4o", "mastra"))
        log = fm.requests.get(name, [])
    return {"log": log, "marks": [e["requests_before"] for e in json.loads((out / "events.json").read_text())],
            "actor": json.loads((out / "final_context.json").read_text()), "prep": []}


def test_131_texts_one_character_in_a_cached_text_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1.31.0-oracle-texts comparison (whole requests and Actor texts) on the fabricated run: om_core m31 with
    stand-in 1.31.0 texts in its cache against itself shaped as 1.31.0 sends (raw ids in thread tags and prior-
    metadata lines, keys dropped) passes; one character changed in a cached text turns it red."""
    import om_core.mastra_texts as mt
    from om_core.scopes import display_id
    from tests.om_core.test_mastra_texts import built_131

    monkeypatch.setenv("OM_CORE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(mt, "_checked", {})
    monkeypatch.setitem(mt.RELEASES, "m31", (*mt.RELEASES["m31"][:2], "PENDING"))  # stand-in texts: no pinned hash
    folder = tmp_path / "cache" / "mastra" / "1.31.0"
    mt._write_folder(folder, "stand-in", mt.cut_templates_131(built_131()))
    om = _replayed_131(tmp_path, "omcore")
    assert {r["kind"] for r in om["log"]} == {"observer", "reflector"}
    mastra = copy.deepcopy(om)
    for r in mastra["log"]:
        for m in r["body"]["messages"]:
            history = m["content"].startswith("## New Message History")
            for t in ("t-a", "t-b"):
                hashed = display_id(t, True)
                m["content"] = m["content"].replace(f"- thread {hashed}\n", f"- thread {t}\n")
                if history:  # the previous observations keep the ids om_core shows, on both sides
                    m["content"] = m["content"].replace(f'<thread id="{hashed}">', f'<thread id="{t}">')
    mastra["actor"] = [{"role": x["role"], "content": x["content"]} for x in om["actor"]]

    def checks(o: dict[str, Any]) -> dict[str, Any]:
        got = compare_case(mastra["log"], o["log"], mastra["marks"], o["marks"], {"t-a", "t-b"}, mastra["actor"],
                           o["actor"], wording=True, actor_texts=True)
        return {c.name: c for c in got}

    assert all(c.ok for c in checks(om).values()), [c for c in checks(om).values() if not c.ok]
    for name, kind in (("observer_task_multi", "observer request"), ("reflector_task", "reflector request"),
                       ("actor_instructions", "actor texts")):
        path = folder / f"{name}.txt"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("Stand-in", "Stand-In", 1), encoding="utf-8")
        monkeypatch.setattr(mt, "_checked", {})
        got = checks(_replayed_131(tmp_path, f"omcore-{name}"))
        assert not got[kind].ok, got[kind]
        assert got["triggers"].ok and got["observer"].ok  # the data still agree: only the wording moved
        path.write_text(text, encoding="utf-8")
