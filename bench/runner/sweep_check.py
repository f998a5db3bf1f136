"""Hydra callback: before the first job of a multirun starts, compose and validate every job's config, so a bad
value in a sweep (`-m strategies.om.params.message_tokens=100,-5`) is refused with one line naming the job's
overrides and the fix, and nothing is run or written (without it, the jobs before the bad one ran and wrote).

The job list is the one Hydra's basic sweeper makes: `hydra.sweeper.params` then the command line's overrides,
expanded as their cartesian product (hydra `BasicSweeper.split_arguments`), each composed by Hydra's own config
loader (`load_sweep_config`, as the sweeper's `validate_batch_is_legal` does) and validated as a job validates
itself (`bench.assemble.assemble`: every value, every strategy's params). Raises `SweepRefused`, a BaseException:
Hydra turns an `Exception` raised in a callback into a warning and goes on; `bench.cli.run` catches it."""

from __future__ import annotations

from typing import Any

from hydra.experimental.callback import Callback


class SweepRefused(BaseException):
    """A sweep job's config is invalid; `lines` are the one-line errors to print (exit 2)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def sweep_jobs(config: Any) -> list[list[str]]:
    """Every job's overrides (as `key=value` texts), in the order the basic sweeper launches them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    node = config.hydra.sweeper.get("params")
    params = OmegaConf.to_container(node, resolve=False) if node is not None else {}
    args = [f"{k!s}={v!s}" for k, v in params.items()] if isinstance(params, dict) else []
    task = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    args += [str(a) for a in task] if isinstance(task, list) else []
    parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
    batches = BasicSweeper.split_arguments(parser.parse_overrides(args), None)
    return [list(job) for job in batches[0]] if batches else []


def _swept(config: Any, job: list[str]) -> list[str]:
    """The overrides of `job` that differ between jobs (what names it among the others)."""
    jobs = sweep_jobs(config)
    return [o for o in job if sum(o in j for j in jobs) < len(jobs)] or job


def check_sweep(config: Any) -> None:
    """Compose and validate every job of the sweep; SweepRefused with one line per invalid job (nothing run)."""
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import flag_override

    from bench.assemble import assemble
    from bench.config import to_plain
    from bench.errors import UserError

    if not GlobalHydra.instance().is_initialized():
        return
    loader = GlobalHydra.instance().config_loader()
    jobs = sweep_jobs(config)
    if len(jobs) < 2:  # one job: it validates itself before anything, as a single run does
        return
    lines: list[str] = []
    for n, job in enumerate(jobs, 1):
        try:
            cfg = loader.load_sweep_config(config, list(job))
            with flag_override(cfg, ["struct", "readonly"], [False, False]):
                del cfg["hydra"]  # the job's own values only (hydra's resolvers need a running job)
            assemble(to_plain(cfg))
        except UserError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            lines.append(f"sweep job {n} of {len(jobs)} ({' '.join(_swept(config, job))}): {first}; "
                         "no job was run; fix or drop that value of the sweep")
    if lines:
        raise SweepRefused(lines)


class ValidateSweep(Callback):
    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        check_sweep(config)
