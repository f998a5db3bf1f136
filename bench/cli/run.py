"""`ombench run`: the Hydra app. `ombench run experiment=quick`, `ombench run -m key=a,b` for sweeps."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

_EXIT = {"code": 0}


def config_dir() -> str:
    """configs/ of the working directory when present (a user's own tree), else the project's own."""
    env = os.environ.get("OMBENCH_CONFIG_DIR")
    if env:
        return str(Path(env).resolve())
    here = Path.cwd() / "configs"
    if (here / "config.yaml").exists():
        return str(here.resolve())
    return str((Path(__file__).resolve().parents[2] / "configs").resolve())


def _task(cfg: Any) -> None:
    from bench.errors import UserError
    from bench.runner.app import run_job

    try:
        run_job(cfg)
    except UserError as exc:
        print(f"ombench: error: {exc}", file=sys.stderr)
        _EXIT["code"] = 2


def run_hydra(argv: list[str]) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import hydra

    main = hydra.main(version_base="1.3", config_path=config_dir(), config_name="config")(_task)
    saved = sys.argv
    sys.argv = ["ombench run", *argv]
    try:
        main()
    finally:
        sys.argv = saved
    return _EXIT["code"]
