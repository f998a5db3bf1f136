"""Compose the real Hydra config tree for runner tests, pointed at a temporary results folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir

from bench.cli.run import config_dir

ROOT = Path(__file__).resolve().parents[2]
OMBENCH = [sys.executable, "-m", "bench.cli"]


def compose_cfg(out: Path, *overrides: str):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose(config_name="config", overrides=[f"output.dir={out}", "run.progress=off", "output.report=false", *overrides])


def ombench(*args: str, cwd: Path = ROOT, timeout: int = 600, env_drop: tuple[str, ...] = (),
            **kw) -> subprocess.CompletedProcess:
    """`ombench ARGS` in a subprocess (litellm's local price map, no hub access); `env_drop`: variables unset."""
    env = {k: v for k, v in os.environ.items() if k not in env_drop}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1")
    return subprocess.run([*OMBENCH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kw)
