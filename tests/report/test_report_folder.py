"""The end-of-run report goes beside the results file it reports on, and a figure a report skips does not stay
from an earlier report in the same folder."""

from __future__ import annotations

from bench.runner.app import run_job
from tests.helpers.runner import compose_cfg


def test_a_run_on_another_results_file_writes_its_report_beside_it(tmp_path) -> None:
    """Moving only output.db used to overwrite the default results file's report (output.dir/report)."""
    run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=2", "run_strategies=[oracle]", "output.report=true"))
    default = (tmp_path / "report" / "report.md").read_text()
    other = tmp_path / "elsewhere" / "mine.duckdb"
    other.parent.mkdir()
    run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=2", "run_strategies=[full_context]",
                        "output.report=true", f"output.db={other}"))
    assert (tmp_path / "report" / "report.md").read_text() == default  # untouched
    mine = (tmp_path / "elsewhere" / "mine-report" / "report.md").read_text()
    assert "full_context" in mine and "Source: mine.duckdb" in mine


def test_a_figure_the_report_skips_is_not_left_from_an_earlier_report(tmp_path) -> None:
    from bench.report.build import build_report

    run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=2", "run_strategies=[oracle]"))
    out = tmp_path / "rep"
    rep = build_report(tmp_path / "bench.duckdb", out)
    skipped = [f for f in rep.figures if f.path is None]
    assert skipped, "every figure was drawn: pick data where one is skipped"
    stale = out / f"{skipped[0].name}.png"
    stale.write_bytes(b"\x89PNG old figure of other runs")
    mine = out / "my_notes.png"  # a file the report does not make is left alone
    mine.write_bytes(b"x")
    build_report(tmp_path / "bench.duckdb", out)
    assert not stale.exists() and mine.exists()
    assert all(f.path.exists() for f in rep.figures if f.path)
