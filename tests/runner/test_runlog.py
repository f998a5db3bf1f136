"""Each `ombench run` gets its own timestamped Hydra folder whose run.log holds the resolved config (secrets
scrubbed) and the summary; the console output stays as it was."""

from __future__ import annotations

import logging
import time

import pytest

from bench.runner.runlog import log_config
from tests.helpers.runner import ombench


def test_resolved_config_is_logged_with_secrets_scrubbed(caplog):
    with caplog.at_level(logging.INFO, logger="bench.run"):
        log_config({"experiment_name": "x", "model": {"actor": {"model": "openai/gpt-4o",
                                                                "params": {"api_key": "sk-live-0123456789abcdef"}}},
                    "output": {"db": "postgresql://bob:hunter2@db/x"}})
    text = caplog.text
    assert "resolved config" in text and "experiment_name: x" in text and "openai/gpt-4o" in text
    assert "sk-live-0123456789abcdef" not in text and "<redacted>" in text
    assert "hunter2" not in text and "postgresql://bob:<redacted>@db/x" in text


@pytest.mark.slow
def test_runs_get_their_own_folder_and_log(tmp_path):
    args = ["run", "experiment=quick", "dataset.limit=1", "run_strategies=[oracle]", f"output.dir={tmp_path}",
            "run.progress=off", "output.report=false"]
    first = ombench(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    time.sleep(1.1)  # the folder is named to the second
    second = ombench(*args)
    assert second.returncode == 0, second.stderr[-2000:]
    dirs = sorted((tmp_path / "hydra" / "quick").iterdir())
    assert len(dirs) == 2  # the second run did not overwrite the first
    log = (dirs[0] / "run.log").read_text()
    assert "resolved config (secrets scrubbed)" in log and "experiment_name: quick" in log
    assert "oracle" in log and "micro: judged questions" in log  # the summary, as printed
    assert "micro: judged questions" in first.stdout and "[INFO]" not in first.stdout
