"""Hydra callback: at the end of a multirun, merge every job's Parquet shards into the results database
(idempotent), then print the summary and write the report. A merge that fails (the file is held by another
process, read-only, the disk is full) prints one line saying that the shards are intact and the command that
finishes the merge, and the sweep exits non-zero (Hydra would turn an exception here into a warning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback


class MergeShards(Callback):
    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        import sys

        from bench import notices
        from bench.errors import UserError
        from bench.store import merge_shards

        sweep_dir = Path(config.hydra.sweep.dir)
        db = Path(config.output.db)
        try:
            added = merge_shards(sweep_dir, db)
        except UserError as exc:
            print(f"ombench: error: {exc}", file=sys.stderr, flush=True)
            notices.fail(exc.exit_code)
            return
        print(f"merged shards from {sweep_dir} into {db}: {added} questions added or retried")
        try:
            from bench.runner.summary import print_summary

            # hydra's own logging prints to the console here: the summary is printed once, not logged
            print_summary(str(db), None, n_dataset=None, split=None,
                          profile=str(config.output.get("report_profile", "openai")), to_log=False)
        except Exception as exc:  # the merge is what matters; a summary failure must not hide it
            print(f"summary unavailable: {exc}")
        if config.output.get("report", False):
            from bench.config import report_folder
            from bench.report import write_report

            write_report(str(db), report_folder(config.output), profile=str(config.output.get("report_profile", "openai")))
