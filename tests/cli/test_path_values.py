"""Paths with spaces or non-ASCII letters work as typed on the `ombench run` command line (one shell argument,
no Hydra quoting); a value the command cannot quote for Hydra gets one line saying how to quote it."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from bench.cli.run import quote_plain_values
from tests.helpers.runner import ombench


def test_plain_values_with_spaces_or_non_ascii_letters_are_quoted_for_hydra():
    assert quote_plain_values(["output.db=/data/my runs/bench é.duckdb", "dataset.data_dir=/d/dåta (copy)"]) == [
        "output.db='/data/my runs/bench é.duckdb'", "dataset.data_dir='/d/dåta (copy)'"]
    kept = ["output.db=/data/bench.duckdb", "run_strategies=[om,rag]", "dataset.ids=['1e043500']",
            "model.actor.params.api_key=${oc.env:X}", "a=b,c d", "x=choice(a b,c)", "--config-dir=/my dir",
            "output.dir='/quoted dir'", "~dataset.limit", "-m"]
    assert quote_plain_values(kept) == kept


@pytest.mark.slow  # `ombench run` subprocesses
def test_a_results_path_with_spaces_and_non_ascii_letters_works_unquoted(tmp_path: Path):
    out = tmp_path / "my runs ü"
    db = out / "bench é.duckdb"
    p = ombench("run", f"output.dir={out}", f"output.db={db}", "output.report=false", "run.progress=off",
                "dataset.limit=1", "run_strategies=[oracle]")
    assert p.returncode == 0, p.stderr[-2000:]
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM samples").fetchone()[0] == 1
    finally:
        con.close()
    bad = ombench("run", f"output.dir={tmp_path}/it's mine", "run.progress=off")
    assert bad.returncode == 2
    [line] = bad.stderr.strip().splitlines()
    assert "must be quoted for Hydra inside the shell's quotes: 'key=\"my value\"'" in line
