"""answer.retries end to end on the synthetic sample (offline engine, not an LLM): a wrong answer is asked again
on a fresh question thread up to `max` times, the tries are stored, the summary shows the single-try score and
the "with retries" score (Mastra runner's count) apart, and a re-run adds nothing. The judge is scripted so that
a first try fails and a retry passes (the offline engine's answers repeat)."""

from __future__ import annotations

import duckdb
import pytest

from bench.evaluate import judge as judge_mod
from bench.runner.app import NothingAnswered, run_job
from bench.runner.summary import format_summary, summary_rows
from tests.helpers.runner import compose_cfg

# the scripted verdicts by the order questions are first judged (run.concurrency=1): the first question fails once
# and passes on its first retry, the second always fails, the third passes at once
SCRIPT = (("no", "yes"), ("no", "no", "no"), ("yes",))


@pytest.fixture()
def scripted_judge(monkeypatch):
    real = judge_mod.Judge.judge
    seen: dict[tuple[int, str], int] = {}
    order: dict[int, list[str]] = {}
    calls = {"n": 0}

    async def judge(self, question_id, question_type, question, answer, hypothesis):
        got = await real(self, question_id, question_type, question, answer, hypothesis)  # the real call is made
        calls["n"] += 1
        ids = order.setdefault(id(self), [])
        if question_id not in ids:
            ids.append(question_id)
        k = seen.get((id(self), question_id), 0)
        seen[(id(self), question_id)] = k + 1
        script = SCRIPT[ids.index(question_id) % len(SCRIPT)]
        reply = script[min(k, len(script) - 1)]
        got.label = got.label_strict = reply == "yes"
        got.raw = reply
        return got

    monkeypatch.setattr(judge_mod.Judge, "judge", judge)
    return calls


def _q(db, statement):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(statement).fetchall()
    finally:
        con.close()


def _counts(db):
    return {t: _q(db, f"SELECT count(*) FROM {t}")[0][0] for t in ("samples", "calls", "judgments", "answer_tries")}


ARGS = ("dataset.limit=3", "run.concurrency=1", "run_strategies=[om,full_context]")


def test_retries_store_tries_and_report_both_scores(tmp_path, scripted_judge, capsys) -> None:
    db = tmp_path / "bench.duckdb"
    out = run_job(compose_cfg(tmp_path, *ARGS, "answer.retries.max=2"))
    assert [o.computed for o in out] == [3, 3] and all(o.failed == 0 for o in out)
    om_key, fc_key = out[0].run_key, out[1].run_key
    # om: the first question retried once (passed), the second twice (never passed), the third not at all
    tries = _q(db, f"SELECT question_id, try_idx, label FROM answer_tries WHERE run_key = '{om_key}' "
                   "ORDER BY question_id, try_idx")
    assert sorted((i, lab) for _, i, lab in tries) == [(1, False), (1, True), (2, False)]
    # full_context asks no question in a thread of its own: it never retries
    assert _q(db, f"SELECT count(*) FROM answer_tries WHERE run_key = '{fc_key}'")[0][0] == 0
    retry_calls = _q(db, f"SELECT role, response_cache_hit FROM calls WHERE run_key = '{om_key}' AND phase = 'retry'")
    assert len(retry_calls) == 3 and all(r == "actor" and not hit for r, hit in retry_calls)
    assert scripted_judge["n"] == 3 + 3 + 3  # om: 3 first tries + 3 retries; full_context: 3 first tries

    rows, prof = summary_rows(db)
    by = {r["strategy"]: r for r in rows}
    assert by["om"]["micro"] == pytest.approx(1 / 3)  # the headline stays single-try
    assert by["om"]["retries"]["micro"] == pytest.approx(2 / 3)
    assert by["om"]["retries"]["n_retried"] == 2 and by["om"]["retries"]["n_recovered"] == 1
    assert by["full_context"]["micro"] == pytest.approx(1 / 3) and by["full_context"]["retries"] is None
    text = format_summary(rows, prof)
    assert "with retries (Mastra runner's count" in text and "single-try" in text
    assert "all wrong answers, up to 2 retries" in " ".join(text.split())  # the notes column may wrap
    # the report's headline keeps single-try and adds a table for the runs that retried
    from bench.report.data import load
    from bench.report.tables import headline

    blocks = headline(load(db))
    retried = [b for b in blocks if b[0] == "table" and b[1][0] == "run" and "with retries (macro)" in b[1]]
    assert len(retried) == 1 and len(retried[0][2]) == 1
    row = retried[0][2][0]
    assert row[1].startswith("33.3%") and row[2].startswith("66.7%") and row[4:6] == ["2", "1"]

    # `ombench runs --json`: the with-retries score of the retrying run, null for the other
    import argparse
    import json

    from bench.cli import runs as runs_cli

    capsys.readouterr()
    assert runs_cli.run(argparse.Namespace(db=str(db), json=True)) == 0
    listed = {r["run_key"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed[om_key]["retries"]["micro"] == pytest.approx(2 / 3) and listed[fc_key]["retries"] is None

    n1 = _counts(db)
    again = run_job(compose_cfg(tmp_path, *ARGS, "answer.retries.max=2"))
    assert [o.computed for o in again] == [0, 0] and [o.run_key for o in again] == [om_key, fc_key]
    assert _counts(db) == n1 and scripted_judge["n"] == 9

    # without retries om gets its own run key (its single-try rows are not mixed up), full_context keeps its key
    plain = run_job(compose_cfg(tmp_path, *ARGS))
    assert plain[0].run_key != om_key and plain[1].run_key == fc_key


def test_flags_file_limits_retries_to_listed_questions(tmp_path, scripted_judge) -> None:
    db = tmp_path / "bench.duckdb"
    first = run_job(compose_cfg(tmp_path, "dataset.limit=3", "run.concurrency=1", "run_strategies=[om]"))
    ids = [q for (q,) in _q(db, "SELECT question_id FROM samples ORDER BY answered_at")]
    flags = tmp_path / "flags.json"
    flags.write_text(f'["{ids[0]}"]')  # only the question that a retry recovers
    out = run_job(compose_cfg(tmp_path, "dataset.limit=3", "run.concurrency=1", "run_strategies=[om]",
                              "answer.retries.max=2", f"answer.retries.flags_file={flags}"))
    assert out[0].run_key != first[0].run_key
    tries = _q(db, f"SELECT question_id, try_idx FROM answer_tries WHERE run_key = '{out[0].run_key}'")
    # the scripted judge's order starts again for the new run's judge: the flagged question is retried once
    assert [q for q, _ in tries] == [ids[0]]
    rows, _ = summary_rows(db, [out[0].run_key])
    assert rows[0]["retries"]["n_flagged"] == 1
    assert "1 ids, up to 2 retries" in format_summary(rows, "openai")


@pytest.mark.parametrize("override, needle", [
    ("answer.retries.max=-1", "answer.retries.max=-1"),
    ("answer.retries.flags_file=/nonexistent/flags.json", "no such file"),
])
def test_bad_retry_settings_are_one_line_errors(tmp_path, override, needle) -> None:
    from bench.errors import ConfigError

    extra = ["answer.retries.max=2"] if "flags_file" in override else []
    with pytest.raises(ConfigError) as err:
        run_job(compose_cfg(tmp_path, "dataset.limit=1", *extra, override))
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_flags_file_without_retries_and_empty_file_are_refused(tmp_path) -> None:
    from bench.errors import ConfigError

    flags = tmp_path / "flags.txt"
    flags.write_text("# nothing\n\n")
    with pytest.raises(ConfigError, match="lists no question id"):
        run_job(compose_cfg(tmp_path, "dataset.limit=1", "answer.retries.max=2", f"answer.retries.flags_file={flags}"))
    flags.write_text('{"q1": 1}')  # an object was read as the line `{"q1": 1}`: "1 ids"
    with pytest.raises(ConfigError, match="not a list"):
        run_job(compose_cfg(tmp_path, "dataset.limit=1", "answer.retries.max=2", f"answer.retries.flags_file={flags}"))
    flags.write_text("q1\n")
    with pytest.raises(ConfigError, match="answer.retries.max=0"):
        run_job(compose_cfg(tmp_path, "dataset.limit=1", f"answer.retries.flags_file={flags}"))


def test_run_key_follows_the_flag_list_not_its_path(tmp_path) -> None:
    from bench.config import validate
    from bench.runner.keys import run_key

    def key(path):
        root = validate(compose_cfg(tmp_path, "answer.retries.max=2", f"answer.retries.flags_file={path}"))
        return run_key(root, "om", "sha", None)

    (tmp_path / "a.json").write_text('["q1", "q2"]')
    (tmp_path / "b.txt").write_text("q2\nq1\n")  # the same ids as text lines, in another order
    (tmp_path / "c.json").write_text('["q1"]')
    assert key(tmp_path / "a.json") == key(tmp_path / "b.txt") != key(tmp_path / "c.json")
    root = validate(compose_cfg(tmp_path, "answer.retries.max=3"))
    assert run_key(root, "om", "sha", None) != run_key(validate(compose_cfg(tmp_path, "answer.retries.max=2")),
                                                       "om", "sha", None)


def test_a_failed_retry_is_stored_with_its_reason_and_computed_again(tmp_path, monkeypatch) -> None:
    from bench.gateway import GatewayError

    real = judge_mod.Judge.judge
    state = {"fail": True, "n": {}}

    async def judge(self, question_id, question_type, question, answer, hypothesis):
        got = await real(self, question_id, question_type, question, answer, hypothesis)
        k = state["n"][question_id] = state["n"].get(question_id, 0) + 1
        if k == 2 and state["fail"]:  # the first retry's judge call fails for good
            raise GatewayError("server_error", "judge down")
        got.label, got.raw = k > 1, "yes" if k > 1 else "no"  # wrong at first, right on a retry
        return got

    monkeypatch.setattr(judge_mod.Judge, "judge", judge)
    db = tmp_path / "bench.duckdb"
    args = ("dataset.limit=1", "run_strategies=[om]", "answer.retries.max=2")
    with pytest.raises(NothingAnswered):  # its only question failed: the command exits 1
        run_job(compose_cfg(tmp_path, *args))
    (err,) = _q(db, "SELECT error FROM samples")[0:1]
    assert err[0].startswith("retry 1: server_error")
    assert _q(db, "SELECT try_idx, error IS NOT NULL FROM answer_tries") == [(1, True)]
    state["fail"], state["n"] = False, {}
    out = run_job(compose_cfg(tmp_path, *args))
    assert out[0].computed == 1  # the errored question is computed again, its tries replaced
    assert _q(db, "SELECT error FROM samples") == [(None,)]
    assert _q(db, "SELECT try_idx, label FROM answer_tries") == [(1, True)]


def test_second_judge_judges_every_try_and_the_viewer_shows_the_tries(tmp_path, scripted_judge) -> None:
    from bench.cli import main

    db = tmp_path / "bench.duckdb"
    out = run_job(compose_cfg(tmp_path, "dataset.limit=2", "run.concurrency=1", "run_strategies=[om]",
                              "answer.retries.max=2", "judge.second_model=offline/judge"))
    tries = _q(db, f"SELECT question_id, try_idx, label, label_second, judge_second_raw FROM answer_tries "
                   f"WHERE run_key = '{out[0].run_key}' ORDER BY question_id, try_idx")
    assert len(tries) == 3 and all(second is not None and raw for *_, second, raw in tries)
    second_calls = _q(db, f"SELECT count(*) FROM calls WHERE run_key = '{out[0].run_key}' AND role = 'second_judge'")
    assert second_calls[0][0] == 2 + 3  # the first tries and every retry
    assert main(["view", "--db", str(db), "--out", str(tmp_path / "view")]) == 0
    qid = tries[0][0]
    page = next((tmp_path / "view" / "q").rglob(f"*{qid}*.html")).read_text()
    assert "Retries of the wrong answer" in page and "with retries (Mastra runner's count)" in page
    assert "second judge" in page


def test_the_viewer_shows_the_tries_of_a_run_without_a_second_judge(tmp_path, scripted_judge) -> None:
    """The usual setup (no second judge): answer_tries.label_second is NULL, read back as pandas' NA; the question
    page was a TypeError ("boolean value of NA is ambiguous") and no index.html."""
    from bench.cli import main

    db = tmp_path / "bench.duckdb"
    out = run_job(compose_cfg(tmp_path, "dataset.limit=2", "run.concurrency=1", "run_strategies=[om]",
                              "answer.retries.max=1"))
    tries = _q(db, f"SELECT question_id, label_second FROM answer_tries WHERE run_key = '{out[0].run_key}'")
    assert tries and all(second is None for _, second in tries)
    assert main(["view", "--db", str(db), "--out", str(tmp_path / "view")]) == 0
    assert (tmp_path / "view" / "index.html").is_file()
    page = next((tmp_path / "view" / "q").rglob(f"*{tries[0][0]}*.html")).read_text()
    assert "Retries of the wrong answer" in page and "second judge" not in page


def test_an_answer_tries_table_without_the_second_judge_columns_gains_them() -> None:
    from bench.store.db import ensure_schema

    con = duckdb.connect()
    con.execute("CREATE TABLE answer_tries (run_key VARCHAR, question_id VARCHAR, try_idx BIGINT, hypothesis VARCHAR, "
                "label BOOLEAN, judge_raw VARCHAR, error VARCHAR, PRIMARY KEY (run_key, question_id, try_idx))")
    con.execute("INSERT INTO answer_tries VALUES ('r', 'q', 1, 'h', false, 'no', NULL)")
    ensure_schema(con)
    cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                      "'answer_tries' ORDER BY ordinal_position").fetchall()]
    assert cols[-2:] == ["label_second", "judge_second_raw"]
    assert con.execute("SELECT label_second FROM answer_tries").fetchall() == [(None,)]


def test_a_second_judge_added_to_a_finished_run_judges_its_stored_questions(tmp_path, capsys) -> None:
    """judge.second_model is not part of the run key: set on a finished run, the stored questions (judged without
    it) are computed again so every one gets a second verdict, their answers and first verdicts unchanged; said
    on the console. Before, the run found every question done and judged nothing, silently."""
    db = tmp_path / "bench.duckdb"
    args = ("dataset.limit=2", "run.concurrency=1", "run_strategies=[full_context]")
    key = run_job(compose_cfg(tmp_path, *args))[0].run_key
    before = _q(db, f"SELECT question_id, hypothesis, label, label_second FROM samples WHERE run_key = '{key}' "
                    "ORDER BY question_id")
    assert len(before) == 2 and all(r[3] is None for r in before)
    capsys.readouterr()

    out = run_job(compose_cfg(tmp_path, *args, "judge.second_model=offline/judge"))
    assert out[0].run_key == key and out[0].computed == 2
    said = capsys.readouterr()
    assert "2 stored question(s) have no second verdict" in said.err
    assert "; second judge: offline/judge;" in said.out + said.err  # the digest's judge line names it
    after = _q(db, f"SELECT question_id, hypothesis, label, label_second FROM samples WHERE run_key = '{key}' "
                   "ORDER BY question_id")
    assert [r[:3] for r in after] == [r[:3] for r in before] and all(r[3] is not None for r in after)
    calls = _q(db, f"SELECT count(*) FROM calls WHERE run_key = '{key}' AND role = 'second_judge'")
    assert calls[0][0] == 2

    out = run_job(compose_cfg(tmp_path, *args, "judge.second_model=offline/judge"))  # nothing left to judge
    assert out[0].computed == 0 and "no second verdict" not in capsys.readouterr().err


def test_judge_audit_in_a_question_shard_is_said_not_dropped(tmp_path, capsys) -> None:
    """judge.audit audits one judge against one results file: a question shard has none, so it is not run there,
    and a warning says so and names the command to run instead (it was skipped silently)."""
    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[oracle]", "judge.audit=3", "dataset.shard=1/2"))
    err = capsys.readouterr().err
    assert "judge.audit=3 is not run in a question shard (dataset.shard=1/2)" in err
    assert "ombench judge-audit --n 3" in err
    assert not (tmp_path / "bench.duckdb").exists() or not _q(tmp_path / "bench.duckdb",
                                                              "SELECT count(*) FROM judge_audits")[0][0]
