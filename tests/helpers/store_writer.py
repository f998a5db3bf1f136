"""A writer process for the SIGKILL test (tests/store/test_sigkill.py): writes N questions one by one and
reports each commit on stdout."""

import sys
import time

from bench.store import CallRow, JudgmentRow, QuestionResult, RunManifest, SampleRow, Store, TurnRow


def question(i: int) -> QuestionResult:
    qid = f"q{i:03d}"
    calls = [CallRow(call_idx=k, role="actor", model="m", phase="answer", prompt_tokens=100 + i,
                     cache={"openai": {"cached": i, "prefill": 100, "write": 0}}) for k in range(20)]
    turns = [TurnRow(turn=t, prompt_tokens=t * 10) for t in range(30)]
    return QuestionResult(SampleRow(question_id=qid, question_type="multi-session", hypothesis=f"h{i}", label=i % 3 == 0),
                          calls, turns, [JudgmentRow(repeat_idx=0, raw="yes", label=i % 3 == 0)])


def main(db: str, n: int, delay: float) -> None:
    store = Store(db)
    store.upsert_run(RunManifest(run_key="run", name="run", strategy="om", n_questions_planned=n))
    done = store.done_ids("run")
    for i in range(n):
        q = question(i)
        if q.question_id in done:
            continue
        store.write_question("run", q)
        print(f"written {q.question_id}", flush=True)
        time.sleep(delay)
    store.finish_run("run")
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
