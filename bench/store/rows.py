"""Turn the contract's records (`RunManifest`, `QuestionResult`) into table rows; scrub secrets on the way."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import datetime, timezone
from typing import Any, Mapping

from bench.store.contract import CacheByProfile, QuestionResult, RunManifest
from bench.store.texts import pack, pack_messages

_SECRET_PARTS = ("api_key", "apikey", "api-key", "secret", "password", "passwd", "credential", "authorization")
REDACTED = "<redacted>"

Row = dict[str, Any]


def is_secret_key(key: str) -> bool:
    k = key.lower()
    # "token" alone or as a suffix (hf_token, access-token) is a credential; "max_tokens" and "tokenizer" are not.
    return any(p in k for p in _SECRET_PARTS) or k == "token" or k.endswith(("_token", "-token"))


def _looks_like_key(v: str) -> bool:
    return v.startswith(("sk-", "sk_", "hf_", "xai-", "AIza")) and len(v) >= 20 and " " not in v


# a password in a URL (postgresql://user:password@host/db)
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*):[^/@\s]+@")


def scrub(obj: Any) -> Any:
    """A copy with every secret-looking key (and key-looking string) replaced by a marker, and passwords in
    URLs replaced by the marker."""
    if isinstance(obj, Mapping):
        return {str(k): (REDACTED if is_secret_key(str(k)) and v not in (None, "") else scrub(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    if isinstance(obj, str) and _looks_like_key(obj):
        return REDACTED
    if isinstance(obj, str) and "://" in obj:
        return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{REDACTED}@", obj)
    return obj


def to_json(obj: Any) -> str | None:
    """Scrubbed JSON text of a mapping (None for an empty one)."""
    if not obj:
        return None
    return json.dumps(scrub(obj), default=str, sort_keys=True)


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def run_row(run: RunManifest) -> Row:
    row = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
    row.update(name=run.name or run.run_key, config=to_json(run.config), package_versions=to_json(run.package_versions),
               extra=to_json(run.extra), started_at=run.started_at or now())
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
        sample["is_abstention"] = "_abs" in qid  # the official rule
    sample["answered_at"] = s.answered_at or now()
    rows: dict[str, list[Row]] = {"samples": [sample], "calls": [], "call_cache": [], "turns": [],
                                  "turn_cache": [], "judgments": [], "call_texts": [], "memory": [], "retrieval": [],
                                  "memory_outputs": []}
    q = {"run_key": run_key, "question_id": qid}
    for c in result.calls:
        key = {**q, "call_idx": c.call_idx}
        rows["calls"].append({**key, **{f.name: getattr(c, f.name) for f in dataclasses.fields(c)
                                        if f.name not in _CALL_EXTRAS}})
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
    return rows


# CallRow fields stored in other tables than `calls`
_CALL_EXTRAS = ("cache", "messages", "response")
