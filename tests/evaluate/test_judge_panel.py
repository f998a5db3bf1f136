"""A judge panel (issue 26, item 5): `judge.panel=[...]` judges every question with several models; the headline
verdict is their strict majority, each judge's verdict is stored (`judgments`, one row per judge with its model),
and the summary and report say which verdict is the headline and how the judges agreed. The offline judge sits
with fake-server judges that always say yes (real HTTP through litellm)."""

from __future__ import annotations

import pytest

from bench.assemble import panel_members
from bench.errors import ConfigError
from bench.evaluate.judge import strict_majority
from bench.report.data import load
from bench.report.tables import judges
from bench.runner.summary import format_summary, judge_line, summary_rows
from bench.store import Results
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.runner import compose_cfg


def test_strict_majority_needs_more_than_half() -> None:
    assert strict_majority([True, True, False]) and not strict_majority([True, False])
    assert not strict_majority([]) and strict_majority([True])


def test_a_panel_must_add_a_judge() -> None:
    assert panel_members("offline/judge", ["openai/a", "offline/judge", "openai/a"]) == ("openai/a",)
    with pytest.raises(ConfigError, match="judge.panel"):
        panel_members("offline/judge", ["offline/judge"])


def _run(tmp_path, server, *panel: str):
    from bench.runner.app import run_job

    return run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=6", "run_strategies=[oracle]",
                               f"judge.panel=[{','.join(panel)}]", f"+gateway.api_base.openai={server.base_url}"))


def test_the_headline_is_the_strict_majority_and_every_verdict_is_stored(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    db = tmp_path / "bench.duckdb"
    with FakeOpenAIServer(lambda body: "yes") as server:
        two = _run(tmp_path, server, "openai/yes-a")[0].run_key  # offline + always-yes: yes needs both
        three = _run(tmp_path, server, "openai/yes-a", "openai/yes-b")[0].run_key  # two always-yes of three
    assert two != three  # the panel is part of the run key
    with Results(db) as res:
        calls = res.judgment_repeats()
        samples = res.samples()
    offline = calls[(calls.run_key == two) & (calls.judge_model == "offline/judge")].set_index("question_id").label
    s2 = samples[samples.run_key == two].set_index("question_id").label
    s3 = samples[samples.run_key == three].set_index("question_id").label
    assert (~offline).any() and offline.any()  # the offline judge says no to some answers: the panels differ
    assert (s2 == offline[s2.index]).all()  # 1 of 2 yes is no majority: the offline judge decides
    assert s3.all()  # 2 of 3 yes always wins
    three_calls = calls[calls.run_key == three]
    assert set(three_calls.judge_model) == {"offline/judge", "openai/yes-a", "openai/yes-b"}
    assert (three_calls.groupby("question_id").size() == 3).all() and three_calls[
        three_calls.judge_model != "offline/judge"].label.all()
    assert "panel 2/3 yes -> yes" in " ".join(samples[samples.run_key == three].judge_raw) or offline.all()

    rows, prof = summary_rows(db)
    text = " ".join(format_summary(rows, prof).split())
    n_yes = int(offline.sum())
    assert "judged by a panel of 3 (offline/judge, openai/yes-a, openai/yes-b); the headline (micro, macro, per " \
           "type) is the panel's verdict, strict majority" in text
    assert f"unanimous on {n_yes} of {len(offline)} questions" in text
    assert f"offline/judge {100 * n_yes / len(offline):.0f}%" in text and "openai/yes-a 100%" in text
    # the judge line names every member that decides the headline, not only model.judge.model
    assert "judge: offline/judge, openai/yes-a, openai/yes-b" in " ".join(
        (judge_line(rows) or "").split())
    from bench.report.inspect_log import build_eval_log

    with Results(db) as res:
        meta = build_eval_log(res, three)
    assert meta.eval.metadata["judge_panel"]["models"] == ["offline/judge", "openai/yes-a", "openai/yes-b"]
    assert meta.results.scores[0].metadata["panel"]["models"] == meta.eval.metadata["judge_panel"]["models"]
    blocks = judges(load(db))
    panel_rows = [r for r in blocks[1][2] if "panel of" in r[1]]
    assert len(panel_rows) == 2 and all("strict majority" in r[1] for r in panel_rows)
