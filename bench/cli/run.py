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


# config sections that map names (a role or provider) to values: their keys are the user's to add
OPEN_MAPPINGS = ("gateway.api_base", "gateway.api_key_env", "gateway.rpm", "gateway.tpm", "gateway.context_window")


def open_mapping_overrides(argv: list[str]) -> list[str]:
    """`gateway.api_base.openai=URL` and `gateway.api_base={openai: URL}` as Hydra accepts them: `++` (add or
    replace). Hydra's struct mode refuses both spellings on a mapping whose key is not in the config yet (it wants
    `+gateway.api_base.openai=URL`, which in turn fails once the key exists); a `+`/`++`/`~` prefix is kept."""
    out = []
    for arg in argv:
        name = arg.split("=", 1)[0]
        if "=" in arg and not arg.startswith(("+", "~", "-")) and any(
                name == m or name.startswith(m + ".") for m in OPEN_MAPPINGS):
            arg = "++" + arg
        out.append(arg)
    return out


def run_hydra(argv: list[str]) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import hydra

    main = hydra.main(version_base="1.3", config_path=config_dir(), config_name="config")(_task)
    saved = sys.argv
    sys.argv = ["ombench run", *open_mapping_overrides(argv)]
    try:
        main()
    finally:
        sys.argv = saved
    return _EXIT["code"]
