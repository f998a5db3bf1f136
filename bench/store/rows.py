"""Turn the contract's records (`RunManifest`, `QuestionResult`) into table rows; secrets are redacted on the way
(bench.secrets: the config, the run name, every error text)."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from typing import Any, Mapping

from bench.secrets import redact, redact_text
from bench.store.contract import CacheByProfile, QuestionResult, RunManifest
from bench.store.texts import pack, pack_messages

Row = dict[str, Any]
scrub = redact  # the one secret policy (bench.secrets); kept under its old name for callers of the store


def to_json(obj: Any) -> str | None:
    """Redacted JSON text of a mapping (None for an empty one)."""
    if not obj:
        return None
    return json.dumps(redact(obj), default=str, sort_keys=True)


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def run_row(run: RunManifest) -> Row:
    row = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
    row.update(name=redact_text(run.name or run.run_key), config=to_json(run.config),
               package_versions=to_json(run.package_versions), extra=to_json(run.extra), started_at=run.started_at or now())
    return row


def _cache_rows(key: Mapping[str, Any], cache: CacheByProfile, with_cost: bool) -> list[Row]:
    out = []
    for profile, p in cache.items():
        row = {**key, "profile": str(profile), "cached_tokens": _int(p.get("cached")),
               "prefill_tokens": _int(p.get("prefill"))}
        if with_cost:
            row.update(write_tokens=_int(p.get("write")), cost_usd=p.get("cost_usd"))
        out.append(row)
    return out


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def question_rows(run_key: str, result: QuestionResult) -> dict[str, list[Row]]:
    """All rows of one question, keyed by table."""
    s = result.sample
    if not s.question_id:
        raise ValueError("a sample needs a question_id")
    qid = s.question_id
    sample = {"run_key": run_key, **dataclasses.asdict(s)}
    if s.is_abstention is None:
        sample["is_abstention"] = False  # the writer did not say: the benchmark's rule decides (the runner asks it)
    sample["answered_at"] = s.answered_at or now()
    if s.error:  # a provider's error text may quote a key or a URL with its password
        sample["error"] = redact_text(s.error)
    rows: dict[str, list[Row]] = {"samples": [sample], "calls": [], "call_cache": [], "turns": [],
                                  "turn_cache": [], "judgments": [], "call_texts": [], "memory": [], "retrieval": [],
                                  "memory_outputs": [], "answer_tries": []}
    q = {"run_key": run_key, "question_id": qid}
    for c in result.calls:
        key = {**q, "call_idx": c.call_idx}
        call = {**key, **{f.name: getattr(c, f.name) for f in dataclasses.fields(c) if f.name not in _CALL_EXTRAS}}
        if c.error:
            call["error"] = redact_text(c.error)
        rows["calls"].append(call)
        rows["call_cache"] += _cache_rows(key, c.cache, with_cost=True)
        if c.messages is not None or c.response is not None:
            rows["call_texts"].append({**key, "prompt": pack_messages(c.messages), "response": pack(c.response)})
    for t in result.turns:
        key = {**q, "turn": t.turn}
        rows["turns"].append({**key, **{f.name: getattr(t, f.name) for f in dataclasses.fields(t)
                                        if f.name not in ("turn", "cache")}, "events": ",".join(t.events)})
        rows["turn_cache"] += _cache_rows(key, t.cache, with_cost=False)
    rows["judgments"] = [{**q, **dataclasses.asdict(j)} for j in result.judgments]
    rows["memory"] = [{**q, **dataclasses.asdict(m), "text": pack(m.text)} for m in result.memory]
    rows["retrieval"] = [{**q, **dataclasses.asdict(r)} for r in result.retrieval]
    rows["memory_outputs"] = [{**q, **dataclasses.asdict(o)} for o in result.outputs]
    rows["answer_tries"] = [{**q, **dataclasses.asdict(t), "error": redact_text(t.error) if t.error else None}
                            for t in result.tries]
    return rows


# CallRow fields stored in other tables than `calls`
_CALL_EXTRAS = ("cache", "messages", "response")
