"""Evidence attribution (issue 26, item 4): the matching rule on crafted cases both ways, the cause of a wrong
answer, the report's per-run table and the question page's section."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.report.attribution import (LOST_REFLECTION, MISSED, NOT_IN_PROMPT, answer_terms, attribute,
                                      holds)
from bench.store import CallRow, MemoryRow, QuestionResult, RunManifest, SampleRow, Store


@pytest.mark.parametrize("answer, text, want", [
    ("Business Administration", "* User graduated with a degree in Business Administration.", True),
    ("Business Administration", "* User graduated with a degree in business.", False),  # one of two terms
    ("3", "User has 3 bikes", True),
    ("3", "User has 13 bikes", False),  # whole words only
    ("The user's cat is named Luna", "Their cat Luna is named after the moon; the user's", True),  # 4 of 5 terms
    ("The user's cat is named Luna", "a cat", False),
    ("$300", "spent $300 on shoes", True),
    ("Yes", "yes indeed", False),  # no term: not attributable
])
def test_the_matching_rule(answer: str, text: str, want: bool) -> None:
    assert holds(text, answer_terms(answer)) is want


def test_causes_of_a_wrong_answer() -> None:
    mem_active = [(0, "observations", "* User's dog is called Rex."), (1, "reflection", "older log")]
    mem_lost = [(0, "observations", "* User has a dog."), (1, "reflection", "* User's dog is called Rex.")]
    missed = attribute("Rex", False, mem_active, "system...\n* User's dog is called Rex.\nQuestion: dog?")
    assert (missed.reached_memory, missed.survived, missed.in_prompt, missed.cause) == (True, True, True, MISSED)
    assert missed.holding == (0,)
    lost = attribute("Rex", False, mem_lost, "* User has a dog.\nQuestion: dog?")
    assert (lost.reached_memory, lost.survived, lost.in_prompt, lost.cause) == (True, False, False, LOST_REFLECTION)
    never = attribute("Rex", False, [(0, "observations", "* User has a dog.")], "* User has a dog.")
    assert never.cause == NOT_IN_PROMPT and never.reached_memory is False
    right = attribute("Rex", True, mem_active, "Rex")
    assert right.cause is None and right.in_prompt
    no_view = attribute("Rex", False, [], "Rex")  # a strategy without a memory view (full_context)
    assert no_view.reached_memory is None and no_view.cause == MISSED
    assert not attribute("Rex", False, mem_active, "Rex", attributable=False).attributable  # abstention, rubric
    assert attribute("Rex", False, mem_active, None).cause is None  # the prompt was not stored: no claim


def _db(path: Path) -> Path:
    with Store(path) as s:
        s.upsert_run(RunManifest(run_key="om", name="exp", strategy="om", dataset_name="longmemeval_s"))
        cases = [("q1", "Rex", False, "* User's dog is called Rex.", "* User's dog is called Rex."),  # missed
                 ("q2", "Paris", False, "* User moved to a city.", "* User moved to a city."),  # not in prompt
                 ("q3", "blue", True, "* User likes blue.", "* User likes blue."),
                 ("q4_abs", "You did not mention it", False, "", "")]  # abstention: not attributable
        for qid, gold, label, mem, prompt in cases:
            s.write_question("om", QuestionResult(
                SampleRow(qid, "single-session-user", label=label, gold_answer=gold, is_abstention="_abs" in qid,
                          hypothesis="I don't know"),
                [CallRow(call_idx=0, role="actor", model="offline/reader", phase="answer", prompt_tokens=10,
                         messages=[{"role": "user", "content": prompt + "\nQuestion: ?"}], response="I don't know")],
                memory=[MemoryRow(0, "observations", mem, 1, 5)] if mem else []))
    return path


def test_report_table_and_question_page(tmp_path: Path) -> None:
    from bench.report.build import build_report
    from bench.view.site import build_site

    db = _db(tmp_path / "r.duckdb")
    md = build_report(db, tmp_path / "rep").markdown.read_text()
    section = md.split("## Where the answer went")[1].split("\n## ")[0]
    row = next(ln for ln in section.splitlines() if ln.startswith("| exp.om@"))
    # 3 attributable questions; 2 reached memory; 2 wrong: one missed by the reader, one not in the prompt
    assert row.rstrip(" |").split(" | ")[1:9] == ["3", "2/3", "2/3", "2/3", "2", "1", "0", "1"]
    build_site(db, tmp_path / "site")
    pages = {p.name.split("-")[0]: p.read_text() for p in (tmp_path / "site" / "q").rglob("*.html")}
    assert 'id="evidence"' in pages["q1"] and MISSED in pages["q1"] and "holds the gold answer" in pages["q1"]
    assert NOT_IN_PROMPT in pages["q2"] and "holds the gold answer" not in pages["q2"]
    assert 'id="evidence"' not in pages["q4_abs"]


def test_a_run_whose_every_question_failed_has_no_rows_and_no_crash() -> None:
    # every answer failed (e.g. a missing key): DuckDB gives a nullable boolean column of pd.NA; the report of such
    # a file failed with "boolean value of NA is ambiguous"
    import pandas as pd

    from bench.report.attribution import attribution_table

    samples = pd.DataFrame({"run_key": ["r", "r"], "question_id": ["a", "b"], "question_type": ["x", "x"],
                            "is_abstention": [False, False], "label": pd.array([pd.NA, pd.NA], dtype="boolean"),
                            "gold_answer": ["3", "4"]})
    memory = pd.DataFrame(columns=["run_key", "question_id", "item_idx", "kind", "text"])
    assert attribution_table(samples, memory, {}).empty
