"""The README's local-model example (issue 26, item 8): `model=local` fits a 32k-window server, so the command as
the README shows it passes its own preflight and OM answers from a memory built before the question. Run against
a stand-in llama-server (32,768-token window, no /tokenize: the 1.35 margin applies) on 2 oracle questions."""

from __future__ import annotations

import re
import shlex

import duckdb
import pytest

from tests.helpers.runner import ROOT, ombench
from tests.helpers.standin import local_server


def readme_local_command() -> list[str]:
    """The `ombench run` arguments of the README's "Local models" example."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\\\n", " ")
    section = text.split("## Local models", 1)[1]
    line = next(ln for ln in section.splitlines() if "ombench run" in ln)
    return shlex.split(line.split("ombench run", 1)[1].split(" #")[0])


@pytest.mark.slow  # six strategies x two questions over HTTP, about 30 s
def test_the_readme_local_example_fits_a_32k_server_and_builds_memory(tmp_path, real_data_dir) -> None:
    args = readme_local_command()
    assert "model=local" in args and any(a.startswith("gateway.api_base.openai=") for a in args)
    with local_server(32768) as srv:
        args = [f"gateway.api_base.openai={srv.base_url}" if a.startswith("gateway.api_base.openai=") else
                "dataset.limit=2" if a.startswith("dataset.per_type=") else a for a in args]
        got = ombench("run", *args, f"output.dir={tmp_path}", "run.progress=off", "output.report=false",
                      env_drop=("OPENAI_API_KEY",))
    out = got.stdout + got.stderr
    assert got.returncode == 0, out[-3000:]
    assert "window" not in out.lower() and "error" not in out.lower(), out[-3000:]
    assert srv.stats.chat_requests > 0 and {b["model"] for b in srv.stats.chat_bodies} == {"local"}
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    om = con.execute("SELECT question_id, sum(tokens) FROM memory JOIN runs USING (run_key) "
                     "WHERE runs.strategy = 'om' AND kind = 'observations' GROUP BY ALL").fetchall()
    n_samples = con.execute("SELECT count(*), count(error) FROM samples").fetchone()
    assert len(om) == 2 and all(tokens > 0 for _, tokens in om), om  # memory at question time, both questions
    assert n_samples == (12, 0)  # six strategies x two questions, none failed
    assert not re.search(r"memory (probably )?(unusable|empty)", out)
