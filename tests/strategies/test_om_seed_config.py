"""Seed 000's configuration example, as docs/om.md gives it (blocks read from the file, so the docs stay true):
the whole example fails with the one line shown there, in om_core and as the om strategy's params, and without
its two buffering knobs builds to the values the docs' table lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from bench.errors import ConfigError as BenchConfigError
from bench.strategies import make_strategy
from bench.strategies.om import OMParams, om_config
from om_core.activation import dynamic_threshold
from om_core.config import OMConfig
from om_core.errors import ConfigError
from om_core.reflector import compression_start_level

from tests.helpers.strategies import make_ctx, offline_models

DOC = Path(__file__).resolve().parents[2] / "docs" / "om.md"


def block(name: str) -> str:
    """The fenced block right after `<!-- seed-000:<name> -->` in docs/om.md."""
    m = re.search(rf"<!-- seed-000:{re.escape(name)} -->\n```[a-z]*\n(.*?)\n```", DOC.read_text(encoding="utf-8"), re.S)
    assert m, f"docs/om.md lost its seed-000:{name} block"
    return m.group(1)


def without_buffering(cfg: dict) -> dict:
    out = {**cfg, "observation": {k: v for k, v in (cfg.get("observation") or {}).items()
                                  if k not in ("buffer_tokens", "buffer_activation")}}
    out.pop("buffer_tokens", None)
    return out


def test_the_whole_example_fails_with_the_documented_line():
    with pytest.raises(ConfigError) as info:
        OMConfig.from_dict(yaml.safe_load(block("om_core")))
    message = str(info.value)
    assert message == block("error") and "\n" not in message
    # exactly the knobs that conflict, and why
    assert message.startswith("observation.buffer_tokens=0.2, observation.buffer_activation=0.8: ")
    assert "scope='resource'" in message and "share_token_budget" in message


def test_the_seeds_own_spelling_fails_the_same_way():
    seed = {"scope": "resource", "model": "google/gemini-2.5-flash",
            "observation": {"messageTokens": 30_000, "bufferTokens": 0.2, "bufferActivation": 0.8,
                            "manageWorkingMemory": True},
            "reflection": {"observationTokens": 40_000},
            "retrieval": True, "temporalMarkers": True, "shareTokenBudget": True}
    with pytest.raises(ConfigError) as info:
        OMConfig.from_dict(seed)
    assert str(info.value) == block("error")
    unbuffered = {k: v for k, v in seed["observation"].items() if k not in ("bufferTokens", "bufferActivation")}
    built = OMConfig.from_dict({**seed, "observation": unbuffered})
    assert built == OMConfig.from_dict(without_buffering(yaml.safe_load(block("om_core"))))


def test_without_the_buffering_knobs_it_builds_to_the_documented_values():
    cfg = OMConfig.from_dict(without_buffering(yaml.safe_load(block("om_core"))))
    assert (cfg.buffering, cfg.retention_floor, cfg.block_after_tokens) == (False, 0, None)
    assert cfg.share_token_budget and cfg.reflection_buffer_activation is None
    assert dynamic_threshold(cfg.observation.message_tokens, cfg.reflection.observation_tokens, 0, True) == 70_000
    assert dynamic_threshold(cfg.observation.message_tokens, cfg.reflection.observation_tokens, 50_000, True) == 30_000
    assert cfg.reflection.observation_tokens == 40_000
    assert cfg.observer_model == cfg.reflector_model == "google/gemini-2.5-flash"
    assert compression_start_level(cfg.reflector_model) == 2
    assert cfg.retrieval.enabled and cfg.retrieval.scope == "resource" and cfg.temporal_markers
    assert cfg.working_memory.enabled and cfg.working_memory.max_tokens == 400
    assert "| working memory | on, 400-token cap |" in DOC.read_text(encoding="utf-8")


def test_as_om_strategy_params_it_fails_with_the_same_line_and_builds_without_buffering():
    params = yaml.safe_load(block("bench"))
    with pytest.raises(BenchConfigError) as info:
        om_config(OMParams(**params), "gpt-4o")
    assert str(info.value) == "strategies.om.params: " + block("error")
    with pytest.raises(BenchConfigError, match="buffer_tokens=0.2"):
        make_strategy("om", params, make_ctx(models=offline_models()))
    s = make_strategy("om", without_buffering(params), make_ctx(models=offline_models()))
    cfg = s.config
    assert cfg.scope == "resource" and not cfg.buffering and cfg.share_token_budget and cfg.working_memory.enabled
    assert cfg.retrieval.enabled and cfg.temporal_markers
    assert (cfg.observation.message_tokens, cfg.reflection.observation_tokens) == (30_000, 40_000)
