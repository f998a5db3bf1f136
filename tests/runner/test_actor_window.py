"""The Actor-window contract: a question-time prompt that, with the answer budget, passes the Actor's window is
never sent; the question is stored failed with the reason, and the summary counts it. A strategy that fits its
prompt to the window (full context) is answered, and the summary says its prompts were cut."""

from __future__ import annotations

from pathlib import Path

from bench.prompt import Prompt
from bench.render import token_count
from bench.runner.app import run_job
from bench.runner.question import CONTEXT_WINDOW, past_window
from bench.runner.summary import summary_rows
from bench.runner.window_notes import window_notes
from bench.store import Results
from tests.helpers.runner import compose_cfg


def test_past_window_is_exact_at_the_edge() -> None:
    p = Prompt()
    p.add("user", "word " * 300)
    n = token_count(p)
    assert past_window(p, n + 800, 800, "om") is None  # exactly full: sent
    msg = past_window(p, n + 799, 800, "om")
    assert msg is not None and msg.startswith(f"answer: {CONTEXT_WINDOW}: ") and f"{n:,} tokens" in msg
    assert "om must fit" in msg and "\n" not in msg


def test_a_prompt_past_the_window_is_never_sent_and_is_counted(tmp_path: Path) -> None:
    # rag renders its retrieved rounds unbounded: 1,200 tokens leave 400 for a prompt, too few for its question
    run_job(compose_cfg(tmp_path, "dataset.limit=3", "run_strategies=[rag]", "model.actor_max_input_tokens=1200"))
    db = tmp_path / "bench.duckdb"
    with Results(db) as res:
        samples = res.samples()
        calls = res._df("SELECT question_id, phase FROM calls WHERE phase = 'answer'")
    refused = samples[samples.error.fillna("").str.startswith(f"answer: {CONTEXT_WINDOW}: ")]
    assert len(refused) >= 1 and refused.label.isna().all()
    assert not set(refused.question_id) & set(calls.question_id)  # no Actor call for them
    rows, _ = summary_rows(db)
    notes = window_notes(db, rows)
    assert any(f"{len(refused)} of 3 questions not answered" in " ".join(n.split()) for n in notes)
    assert all(len(line) <= 100 for n in notes for line in n.split("\n"))


def test_full_context_fits_the_window_and_says_it_cut(tmp_path: Path) -> None:
    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[full_context]",
                        "model.actor_max_input_tokens=2500", "strategies.full_context.params.reserve_tokens=100"))
    db = tmp_path / "bench.duckdb"
    with Results(db) as res:
        assert res.samples().error.isna().all()  # fitted: every question answered
        shares = [float(e.split("=")[1]) for e in res.turns().events.dropna() for e in e.split(",")
                  if e.startswith("haystack_in_window=")]
    assert len(shares) == 2 and all(0 < s < 1 for s in shares)  # one per question, at its last turn
    rows, _ = summary_rows(db)
    [note] = window_notes(db, rows)
    mean = f"{100 * sum(shares) / 2:.1f}%"
    flat = " ".join(note.split())  # the note wraps at 100 columns
    assert flat.startswith(f"note: {rows[0]['label']}: at question time the Actor's window held {mean} of the haystack")
    assert "2 of 2 questions cut to the window" in flat and all(len(line) <= 100 for line in note.split("\n"))


def test_an_uncapped_answer_keeps_the_reserve_free(tmp_path: Path) -> None:
    # answer.max_tokens=null (the Mastra presets) sends no cap; the window check keeps the reserve free for it
    run_job(compose_cfg(tmp_path, "dataset.limit=1", "run_strategies=[full_context]", "answer.max_tokens=null"))
    with Results(tmp_path / "bench.duckdb") as res:
        samples = res.samples()
    assert len(samples) == 1 and samples.error.isna().all()


def test_a_question_refused_for_the_window_is_not_attempted_again_by_a_rerun(tmp_path: Path, capsys) -> None:
    """The refusal is deterministic for the run key: the same command stores it once and never re-renders it
    (a retryable error, a rate limit, is retried: tests/runner/test_run_idempotent.py)."""
    args = ("dataset.limit=3", "run_strategies=[rag]", "model.actor_max_input_tokens=1200", "run.progress=log")
    [first] = run_job(compose_cfg(tmp_path, *args))
    with Results(tmp_path / "bench.duckdb") as res:
        before = res.samples().set_index("question_id")
    refused = before[before.error.fillna("").str.startswith(f"answer: {CONTEXT_WINDOW}: ")]
    assert len(refused) >= 1 and first.computed == 3
    cap = capsys.readouterr()
    err = cap.out + cap.err  # the console says so rather than promising a retry
    assert f"{len(refused)} refused for the Actor's window, not retried" in err
    assert "except prompts refused for the Actor's window" in err
    [again] = run_job(compose_cfg(tmp_path, *args))
    assert again.computed == 0 and again.skipped == 3  # nothing sent, nothing rendered again
    with Results(tmp_path / "bench.duckdb") as res:
        after = res.samples().set_index("question_id")
    assert (after.loc[refused.index].answered_at == refused.answered_at).all()


def test_a_window_refusal_is_final_only_under_the_window_and_reserve_it_was_refused_under() -> None:
    from bench.runner.question import final_error

    p = Prompt()
    p.add("user", "word " * 300)
    msg = past_window(p, 500, 800, "om")
    assert msg is not None and final_error(msg, 500, 800)
    assert not final_error(msg, 1_200, 800) and not final_error(msg, 500, 400)  # changed: it may fit now
    assert not final_error("answer: rate_limit: 429 Too Many Requests", 500, 800)
    big = past_window(p, 128_000 - 100_000, 100_000, "om")
    assert big is not None and final_error(big, 28_000, 100_000)  # thousands separators read back
