"""Turn the runner's dicts (or CallRecords) into table rows; scrub secrets from manifests."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from bench.store.schema import columns

_SECRET_PARTS = ("api_key", "apikey", "api-key", "secret", "password", "passwd", "credential", "authorization")
REDACTED = "<redacted>"


def is_secret_key(key: str) -> bool:
    k = key.lower()
    # "token" alone or as a suffix (hf_token, access-token) is a credential; "max_tokens" and "tokenizer" are not.
    return any(p in k for p in _SECRET_PARTS) or k == "token" or k.endswith(("_token", "-token"))


def _looks_like_key(v: str) -> bool:
    return v.startswith(("sk-", "sk_", "hf_", "xai-", "AIza")) and len(v) >= 20 and " " not in v


def scrub(obj: Any) -> Any:
    """A copy with every secret-looking key (and key-looking string) replaced by a marker."""
    if isinstance(obj, Mapping):
        return {str(k): (REDACTED if is_secret_key(str(k)) and v not in (None, "") else scrub(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    if isinstance(obj, str) and _looks_like_key(obj):
        return REDACTED
    return obj


def to_json(obj: Any) -> str | None:
    if obj is None:
        return None
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except ValueError:
            return json.dumps(scrub(obj))
    return json.dumps(scrub(obj), default=str, sort_keys=True)


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _ts(v: Any) -> datetime | None:
    if v is None or isinstance(v, datetime):
        return v.replace(tzinfo=None) if isinstance(v, datetime) and v.tzinfo else v
    return datetime.fromisoformat(str(v))


_MANIFEST_ALIASES = {"git_sha": "git_commit", "split": "dataset_split", "config_json": "config"}


def run_row(run_key: str, manifest: Mapping[str, Any]) -> dict[str, Any]:
    m = {_MANIFEST_ALIASES.get(k, k): v for k, v in manifest.items()}
    cols = columns("runs")
    row: dict[str, Any] = {c: m.get(c) for c in cols}
    row["run_key"] = run_key
    row["name"] = m.get("name") or run_key
    row["config"] = to_json(m.get("config"))
    row["package_versions"] = to_json(m.get("package_versions"))
    extra = {k: v for k, v in m.items() if k not in cols}
    row["extra"] = to_json(extra) if extra else None
    row["started_at"] = _ts(m.get("started_at")) or now()
    row["finished_at"] = _ts(m.get("finished_at"))
    row["status"] = m.get("status") or "running"
    if row["n_questions_planned"] is not None:
        row["n_questions_planned"] = int(row["n_questions_planned"])
    return row


def sample_row(run_key: str, sample: Mapping[str, Any]) -> dict[str, Any]:
    if not sample.get("question_id"):
        raise ValueError("sample needs a question_id")
    row = {c: sample.get(c) for c in columns("samples")}
    row["run_key"] = run_key
    qid = str(sample["question_id"])
    if row["is_abstention"] is None:
        row["is_abstention"] = "_abs" in qid  # official rule
    for k in ("label", "label_strict", "is_abstention"):
        if row[k] is not None:
            row[k] = bool(row[k])
    if row["hypothesis"] is not None:
        row["hypothesis"] = str(row["hypothesis"])
    row["answered_at"] = _ts(sample.get("answered_at")) or now()
    return row


def _as_dict(rec: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(rec) and not isinstance(rec, type):
        d = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec)}
    else:
        d = dict(rec)
    # CallRecord field names -> column names
    for src, dst in (("cached_tokens_reported", "cached_reported"), ("cache_write_tokens_reported", "cache_write_reported")):
        if src in d and dst not in d:
            d[dst] = d[src]
    return d


def _phase(d: Mapping[str, Any]) -> str:
    if d.get("phase"):
        return str(d["phase"])
    if d.get("role") == "judge":
        return "judge"
    if d.get("role") in ("actor", "reader") and not d.get("simulated"):
        return "answer"
    return "ingest"


def _num(x: Any, key: str, *alts: str) -> Any:
    for k in (key, *alts):
        if isinstance(x, Mapping) and x.get(k) is not None:
            return x[k]
    return None


def call_rows(run_key: str, question_id: str, calls: Iterable[Any]) -> tuple[list[dict], list[dict]]:
    out, cache = [], []
    for i, rec in enumerate(calls):
        d = _as_dict(rec)
        idx = int(d["call_idx"]) if d.get("call_idx") is not None else i
        row = {c: d.get(c) for c in columns("calls")}
        row.update(run_key=run_key, question_id=question_id, call_idx=idx, phase=_phase(d),
                   simulated=bool(d.get("simulated") or False), sim_time=_ts(d.get("sim_time")))
        out.append(row)
        for profile, p in (d.get("cache") or {}).items():
            cache.append({
                "run_key": run_key, "question_id": question_id, "call_idx": idx, "profile": str(profile),
                "cached_tokens": _int(_num(p, "cached", "cached_tokens")),
                "prefill_tokens": _int(_num(p, "prefill", "prefill_tokens")),
                "write_tokens": _int(_num(p, "write", "write_tokens")),
                "cost_usd": _num(p, "cost_usd", "cost"),
            })
    return out, cache


def _int(v: Any) -> int | None:
    return None if v is None else int(v)


def turn_rows(run_key: str, question_id: str, turns: Iterable[Any]) -> tuple[list[dict], list[dict]]:
    out, cache = [], []
    for i, t in enumerate(turns):
        d = _as_dict(t)
        idx = int(d["turn"]) if d.get("turn") is not None else i
        ev = d.get("events")
        events = ",".join(map(str, ev)) if isinstance(ev, (list, tuple)) else ev
        out.append({"run_key": run_key, "question_id": question_id, "turn": idx, "sim_time": _ts(d.get("sim_time")),
                    "prompt_tokens": _int(d.get("prompt_tokens")), "events": events})
        for profile, p in (d.get("cache") or {}).items():
            cache.append({"run_key": run_key, "question_id": question_id, "turn": idx, "profile": str(profile),
                          "cached_tokens": _int(_num(p, "cached", "cached_tokens")),
                          "prefill_tokens": _int(_num(p, "prefill", "prefill_tokens"))})
    return out, cache


def judgment_rows(run_key: str, question_id: str, judgments: Iterable[Any]) -> list[dict]:
    out = []
    for i, j in enumerate(judgments):
        d = _as_dict(j)
        out.append({"run_key": run_key, "question_id": question_id,
                    "repeat_idx": int(d["repeat_idx"]) if d.get("repeat_idx") is not None else i,
                    "judge_model": d.get("judge_model") or d.get("model"), "raw": d.get("raw"),
                    "label": None if d.get("label") is None else bool(d["label"])})
    return out


def question_rows(run_key: str, sample: Mapping[str, Any], calls: Iterable[Any], turns: Iterable[Any],
                  judgments: Iterable[Any]) -> dict[str, list[dict]]:
    """All rows of one question, keyed by table."""
    s = sample_row(run_key, sample)
    qid = s["question_id"]
    c, cc = call_rows(run_key, qid, calls)
    t, tc = turn_rows(run_key, qid, turns)
    return {"samples": [s], "calls": c, "call_cache": cc, "turns": t, "turn_cache": tc,
            "judgments": judgment_rows(run_key, qid, judgments)}
