"""The run key covers everything that can change a label or an answer: the judge template text (builtin or
the official file's), the parse rule and Mastra's reason request, the models' params; the ingestion key covers
the reader prompt's own text. An edited template never reuses old labels."""

from __future__ import annotations

import pytest

from bench.config import validate
from bench.benchmarks.longmemeval import judge_templates, reader_prompt
from bench.runner.app import run_job
from bench.runner.keys import ingest_key, run_key
from tests.helpers.official import FAKE, make_checkout
from tests.helpers.runner import compose_cfg


def _keys(tmp_path, *overrides: str) -> tuple[str, str]:
    root = validate(compose_cfg(tmp_path, *overrides))
    return ingest_key(root, "full_context", "sha"), run_key(root, "full_context", "sha", None)


def test_one_character_of_an_official_template_changes_the_run_key(tmp_path) -> None:
    a = make_checkout(tmp_path / "a")
    b = make_checkout(tmp_path / "b", FAKE.replace("TEMPORAL rules with", "TEMPORAL rules wiht"))
    ia, ra = _keys(tmp_path, "judge.source=official", f"judge.official_repo={a}")
    ib, rb = _keys(tmp_path, "judge.source=official", f"judge.official_repo={b}")
    assert ra != rb and ia == ib  # the labels change, the ingestion does not
    assert _keys(tmp_path, "judge.source=official", f"judge.official_repo={make_checkout(tmp_path / 'c')}")[1] == ra


def test_one_character_of_a_builtin_template_changes_the_run_key(tmp_path, monkeypatch) -> None:
    before = _keys(tmp_path)[1]
    original = judge_templates.builtin_templates()
    edited = {**original, "abstention": original["abstention"].replace("yes or no", "yes or no ", 1)}
    monkeypatch.setattr(judge_templates, "builtin_templates", lambda: edited)
    assert _keys(tmp_path)[1] != before


@pytest.mark.parametrize("override", ["judge.parse=mastra", "judge.ask_reason=true",
                                      "+model.judge.params.seed=7", "model.judge.params.max_tokens=11",
                                      "+model.actor.params.top_p=0.5"])
def test_judge_options_and_model_params_change_the_run_key(tmp_path, override: str) -> None:
    assert _keys(tmp_path, override)[1] != _keys(tmp_path)[1]


def test_reader_prompt_text_changes_the_ingestion_key_of_the_strategies_that_render_it(tmp_path, monkeypatch) -> None:
    root = validate(compose_cfg(tmp_path))
    before = {s: ingest_key(root, s, "sha") for s in ("full_context", "oracle", "om")}
    monkeypatch.setattr(reader_prompt, "_INSTR_CON", reader_prompt._INSTR_CON.replace("step by step", "step-by-step"))
    after = {s: ingest_key(root, s, "sha") for s in ("full_context", "oracle", "om")}
    assert after["full_context"] != before["full_context"] and after["oracle"] != before["oracle"]
    assert after["om"] == before["om"]  # OM renders its own context, not the reader prompt


def test_an_edited_template_is_judged_again_not_reused(tmp_path) -> None:
    repo = make_checkout(tmp_path / "LongMemEval")
    out = tmp_path / "out"
    args = ("dataset.limit=3", "run_strategies=[oracle]", "judge.source=official", f"judge.official_repo={repo}")
    first = run_job(compose_cfg(out, *args))[0]
    assert (first.computed, first.skipped) == (3, 0)
    again = run_job(compose_cfg(out, *args))[0]
    assert (again.computed, again.skipped, again.run_key) == (0, 3, first.run_key)
    make_checkout(repo, FAKE.replace("DEFAULT rules", "DEFAULT Rules"))
    edited = run_job(compose_cfg(out, *args))[0]
    assert (edited.computed, edited.skipped) == (3, 0) and edited.run_key != first.run_key
