"""One stored run as an Inspect AI eval log (`inspect_ai.log.EvalLog`), so `inspect view` and Inspect's log tools
(`read_eval_log`, `list_eval_logs`, pandas dataframes) work on om-bench results.

Built with the `inspect_ai` package's own log types (an optional dependency: `pip install 'om-bench[inspect]'`).
One `EvalSample` per stored question (`id` = question id, epoch 1):

- `input`: the question; `target`: the gold answer; `messages`: the Actor's question-time prompt messages as stored
  (system, user ...) and its answer; `output`: the answer (model = the run's Actor model);
- `scores`: `judge` (`"C"`/`"I"`, Inspect's CORRECT/INCORRECT; `answer` = hypothesis, `explanation` = the judge's
  reply, `metadata.model`), and `judge_second` when a second judge ran; an unjudged question has no score and
  carries its error as `EvalSample.error`;
- `metadata`: question_type, is_abstention, question_date, strategy, run_name, run_key, actor_prompt_tokens,
  prefill_tokens (simulated, per cache profile, whole question: Actor and background calls), cost_usd (the
  system's calls, USD), judge_cost_usd, memory (the memory view the question was answered from: kind, generation,
  tokens, text; OM: observations at question time) and answer_location (bench.report.attribution);
- `events`: a `ModelEvent` per call whose texts were stored (Inspect's transcript: Actor and judge at question time;
  every replay call with `output.store_prompts=all`), `role` the om-bench role;
- `model_usage`: real calls' tokens and USD per model (simulated Actor turns of the replay left out).

The log's results hold the micro accuracy (`accuracy`, with `stderr`) and the macro over question types
(`macro_accuracy`) of the primary judge; `eval.metadata` the run's manifest facts (models per role, dataset sha256).
Raises UserError when `inspect_ai` is not installed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.errors import UserError

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog

    from bench.store import Results

SCORER, SECOND_SCORER = "judge", "judge_second"


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError as e:
        raise UserError("the Inspect export needs the inspect_ai package: pip install 'om-bench[inspect]' "
                        f"(or pip install inspect_ai); import failed: {e}") from None
    return log


def _iso(ts: Any) -> str | None:
    if ts is None or ts != ts:
        return None
    dt = ts if isinstance(ts, datetime) else datetime.fromisoformat(str(ts))
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).isoformat()


def _num(v: Any) -> Any:
    """A JSON-safe scalar: NaN/NA as None, numpy numbers as Python's."""
    if v is None:
        return None
    try:
        if v != v:
            return None
    except (TypeError, ValueError):
        return None
    return v.item() if hasattr(v, "item") else v


def _messages(prompt: list[dict[str, Any]] | None, question: str, answer: str | None, model: str | None) -> list[Any]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    out: list[Any] = []
    for m in prompt or [{"role": "user", "content": question}]:
        content = m.get("content")
        text = content if isinstance(content, str) else "" if content is None else str(content)
        role = m.get("role")
        if role == "system":
            out.append(ChatMessageSystem(content=text))
        elif role == "assistant":
            out.append(ChatMessageAssistant(content=text))
        else:
            out.append(ChatMessageUser(content=text))
    if answer is not None:
        out.append(ChatMessageAssistant(content=answer, model=model))
    return out


def _events(qc: Any, texts: dict[int, Any], question: str, when: str | None) -> list[Any]:
    """A `ModelEvent` per call of the question whose texts were stored (Actor and judge at question time; every
    replay call with `output.store_prompts=all`): `role` the om-bench role, usage and latency from `calls`."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage

    out = []
    for c in qc.itertuples():
        idx = int(c.call_idx)
        if idx not in texts or not texts[idx][0]:
            continue
        prompt, reply = texts[idx]
        model = str(c.model or "unknown")
        output = ModelOutput.from_content(model, reply or "")
        i, o = int(_num(c.prompt_tokens) or 0), int(_num(c.completion_tokens) or 0)
        output.usage = ModelUsage(input_tokens=i, output_tokens=o, total_tokens=i + o)
        extra: dict[str, Any] = {"timestamp": when} if when else {}  # else the time of the export
        out.append(ModelEvent(
            model=model, role=str(c.role), input=_messages(prompt, question, None, None), tools=[],
            tool_choice="none", config=GenerateConfig(), output=output, working_time=_num(c.latency_s),
            metadata={"call_idx": idx, "phase": c.phase, "simulated": bool(c.simulated)}, **extra))
    return out


def _score(label: Any, hypothesis: str | None, raw: Any, model: Any) -> Any:
    from inspect_ai.scorer import Score

    return Score(value="C" if bool(label) else "I", answer=hypothesis, explanation=None if raw is None else str(raw),
                 metadata={"model": model})


def build_eval_log(res: Results, run_key: str) -> EvalLog:
    """The run `run_key` of `res` as an `EvalLog` (nothing written). Raises UserError when the run is unknown or
    inspect_ai is missing."""
    log = _inspect()
    from inspect_ai.model import ModelOutput, ModelUsage

    from bench.report.attribution import attribute
    from bench.store.run_names import name_of

    manifest = res.run(run_key)
    if manifest is None:
        raise UserError(f"run {run_key!r} not in {res.path}; list them with `ombench runs --db {res.path}`")
    runs = res.runs()
    name = name_of(runs[runs.run_key == run_key].iloc[0].to_dict())
    samples = res.samples(run_key)
    calls = res.query("SELECT question_id, call_idx, role, phase, model, prompt_tokens, completion_tokens, cost_usd, "
                      "latency_s, "
                      "coalesce(simulated, false) AS simulated FROM calls WHERE run_key = ? ORDER BY question_id, "
                      "call_idx", [run_key])
    prefill = res.query("SELECT question_id, profile, prefill_tokens FROM v_prefill WHERE run_key = ?", [run_key])
    pre: dict[str, dict[str, int]] = defaultdict(dict)
    for r in prefill.itertuples():
        if _num(r.prefill_tokens) is not None:
            pre[str(r.question_id)][str(r.profile)] = int(r.prefill_tokens)
    actor_model = manifest.actor_model or res.actor_models().get(run_key) or "unknown"
    roles = {k: v.get("model") for k, v in ((manifest.config or {}).get("model") or {}).items()
             if isinstance(v, dict) and v.get("model")}

    # a panel-judged run: the headline verdict is the panel's (runs.extra judge_panel: its models and rule)
    panel = (manifest.extra or {}).get("judge_panel") if isinstance(manifest.extra, dict) else None
    eval_samples: list[Any] = []
    usage_total: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])  # model -> input, output tokens, USD
    for s in samples.to_dict("records"):
        qid = str(s["question_id"])
        qc = calls[calls.question_id == qid]
        real = qc[~qc.simulated.astype(bool)]
        usage: dict[str, Any] = {}
        for model, g in real.groupby("model"):
            i, o, c = int(g.prompt_tokens.fillna(0).sum()), int(g.completion_tokens.fillna(0).sum()), \
                float(g.cost_usd.fillna(0).sum())
            usage[str(model)] = ModelUsage(input_tokens=i, output_tokens=o, total_tokens=i + o, total_cost=c)
            acc = usage_total[str(model)]
            acc[0] += i
            acc[1] += o
            acc[2] += c
        system = real[real.phase != "judge"]
        judge = real[real.phase == "judge"]
        texts = res.call_texts(run_key, qid)
        answer_calls = [int(i) for i in qc[(qc.role == "actor") & (qc.phase == "answer")].call_idx]
        kept = [i for i in answer_calls if i in texts and texts[i][0]]
        hyp = s.get("hypothesis")
        hyp = hyp if isinstance(hyp, str) else None
        pick = next((i for i in kept if texts[i][1] == hyp), kept[0] if kept else None)
        prompt = texts[pick][0] if pick is not None else None
        memory = res.memory(run_key, qid)
        label = _num(s.get("label"))
        where = attribute(s.get("gold_answer"), None if label is None else bool(label),
                          [(m.item_idx, m.kind, m.text) for m in memory],
                          None if prompt is None else "\n".join(str(m.get("content", "")) for m in prompt),
                          attributable=not bool(s.get("is_abstention")))
        verdicts: dict[str, Any] = {}
        if label is not None:
            verdicts[SCORER] = _score(label, hyp, s.get("judge_raw"), s.get("judge_model"))
        if _num(s.get("label_second")) is not None:
            verdicts[SECOND_SCORER] = _score(s["label_second"], hyp, s.get("judge_second_raw"),
                                           s.get("judge_second_model"))
        error = s.get("error") if isinstance(s.get("error"), str) else None
        question = str(s.get("question") or "")
        eval_samples.append(log.EvalSample(
            id=qid, epoch=1, input=question, target=str(s.get("gold_answer") or ""),
            messages=_messages(prompt, question, hyp, actor_model),
            output=ModelOutput.from_content(actor_model, hyp or ""),
            scores=verdicts or None, model_usage=usage,
            events=_events(qc, texts, question, _iso(s.get("answered_at"))),
            error=log.EvalError(message=error, traceback="", traceback_ansi="") if error else None,
            completed_at=_iso(s.get("answered_at")) or "",
            metadata={
                "question_type": s.get("question_type"), "is_abstention": bool(s.get("is_abstention")),
                "question_date": s.get("question_date"), "strategy": manifest.strategy, "run_name": name,
                "run_key": run_key, "actor_prompt_tokens": _num(s.get("prompt_tokens")),
                "prefill_tokens": pre.get(qid, {}),
                "cost_usd": float(system.cost_usd.fillna(0).sum()) if len(system) else _num(s.get("cost_usd")),
                "judge_cost_usd": float(judge.cost_usd.fillna(0).sum()),
                "label_strict": _num(s.get("label_strict")),
                "memory": [{"kind": m.kind, "generation": _num(m.generation), "tokens": _num(m.tokens),
                            "text": m.text} for m in memory],
                "answer_location": {"attributable": where.attributable, "reached_memory": where.reached_memory,
                                    "survived": where.survived, "in_prompt": where.in_prompt,
                                    "cause": where.cause},
            }))

    judged = samples[samples.label.notna()]
    metrics: dict[str, Any] = {}
    if len(judged):
        lab = judged.label.astype(bool)
        p = float(lab.mean())
        metrics["accuracy"] = log.EvalMetric(name="accuracy", value=p)
        metrics["stderr"] = log.EvalMetric(name="stderr", value=math.sqrt(p * (1 - p) / max(len(lab) - 1, 1)))
        by_type = judged.assign(label=lab).groupby("question_type").label.mean()
        metrics["macro_accuracy"] = log.EvalMetric(name="macro_accuracy", value=float(by_type.mean()))
    scores = [log.EvalScore(name=SCORER, scorer=SCORER, scored_samples=len(judged),
                            unscored_samples=len(samples) - len(judged), metrics=metrics,
                            metadata={"model": manifest.judge_model,
                                      **({"panel": panel} if panel else {})})]
    second = samples[samples.label_second.notna()] if "label_second" in samples else samples.iloc[:0]
    if len(second):
        p2 = float(second.label_second.astype(bool).mean())
        scores.append(log.EvalScore(name=SECOND_SCORER, scorer=SECOND_SCORER, scored_samples=len(second),
                                    metrics={"accuracy": log.EvalMetric(name="accuracy", value=p2)}))
    created = _iso(manifest.started_at) or datetime.now(timezone.utc).isoformat()
    revision = log.EvalRevision(type="git", origin="", commit=manifest.git_commit, dirty=manifest.git_dirty) \
        if manifest.git_commit else None
    status = "success" if manifest.status == "finished" else "error" if manifest.status == "failed" else "started"
    return log.EvalLog(
        status=status,
        eval=log.EvalSpec(
            eval_id=run_key, run_id=run_key, task_id=run_key, created=created, task=name,
            dataset=log.EvalDataset(name=manifest.dataset_split or manifest.dataset_name, samples=len(samples),
                                    sample_ids=[str(q) for q in samples.question_id]),
            model=actor_model, config=log.EvalConfig(epochs=1), revision=revision,
            packages={str(k): str(v) for k, v in (manifest.package_versions or {}).items()},
            metadata={"source": "om-bench", "run_key": run_key, "run_name": name, "strategy": manifest.strategy,
                      "dataset_name": manifest.dataset_name, "dataset_sha256": manifest.dataset_sha256,
                      "n_questions_planned": manifest.n_questions_planned, "models": roles,
                      "judge_model": manifest.judge_model, **({"judge_panel": panel} if panel else {}),
                      "status": manifest.status}),
        results=log.EvalResults(total_samples=len(samples), completed_samples=len(samples), scores=scores),
        stats=log.EvalStats(
            started_at=created, completed_at=_iso(manifest.finished_at) or "",
            model_usage={m: ModelUsage(input_tokens=int(i), output_tokens=int(o), total_tokens=int(i + o), total_cost=c)
                         for m, (i, o, c) in usage_total.items()}),
        samples=eval_samples)


def log_path(out: str | Path, ev: EvalLog) -> Path:
    """Where to write: `out` itself when it names a `.eval` or `.json` file, else a file in the folder `out` named
    as Inspect names its logs (`<created>_<task>_<id>.eval`; `_` only between the three parts, which
    `list_eval_logs` splits on)."""
    p = Path(out)
    if p.suffix in (".eval", ".json"):
        return p
    if p.suffix and not p.is_dir():  # `x.txt` would become a folder named like a file
        from bench.errors import UserError

        raise UserError(f"--out {out}: an Inspect log is a .eval or .json file, or a folder to write one into; "
                        "name a .eval file or a folder")

    def part(s: str) -> str:
        return re.sub(r"[^A-Za-z0-9.+-]+", "-", s).strip("-")

    stamp = ev.eval.created.split(".")[0].replace(":", "-")
    return p / f"{part(stamp)}_{part(ev.eval.task)}_{re.sub(r'[^A-Za-z0-9]', '', ev.eval.eval_id)}.eval"


def listed_by_inspect(path: Path) -> bool:
    """Whether `inspect view` / `list_eval_logs` lists the file: Inspect lists a .json log only when its name
    starts with the creation time (`<created>_<task>_<id>`), as log_path names them."""
    return path.suffix == ".eval" or re.match(r"\d{4}-\d{2}-\d{2}T", path.name) is not None


def write_inspect_log(res: Results, run_key: str, out: str | Path) -> tuple[Path, int]:
    """Write run `run_key` as an Inspect log at `out` (a `.eval`/`.json` file, or a folder): (path, samples)."""
    ev = build_eval_log(res, run_key)
    path = log_path(out, ev)
    path.parent.mkdir(parents=True, exist_ok=True)
    _inspect().write_eval_log(ev, str(path))
    return path, len(ev.samples or [])
