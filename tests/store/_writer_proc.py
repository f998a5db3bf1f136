"""Subprocess for the SIGKILL test: writes N questions one by one, reporting each commit on stdout."""

import sys
import time

from bench.store import Store


def question(i: int) -> tuple[dict, list, list, list]:
    qid = f"q{i:03d}"
    calls = [{"role": "actor", "model": "m", "prompt_tokens": 100 + i,
              "cache": {"openai": {"cached": i, "prefill": 100, "write": 0}}} for _ in range(20)]
    turns = [{"turn": t, "prompt_tokens": t * 10} for t in range(30)]
    return ({"question_id": qid, "question_type": "multi-session", "hypothesis": f"h{i}", "label": i % 3 == 0},
            calls, turns, [{"raw": "yes", "label": i % 3 == 0}])


def main(db: str, n: int, delay: float) -> None:
    store = Store(db)
    store.upsert_run("run", {"strategy": "om", "n_questions_planned": n})
    done = store.done_question_ids("run")
    for i in range(n):
        s, c, t, j = question(i)
        if s["question_id"] in done:
            continue
        store.write_question("run", s, c, t, j)
        print(f"written {s['question_id']}", flush=True)
        time.sleep(delay)
    store.finish_run("run")
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
