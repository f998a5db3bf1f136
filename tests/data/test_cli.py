"""`ombench data check|subset|synthetic` through bench.cli.main, plus one real subprocess run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main
from bench.benchmarks.longmemeval.loader import load_dataset
from bench.data.stats import haystack_tokens
from bench.benchmarks.longmemeval.synthetic import write_synthetic

KEYS = {"name", "n", "sha256", "official", "split", "type_counts", "abstention", "haystack_tokens", "path", "date_format", "note"}


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture()
def small_file(tmp_path: Path) -> Path:
    return write_synthetic(tmp_path / "small.json", n_per_type=1, haystack_tokens=700, seed=9)


def test_check_prints_one_json_object(small_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["data", "check", str(small_file), "--json"], capsys)
    assert rc == 0 and out.count("\n") == 1
    summary = json.loads(out)
    assert set(summary) == KEYS
    ds = load_dataset(str(small_file))
    assert summary["n"] == len(ds) == 10 and summary["sha256"] == ds.sha256
    assert summary["official"] is False and summary["split"].endswith("-like")  # inferred: not a known file
    assert summary["type_counts"] == ds.type_counts() and summary["abstention"] == 4
    tokens = summary["haystack_tokens"]
    sizes = sorted(haystack_tokens(ds.instances))
    assert tokens == {"p50": sizes[len(sizes) // 2 - 1], "max": sizes[-1]}  # lower middle of an even count
    assert 600 <= tokens["p50"] <= 800
    assert summary["path"] == str(small_file)


@pytest.mark.realdata
def test_check_oracle_with_data_dir(capsys: pytest.CaptureFixture[str]) -> None:
    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not folder:
        pytest.skip("real data: set LONGMEMEVAL_DATA_DIR to the folder with longmemeval_oracle.json[.xz]")
    rc, out, _ = run_cli(["data", "check", "longmemeval_oracle", "--data-dir", folder, "--json"], capsys)
    summary = json.loads(out)
    assert rc == 0 and summary["n"] == 500 and summary["official"] is True and summary["split"] == "oracle"
    assert summary["sha256"].startswith("821a2034") and summary["abstention"] == 30
    assert sum(summary["type_counts"].values()) == 500
    assert 0 < summary["haystack_tokens"]["p50"] < summary["haystack_tokens"]["max"]


def test_malformed_file_exits_nonzero_with_one_line(tmp_path: Path, small_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = json.loads(small_file.read_text(encoding="utf-8"))
    victim = raw[3]["question_id"]
    raw[3]["haystack_session_ids"] = raw[3]["haystack_session_ids"][:-1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(q) + "\n" for q in raw), encoding="utf-8")
    rc, out, err = run_cli(["data", "check", str(bad)], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and victim in err and "haystack_dates" in err and str(bad) in err


def test_missing_dataset_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, _, err = run_cli(["data", "check", "longmemeval_oracle", "--data-dir", str(tmp_path)], capsys)
    assert rc == 2 and "longmemeval_oracle.json" in err and str(tmp_path) in err


def test_subset_writes_a_reloadable_file(tmp_path: Path, small_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "sub" / "picked.json"
    rc, out, _ = run_cli(["data", "subset", str(small_file), "--per-type", "multi-session=2,temporal-reasoning=1", "--seed", "3",
                          "--out", str(out_file)], capsys)
    assert rc == 0
    report = json.loads(out)
    again = load_dataset(str(out_file))
    assert [i.question_id for i in again.instances] == report["subset_ids"]
    assert again.type_counts() == {"multi-session": 2, "temporal-reasoning": 1}
    source = {i.question_id: i for i in load_dataset(str(small_file)).instances}
    assert all(source[i.question_id] == i for i in again.instances)  # nothing lost in the rewrite
    rc, _, err = run_cli(["data", "subset", str(small_file), "--per-type", "lots", "--out", str(out_file)], capsys)
    assert rc == 2 and "--per-type" in err


def test_synthetic_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(["data", "synthetic", "--n-per-type", "1", "--haystack-tokens", "300", "--out", str(tmp_path / "syn.jsonl")], capsys)
    assert rc == 0 and json.loads(out)["n"] == 10
    assert load_dataset(str(tmp_path / "syn.jsonl")).sha256 == json.loads(out)["sha256"]


@pytest.mark.slow  # the installed ombench script in a subprocess
def test_installed_script_runs(small_file: Path) -> None:
    script = Path(sys.executable).parent / "ombench"
    if not script.exists():
        pytest.skip(f"no ombench script next to {sys.executable}; install the package (pip install -e .)")
    proc = subprocess.run([str(script), "data", "check", str(small_file), "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["n"] == 10


def test_check_shows_a_non_official_date_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = json.loads(write_synthetic(tmp_path / "s.json", n_per_type=1, haystack_tokens=700, seed=9).read_text())
    for q in raw:  # rewrite every stamp as ISO-8601, as several public forks do
        q["question_date"] = _iso(q["question_date"])
        q["haystack_dates"] = [_iso(d) for d in q["haystack_dates"]]
    path = tmp_path / "iso.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    rc, out, err = run_cli(["data", "check", str(path), "--no-tokens", "--json"], capsys)
    summary = json.loads(out)
    assert rc == 0 and summary["date_format"] == "non-official (ISO-8601)"
    assert "non-official date format" in summary["note"]
    assert err.count("\n") == 1 and err.startswith("note: non-official date format: ")


def _iso(stamp: str) -> str:
    from bench.benchmarks.longmemeval.dates import parse_lme_date

    return parse_lme_date(stamp).isoformat()


def test_check_prints_a_table_by_default(small_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(["data", "check", str(small_file)], capsys)
    ds = load_dataset(str(small_file))
    assert rc == 0 and err == ""  # no progress when stderr is not a terminal
    assert ds.sha256 in out and "questions" in out and "median " in out
    assert all(len(line) <= 80 for line in out.splitlines())


def test_check_shows_progress_on_a_terminal(small_file: Path) -> None:
    import io

    from rich.console import Console

    from bench.cli.data import _token_sizes

    buf = io.StringIO()
    ds = load_dataset(str(small_file))
    sizes = _token_sizes(ds.instances, Console(file=buf, force_terminal=True, width=80))
    assert "counting haystack tokens" in buf.getvalue() and f"{len(ds)}/{len(ds)}" in buf.getvalue()
    assert sizes == {"p50": sorted(haystack_tokens(ds.instances))[len(ds) // 2 - 1],
                     "max": max(haystack_tokens(ds.instances))}
