"""Run and ingestion keys come from the strategies' declarations: resolved params (so a default spelled out
changes nothing), the models of the roles a strategy declares, reader settings only where it renders the reader
prompt. Also the registry and the one definition of model roles."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from bench.cli.run import config_dir
from bench.config import ModelCfg, RootCfg, validate
from bench.errors import ConfigError
from bench.assemble import configured_strategy
from bench.roles import MEMORY_ROLES, Role
from bench.runner.keys import ingest_key, run_key
from bench.strategies import STRATEGY_NAMES, strategy_class

_BASE: dict[str, Any] = {}


def _root(mutate: Callable[[dict[str, Any]], None] | None = None) -> RootCfg:
    """The `experiment=perf` config (strategy params as in bench/conf/strategy), edited as a plain dict."""
    if not _BASE:
        with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
            raw = OmegaConf.to_container(compose(config_name="config", overrides=["experiment=perf"]), resolve=True)
        assert isinstance(raw, dict)
        raw.pop("hydra", None)
        _BASE.update(raw)
    raw = OmegaConf.to_container(OmegaConf.create(_BASE))  # a deep copy
    assert isinstance(raw, dict)
    if mutate:
        mutate(raw)
    return validate(raw)


def _keys(root: RootCfg, name: str) -> tuple[str, str]:
    return ingest_key(root, name, "sha"), run_key(root, name, "sha", None)


def _params(name: str, **params: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(raw: dict[str, Any]) -> None:
        raw["strategies"][name]["params"] = params

    return mutate


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(raw: dict[str, Any]) -> None:
        node = raw
        *head, last = path.split(".")
        for k in head:
            node = node[k]
        node[last] = value

    return mutate


@pytest.mark.parametrize("name", STRATEGY_NAMES)
def test_spelling_out_defaults_changes_neither_key(name: str) -> None:
    base = _root()
    resolved = configured_strategy(base, name).params
    every_field = {f.name: getattr(resolved, f.name) for f in dataclasses.fields(resolved)}
    assert _keys(_root(_params(name, **every_field)), name) == _keys(base, name)  # all written out
    assert _keys(_root(_params(name)), name) == _keys(base, name)  # none written: the dataclass defaults


def test_keys_use_resolved_values() -> None:
    base = _root()
    # a fraction of the window is the token count it stands for (128000 * 0.25)
    assert _keys(_root(_params("compaction", threshold=0.25)), "compaction") == \
        _keys(_root(_params("compaction", threshold=32000)), "compaction")
    # rag's top_k: None resolves to 10 rounds
    assert _keys(_root(_params("rag", top_k=None)), "rag") == _keys(_root(_params("rag", top_k=10)), "rag")
    assert _keys(_root(_params("rag", top_k=5)), "rag") != _keys(base, "rag")
    # om: nested engine knobs at their OMConfig default are the engine's defaults; the storage path is not memory
    om_default = _root(_params("om", observation={"max_tokens_per_batch": 10000}, storage_path="/tmp/x.db"))
    assert _keys(om_default, "om") == _keys(base, "om")
    assert _keys(_root(_params("om", observation={"max_tokens_per_batch": 5000})), "om") != _keys(base, "om")
    assert _keys(_root(_params("om", message_tokens=20000)), "om") != _keys(base, "om")


def test_keys_follow_declared_roles_and_reader_prompt() -> None:
    base = _root()

    def ingest_changes(name: str, mutate: Callable[[dict[str, Any]], None]) -> bool:
        return ingest_key(_root(mutate), name, "sha") != ingest_key(base, name, "sha")

    observer = _set("model.observer.model", "openai/gpt-4o-mini")
    summarizer = _set("model.summarizer.model", "openai/gpt-4.1-mini")
    embedder = _set("model.embedder.model", "openai/text-embedding-3-large")
    actor = _set("model.actor.model", "openai/gpt-5-mini")
    window = _set("model.actor_max_input_tokens", 100000)
    assert ingest_changes("om", observer) and not ingest_changes("compaction", observer)
    assert ingest_changes("compaction", summarizer) and not ingest_changes("om", summarizer)
    assert not ingest_changes("rag", embedder)  # bm25 declares no embedder

    def dense(raw: dict[str, Any]) -> None:
        raw["strategies"]["rag"]["params"]["retriever"] = "dense"

    dense_root = _root(dense)
    both = _root(lambda raw: (dense(raw), embedder(raw)))
    assert ingest_key(both, "rag", "sha") != ingest_key(dense_root, "rag", "sha")
    # the reader prompt is cut to the window: it keys full_context and oracle, not om
    assert ingest_changes("full_context", window) and ingest_changes("oracle", window)
    assert not ingest_changes("om", window) and not ingest_changes("rag", window)
    # a new actor answers from the same ingestion (a new run, the same checkpoint)
    for name in STRATEGY_NAMES:
        assert not ingest_changes(name, actor)
        assert run_key(_root(actor), name, "sha", None) != run_key(base, name, "sha", None)


def test_registry_and_roles_are_the_one_definition() -> None:
    role_fields = {f.name for f in dataclasses.fields(ModelCfg)} - {"name", "actor_max_input_tokens"}
    assert role_fields == {r.value for r in Role}
    for name in STRATEGY_NAMES:
        cls = strategy_class(name)
        assert cls.name == name and cls.roles <= MEMORY_ROLES
        cls.params_type()  # every param has a documented default
    assert strategy_class("om").roles == {Role.OBSERVER, Role.REFLECTOR}
    assert Role.parse("reader") is Role.ACTOR and Role.parse("summariser") is Role.SUMMARIZER
    assert Role.parse("nobody") is None and Role.ACTOR.offline_model == "offline/reader"


def test_configured_names_resolve_through_the_registry() -> None:
    # a variant under its own name: `name:` picks the registered class, the key keeps the configured name
    def variant(raw: dict[str, Any]) -> None:
        raw["strategies"]["om_small"] = {"name": "om", "params": {"message_tokens": 2000}}
        raw["run_strategies"] = ["om", "om_small"]

    root = _root(variant)
    spec = configured_strategy(root, "om_small")
    assert spec.kind == "om" and spec.name == "om_small" and spec.params.message_tokens == 2000
    assert ingest_key(root, "om_small", "sha").startswith("om_small-")
    # a registered strategy requested without a config entry runs with its defaults
    bare = _root(lambda raw: (raw["strategies"].pop("rag"), raw.update(run_strategies=["rag"])))
    assert bare.strategies["rag"].name == "rag" and configured_strategy(bare, "rag").params.top_k is None
    with pytest.raises(ConfigError, match="unknown strategy 'memgpt'") as err:
        _root(lambda raw: raw["strategies"].update(x={"name": "memgpt"}))
    assert "\n" not in str(err.value)


def test_the_actor_keys_ingestion_only_through_its_cache_settings() -> None:
    """Simulated Actor prompts are observed under the Actor's model name, and the anthropic profile's minimum
    cacheable prefix depends on it: an Actor that changes it changes what the checkpoint measured."""
    def actor(model: str) -> RootCfg:
        return _root(_set("model.actor.model", model))

    for name in STRATEGY_NAMES:
        # the same per-model cache settings (not Claude: the default minimum): one checkpoint for both
        assert ingest_key(actor("openai/gpt-4o"), name, "sha") == ingest_key(actor("openai/gpt-5-mini"), name, "sha")
        # Sonnet caches from 1024 tokens, Opus 4.5 from 4096: other cached tokens, another checkpoint
        assert ingest_key(actor("anthropic/claude-sonnet-4-5"), name, "sha") != \
            ingest_key(actor("anthropic/claude-opus-4-5"), name, "sha")
    no_anthropic = _set("cachesim.profiles", ["ideal", "openai", "vllm"])
    assert ingest_key(_root(lambda raw: (no_anthropic(raw), _set("model.actor.model", "anthropic/claude-sonnet-4-5")(raw))),
                      "om", "sha") == \
        ingest_key(_root(lambda raw: (no_anthropic(raw), _set("model.actor.model", "anthropic/claude-opus-4-5")(raw))),
                   "om", "sha")
