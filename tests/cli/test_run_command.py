"""`ombench run` as a user meets it: the config tree inside the package, names for what ran, one-line errors for
every misuse of Hydra's command line, `--version`, `--config-dir`, a missing key failing fast with nothing
written, and bash completion through the `ombench run` entry point."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.cli import main
from tests.helpers.runner import ombench

BIN = Path(sys.executable).parent


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["experiment=null"], "a config group was set to null"),
        (["experiment=nosuch"], "Could not find 'experiment/nosuch'; available options in 'experiment': baselines_gpt4o"),
        (["model=nosuch"], "available options in 'model': claude-sonnet-4-5"),
        (["no_such_key=1"], "Could not override 'no_such_key'.; To append to your config use +no_such_key=1"),
        (["foo=["], "no viable alternative at input '['"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["dataset.limit=abc"], "dataset.limit"),
        (["dataset.name=???"], "Missing mandatory value: dataset.name"),
        (["dataset.data_dir=${oc.env:OMBENCH_TEST_UNSET_VAR}"], "OMBENCH_TEST_UNSET_VAR"),
        (["run.concurrency=0"], "run.concurrency must be"),
        (["-sc", "install=zsh"], "supports bash only"),
    ],
)
def test_every_misuse_is_one_line_exit_2(capsys, argv: list[str], needle: str) -> None:
    rc, out, err = _run(capsys, "run", *argv)
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith(("ombench run: error: ", "ombench: error: ")), err
    assert needle in err and "Traceback" not in err


def test_version(capsys) -> None:
    import importlib.metadata as md

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"ombench {md.version('om-bench')}"
    assert _run(capsys, "run", "--version")[:2] == (0, f"ombench {md.version('om-bench')}\n")


def test_real_data_without_an_experiment_uses_real_defaults_and_its_own_name(capsys) -> None:
    rc, out, _ = _run(capsys, "run", "dataset=longmemeval_s", "--cfg", "job", "--resolve")
    assert rc == 0
    assert "message_tokens: 30000" in out and "observation_tokens: 40000" in out and "threshold: 30000" in out
    assert "experiment_name: longmemeval_s-offline" in out
    # the synthetic sample (the default dataset) and `make bench` scale the thresholds to its small haystacks
    for argv in (["experiment=quick"], []):
        rc, out, _ = _run(capsys, "run", *argv, "--cfg", "job", "--resolve")
        assert "message_tokens: 2000" in out and "threshold: 2000" in out
    assert "experiment_name: quick" in _run(capsys, "run", "+experiment=quick", "--cfg", "job", "--resolve")[1]
    # an experiment's own thresholds win over the dataset's scaling
    rc, out, _ = _run(capsys, "run", "experiment=mastra_gpt4o", "dataset=synthetic", "--cfg", "job", "-p",
                      "strategies.om.params.message_tokens")
    assert out.strip() == "30000"


def test_a_users_config_dir_adds_and_overrides_options(tmp_path, capsys) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(
        "# @package _global_\nexperiment_name: mine\nrun_strategies: [om]\nstrategies:\n  om:\n    params: {message_tokens: 12345}\n")
    rc, out, err = _run(capsys, "run", "--config-dir", str(tmp_path), "experiment=mine", "--cfg", "job", "--resolve")
    assert rc == 0, err
    assert "experiment_name: mine" in out and "message_tokens: 12345" in out


@pytest.mark.slow
def test_missing_key_fails_fast_with_no_results_written(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")}
    out = tmp_path / "results"
    t0 = time.monotonic()
    got = subprocess.run([str(BIN / "ombench"), "run", "experiment=mastra_gpt4o", "dataset.limit=2", f"output.dir={out}"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - t0
    print(f"missing-key failure after {seconds:.1f} s")  # measured, not asserted (machines differ)
    assert got.returncode == 2
    lines = got.stderr.splitlines()
    assert len(lines) == 2 and all(ln.startswith("ombench: error: ") for ln in lines)
    assert any("actor model openai/gpt-4o-2024-08-06 needs an API key: set OPENAI_API_KEY" in ln for ln in lines)
    assert any("observer model gemini/gemini-2.5-flash needs an API key: set GEMINI_API_KEY" in ln for ln in lines)
    # no results file, response cache or checkpoint: only Hydra's run folder, whose run log says why
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"] and [p.name for p in out.iterdir()] == ["hydra"]
    (log,) = out.glob("hydra/mastra_gpt4o/*/run.log")
    assert "preflight: actor model openai/gpt-4o-2024-08-06 needs an API key" in log.read_text()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_through_ombench_run(tmp_path) -> None:
    script = ombench("run", "-sc", "install=bash", cwd=tmp_path)
    assert script.returncode == 0 and "complete -o nospace -o default -F _ombench_completion ombench" in script.stdout
    (tmp_path / "ombench").write_text(f"#!/bin/sh\nexec {sys.executable} -m bench.cli \"$@\"\n")
    (tmp_path / "ombench").chmod(0o755)

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        probe = (f'eval "$(cat {tmp_path / "script.sh"})"\n'
                 f'COMP_LINE="{line}"; COMP_POINT={len(line)}; COMP_WORDS=({" ".join(repr(w) for w in words)}); '
                 f'COMP_CWORD={len(words) - 1}\n_ombench_completion\nprintf "%s\\n" "${{COMPREPLY[@]}}"\n')
        env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
        done = subprocess.run(["bash", "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    (tmp_path / "script.sh").write_text(script.stdout)
    assert {"run", "data", "export", "metrics"} <= set(complete("ombench "))
    assert set(complete("ombench run experiment=")) >= {"experiment=quick", "experiment=mastra_gpt4o"}
    assert "dataset=" in complete("ombench run data")
