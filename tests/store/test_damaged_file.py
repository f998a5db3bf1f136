"""A damaged results file (garbled blocks) gets one line naming it, saying it is damaged and advising to move
it aside and re-run: never a traceback, never 'check the disk'."""

from __future__ import annotations

import os

import duckdb
import pytest

from bench.errors import StorageFailure
from bench.store.db import connect


def test_a_results_file_with_garbled_blocks_gets_one_line_with_advice_that_works(tmp_path) -> None:
    db = tmp_path / "bench.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT range AS i, repeat('x', 100) AS s FROM range(20000)")
    con.close()
    size = db.stat().st_size
    with db.open("r+b") as fh:  # the file headers are kept (it is a DuckDB file); every block after them is noise
        fh.seek(12288)
        fh.write(os.urandom(size - 12288))
    with pytest.raises(StorageFailure) as err:
        connect(db).close()
    msg = str(err.value)
    assert str(db) in msg and "damaged" in msg and "move the file aside" in msg and "\n" not in msg
    assert "check the disk" not in msg
    db.rename(tmp_path / "bench.duckdb.damaged")  # the advice: move it aside, re-run
    connect(db).close()
