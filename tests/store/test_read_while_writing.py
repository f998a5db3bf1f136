"""Readers while a run writes (issue 26, item 6): `ombench runs`, `report` and `view` read a snapshot taken now
instead of failing on DuckDB's lock; a reader that cannot (Results without snapshot) names `--db`, not output.db=."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.cli import main
from bench.store import QuestionResult, Results, RunManifest, SampleRow
from bench.store.db import FileLocked

WRITER = textwrap.dedent("""
    import sys
    from bench.store import QuestionResult, RunManifest, SampleRow, Store
    with Store(sys.argv[1]) as s:
        s.upsert_run(RunManifest(run_key="live", name="live", strategy="om", dataset_name="longmemeval_s"))
        s.write_question("live", QuestionResult(SampleRow("q1", "multi-session", label=True)))
        print("ready", flush=True)
        sys.stdin.readline()  # holds the file open for writing until the test is done
""")


@pytest.fixture
def live_db(tmp_path: Path):
    db = tmp_path / "live.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield db
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=60)


def test_readers_see_a_snapshot_while_a_run_writes(live_db: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--db", str(live_db), "--json"]) == 0
    captured = capsys.readouterr()
    runs = json.loads(captured.out)
    assert [r["run_key"] for r in runs] == ["live"] and "snapshot" in captured.err
    assert main(["report", "--db", str(live_db), "--out", str(tmp_path / "rep")]) == 0
    assert f"| {runs[0]['name']} | longmemeval_s | om | 1 | 100.0% [" in (tmp_path / "rep" / "report.md").read_text()


def test_the_lock_message_of_a_reader_names_db(live_db: Path) -> None:
    with pytest.raises(FileLocked) as err:
        Results(live_db)
    msg = str(err.value)
    assert "--db" in msg and "output.db=" not in msg and "\n" not in msg


def test_a_snapshot_is_not_written_back(tmp_path: Path) -> None:
    from bench.store import Store

    db = tmp_path / "r.duckdb"
    with Store(db) as s:
        s.upsert_run(RunManifest(run_key="r", name="r", strategy="om"))
        s.write_question("r", QuestionResult(SampleRow("q1", "multi-session", label=False)))
    before = db.read_bytes()
    with Results(db, snapshot=True) as res:  # not locked: the file itself, read-only
        assert res.run_keys() == ["r"]
    assert db.read_bytes() == before
