"""The official formats, exactly: what LongMemEval's src/evaluation/print_qa_metrics.py requires of an
eval-results file (re-stated below in our own words, from reading the script at the pinned commit), the
round trip official file -> `ombench import` -> `ombench export` byte for byte, and a run's own export naming
the judge `gpt-4o-2024-08-06` as the official script asserts."""

from __future__ import annotations

import json
import lzma
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.cli import main
from bench.benchmarks.longmemeval.synthetic import write_synthetic
from tests.helpers.fakeserver import FakeOpenAIServer, last_user_text
from bench.runner.app import run_job
from bench.store import Results
from tests.helpers.runner import compose_cfg

TYPES = ("single-session-user", "single-session-preference", "single-session-assistant", "multi-session",
         "temporal-reasoning", "knowledge-update")
JUDGE = "gpt-4o-2024-08-06"


class OfficialCheckFailed(AssertionError):
    pass


def official_qa_metrics(eval_results: Path, ref: list[dict[str, Any]]) -> list[str]:
    """What print_qa_metrics.py does with an eval-results file, in our words: every line is one JSON object
    whose question_id is in the reference (else the script dies on a KeyError), whose autoeval_label.model
    is exactly "gpt-4o-2024-08-06" (the script asserts it) and whose question type is one of the six; then
    per-type means (numpy: nan for an empty type), the mean of the six as the task average, the mean of all
    labels, and the mean over ids containing "_abs". Returns its printout, line by line."""
    by_id = {r["question_id"]: r for r in ref}
    per_type: dict[str, list[int]] = {t: [] for t in TYPES}
    abstention: list[int] = []
    for n, line in enumerate(eval_results.read_text(encoding="utf-8").splitlines(), 1):
        entry = json.loads(line)
        if entry["question_id"] not in by_id:
            raise OfficialCheckFailed(f"line {n}: {entry['question_id']} is not in the reference (KeyError)")
        if entry["autoeval_label"]["model"] != JUDGE:
            raise OfficialCheckFailed(f"line {n}: judge {entry['autoeval_label']['model']!r} (AssertionError)")
        qtype = by_id[entry["question_id"]]["question_type"]
        if qtype not in per_type:
            raise OfficialCheckFailed(f"line {n}: question type {qtype!r} (KeyError)")
        per_type[qtype].append(1 if entry["autoeval_label"]["label"] else 0)
        if "_abs" in entry["question_id"]:
            abstention.append(1 if entry["autoeval_label"]["label"] else 0)
    with warnings.catch_warnings():  # numpy warns on the mean of an empty list, as in the official script
        warnings.simplefilter("ignore")
        lines = ["", "Evaluation results by task:"]
        everything: list[int] = []
        means = []
        for t, labels in per_type.items():
            lines.append(f"\t{t}: {round(np.mean(labels), 4) if labels else float('nan')} ({len(labels)})")
            everything += labels
            means.append(np.mean(labels) if labels else float("nan"))
        lines += ["", f"Task-averaged Accuracy: {round(np.mean(means), 4)}",
                  f"Overall Accuracy: {round(np.mean(everything), 4)}",
                  f"Abstention Accuracy: {round(np.mean(abstention), 4) if abstention else float('nan')} "
                  f"({len(abstention)})"]
    return lines


def _evaluate_qa_line(hyp_line: dict[str, Any], label: bool) -> str:
    """One line as evaluate_qa.py writes it: the hypothesis entry (its keys in file order) plus autoeval_label,
    through json.dumps with its defaults."""
    entry = dict(hyp_line)
    entry["autoeval_label"] = {"model": JUDGE, "label": label}
    return json.dumps(entry)


HYPOTHESES = ["The answer is 18 days.", "Tu as dit « Luna » — ta chatte 🐈", 'He said "yes", then\nno.', "",
              "  leading and trailing spaces  ", "Tab\there and a backslash \\ too", "中文回答"]


@pytest.fixture
def reference(tmp_path) -> tuple[Path, list[dict[str, Any]]]:
    path = write_synthetic(tmp_path / "ref.json", n_per_type=2, haystack_tokens=700, seed=5)
    return path, json.loads(path.read_text(encoding="utf-8"))


def _official_files(tmp_path: Path, ref: list[dict[str, Any]]) -> tuple[Path, Path]:
    hyp = tmp_path / "official" / "hyp.jsonl"
    hyp.parent.mkdir()
    lines = [{"question_id": r["question_id"], "hypothesis": HYPOTHESES[i % len(HYPOTHESES)]} for i, r in enumerate(ref)]
    hyp.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    ev = hyp.with_name("hyp.jsonl.eval-results-gpt-4o")
    ev.write_text("".join(_evaluate_qa_line(x, i % 3 != 0) + "\n" for i, x in enumerate(lines)), encoding="utf-8")
    return hyp, ev


def test_official_file_round_trips_byte_for_byte(tmp_path, reference, capsys) -> None:
    ref_path, ref = reference
    _, ev = _official_files(tmp_path, ref)
    db = tmp_path / "r.duckdb"
    assert main(["import", str(ev), "--ref", str(ref_path), "--db", str(db), "--name", "sys-x"]) == 0
    out = tmp_path / "exported" / "hyp.jsonl"
    assert main(["export", "--db", str(db), "--run", "external:sys-x", "--out", str(out), "--eval-results"]) == 0
    exported = out.with_name("hyp.jsonl.eval-results-gpt-4o")
    original = {json.loads(ln)["question_id"]: ln for ln in ev.read_text(encoding="utf-8").splitlines()}
    mine = {json.loads(ln)["question_id"]: ln for ln in exported.read_text(encoding="utf-8").splitlines()}
    assert mine == original  # every line, byte for byte: question_id, hypothesis, autoeval_label {model, label}
    hyps = {json.loads(ln)["question_id"]: json.loads(ln) for ln in out.read_text(encoding="utf-8").splitlines()}
    assert {q: h["hypothesis"] for q, h in hyps.items()} == {q: json.loads(ln)["hypothesis"] for q, ln in original.items()}
    # and the official checks read both the same way
    assert official_qa_metrics(exported, ref) == official_qa_metrics(ev, ref)
    capsys.readouterr()
    assert main(["metrics", str(exported), str(ref_path)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines() == official_qa_metrics(ev, ref)  # all six types: the same printout
    assert "not the official" not in printed


def test_the_official_checks_refuse_what_the_script_refuses(tmp_path, reference) -> None:
    _, ref = reference
    _, ev = _official_files(tmp_path, ref)
    routed = tmp_path / "routed.jsonl"
    routed.write_text(ev.read_text().replace(f'"model": "{JUDGE}"', f'"model": "openai/{JUDGE}"'))
    with pytest.raises(OfficialCheckFailed, match="AssertionError"):
        official_qa_metrics(routed, ref)


def test_a_runs_export_passes_the_official_checks(tmp_path, monkeypatch, capsys) -> None:
    """A run judged by `openai/gpt-4o-2024-08-06` (served by the local fake server) exports `gpt-4o-2024-08-06`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")

    def judge(body: dict[str, Any]) -> str:
        return "yes" if len(last_user_text(body)) % 2 else "no"

    ref_path = write_synthetic(tmp_path / "ref.json", n_per_type=2, haystack_tokens=700, seed=5)
    ref = json.loads(ref_path.read_text(encoding="utf-8"))
    with FakeOpenAIServer(judge) as server:
        outcome, = run_job(compose_cfg(
            tmp_path, f"dataset.name={ref_path}", "dataset.stratified=7", "run_strategies=[oracle]",
            f"model.judge.model=openai/{JUDGE}", f"+gateway.api_base.judge={server.base_url}"))
    assert outcome.computed == 7 and outcome.failed == 0
    with Results(tmp_path / "bench.duckdb") as res:  # the runs table says what produced the labels
        judge = res.run(outcome.run_key).extra["judge"]
    assert judge["parse"] == "official: 'yes' anywhere in the reply" and judge["source"] == "builtin"
    assert judge["templates"].startswith("om-bench builtin wording") and len(judge["templates_sha256"]) == 64
    out = tmp_path / "exp" / "hyp.jsonl"
    assert main(["export", "--db", str(tmp_path / "bench.duckdb"), "--run", outcome.run_key, "--out", str(out),
                 "--eval-results"]) == 0
    ev = out.with_name("hyp.jsonl.eval-results-gpt-4o")
    records = [json.loads(ln) for ln in ev.read_text().splitlines()]
    assert len(records) == 7 and {r["autoeval_label"]["model"] for r in records} == {JUDGE}
    assert [list(r) for r in records] == [["question_id", "hypothesis", "autoeval_label"]] * 7
    official = official_qa_metrics(ev, ref)  # accepted: no KeyError, no AssertionError
    assert not any("nan" in ln for ln in official[2:8])  # dataset.stratified=7 kept all six types
    capsys.readouterr()
    assert main(["metrics", str(ev), str(ref_path)]) == 0
    printed = capsys.readouterr().out
    assert "not the official" not in printed
    # the same numbers as the official logic; the partial-file note is the project's addition
    assert [ln.split(" (n=")[0] for ln in printed.splitlines()] == [ln.split(" (n=")[0] for ln in official]


def test_real_oracle_round_trip(tmp_path, real_data_dir) -> None:
    path = real_data_dir / "longmemeval_oracle.json.xz"
    if not path.exists():
        pytest.skip(f"{path} missing")
    ref = json.loads(lzma.decompress(path.read_bytes()))
    _, ev = _official_files(tmp_path, ref)
    db = tmp_path / "r.duckdb"
    assert main(["import", str(ev), "--ref", str(path), "--db", str(db), "--name", "oracle-x"]) == 0
    out = tmp_path / "x" / "hyp.jsonl"
    assert main(["export", "--db", str(db), "--run", "external:oracle-x", "--out", str(out), "--eval-results"]) == 0
    exported = out.with_name("hyp.jsonl.eval-results-gpt-4o")
    assert sorted(exported.read_text().splitlines()) == sorted(ev.read_text().splitlines())
    lines = official_qa_metrics(exported, ref)
    assert len(lines) == 12 and not math.isnan(float(lines[9].split(": ")[1]))
