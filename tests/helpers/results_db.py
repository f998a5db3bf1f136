"""A small but complete results database: OM (two thresholds), full-context, and an imported system.

Written through the store's contract like a real run: OM turns carry the memory/raw split, OM questions their
memory view and memory diagnostics (OM at 30k: every output accepted; at 10k: most refused), the answer and judge
calls their texts, full-context a second judge, OM at 30k three judge repeats."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

from bench.store.run_names import run_name
from bench.store import (
    CallRow,
    JudgmentRow,
    MemoryOutputRow,
    MemoryRow,
    QuestionResult,
    RunManifest,
    SampleRow,
    Store,
    TurnRow,
)

TYPES = ["single-session-user", "single-session-preference", "single-session-assistant", "multi-session",
         "temporal-reasoning", "knowledge-update"]
ABBR = {"single-session-user": "ssu", "single-session-preference": "ssp", "single-session-assistant": "ssa",
        "multi-session": "ms", "temporal-reasoning": "tr", "knowledge-update": "ku"}
QIDS = [(f"q{ABBR[t]}{i}" + ("_abs" if i == 1 and t in ("multi-session", "knowledge-update") else ""), t)
        for t in TYPES for i in range(2)]
OBSERVATIONS = "Date: May 1, 2023\n* (10:00) User said their cat is named Luna."


def _turns(strategy: str, n: int = 30) -> list[TurnRow]:
    out, size, mem = [], 0, 0
    for i in range(n):
        ev: list[str] = []
        if strategy == "om":
            size = size + 900
            if size > 6000:  # observe and shrink: the sawtooth
                size, mem, ev = 1500 + mem // 4, mem + 600, ["observe"]
        else:
            size = size + 900
        cached = 0 if ev else max(size - 900, 0)
        split = {"memory_tokens": mem, "raw_tokens": size - mem, "generation": 0} if strategy == "om" else {}
        out.append(TurnRow(turn=i, sim_time=datetime(2023, 5, 1) + timedelta(minutes=i), prompt_tokens=size,
                           events=tuple(ev), cache={"openai": {"cached": cached, "prefill": size - cached},
                                                    "anthropic": {"cached": cached // 2, "prefill": size - cached // 2}},
                           **split))
    return out


def build_small_db(path: Path, seed: int = 0) -> dict[str, dict[str, bool]]:
    """Returns run_key -> {question_id: label} for the runs written."""
    rnd = random.Random(seed)
    runs = {
        "fc": ("full_context", None, 0.6),
        "om-30k": ("om", {"message_tokens": 30000, "observation_tokens": 40000}, 0.7),
        "om-10k": ("om", {"message_tokens": 10000, "observation_tokens": 40000}, 0.65),
    }
    labels: dict[str, dict[str, bool]] = {}
    with Store(path) as store:
        for rk, (strategy, om, p) in runs.items():
            cfg = {"strategies": {strategy: {"name": strategy, "params": om or {}}}, "api_key": "sk-secretsecretsecret0"}
            store.upsert_run(RunManifest(run_key=rk, name=rk, strategy=strategy, config=cfg, n_questions_planned=500,
                                         actor_model="offline/echo", judge_model="offline/judge",
                                         dataset_name="longmemeval_s", tokenizer="o200k_base"))
            labels[rk] = {}
            for qid, qtype in QIDS:
                lab = rnd.random() < p
                labels[rk][qid] = lab
                turns = _turns(strategy)
                last = turns[-1]
                size = last.prompt_tokens or 0
                calls = [{"role": "actor", "model": "offline/echo", "phase": "answer", "prompt_tokens": size,
                          "completion_tokens": 20, "cost_usd": size * 1e-6, "latency_s": 0.5 + rnd.random(),
                          "messages": [{"role": "user", "content": f"Question {qid}?"}], "response": f"answer {qid}",
                          "cache": {k: {**v, "write": 0, "cost_usd": v["prefill"] * 1e-6} for k, v in last.cache.items()}},
                         {"role": "judge", "model": "offline/judge", "phase": "judge", "prompt_tokens": 200,
                          "cost_usd": 1e-4, "latency_s": 0.2, "messages": [{"role": "user", "content": "Judge it"}],
                          "response": "yes" if lab else "no"}]
                if strategy == "om":
                    calls.insert(0, {"role": "observer", "model": "offline/obs", "phase": "ingest", "prompt_tokens": 5000,
                                     "cost_usd": 5e-3, "latency_s": 2.0,
                                     "cache": {"openai": {"cached": 0, "prefill": 5000, "write": 0}}})
                second = (lab if rnd.random() < 0.8 else not lab) if strategy == "full_context" else None
                sample = SampleRow(question_id=qid, question_type=qtype, hypothesis=f"answer {qid}", label=lab,
                                   is_abstention="_abs" in qid,  # as the LongMemEval benchmark says
                                   label_strict=lab, judge_raw="yes" if lab else "no", judge_model="offline/judge",
                                   cost_usd=sum(float(c["cost_usd"]) for c in calls), question=f"Question {qid}?",
                                   gold_answer="Luna", question_date="2023/05/30 (Tue) 23:40", label_second=second,
                                   judge_second_raw=None if second is None else ("yes" if second else "no"),
                                   judge_second_model=None if second is None else "offline/judge2")
                reps = [lab, lab, not lab if qid.startswith("qms") else lab] if rk == "om-30k" else [lab]
                memory = [MemoryRow(0, "observations", OBSERVATIONS, 1, 20), MemoryRow(1, "initial", "older log", 0, 5)] \
                    if strategy == "om" else []
                store.write_question(rk, QuestionResult(
                    sample, [CallRow(call_idx=i, **c) for i, c in enumerate(calls)], turns,
                    [JudgmentRow(repeat_idx=k, raw="yes" if x else "no", label=x, judge_model="offline/judge")
                     for k, x in enumerate(reps)], memory=memory, outputs=OUTPUTS.get(rk, [])))
            store.finish_run(rk)
        # An imported external system: accuracy only.
        ext = {qid: rnd.random() < 0.8 for qid, _ in QIDS}
        store.upsert_run(RunManifest(run_key="external:zep", name="zep", strategy="external:zep",
                                     n_questions_planned=500, status="imported"))
        for qid, qtype in QIDS:
            store.write_question("external:zep", QuestionResult(SampleRow(
                question_id=qid, question_type=qtype, label=ext[qid], judge_model="gpt-4o-2024-08-06")))
        labels["external:zep"] = ext
    return labels


# per question of the OM runs: every output accepted (30k), most refused (10k)
OUTPUTS = {
    "om-30k": [MemoryOutputRow("observer", "clean", "", 3, 9000, 1500), MemoryOutputRow("reflector", "clean", "", 1, 1500, 700)],
    "om-10k": [MemoryOutputRow("observer", "rejected", "copied_input", 4, 8000, 8000),
               MemoryOutputRow("observer", "truncated", "truncated", 2, 4000, 900),
               MemoryOutputRow("observer", "clean", "", 1, 3000, 600)],
}

# the labels the report, summary and viewer give these runs: their stable names (bench.store.run_names)
LABELS = {"fc": run_name("fc", "fc", "full_context", "longmemeval_s"),
          "om-10k": run_name("om-10k", "om-10k", "om", "longmemeval_s"),
          "om-30k": run_name("om-30k", "om-30k", "om", "longmemeval_s"),
          "external:zep": run_name("external:zep", "zep", "external:zep", None)}
