"""`ombench runs` lists stable run names that every --run accepts, and adding runs never renames one."""

from __future__ import annotations

import json
from pathlib import Path

from bench.cli import main
from bench.benchmarks.longmemeval.synthetic import write_synthetic


def _import(tmp_path: Path, ref: Path, db: Path, name: str) -> None:
    data = json.loads(ref.read_text(encoding="utf-8"))
    ev = tmp_path / f"{name}.jsonl"
    ev.write_text("".join(json.dumps({"question_id": r["question_id"], "hypothesis": "x",
                                      "autoeval_label": {"model": "gpt-4o", "label": i % 2 == 0}}) + "\n"
                          for i, r in enumerate(data)), encoding="utf-8")
    assert main(["import", str(ev), "--ref", str(ref), "--db", str(db), "--name", name]) == 0


def _names(db: Path, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_names_are_stable_and_accepted_by_export(tmp_path, capsys) -> None:
    ref = write_synthetic(tmp_path / "ref.json", n_per_type=1, haystack_tokens=500, seed=3)
    db = tmp_path / "r.duckdb"
    _import(tmp_path, ref, db, "sys-a")
    n = len(json.loads(ref.read_text(encoding="utf-8")))
    first = _names(db, capsys)
    assert len(first) == 1 and first[0]["n"] == n
    _import(tmp_path, ref, db, "sys-b")
    _import(tmp_path, ref, db, "sys-c")
    later = {r["run_key"]: r["name"] for r in _names(db, capsys)}
    assert len(later) == 3 and len(set(later.values())) == 3
    assert later[first[0]["run_key"]] == first[0]["name"]
    out = tmp_path / "hyp.jsonl"
    assert main(["export", "--db", str(db), "--run", first[0]["name"], "--out", str(out)]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == n
    assert main(["runs", "--db", str(db)]) == 0
    assert first[0]["name"] in capsys.readouterr().out.replace("\n", "")


def test_table_fits_80_columns_and_hides_nothing(tmp_path, capsys, monkeypatch) -> None:
    ref = write_synthetic(tmp_path / "ref.json", n_per_type=1, haystack_tokens=500, seed=3)
    db = tmp_path / "r.duckdb"
    for name in ("longmemeval_s-gpt-4o-mini-threshold-sweep.full_context", "sys-b"):
        _import(tmp_path, ref, db, name)
    runs = _names(db, capsys)
    for width, lines_per_run in ((80, 3), (220, 1)):
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(["runs", "--db", str(db)]) == 0
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert max(len(ln) for ln in lines) <= width
        for r in runs:
            at = next(i for i, ln in enumerate(lines) if r["name"] in ln)  # the whole name on one line: copyable
            row = " ".join(lines[at:at + lines_per_run])
            models = " / ".join(m for m in (r["actor_model"], r["judge_model"]) if m)
            assert models and models in row and r["started_at"][:16] in row and f"{r['n']}" in row
            assert r["status"] in row and (r["dataset"] or "-") in row
