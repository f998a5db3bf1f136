"""OMConfig defaults (Mastra's observational-memory/constants.ts) and validation messages."""

import pytest

from om_core.config import OMConfig, ObservationConfig, ReflectionConfig, auto_idle_ttl_ms, parse_duration_ms


def test_thread_scope_defaults_match_mastra():
    c = OMConfig()
    assert c.observation.message_tokens == 30_000 and c.reflection.observation_tokens == 40_000
    assert c.buffer_tokens == 6000 and c.retention_floor == 6000 and c.block_after_tokens == 36_000
    assert c.reflection_buffer_activation == 0.5 and c.reflection_block_after_tokens == 48_000
    assert c.observation.max_tokens_per_batch == 10_000
    assert c.observation.temperature == 0.3 and c.reflection.temperature == 0
    assert c.observer_model == c.reflector_model == "google/gemini-2.5-flash"


def test_resource_scope_and_m11_have_no_buffering():
    assert not OMConfig(scope="resource").buffering
    m11 = OMConfig(profile="m11")
    assert not m11.buffering and m11.retention_floor == 0 and m11.block_after_tokens is None


def test_buffering_explicit_with_resource_scope_is_an_error():
    with pytest.raises(ValueError, match="scope='resource'"):
        OMConfig(scope="resource", observation=ObservationConfig(buffer_tokens=0.2))
    OMConfig(scope="resource", observation=ObservationConfig(buffer_tokens=False))  # explicit off is fine


def test_m11_rejects_buffering_knobs():
    with pytest.raises(ValueError, match="m11"):
        OMConfig(profile="m11", observation=ObservationConfig(buffer_activation=0.5))


def test_share_token_budget_requires_buffering_off():
    with pytest.raises(ValueError, match="share_token_budget"):
        OMConfig(share_token_budget=True)
    c = OMConfig(share_token_budget=True, observation=ObservationConfig(buffer_tokens=False))
    assert not c.buffering


@pytest.mark.parametrize(
    "obs,match",
    [
        (ObservationConfig(buffer_activation=500), "buffer_activation"),
        (ObservationConfig(block_after=0.5), "block_after"),
        (ObservationConfig(block_after=20_000), "below the threshold"),
        (ObservationConfig(buffer_tokens=40_000), "smaller than"),
        (ObservationConfig(message_tokens=0), "message_tokens"),
    ],
)
def test_bad_observation_values(obs, match):
    with pytest.raises(ValueError, match=match):
        OMConfig(observation=obs)


def test_bad_top_level_values():
    with pytest.raises(ValueError, match="timezone"):
        OMConfig(timezone="Mars/Olympus")
    with pytest.raises(ValueError, match="scope"):
        OMConfig(scope="global")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reflection.buffer_activation"):
        OMConfig(reflection=ReflectionConfig(buffer_activation=1.5))


def test_absolute_values_resolve():
    c = OMConfig(observation=ObservationConfig(buffer_tokens=3000, buffer_activation=4000, block_after=45_000))
    assert c.buffer_tokens == 3000 and c.retention_floor == 4000 and c.block_after_tokens == 45_000


def test_model_conflict_and_resolution():
    with pytest.raises(ValueError, match="model"):
        OMConfig(model="x", observation=ObservationConfig(model="y"))
    c = OMConfig(reflection=ReflectionConfig(model="openai/gpt-4o"))
    assert c.observer_model == "openai/gpt-4o" and c.reflector_model == "openai/gpt-4o"


def test_idle_durations_and_auto():
    assert parse_duration_ms("5m") == 300_000 and parse_duration_ms("1hr") == 3_600_000
    assert parse_duration_ms(1500) == 1500
    with pytest.raises(ValueError, match="activate_after_idle"):
        parse_duration_ms("soon")
    with pytest.raises(ValueError, match="actor_model"):
        OMConfig(activate_after_idle="auto")
    assert OMConfig(activate_after_idle="auto", actor_model="openai/gpt-4o").idle_ms == 300_000
    assert OMConfig(activate_after_idle="auto", actor_model="gemini-2.5-pro").idle_ms == 24 * 3_600_000
    assert auto_idle_ttl_ms("gpt-4o", prompt_cache_retention="24h") == 3_600_000
    assert auto_idle_ttl_ms("openai/o3") == 3_600_000
    assert auto_idle_ttl_ms("deepseek/deepseek-chat") == 3_600_000
    assert auto_idle_ttl_ms("groq/llama-3.1-70b") == 2 * 3_600_000
    assert auto_idle_ttl_ms("anthropic/claude-sonnet-4") == 300_000
    # observations inherit the top-level knob, reflections do not
    c = OMConfig(activate_after_idle="5m")
    assert c.idle_ms == 300_000 and c.reflection_idle_ms is None


def test_from_dict_snake_and_camel_case():
    c = OMConfig.from_dict({"profile": "m31", "scope": "thread", "observation": {"messageTokens": 20_000,
                            "buffer_tokens": 0.25}, "reflection": {"observation_tokens": 50_000},
                            "retrieval": True, "obscureThreadIds": True})
    assert c.observation.message_tokens == 20_000 and c.buffer_tokens == 5000
    assert c.reflection.observation_tokens == 50_000 and c.retrieval.enabled and c.obscure_thread_ids
    with pytest.raises(ValueError, match="observation.bogus"):
        OMConfig.from_dict({"observation": {"bogus": 1}})
    with pytest.raises(ValueError, match="profile"):
        OMConfig.from_dict({"profile": "m99"})
