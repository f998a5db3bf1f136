"""The replay runs with what was loaded before it frozen and the collector's thresholds raised; both come back
as they were afterwards, on an error too (bench.replay_gc)."""

from __future__ import annotations

import gc

import pytest

from bench.replay_gc import REPLAY_THRESHOLDS, refreeze, replay_gc


def test_thresholds_and_freeze_are_restored_even_when_the_replay_fails() -> None:
    before = gc.get_threshold()
    loaded = [[i] for i in range(1000)]  # alive before the replay: frozen with everything else
    with pytest.raises(RuntimeError), replay_gc():
        assert gc.get_threshold() == REPLAY_THRESHOLDS != before
        frozen = gc.get_freeze_count()
        assert frozen >= len(loaded)
        more = [[i] for i in range(1000)]  # loaded during the replay: frozen by refreeze
        refreeze()
        assert gc.get_freeze_count() >= frozen + len(more)
        raise RuntimeError("a failed replay")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_run_replays_under_it(tmp_path, monkeypatch) -> None:
    import bench.runner.experiment as experiment
    from bench.runner.app import run_job
    from tests.helpers.runner import compose_cfg

    seen = []
    real = experiment.run_strategy

    async def spy(*args, **kw):
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        return await real(*args, **kw)

    monkeypatch.setattr(experiment, "run_strategy", spy)
    run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=1", "run_strategies=[oracle]"))
    assert seen and all(t == REPLAY_THRESHOLDS and n > 0 for t, n in seen)
    assert gc.get_threshold() != REPLAY_THRESHOLDS and gc.get_freeze_count() == 0
