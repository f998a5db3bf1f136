"""`ombench runs` (table at 80 and wide columns, and --json) and the viewer's index show the judge's false-positive
rate of runs whose judge configuration was audited (`ombench judge-audit`), and nothing for the others (issue 26)."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from bench.cli import main
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.runner import compose_cfg


class _Rows(HTMLParser):
    """The cells of the index's runs table, row by row (its title attributes kept per cell)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, str]]] = []
        self._in, self._cell, self._title = False, None, ""

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == "runs":
            self._in = True
        elif self._in and tag == "tr":
            self.rows.append([])
        elif self._in and tag in ("td", "th"):
            self._cell, self._title = "", dict(attrs).get("title") or ""

    def handle_endtag(self, tag):
        if tag == "table":
            self._in = False
        elif self._in and tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append((self._cell.strip(), self._title))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def test_runs_and_viewer_index_show_the_audited_judges_false_positive_rate(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.runner.app import run_job

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    db = tmp_path / "bench.duckdb"
    run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=4", "run_strategies=[oracle]"))
    capsys.readouterr()

    def runs_json() -> list[dict]:
        assert main(["runs", "--db", str(db), "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    def table(width: int) -> str:
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(["runs", "--db", str(db)]) == 0
        return capsys.readouterr().out

    # nothing audited: null in --json, no column in the table
    assert [r["judge_audit"] for r in runs_json()] == [None]
    assert "jFP" not in table(220) and "judge FP" not in table(80)

    # the run's own judge (offline engine) audited; a run judged by an always-yes server, and that judge audited
    assert main(["judge-audit", "--n", "6", "--json", "dataset=synthetic", f"output.db={db}"]) == 0
    with FakeOpenAIServer(lambda body: "yes") as server:
        run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=4", "run_strategies=[oracle]",
                            "model.judge.model=openai/gpt-4o-2024-08-06", "run.preflight=false",
                            f"+gateway.api_base.openai={server.base_url}"))
        assert main(["judge-audit", "--n", "6", "--json", "dataset=synthetic", f"output.db={db}",
                     "model.judge.model=openai/gpt-4o-2024-08-06", f"gateway.api_base.openai={server.base_url}"]) == 0
    capsys.readouterr()

    rows = {r["judge_model"]: r for r in runs_json()}
    off, yes = rows["offline/judge"]["judge_audit"], rows["openai/gpt-4o-2024-08-06"]["judge_audit"]
    assert off["false_positive"]["n"] > 0 and off["false_positive"]["rate"] < 0.1 and not off["unreliable"]
    assert yes["false_positive"] == {"hits": 6, "n": 6, "rate": 1.0} and yes["unreliable"] and yes["cell"] == "100%!"
    assert off["offline_engine"] and off["dataset"].startswith("synthetic")

    wide = table(220)
    assert any("jFP" in ln for ln in wide.splitlines()[:4])  # the header
    for r in rows.values():
        line = next(ln for ln in wide.splitlines() if r["name"] in ln)
        assert r["judge_audit"]["cell"] in line
    narrow = table(80)
    lines = narrow.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    for r in rows.values():
        at = next(i for i, ln in enumerate(lines) if r["name"] in ln)
        assert f"judge FP {r['judge_audit']['cell']}" in " ".join(lines[at:at + 3])

    # the viewer's index: a "judge FP" column, the unreliable judge flagged with its numbers
    assert main(["view", "--db", str(db), "--out", str(tmp_path / "view")]) == 0
    page = (tmp_path / "view" / "index.html").read_text(encoding="utf-8")
    p = _Rows()
    p.feed(page)
    header = [c for c, _ in p.rows[0]]
    assert "judge FP" in header
    col = header.index("judge FP")
    cells = {row[0][0].split()[0]: row[col] for row in p.rows[1:]}  # the run's name, less its "offline engine" tag
    assert cells[rows["openai/gpt-4o-2024-08-06"]["name"]][0] == "100%!"
    assert "UNRELIABLE judge: openai/gpt-4o-2024-08-06 accepted 6 of 6" in cells[rows["openai/gpt-4o-2024-08-06"]["name"]][1]
    assert cells[rows["offline/judge"]["name"]][0] == off["cell"]
