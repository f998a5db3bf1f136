"""The conformance suite: the real @mastra/memory and om_core, driven on the same LongMemEval question, compared.

    python -m conformance.run [--s] [--case NAME ...] [--question QID] [--work DIR]

For each case: `npm ci` in the version's folder when its node_modules is missing or older than its lockfile; the
Mastra driver replays the question as Mastra's runner does (resource scope, date-sorted sessions, one generate
per pair) against the fake model; om_core replays exactly the messages and times Mastra stored
(omcore_replay.py); compare.py checks triggers, Observer and Reflector request data, request parameters and the
Actor context; a case with prompt_source="mastra" (the *-texts cases: om_core m11/m31 reading 1.1.0's/1.31.0's own
texts from om_core's cache, $OM_CORE_CACHE_DIR else ~/.cache/om-core) also compares every Observer/Reflector
request in full (against 1.31.0 also the Actor's preamble and continuation reminder), and reuses the Mastra run of
the case named in its `mastra_from`. Exit status 1 when a case that must match does
not, or a case listed as a known difference now matches (then it belongs with the matching cases). CONFORMANCE_S=1 (or --s) adds the LongMemEval_S cases.

Needs node and npm (Node 20+), the project's venv, and the LongMemEval files in $LONGMEMEVAL_DATA_DIR (else
../shared/data beside the checkout). Outputs (request logs, driver and replay folders, summary.json) go to
conformance/.work/ (git-ignored).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import lzma
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.actor_params import actor_checks
from conformance.compare import Check, compare_case
from conformance.fake_model import FakeModel
from conformance.omcore_replay import replay
from om_core import ConfigError
from om_core.mastra_texts import mastra_texts

HERE = Path(__file__).resolve().parent
# how every case replays: dates under metadata.createdAt and a frozen clock, so Mastra stores the dataset's times
REPLAY = ("--dates", "metadata", "--clock", "frozen")

# Driver flags that switch off a Mastra-side behaviour om_core deliberately does not copy, each with its reason.
FLAG_REASONS: dict[str, str] = {
    "--nowriter": "1.1.0 stores its own data-om-progress stream parts in the assistant messages and counts them as "
                  "message tokens, which moves its triggers; om_core has no stream writer",
    "--tiktoken": "1.31.0 estimates tokens with tokenx (11-13% more here); om_core counts exact o200k_base, a "
                  "documented choice (docs/om.md); the driver counts with js-tiktoken o200k_base as 1.1.0 did",
    "--own-thread-history": "1.31.0's Memory.getContext loads every unobserved message of the resource as the "
                            "Actor's history, counts other threads twice and observes them under the current "
                            "thread (docs/om.md: a Mastra defect om_core does not copy); keep the current thread's",
}


@dataclass(frozen=True)
class Case:
    """One comparison: a Mastra version and the om_core profile that follows it, on one split and thresholds."""

    name: str
    version: str  # the folder conformance/mastra-<version>
    profile: str
    split: str  # oracle | s
    message_tokens: int
    observation_tokens: int
    mode: str  # twostep (1.1.0 observes at step 1) | single (1.31.0 observes at step 0)
    flags: tuple[str, ...] = ()
    known_difference: str = ""  # non-empty: expected not to match yet, and why
    extra: tuple[str, ...] = field(default=())  # driver options that are not defect switches (scope, thread)
    model: str = ""  # the Observer/Reflector model name both sides use; "" = --model (gpt-4o)
    # "mastra": om_core's Observer/Reflector read Mastra's own texts (OMConfig prompt_source, om_core/mastra_texts.py),
    # and every Observer/Reflector request is also compared in full, wording included
    prompt_source: str = "packaged"
    mastra_from: str = ""  # reuse the Mastra side (driver output, request log) of this case when it ran before


CASES: tuple[Case, ...] = (
    Case("1.1.0-oracle", "1.1.0", "m11", "oracle", 2000, 600, "twostep", ("--nowriter",)),
    Case("1.1.0-oracle-texts", "1.1.0", "m11", "oracle", 2000, 600, "twostep", ("--nowriter",),
         prompt_source="mastra", mastra_from="1.1.0-oracle"),
    Case("1.31.0-oracle", "1.31.0", "m31", "oracle", 2000, 600, "single",
         ("--tiktoken", "--own-thread-history")),
    Case("1.31.0-oracle-texts", "1.31.0", "m31", "oracle", 2000, 600, "single",
         ("--tiktoken", "--own-thread-history"), prompt_source="mastra", mastra_from="1.31.0-oracle"),
    Case("1.31.0-oracle-thread-buffering", "1.31.0", "m31", "oracle", 2000, 600, "single",
         ("--tiktoken",), extra=("--scope", "thread", "--one-thread")),
    Case("1.31.0-oracle-thread-buffering-texts", "1.31.0", "m31", "oracle", 2000, 600, "single",
         ("--tiktoken",), extra=("--scope", "thread", "--one-thread"), prompt_source="mastra",
         mastra_from="1.31.0-oracle-thread-buffering"),
    Case("1.31.0-oracle-gpt-5-mini", "1.31.0", "m31", "oracle", 2000, 600, "single",
         ("--tiktoken", "--own-thread-history"), model="gpt-5-mini",
         known_difference="for gpt-5-mini 1.31.0 sends no temperature (modelSupportsTemperature is false), om_core "
                          "m31 passes 0.3/0 to its ChatModel; the project's litellm gateway (drop_params=True) is expected to "
                          "drop it for a reasoning model, which this suite does not check"),
)
S_CASES: tuple[Case, ...] = (
    Case("1.1.0-s", "1.1.0", "m11", "s", 30000, 40000, "twostep", ("--nowriter",)),
    Case("1.31.0-s", "1.31.0", "m31", "s", 30000, 40000, "single",
         ("--tiktoken", "--own-thread-history"),
         known_difference="after the first cycle 1.31.0 hides never-observed threads from pending and from the "
                          "OTHER block (observational-memory.ts getOtherThreadsContext, #15265); om_core does not"),
)
SPLIT_FILES = {"oracle": "longmemeval_oracle", "s": "longmemeval_s_cleaned"}


def data_dir() -> Path:
    env = os.environ.get("LONGMEMEVAL_DATA_DIR")
    folder = Path(env) if env else HERE.parent.parent / "shared" / "data"
    if not folder.is_dir():
        raise SystemExit(f"conformance: no LongMemEval data folder ({folder}); set LONGMEMEVAL_DATA_DIR to the folder "
                         "holding longmemeval_oracle.json[.xz] and longmemeval_s_cleaned.json[.xz]")
    return folder


def question_file(split: str, qid: str, work: Path) -> Path:
    """The one question as its own JSON file (the drivers' input), cut once from the dataset file and kept in work."""
    out = work / "data" / f"{split}_{qid}.json"
    if out.is_file():
        return out
    from bench.benchmarks.longmemeval.loader import KNOWN_NAMES, SUFFIXES

    folder = data_dir()
    stems = KNOWN_NAMES[SPLIT_FILES[split]][1]
    path = next((folder / f"{s}{x}" for s in stems for x in SUFFIXES if (folder / f"{s}{x}").is_file()), None)
    if path is None:
        raise SystemExit(f"conformance: {folder} has none of {', '.join(s + '.json[.xz]' for s in stems)}")
    opener = lzma.open if path.suffix == ".xz" else gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = json.load(f)
    q = next((r for r in rows if r["question_id"] == qid), None)
    if q is None:
        raise SystemExit(f"conformance: question {qid} is not in {path}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(q, ensure_ascii=False))
    return out


def npm_ci(version: str) -> float:
    """`npm ci` in conformance/mastra-<version> unless its node_modules is newer than its lockfile; seconds taken."""
    folder = HERE / f"mastra-{version}"
    stamp = folder / "node_modules" / ".package-lock.json"
    if stamp.is_file() and stamp.stat().st_mtime >= (folder / "package-lock.json").stat().st_mtime:
        return 0.0
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise SystemExit("conformance: node and npm are needed (Node 20+): install them, e.g. apt-get install nodejs npm")
    t = time.monotonic()
    subprocess.run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder, check=True)
    return time.monotonic() - t


def texts_check(case: Case) -> tuple[Check | None, float]:
    """For a prompt_source="mastra" case: Mastra's texts fetched (first time) or read from om_core's cache
    ($OM_CORE_CACHE_DIR, else ~/.cache/om-core: the suite uses om_core's default cache) and hash-checked; a
    failing Check when they cannot be had. Seconds taken."""
    if case.prompt_source != "mastra":
        return None, 0.0
    t = time.monotonic()
    try:
        texts = mastra_texts(case.profile)
    except ConfigError as e:
        return Check("mastra texts", False, str(e)), time.monotonic() - t
    return Check("mastra texts", True, f"{texts.label} ({texts.folder})"), time.monotonic() - t


def run_case(case: Case, qid: str, fm: FakeModel, work: Path, model: str,
             ran: dict[str, tuple[Path, str]] | None = None) -> tuple[list[Check], dict[str, float]]:
    """One case. `ran`: Mastra sides already run in this invocation, case name -> (driver output folder, fake-model
    client); a case with `mastra_from` reuses that side instead of running the driver again, and each case adds its
    own side."""
    ran = {} if ran is None else ran
    data = question_file(case.split, qid, work)
    out = work / case.name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    m_client, o_client = f"mastra-{case.name}", f"omcore-{case.name}"
    m_out = out / "mastra"
    times: dict[str, float] = {}
    t = time.monotonic()
    if case.mastra_from in ran:
        m_out, m_client = ran[case.mastra_from]
    else:
        cmd = ["node", str(HERE / f"mastra-{case.version}" / "driver.mjs"), "--data", str(data), "--out", str(m_out),
               "--base", fm.base_url(m_client), "--om-model", model, "--message-tokens", str(case.message_tokens),
               "--observation-tokens", str(case.observation_tokens), "--mode", case.mode, *REPLAY, *case.extra,
               *case.flags]
        proc = subprocess.run(cmd, env={**os.environ, "TZ": "UTC"}, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"conformance: the Mastra {case.version} driver failed for {case.name}:\n"
                             f"{proc.stderr[-3000:]}")
    ran[case.name] = (m_out, m_client)
    times["mastra_s"] = time.monotonic() - t
    texts, times["texts_s"] = texts_check(case)
    if texts is not None and not texts.ok:
        return [texts], times
    t = time.monotonic()
    asyncio.run(replay(m_out, out / "omcore", fm.base_url(o_client), case.profile, case.mode, model,
                       case.prompt_source))
    times["omcore_s"] = time.monotonic() - t
    sched = json.loads((m_out / "schedule.json").read_text())
    o_events = json.loads((out / "omcore" / "events.json").read_text())
    m_log, o_log = fm.requests.get(m_client, []), fm.requests.get(o_client, [])
    m_actor = [r for r in m_log if r["kind"] == "actor"][-1]["body"]["messages"]
    o_actor = json.loads((out / "omcore" / "final_context.json").read_text())
    m_prep = [json.loads(x)["messages"] for x in (m_out / "actor_prompts.jsonl").read_text().splitlines()]
    o_prep = [json.loads(x)["messages"] for x in (out / "omcore" / "actor_contexts.jsonl").read_text().splitlines()]
    checks = compare_case(m_log, o_log, [p["requestsBefore"] for p in sched["schedule"]],
                          [e["requests_before"] for e in o_events], {p["threadId"] for p in sched["schedule"]},
                          m_actor, o_actor, list(zip(m_prep, o_prep)), wording=case.prompt_source == "mastra",
                          actor_texts=case.prompt_source == "mastra")
    checks = ([texts] if texts is not None else []) + checks
    for name, log in (("mastra", m_log), ("omcore", o_log)):
        (out / f"{name}_requests.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in log))
    return checks, times


def actor_params_case(fm: FakeModel, summary: list[dict[str, Any]]) -> list[str]:
    """The runner's Actor request parameters vs the mastra_* presets' (conformance/actor_params.py), with the
    @mastra/core of each installed version; ["actor-params"] when they differ."""
    dirs: dict[str, Path] = {}
    for v in ("1.1.0", "1.31.0"):
        npm_ci(v)
        folder = HERE / f"mastra-{v}"
        core = json.loads((folder / "node_modules" / "@mastra" / "core" / "package.json").read_text())["version"]
        dirs[core] = folder
    t = time.monotonic()
    checks = actor_checks(fm, dirs)
    ok = all(c.ok for c in checks)
    print(f"\nactor-params: the runner's Actor request (run.ts via @mastra/core {', '.join(dirs)}) vs the mastra_* "
          f"presets - {'PASS' if ok else 'FAIL'} ({time.monotonic() - t:.1f} s)", flush=True)
    for c in checks:
        print(f"  [{'ok' if c.ok else 'DIFF'}] {c.name}: {c.detail[:600]}")
    summary.append({"case": "actor-params", "verdict": "PASS" if ok else "FAIL",
                    "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks]})
    return [] if ok else ["actor-params"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--s", action="store_true", help="add the LongMemEval_S cases (also CONFORMANCE_S=1)")
    ap.add_argument("--case", action="append", help="run only these cases (by name)")
    ap.add_argument("--question", default="gpt4_15e38248")
    ap.add_argument("--model", default="gpt-4o", help="the model name both sides give their Observer and Reflector")
    ap.add_argument("--work", type=Path, default=HERE / ".work")
    a = ap.parse_args(argv)
    cases = CASES + (S_CASES if a.s or os.environ.get("CONFORMANCE_S") == "1" else ())
    if a.case:
        unknown = set(a.case) - {c.name for c in CASES + S_CASES} - {"actor-params"}
        if unknown:
            raise SystemExit(f"conformance: unknown case {sorted(unknown)}; known: {[c.name for c in CASES + S_CASES]}")
        cases = tuple(c for c in CASES + S_CASES if c.name in a.case)
    a.work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    for v in sorted({c.version for c in cases}):
        took = npm_ci(v)
        if took:
            print(f"npm ci @mastra/memory {v}: {took:.1f} s", flush=True)
    failed: list[str] = []
    summary: list[dict[str, Any]] = []
    ran: dict[str, tuple[Path, str]] = {}
    with FakeModel(a.work) as fm:
        for case in cases:
            for f in a.work.glob(f"*-{case.name}.jsonl"):
                f.unlink()
            checks, times = run_case(case, a.question, fm, a.work, case.model or a.model, ran)
            ok = all(c.ok for c in checks)
            verdict = ("PASS" if ok else "FAIL") if not case.known_difference else \
                ("KNOWN DIFFERENCE" if not ok else "NOW MATCHES (move it to the matching cases)")
            if (not ok and not case.known_difference) or (ok and case.known_difference):
                failed.append(case.name)
            print(f"\n{case.name}: @mastra/memory {case.version} vs om_core {case.profile}, {case.split} {a.question}, "
                  f"{case.message_tokens}/{case.observation_tokens}, {case.model or a.model} - {verdict} "
                  + (f"(Mastra reused from {case.mastra_from}" if ran[case.name][1] != f"mastra-{case.name}"
                     else f"(Mastra {times['mastra_s']:.1f} s")
                  + (f", Mastra texts {times['texts_s']:.1f} s" if case.prompt_source == "mastra" else "")
                  + f", om_core {times.get('omcore_s', 0.0):.1f} s)", flush=True)
            for flag in case.flags:
                print(f"  driver {flag}: {FLAG_REASONS[flag]}")
            if case.known_difference:
                print(f"  known difference: {case.known_difference}")
            for c in checks:
                print(f"  [{'ok' if c.ok else 'DIFF'}] {c.name}: {c.detail[:600]}")
            summary.append({"case": case.name, "verdict": verdict, **times,
                            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks]})
        if not a.case or "actor-params" in a.case:
            failed += actor_params_case(fm, summary)
    (a.work / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    total = len(cases) + (0 if a.case and "actor-params" not in a.case else 1)
    print(f"\nconformance: {total - len(failed)}/{total} cases as expected, {time.monotonic() - t0:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
