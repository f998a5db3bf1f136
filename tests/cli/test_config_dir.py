"""A broken YAML file in the user's `--config-dir` is an error naming the file and line, before anything runs
(Hydra skips a config.yaml it cannot parse without a word and runs the packaged defaults)."""

from __future__ import annotations

from bench.cli.run import run_hydra


def test_a_broken_config_yaml_in_config_dir_stops_the_run(tmp_path, capsys) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "config.yaml").write_text("run:\n  concurrency: [1\n bad: : :\n")
    out = tmp_path / "out"
    code = run_hydra(["--config-dir", str(folder), f"output.dir={out}", "run.progress=off"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("ombench run: error: ") and "config.yaml" in err and "line 3" in err
    assert "\n" not in err and not out.exists()
