"""Build an M-shaped LongMemEval file from LongMemEval_S: every question keeps its own S haystack (its evidence and
dates) and gets filler sessions drawn from other S haystacks until it holds `--sessions` sessions (M: ~500), sorted
by date. The result is a real-format file the loader treats as unofficial and "M-like"; it measures memory and time
at M scale without the 2.6 GB official download. Never commit its output.

    python scripts/build_m_shaped.py --out /tmp/m_shaped.json                 # 498 x 500 sessions, ~2.9 GB
    python scripts/build_m_shaped.py --out /tmp/m_small.json --questions 20   # a smaller one for a quick check

Written one question at a time (json.dumps per question): memory is the filler pool (`--pool` S questions'
sessions, ~100 MB for 40) plus one question. Deterministic for the same arguments.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from bench.benchmarks.longmemeval.dates import parse_any_date
from bench.benchmarks.longmemeval.loader import _locate_known as locate_known
from bench.benchmarks.longmemeval.stream import iter_values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default="longmemeval_s", help="S file or name (default longmemeval_s, via LONGMEMEVAL_DATA_DIR)")
    ap.add_argument("--out", required=True, help="output .json (an array, as the official M file)")
    ap.add_argument("--questions", type=int, default=0, help="questions to write (default 0: every S question)")
    ap.add_argument("--sessions", type=int, default=500, help="sessions per haystack (default 500, as M)")
    ap.add_argument("--pool", type=int, default=40, help="S questions whose sessions form the filler pool (default 40)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    path = Path(args.source) if Path(args.source).is_file() else locate_known(args.source, None)[0]
    pool: dict[str, tuple[str, list[Any]]] = {}  # session id -> (date, turns)
    for k, raw in enumerate(iter_values(path)):
        if k >= args.pool:
            break
        for sid, date, turns in zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]):
            if not sid.startswith("answer_"):  # evidence of one question is never filler of another
                pool.setdefault(sid, (date, turns))
    when = {sid: parse_any_date(date)[0] for sid, (date, _) in pool.items()}
    out = Path(args.out)
    written = 0
    with out.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for k, raw in enumerate(iter_values(path)):
            if args.questions and k >= args.questions:
                break
            rng = random.Random(f"{args.seed}:{raw['question_id']}")
            own = list(zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"]))
            have = {sid for sid, _, _ in own}
            need = max(0, args.sessions - len(own))
            asked = parse_any_date(raw["question_date"])[0]  # fillers from before the question only
            pool_ids = sorted(sid for sid, t in when.items() if t <= asked and sid not in have)
            extra = rng.sample(pool_ids, min(len(pool_ids), need))
            sessions = own + [(sid, *pool[sid]) for sid in extra]
            sessions.sort(key=lambda s: parse_any_date(s[1])[0])
            raw["haystack_session_ids"] = [s[0] for s in sessions]
            raw["haystack_dates"] = [s[1] for s in sessions]
            raw["haystack_sessions"] = [s[2] for s in sessions]
            fh.write(("," if written else "") + "\n" + json.dumps(raw, ensure_ascii=False))
            written += 1
        fh.write("\n]\n")
    print(json.dumps({"out": str(out), "questions": written, "sessions_per_question": args.sessions,
                      "pool_sessions": len(pool), "bytes": out.stat().st_size}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
