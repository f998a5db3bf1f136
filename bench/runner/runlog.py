"""The Hydra run log (`<run dir>/run.log`, configured in bench/conf/config.yaml's `hydra.job_logging`): the
resolved config with secrets scrubbed, what each run did, and the summary the console showed."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("bench.run")


def log_config(raw: dict[str, Any]) -> None:
    """The resolved config as YAML, every secret replaced (bench.secrets.redact)."""
    from omegaconf import OmegaConf

    from bench.secrets import redact

    log.info("resolved config (secrets scrubbed):\n%s", OmegaConf.to_yaml(OmegaConf.create(redact(raw))))


def emit(text: str) -> None:
    """Print a block for the user and keep it in the run log."""
    print(text)
    log.info("%s", text)
