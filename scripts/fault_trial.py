"""The bad-input fault trial (issue 27): inputs a real user types, each run as `ombench ...` in a fresh temporary
folder with the offline engine, classified as

- **clean error**: exit status not 0, no traceback, stderr is one `ombench: error:` line (warnings and argparse's
  `usage:` line aside; the preflight gives one such line per problem it found, e.g. per role without its key),
  and nothing written: no file appeared or changed outside Hydra's run folder (`hydra/`,
  which keeps the run log saying why nothing ran);
- **correct run**: exit 0, no traceback, the questions stored without an error (or the case's own check held);
- **FAIL**: anything else (a traceback, several lines, exit 0 for an input that must be refused, a refusal of an
  input that must run, files left behind, a failed check).

The inputs are those of the earlier trials of issue 27 (48 + 56, reconstructed from the issue, docs/reliability.md
and the tests), in named groups. Real-data cases read `longmemeval_oracle.json(.xz)` from LONGMEMEVAL_DATA_DIR
(skipped without it). One line per input, a table per group at the end; exit 1 if any failed.

    LONGMEMEVAL_DATA_DIR=/work/shared/data nice -n 10 .venv/bin/python scripts/fault_trial.py [--jobs 2] [-k WORD]

Offline engine: rule-based stand-ins, not an LLM; no model is called over the network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
OMBENCH = [sys.executable, "-m", "bench.cli"]
SENTINEL = "sentinel-27-c0ffee-do-not-write"
ALL_FAILED = "ombench: error: every question of this run failed"
KEY = "sk-trial-not-a-real-key-000000"
DATA = Path(os.environ.get("LONGMEMEVAL_DATA_DIR") or ROOT.parent / "shared" / "data")
BASE = {"output.dir": "{tmp}", "dataset.limit": "1", "run_strategies": "[full_context]", "run.progress": "off",
        "output.report": "false"}


@dataclass
class Case:
    group: str
    name: str
    argv: list[str]  # `run` overrides (BASE fills the keys they do not set), or a whole command when raw
    expect: str = "error"  # error | run | either
    env: dict[str, str | None] = field(default_factory=dict)  # None: unset
    setup: Callable[[Path], None] | None = None  # makes input files under tmp/in
    raw: bool = False
    check: Callable[[Path, subprocess.CompletedProcess], str] | None = None  # "" when a run held
    real_data: bool = False
    # a run whose every question fails (exit 1, one line): its questions are stored with their reasons by design
    # (the same command retries them), so files are written; it counts as a clean error
    stores_reasons: bool = False


# --- input files ----------------------------------------------------------------------------------------------


def _in(tmp: Path) -> Path:
    d = tmp / "in"
    d.mkdir(exist_ok=True)
    return d


def _data_dir(content: bytes | None = None, name: str = "longmemeval_oracle.json", folder: bool = False,
              sub: str = "data") -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        d = _in(tmp) / sub
        d.mkdir(parents=True, exist_ok=True)
        if folder:
            (d / name).mkdir()
        elif content is not None:
            (d / name).write_bytes(content)
    return make


def _real_copy(sub: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        d = _in(tmp) / sub
        d.mkdir(parents=True, exist_ok=True)
        src = DATA / "longmemeval_oracle.json.xz"
        os.symlink(src if src.exists() else DATA / "longmemeval_oracle.json", d / src.name)
    return make


LOCOMO = json.dumps([{"sample_id": "conv-26", "conversation": {"speaker_a": "Caroline", "speaker_b": "Melanie"},
                      "qa": [{"question": "When did Caroline go?", "answer": "7 May 2023", "evidence": ["D1:3"]}],
                      "event_summary": {}, "observation": {}, "session_summary": {}}]).encode()
Q_NO_HAYSTACK = json.dumps([{"question_id": "q1", "question_type": "single-session-user", "question": "x?",
                             "answer": "y", "question_date": "2023/01/01 (Sun) 10:00"}]).encode()


def _file(name: str, content: bytes) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (_in(tmp) / name).write_bytes(content)
    return make


def _folder(name: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (_in(tmp) / name).mkdir(parents=True)
    return make


def _duckdb(name: str, damage: str) -> Callable[[Path], None]:
    """A real results-like DuckDB file, then damaged: truncated, blocks garbled, zeroed, or header garbled."""
    def make(tmp: Path) -> None:
        import duckdb

        p = _in(tmp) / name
        con = duckdb.connect(str(p))
        con.execute("CREATE TABLE t AS SELECT range AS i, md5(range::VARCHAR) || md5((range + 1)::VARCHAR) AS s "
                    "FROM range(200000)")
        con.close()
        b = bytearray(p.read_bytes())
        if damage == "truncated":
            b = b[: len(b) // 3]
        elif damage == "blocks":
            for off in range(12_288, len(b) - 4096, 65_536):  # past the headers: the data blocks
                b[off:off + 4096] = os.urandom(4096)
        elif damage == "zeroed":
            b = bytearray(len(b))
        elif damage == "header":
            b[:4096] = os.urandom(4096)
        p.write_bytes(bytes(b))
    return make


def _sqlite_damaged(name: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        import sqlite3

        p = _in(tmp) / name
        con = sqlite3.connect(p)
        con.execute("CREATE TABLE t (a TEXT)")
        con.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
        con.commit()
        con.close()
        b = bytearray(p.read_bytes())
        b[100:] = os.urandom(len(b) - 100)  # the 100-byte header stays SQLite's; the schema and every page are noise
        p.write_bytes(bytes(b))
    return make


def _config_dir(files: dict[str, str]) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        for rel, text in files.items():
            p = _in(tmp) / "conf" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    return make


def _both(*fns: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        for f in fns:
            f(tmp)
    return make


# --- checks of runs that must work ----------------------------------------------------------------------------


def _no_sentinel(tmp: Path, got: subprocess.CompletedProcess) -> str:
    hits = [str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file() and SENTINEL.encode() in p.read_bytes()]
    hits += ["stdout"] if SENTINEL in got.stdout else []
    hits += ["stderr"] if SENTINEL in got.stderr else []
    return f"the sentinel is written in {hits}" if hits else _stored(tmp, got)


def _stored(tmp: Path, got: subprocess.CompletedProcess, db: Path | None = None, qid: str | None = None) -> str:
    import duckdb

    dbs = [db] if db else [p for p in tmp.rglob("*.duckdb") if "in" not in p.relative_to(tmp).parts[:1]]
    if not dbs or not dbs[0].exists():
        return "exit 0 but no results file"
    con = duckdb.connect(str(dbs[0]), read_only=True)
    try:
        rows = con.execute("SELECT question_id, error FROM samples").fetchall()
    finally:
        con.close()
    if not rows:
        return "exit 0 but no question stored"
    bad = [r for r in rows if r[1]]
    if bad:
        return f"{len(bad)} of {len(rows)} questions stored with an error: {bad[0][1][:160]}"
    if qid and qid not in {r[0] for r in rows}:
        return f"question {qid} not stored (stored: {[r[0] for r in rows]})"
    return ""


def _stored_at(rel: str, qid: str | None = None) -> Callable[[Path, subprocess.CompletedProcess], str]:
    return lambda tmp, got: _stored(tmp, got, tmp / rel, qid)


def _question(qid: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    return lambda tmp, got: _stored(tmp, got, tmp / "bench.duckdb", qid)


def _shards(tmp: Path, got: subprocess.CompletedProcess) -> str:
    return "" if list((tmp / "shards").rglob("samples/*.parquet")) else "exit 0 but no shard written"


def _warned(word: str) -> Callable[[Path, subprocess.CompletedProcess], str]:
    def check(tmp: Path, got: subprocess.CompletedProcess) -> str:
        return _stored(tmp, got) or ("" if word in got.stderr + got.stdout else f"no warning naming {word}")
    return check


def _printed(tmp: Path, got: subprocess.CompletedProcess) -> str:
    return "" if got.stdout.strip() else "exit 0 and nothing printed"


# --- the inputs -------------------------------------------------------------------------------------------------

ORACLE = ["dataset=longmemeval_oracle", "dataset.data_dir={tmp}/in/data"]
OM = ["run_strategies=[om]"]
GPT = ["model=gpt-4o"]
WITH_KEY = {"OPENAI_API_KEY": KEY}
SPACES = "{tmp}/in/my runs/bench é.duckdb"


def cases() -> list[Case]:
    c: list[Case] = []

    def add(group: str, name: str, argv: list[str], expect: str = "error", **kw) -> None:
        c.append(Case(group, name, argv, expect, **kw))

    g = "data files and folders"
    add(g, "data_dir that does not exist", ["dataset=longmemeval_oracle", "dataset.data_dir={tmp}/in/nope"])
    add(g, "data_dir an empty folder", ORACLE, setup=_data_dir())
    add(g, "data_dir a file", ["dataset=longmemeval_oracle", "dataset.data_dir={tmp}/in/f.txt"],
        setup=_file("f.txt", b"hello"))
    add(g, "the data file is a folder", ORACLE, setup=_data_dir(folder=True))
    add(g, "a LoCoMo JSON as the data file", ORACLE, setup=_data_dir(LOCOMO))
    add(g, "an empty data file", ORACLE, setup=_data_dir(b""))
    add(g, "a truncated JSON data file", ORACLE, setup=_data_dir(b'[{"question_id": "q1", "question'))
    add(g, "a JSON object, not a list", ORACLE, setup=_data_dir(b'{"question_id": "q1"}'))
    add(g, "a list of numbers", ORACLE, setup=_data_dir(b"[1, 2, 3]"))
    add(g, "an empty list", ORACLE, setup=_data_dir(b"[]"))
    add(g, "questions without haystacks", ORACLE, setup=_data_dir(Q_NO_HAYSTACK))
    add(g, "binary noise as the data file", ORACLE, setup=_data_dir(os.urandom(3000)))
    add(g, "a .json.xz that is not xz", ORACLE, setup=_data_dir(b"not xz at all", name="longmemeval_oracle.json.xz"))
    add(g, "dataset.name= a missing file", ["dataset.name=/nonexistent/lme.json"])
    add(g, "dataset.name= a LoCoMo file", ["dataset.name={tmp}/in/locomo.json"], setup=_file("locomo.json", LOCOMO))
    add(g, "an unknown dataset name", ["dataset=longmemeval_x"])
    add(g, "data_dir with spaces and é (quoted by the CLI)", ["dataset=longmemeval_oracle",
        "dataset.data_dir={tmp}/in/my data é", "dataset.ids=[gpt4_2655b836]"], "run", setup=_real_copy("my data é"),
        real_data=True, check=_question("gpt4_2655b836"))
    add(g, "the real oracle file (reference run)", ["dataset=longmemeval_oracle", "dataset.data_dir={tmp}/in/real"],
        "run", setup=_real_copy("real"), real_data=True, check=_stored_at("bench.duckdb"))

    g = "question selection"
    real = ["dataset=longmemeval_oracle", "dataset.data_dir={tmp}/in/real"]
    for qid in ("1e043500", "726462e0", "41698283", "10e09553"):
        add(g, f"dataset.ids=[{qid}] (an id that looks like a number)", [*real, f"dataset.ids=[{qid}]"], "run",
            setup=_real_copy("real"), real_data=True, check=_question(qid))
    add(g, "an unknown question id", [*real, "dataset.ids=[no_such_question]"], setup=_real_copy("real"),
        real_data=True)
    add(g, "dataset.ids=[] (empty list)", ["dataset.ids=[]"], "either")
    add(g, "dataset.ids a bare word", ["dataset.ids=syn_x"])
    add(g, "dataset.ids unbalanced bracket", ["dataset.ids=[a,b"])
    add(g, "dataset.limit=-1", ["dataset.limit=-1"])
    add(g, "dataset.limit=abc", ["dataset.limit=abc"])
    add(g, "dataset.limit=1.5", ["dataset.limit=1.5"])
    add(g, "dataset.stratified=-3", ["dataset.stratified=-3", "dataset.limit=0"])
    add(g, "dataset.stratified=0", ["dataset.stratified=0", "dataset.limit=0"])
    add(g, "dataset.per_type=-1", ["dataset.per_type=-1", "dataset.limit=0"])
    add(g, "dataset.sample=-2", ["dataset.sample=-2", "dataset.limit=0"])
    add(g, "dataset.seed=abc", ["dataset.seed=abc"])
    for spec in ("0/4", "5/4", "a/b", "1/0", "3", "1/4/2"):
        add(g, f"dataset.shard={spec}", [f"dataset.shard={spec}"])
    add(g, "dataset.shard=2/4 (a valid shard)", ["dataset.shard=2/4", "dataset.limit=4"], "run", check=_shards)

    g = "names and enums"
    for arg in ("run_strategies=[omm]", "run.progress=fancy", "output.response_cache_policy=rwx",
                "output.store_prompts=some", "output.report_profile=azure", "answer.method=cot",
                "answer.history_format=xml", "answer.prompt=mine", "judge.source=web", "judge.parse=strict",
                "cachesim=huge", "model=gpt-9", "experiment=nope", "strategies.rag.params.retriever=magic",
                "dry_run=maybe", "run.checkpoints=perhaps"):
        add(g, arg, [arg] + (["run_strategies=[rag]"] if "rag" in arg else []))
    add(g, "an unknown key (foo=bar)", ["foo=bar"])
    add(g, "a typo in a key (run.concurency=2)", ["run.concurency=2"])
    add(g, "an unknown strategy param", ["+strategies.om.params.no_such_param=3", *OM])

    g = "numbers out of range"
    for arg in ("answer.temperature=-1", "answer.temperature=hot", "answer.max_tokens=0", "judge.repeats=0",
                "run.concurrency=0", "run.concurrency=-2", "run.max_usd=-5", "gateway.max_attempts=0",
                "gateway.timeout_s=0", "gateway.timeout_s=-1", "gateway.max_concurrency=0", "dry_run_sample=-1",
                "replay.turn_offset_s=-5"):
        add(g, arg, [arg])

    g = "memory thresholds and strategy params"
    for argv in (["strategies.om.params.message_tokens=-5", *OM], ["strategies.om.params.message_tokens=0", *OM],
                 ["strategies.om.params.observation_tokens=0", *OM],
                 ["strategies.om.params.message_tokens=abc", *OM],
                 ["strategies.compaction.params.threshold=-1", "run_strategies=[compaction]"],
                 ["strategies.compaction.params.keep_recent_tokens=5000", "run_strategies=[compaction]"],
                 ["strategies.rag.params.top_k=0", "run_strategies=[rag]"],
                 ["strategies.decay.params.decay_factor=1.5", "run_strategies=[decay]"],
                 ["strategies.full_context.params.reserve_tokens=130000"], ["model.actor_max_input_tokens=0"]):
        add(g, argv[0], argv)
    add(g, "message_tokens past gpt-4o's window", ["strategies.om.params.message_tokens=500000", *OM, *GPT],
        env=WITH_KEY)
    add(g, "actor_max_input_tokens past gpt-4o's window", ["model.actor_max_input_tokens=200000", *GPT],
        env=WITH_KEY)

    g = "keys and secrets"
    add(g, "OPENAI_API_KEY unset", GPT, env={"OPENAI_API_KEY": None})
    add(g, "OPENAI_API_KEY= (set, empty)", GPT, env={"OPENAI_API_KEY": ""})
    add(g, "OPENAI_API_KEY blank", GPT, env={"OPENAI_API_KEY": "   "})
    add(g, "GEMINI_API_KEY= (set, empty)", ["model=gemini-2.5-flash"], env={"GEMINI_API_KEY": ""})
    add(g, "ANTHROPIC_API_KEY unset", ["model=claude-sonnet-4-5"], env={"ANTHROPIC_API_KEY": None})
    add(g, "api_key_env naming an unset variable", ["gateway.api_key_env.actor=OMBENCH_TRIAL_UNSET", *GPT],
        env={**WITH_KEY, "OMBENCH_TRIAL_UNSET": None})
    add(g, "api_key_env.openai with offline models (warned, runs)", ["+gateway.api_key_env.openai=OPENAI_API_KEY"],
        "run", check=_warned("api_key_env"))
    add(g, "a secret in extra_body (found in no file)", [f"+model.judge.params.extra_body={{token: {SENTINEL}}}"],
        "run", check=_no_sentinel)
    add(g, "a secret in extra_headers (found in no file)",
        [f"+model.actor.params.extra_headers={{Authorization: 'Bearer {SENTINEL}'}}"], "run", check=_no_sentinel)
    add(g, "an empty actor model", ["model.actor.model="])
    add(g, "an unknown OpenAI model", ["model.actor.model=openai/gpt-99-turbo"], env=WITH_KEY, stores_reasons=True)
    add(g, "a model string without a provider", ["model.actor.model=nonsense-model-xyz"], env=WITH_KEY)
    add(g, "api_base not a URL", ["gateway.api_base.actor=not-a-url", "model.actor.model=openai/local"],
        env=WITH_KEY)
    add(g, "api_base to a closed local port", ["gateway.api_base.actor=http://127.0.0.1:9/v1",
                                               "model.actor.model=openai/local"], env=WITH_KEY)

    g = "results file and output paths"
    add(g, "output.db= an existing .json", ["output.db={tmp}/in/results.json"], setup=_file("results.json", b"[]"))
    add(g, "output.db= a text file", ["output.db={tmp}/in/notes.duckdb"], setup=_file("notes.duckdb", b"hello\n"))
    add(g, "output.db= a zeroed file", ["output.db={tmp}/in/z.duckdb"], setup=_duckdb("z.duckdb", "zeroed"))
    add(g, "output.db= header garbled", ["output.db={tmp}/in/h.duckdb"], setup=_duckdb("h.duckdb", "header"))
    add(g, "output.db= truncated", ["output.db={tmp}/in/t.duckdb"], setup=_duckdb("t.duckdb", "truncated"))
    add(g, "output.db= blocks garbled", ["output.db={tmp}/in/b.duckdb"], setup=_duckdb("b.duckdb", "blocks"))
    add(g, "output.db= a folder", ["output.db={tmp}/in/dbdir"], setup=_folder("dbdir"))
    add(g, "output.db= under /proc", ["output.db=/proc/ombench-trial/bench.duckdb"])
    add(g, "output.dir= a file", ["output.dir={tmp}/in/afile"], setup=_file("afile", b"x"))
    add(g, "output.checkpoint_dir= a file", ["output.checkpoint_dir={tmp}/in/cp", *OM], setup=_file("cp", b"x"))
    add(g, "output.response_cache= a folder", ["output.response_cache={tmp}/in/rc"], setup=_folder("rc"))
    add(g, "output.db with spaces and é (quoted by the CLI)", [f"output.db={SPACES}"], "run",
        setup=_folder("my runs"), check=_stored_at("in/my runs/bench é.duckdb"))
    add(g, "output.dir with spaces (quoted by the CLI)", ["output.dir={tmp}/out dir"], "run",
        check=_stored_at("out dir/bench.duckdb"))
    add(g, "output.db= a new .json name", ["output.db={tmp}/new.json"], "either", check=_stored_at("new.json"))
    add(g, "OM storage_path a damaged SQLite file", [*OM, "+strategies.om.params.storage_path={tmp}/in/om.sqlite"],
        setup=_sqlite_damaged("om.sqlite"))
    add(g, "OM storage_path a folder", [*OM, "+strategies.om.params.storage_path={tmp}/in/omdir"],
        setup=_folder("omdir"))
    add(g, "OM storage_path a text file", [*OM, "+strategies.om.params.storage_path={tmp}/in/om.txt"],
        setup=_file("om.txt", b"not sqlite\n" * 50))
    add(g, "response cache a damaged SQLite file", ["output.response_cache={tmp}/in/cache.sqlite"], "either",
        setup=_sqlite_damaged("cache.sqlite"))

    g = "command line form"
    add(g, "an unquoted path with spaces (two arguments)", ["output.db={tmp}/in/my", "runs/bench.duckdb"])
    add(g, "a value Hydra cannot lex (quote inside)", ["output.db={tmp}/it's here/bench.duckdb"])
    add(g, "--config-dir that does not exist", ["run", "--config-dir", "{tmp}/in/noconf", "output.dir={tmp}",
                                                  "dataset.limit=1", "run.progress=off"], raw=True)
    add(g, "--config-dir with a broken config.yaml", ["run", "--config-dir", "{tmp}/in/conf", "output.dir={tmp}",
                                                        "dataset.limit=1", "run.progress=off"], raw=True,
        setup=_config_dir({"config.yaml": "defaults:\n  - model: offline\n bad: [\n"}))
    add(g, "--config-dir with a broken experiment", ["run", "--config-dir", "{tmp}/in/conf", "experiment=mine",
                                                       "output.dir={tmp}", "run.progress=off"], raw=True,
        setup=_config_dir({"experiment/mine.yaml": "# @package _global_\ndataset: {limit: [1\n"}))
    add(g, "--config-dir a file", ["run", "--config-dir", "{tmp}/in/c.yaml", "output.dir={tmp}"], raw=True,
        setup=_file("c.yaml", b"a: 1\n"))
    add(g, "an unknown flag", ["run", "--bogus-flag", "output.dir={tmp}"], raw=True)
    add(g, "an unknown command", ["nope"], raw=True)
    add(g, "a sweep over a bad value", ["run", "-m", "output.dir={tmp}", "run.progress=off",
                                        "strategies.om.params.message_tokens=100,-5", "run_strategies=[om]",
                                        "dataset.limit=1"], raw=True)

    g = "other commands"
    add(g, "merge: a missing folder", ["merge", "{tmp}/in/nope", "--db", "{tmp}/m.duckdb"], raw=True)
    add(g, "merge: an empty folder", ["merge", "{tmp}/in/empty", "--db", "{tmp}/m.duckdb"], raw=True,
        setup=_folder("empty"))
    add(g, "merge: --db an existing .json", ["merge", "{tmp}/in/empty", "--db", "{tmp}/in/r.json"], raw=True,
        setup=_both(_folder("empty"), _file("r.json", b"{}")))
    add(g, "runs: a missing results file", ["runs", "--db", "{tmp}/in/none.duckdb"], raw=True)
    add(g, "runs: a JSON file as --db", ["runs", "--db", "{tmp}/in/r.json"], raw=True, setup=_file("r.json", b"{}"))
    add(g, "runs: a truncated results file", ["runs", "--db", "{tmp}/in/t.duckdb"], raw=True,
        setup=_duckdb("t.duckdb", "truncated"))
    add(g, "report: a missing results file", ["report", "--db", "{tmp}/in/none.duckdb", "--out", "{tmp}/rep"],
        raw=True)
    add(g, "export: a missing results file", ["export", "--db", "{tmp}/in/none.duckdb", "--run", "om",
                                              "--out", "{tmp}/x.jsonl"], raw=True)
    add(g, "view: a missing results file", ["view", "--db", "{tmp}/in/none.duckdb", "--out", "{tmp}/site"], raw=True)
    add(g, "data check: an unknown dataset", ["data", "check", "nope"], raw=True)
    add(g, "data check: a LoCoMo file", ["data", "check", "{tmp}/in/locomo.json"], raw=True,
        setup=_file("locomo.json", LOCOMO))
    add(g, "data check: a folder", ["data", "check", "{tmp}/in/empty"], raw=True, setup=_folder("empty"))
    add(g, "metrics: a missing file", ["metrics", "{tmp}/in/none.jsonl", "{tmp}/in/ref.json"], raw=True)
    add(g, "import: a missing file", ["import", "{tmp}/in/none.jsonl", "--ref", "{tmp}/in/ref.json", "--name", "x",
                                      "--db", "{tmp}/i.duckdb"], raw=True)
    return c


# --- running and classifying ------------------------------------------------------------------------------------


def _argv(case: Case, tmp: Path) -> list[str]:
    args = [a.replace("{tmp}", str(tmp)) for a in case.argv]
    if case.raw:
        return args
    keys = {a.lstrip("+").split("=", 1)[0] for a in args if "=" in a}
    return ["run", *[f"{k}={v.replace('{tmp}', str(tmp))}" for k, v in BASE.items() if k not in keys], *args]


def _snapshot(tmp: Path) -> dict[str, str]:
    out = {}
    for p in tmp.rglob("*"):
        rel = p.relative_to(tmp)
        if rel.parts[0] == "hydra" or not (p.is_file() or p.is_dir()):
            continue
        out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def _env(case: Case, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1", CI="1", LONGMEMEVAL_DATA_DIR=str(DATA),
               PYTHONWARNINGS="ignore")
    for k, v in case.env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def _error_lines(stderr: str) -> tuple[list[str], list[str]]:
    """(error lines, other lines): warnings, notes and argparse's usage line are neither."""
    errors, other = [], []
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if re.match(r"ombench( [a-z-]+)?: error:", ln):
            errors.append(ln)
        elif ln.startswith(("ombench: warning:", "warning:", "ombench: note:", "note:", "usage: ombench", "  ")):
            continue  # a warning, a note or argparse's usage (wrapped lines are indented)
        else:
            other.append(ln)
    return errors, other


def classify(case: Case, tmp: Path, got: subprocess.CompletedProcess, before: dict[str, str]) -> tuple[str, str]:
    text = got.stdout + got.stderr
    if "Traceback" in text:
        return "FAIL", "traceback: " + text[text.index("Traceback"):][-300:].replace("\n", " | ")
    if got.returncode < 0:
        return "FAIL", f"killed by signal {-got.returncode}"
    if got.returncode == 0:
        if case.expect == "error":
            return "FAIL", "exit 0 for an input that must be refused (accepted silently)"
        problem = (case.check or _stored)(tmp, got) if not case.raw else (case.check or _printed)(tmp, got)
        return ("FAIL", problem) if problem else ("run", "")
    errors, other = _error_lines(got.stderr)
    if not errors or other:
        return "FAIL", f"exit {got.returncode}, {len(errors)} error lines, {len(other)} other lines: " + \
            " | ".join((errors + other)[:4])[:400]
    if case.stores_reasons and got.returncode == 1 and errors[0].startswith(ALL_FAILED):
        return "error", errors[0] + " (the failed questions are stored with their reasons)"
    after = _snapshot(tmp)
    left = sorted(k for k in after if k not in before)
    changed = sorted(k for k in before if after.get(k) != before[k])
    if left or changed:
        return "FAIL", f"files left behind {left[:5]} changed {changed[:5]}: {errors[0][:200]}"
    if case.expect == "run":
        return "FAIL", f"refused an input that must run: {errors[0][:300]}"
    # the preflight names every problem it found at once, one line each (two roles without their key: two lines)
    return "error", errors[0] + (f"  (+{len(errors) - 1} more line(s), one per problem)" if len(errors) > 1 else "")


def run_case(case: Case, keep: Path | None) -> tuple[Case, str, str, float]:
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="ombench-trial-"))
    try:
        if case.setup:
            case.setup(tmp)
        before = _snapshot(tmp)
        got = subprocess.run([*OMBENCH, *_argv(case, tmp)], cwd=tmp, env=_env(case, tmp), capture_output=True, text=True,
                             timeout=900)
        kind, detail = classify(case, tmp, got, before)
    except Exception as exc:  # the trial's own failure for one input is that input's FAIL, the trial goes on
        kind, detail = "FAIL", f"trial error: {type(exc).__name__}: {exc}"
    finally:
        if keep is not None and case is not None:
            shutil.copytree(tmp, keep / f"{abs(hash(case.name)):x}", dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return case, kind, detail, time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=2, help="inputs run at once")
    ap.add_argument("-k", action="append", default=[], help="only inputs whose group or name contains this text "
                    "(repeat: any of them)")
    ap.add_argument("--keep", type=Path, default=None, help="copy each input's folder here (debugging)")
    args = ap.parse_args()
    have_data = (DATA / "longmemeval_oracle.json.xz").exists() or (DATA / "longmemeval_oracle.json").exists()
    todo = [c for c in cases() if not args.k or any(k.lower() in (c.group + " " + c.name).lower() for k in args.k)]
    skipped = [c for c in todo if c.real_data and not have_data]
    todo = [c for c in todo if c not in skipped]
    print(f"fault trial: {len(todo)} inputs ({len(skipped)} skipped: no LONGMEMEVAL_DATA_DIR), "
          f"offline engine (not an LLM)", flush=True)
    results = []
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for case, kind, detail, secs in pool.map(lambda c: run_case(c, args.keep), todo):
            results.append((case, kind, detail))
            mark = {"error": "clean error", "run": "correct run"}.get(kind, "FAIL")
            print(f"{mark:<11}  [{case.group}] {case.name}  ({secs:.0f}s){': ' + detail if detail else ''}",
                  flush=True)
    print("\n| group | inputs | clean one-line error, nothing written | correct run | FAIL |\n|---|---|---|---|---|")
    groups = list(dict.fromkeys(c.group for c in todo))
    for g in [*groups, "all"]:
        rows = [r for r in results if g in ("all", r[0].group)]
        n = {k: sum(1 for r in rows if r[1] == k) for k in ("error", "run", "FAIL")}
        label = f"**{g}**" if g == "all" else g
        print(f"| {label} | {len(rows)} | {n['error']} | {n['run']} | {n['FAIL']} |")
    failed = [r for r in results if r[1] == "FAIL"]
    for case, _, detail in failed:
        print(f"FAIL [{case.group}] {case.name}: {detail}")
    print(f"fault trial: {len(results) - len(failed)}/{len(results)} inputs clean or correct in "
          f"{(time.monotonic() - started) / 60:.1f} min")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
