"""A sweep (`ombench run -m ...`) validates every job's config before the first job starts: a bad value in the
second job is one line naming that job's override and the fix, exit 2, and nothing is run or written (the first
job used to run and write its results before the second was refused)."""

from __future__ import annotations

from pathlib import Path

from bench.cli import main


def test_a_bad_value_in_a_later_sweep_job_is_refused_before_any_job_runs(tmp_path: Path, capsys) -> None:
    rc = main(["run", "-m", "strategies.om.params.message_tokens=100,-5", "run_strategies=[om]", "dataset.limit=1",
               "run.progress=off", f"output.dir={tmp_path}"])
    out, err = capsys.readouterr()
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip() and "Warning" not in ln]
    assert lines == [
        "ombench: error: sweep job 2 of 2 (strategies.om.params.message_tokens=-5): strategies.om.params."
        "message_tokens=-5: must be > 0 tokens; no job was run; fix or drop that value of the sweep"], err
    assert "Traceback" not in out + err and "Launching" not in out + err
    assert not any(tmp_path.iterdir()), sorted(str(p) for p in tmp_path.rglob("*"))


def test_every_job_of_the_sweepers_own_params_and_the_command_line_is_checked(tmp_path: Path, capsys) -> None:
    """`hydra.sweeper.params` (experiment=om_threshold_sweep: 2x2) crossed with a command-line sweep: the bad
    value is named in each of the jobs that carry it."""
    rc = main(["run", "-m", "experiment=om_threshold_sweep", "dataset.limit=1,-1",
               "run.progress=off", f"output.dir={tmp_path}"])
    out, err = capsys.readouterr()
    assert rc == 2, err
    errors = [ln for ln in err.splitlines() if ln.startswith("ombench: error: ")]
    assert len(errors) == 4 and all("of 8 (" in ln and "dataset.limit=-1: must be >= 0" in ln for ln in errors), err
    assert not any(tmp_path.iterdir())
