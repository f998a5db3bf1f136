from datetime import datetime, timezone

import pytest

from om_core import prompts
from om_core.observer import build_observer_messages
from om_core.reflector import build_reflector_messages
from om_core.types import Message

SHARED = {
    "observer_intro", "observer_rules", "observer_output", "observer_output_hints", "observer_output_title",
    "observer_guidelines", "observer_single_thread", "observer_multi_thread", "observer_closing",
    "observer_previous_note", "observer_prior_metadata", "observer_prior_metadata_multi", "observer_task", "observer_task_multi", "buffered_note",
    "reflector_intro", "reflector_rules", "reflector_task", "actor_preamble", "actor_instructions",
    "continuation", "other_conversations",
    "observer_output_working_memory", "observer_working_memory_note", "actor_working_memory",
}  # fmt: skip


def test_packaged_templates_exist_and_are_non_empty():
    assert set(prompts.names("m31")) == SHARED | {f"reflector_level_{i}" for i in range(1, 5)}
    assert set(prompts.names("m11")) == SHARED | {"reflector_retry", "observer_threads_intro"}
    for profile in prompts.PROFILES:
        for name in prompts.names(profile):
            text = prompts.load(profile, name)
            assert text and text == text.rstrip()


def test_profile_differences():
    m11_rules, m31_rules = prompts.load("m11", "observer_rules"), prompts.load("m31", "observer_rules")
    assert "🟡 User asked" in m11_rules and "🔴 User asked" in m31_rules
    for section in ("COMPLETION TRACKING", "USER MESSAGES", "AVOIDING REPETITION"):
        assert section in m31_rules and section not in m11_rules
    assert "✅" not in prompts.load("m11", "observer_output") and "✅" in prompts.load("m31", "observer_output")
    assert "off-task" in prompts.load("m11", "observer_output_hints")
    assert "SYSTEM REMINDERS" in prompts.load("m31", "actor_instructions")
    assert "SYSTEM REMINDERS" not in prompts.load("m11", "actor_instructions")
    assert prompts.load("m11", "continuation") != prompts.load("m31", "continuation")


def test_override_folder(tmp_path):
    (tmp_path / "observer_intro.txt").write_text("You watch and remember.\n")
    (tmp_path / "m11").mkdir()
    (tmp_path / "m11" / "observer_intro.txt").write_text("M11 override.\n")
    assert prompts.load("m31", "observer_intro", tmp_path) == "You watch and remember."
    assert prompts.load("m11", "observer_intro", str(tmp_path)) == "M11 override."
    # names the folder lacks fall back to the packaged file
    assert prompts.load("m31", "observer_rules", tmp_path) == prompts.load("m31", "observer_rules")


def test_override_reaches_prompt_builders(tmp_path):
    (tmp_path / "reflector_level_3.txt").write_text("SQUEEZE HARDER")
    (tmp_path / "observer_intro.txt").write_text("You watch and remember.")
    user = build_reflector_messages("m31", "x", 3, prompts_folder=tmp_path)[1]["content"]
    assert user.endswith("SQUEEZE HARDER")
    msgs = [Message(id="1", role="user", content="hi", created_at=datetime(2026, 1, 1, tzinfo=timezone.utc))]
    system = build_observer_messages("m31", existing_observations="", messages=msgs, prompts_folder=tmp_path)[0]
    assert system["content"].startswith("You watch and remember.\n\n")


def test_bad_names_and_folders(tmp_path):
    with pytest.raises(ValueError, match="unknown OM profile"):
        prompts.load("m20", "observer_intro")
    with pytest.raises(ValueError, match="no prompt template"):
        prompts.load("m11", "reflector_level_3")
    with pytest.raises(ValueError, match="bad prompt name"):
        prompts.load("m31", "../m11/observer_intro")
    with pytest.raises(ValueError, match="does not exist"):
        prompts.load("m31", "observer_intro", tmp_path / "missing")
    assert prompts.load("m31", "observer_intro.txt") == prompts.load("m31", "observer_intro")
