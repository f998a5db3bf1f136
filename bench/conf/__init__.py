"""The Hydra config tree of `ombench run`, shipped inside the package so an installed `ombench` runs from any
directory. Hydra finds it as `pkg://bench.conf`; `ombench run --config-dir DIR` puts a user's own folder first
in the search path (its `experiment/`, `model/`, `dataset/` ... files add options or replace ours by name)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from omegaconf import DictConfig

CONFIG_MODULE = "bench.conf"
CONFIG_PATH = f"pkg://{CONFIG_MODULE}"
CONFIG_NAME = "config"


def config_dir() -> str:
    """The folder holding config.yaml in this installation (inside the package)."""
    return str(Path(__file__).resolve().parent)


def compose(overrides: Sequence[str] = (), *, user_dir: str | Path | None = None) -> DictConfig:
    """The composed config `ombench run OVERRIDES` would run with (hydra key included), outside a Hydra app.

    `user_dir` comes first in the search path, as `--config-dir`. Raises Hydra's and OmegaConf's exceptions
    for a bad override or a missing option (callers turn them into one line)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    extra = list(overrides)
    if user_dir is not None:
        extra.append(f"hydra.searchpath=[file://{Path(user_dir).expanduser().resolve()}]")
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
        return hydra_compose(config_name=CONFIG_NAME, overrides=extra)
