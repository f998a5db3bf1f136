"""Hydra callback: the config files Hydra saved for a job hold no secret.

A secret typed on the command line never reaches Hydra (bench.cli.hidden_args), but one written in a config
file (a `--config-dir` model file with `api_key: sk-...`, a URL with a password) is composed like any other
value and saved by Hydra before the job starts: `.hydra/config.yaml`, `.hydra/hydra.yaml` and, in a sweep,
`multirun.yaml`. At job start this callback rewrites each of them with the secrets redacted
(bench.secrets.redact; a `${oc.env:VAR}` reference is kept), atomically, and only when one holds a secret."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

SAVED = ("config.yaml", "hydra.yaml", "overrides.yaml")


def redact_yaml_file(path: Path) -> bool:
    """Rewrite a saved YAML config with its secrets redacted; True when it held one."""
    from omegaconf import OmegaConf

    from bench.secrets import redact

    if not path.is_file():
        return False
    loaded = OmegaConf.load(path)
    data = OmegaConf.to_container(loaded, resolve=False)
    clean = redact(data)
    if clean == data:
        return False
    text = OmegaConf.to_yaml(OmegaConf.create(clean))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def saved_config_files(config: Any) -> list[Path]:
    """The files Hydra saved for the job of `config` (its hydra node included): the job's `.hydra/*.yaml` and,
    in a sweep, the sweep's `multirun.yaml`."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = config.hydra
    out: list[Path] = []
    if hc.output_subdir is not None:
        folder = Path(str(hc.runtime.output_dir)) / str(hc.output_subdir)
        out += [folder / name for name in SAVED]
    try:
        multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # no Hydra config set: not under a Hydra app
        multirun = False
    if multirun:
        out.append(Path(str(hc.sweep.dir)) / "multirun.yaml")
    return out


class RedactSavedConfig(Callback):
    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        for path in saved_config_files(config):
            redact_yaml_file(path)
