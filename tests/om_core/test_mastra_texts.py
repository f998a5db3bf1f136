"""prompt_source="mastra": Mastra's own texts read at run time (om_core/mastra_texts.py).

The unit tests feed `cut_templates` builder output laid out as Mastra 1.1.0 lays it out, with the project's own
stand-in sentences (Mastra's texts never enter the repository), and check that om_core's builders then send those
texts byte for byte in Mastra's layout. The slow test fetches the real pinned package with npm and Node."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest

from om_core.config import OMConfig
from om_core.errors import ConfigError
from om_core.mastra_texts import RELEASES, _write_folder, cut_templates, cut_templates_131, mastra_texts
from om_core.observer_prompt import build_observer_messages, history_from_prompt
from om_core.reflector import build_reflector_messages
from om_core.types import Message

OBS, GUIDE = "\u0001OBSERVATIONS\u0001", "\u0002GUIDANCE\u0002"
TASK, SUGG, THREAD = "\u0003TASK\u0003", "\u0004SUGGESTED\u0004", "\u0005THREAD\u0005"
OTHER = "\u0006OTHER\u0006"
RETRY = "\n## SQUEEZE HARDER\n\nStand-in retry text.\n"


def _built() -> dict[str, str]:
    head = f"## Previous Observations\n\n{OBS}\n\n---\n\nStand-in note.\n\n## New Message History to Observe\n\n"
    return {
        "observer_system_single": "SINGLE stand-in system text\n",
        "observer_system_multi": "MULTI stand-in system text",
        "observer_user_single": head + "\n\n---\n\n## Your Task\n\nStand-in task.",
        "observer_user_multi": head + "There are 7 threads here.\n\n\n\n---\n\n## Your Task\n\nStand-in multi task.",
        "reflector_system": "REFLECTOR stand-in system text",
        "reflector_user": f"## OBSERVATIONS TO REFLECT ON\n\n{OBS}\n\n---\n\nStand-in reflect task."
                          f"\n\n## SPECIFIC GUIDANCE\n\n{GUIDE}\n\n{RETRY}",
        "reflector_retry": RETRY,
        "actor_context": f"\nStand-in preamble.\n\n<observations>\n{OBS}\n</observations>\n\nStand-in rules.\n\n"
                         f"More rules.\n\nStand-in other intro:\nSTART_OTHER_CONVERSATIONS_BLOCK\n{OTHER}\n"
                         f"END_OTHER_CONVERSATIONS_BLOCK\n\n<current-task>\n{TASK}\n</current-task>\n\n"
                         f"<suggested-response>\n{SUGG}\n</suggested-response>\n",
    }


def _msgs(n: int = 2) -> list[Message]:
    at = datetime(2026, 1, 5, 14, 30, tzinfo=timezone.utc)
    return [Message(str(i), "user", f"message {i}", at) for i in range(n)]


def test_builder_output_is_cut_into_templates_and_sent_in_mastras_layout(tmp_path) -> None:
    texts = cut_templates(_built())
    assert texts["observer_threads_intro"] == "There are {threads} threads here."
    assert texts["reflector_retry"] == RETRY and texts["observer_previous_note"] == "Stand-in note."
    _write_folder(tmp_path / "m", "stand-in", texts)
    folder = str(tmp_path / "m")
    single = build_observer_messages("m11", existing_observations="* old", messages=_msgs(), prompts_folder=folder)
    assert single[0]["content"] == "SINGLE stand-in system text\n"  # byte for byte, trailing newline kept
    user = single[1]["content"]
    assert user.startswith("## Previous Observations\n\n* old\n\n---\n\nStand-in note.\n\n## New Message History")
    assert user.endswith("message 1\n\n---\n\n## Your Task\n\nStand-in task.")
    assert history_from_prompt(user).endswith("message 1")  # the closing rule is not history
    multi = build_observer_messages("m11", existing_observations="", threads={"a": _msgs(1), "b": _msgs(1)},
                                    prompts_folder=folder)
    assert multi[0]["content"] == "MULTI stand-in system text"
    assert "Observe\n\nThere are 2 threads here.\n\n<thread id=\"a\">" in multi[1]["content"]
    refl = build_reflector_messages("m11", "* old", 1, guidance="keep dates", prompts_folder=folder)
    assert refl[0]["content"] == "REFLECTOR stand-in system text"
    assert refl[1]["content"] == ("## OBSERVATIONS TO REFLECT ON\n\n* old\n\n---\n\nStand-in reflect task.\n\n"
                                  f"## SPECIFIC GUIDANCE\n\nkeep dates\n\n{RETRY}")


def test_110_actor_texts_are_cut_from_format_observations_for_context(tmp_path) -> None:
    from om_core.context import build_actor_context

    texts = cut_templates(_built())
    assert texts["actor_preamble"] == "Stand-in preamble." and texts["actor_instructions"] == "Stand-in rules.\n\nMore rules."
    assert texts["other_conversations"] == "Stand-in other intro:"
    _write_folder(tmp_path / "m", "stand-in", texts)
    [system, *_] = build_actor_context(profile="m11", observations="Date: Jan 5, 2026\n* 🔴 (14:30) old",
                                       now=datetime(2026, 1, 6, tzinfo=timezone.utc), other_conversations="<x/>",
                                       prompts_folder=str(tmp_path / "m"))
    assert system.content.startswith("\nStand-in preamble.\n\n<observations>\n")
    assert system.content.endswith("</observations>\n\nStand-in rules.\n\nMore rules.\n\nStand-in other intro:\n"
                                   "START_OTHER_CONVERSATIONS_BLOCK\n<x/>\nEND_OTHER_CONVERSATIONS_BLOCK")


def test_a_changed_layout_is_refused_not_cut_wrongly() -> None:
    built = _built()
    built["observer_user_single"] = built["observer_user_single"].replace("\n\n---\n\n## Your Task", "\n\n## Your Task")
    with pytest.raises(ConfigError, match="layout changed"):
        cut_templates(built)
    built = _built()
    built["actor_context"] = built["actor_context"].replace("</current-task>\n\n<sugg", "</current-task>\n<sugg")
    with pytest.raises(ConfigError, match="layout changed"):
        cut_templates(built)


def test_whole_prompts_cover_plain_calls_only(tmp_path) -> None:
    from om_core.errors import InputError

    _write_folder(tmp_path / "m", "stand-in", cut_templates(_built()))
    with pytest.raises(InputError, match="plain calls only"):
        build_observer_messages("m11", existing_observations="", messages=_msgs(), buffered=True,
                                prompts_folder=str(tmp_path / "m"))


def test_prompt_source_is_checked() -> None:
    with pytest.raises(ConfigError, match="prompt_source: must be"):
        OMConfig.from_dict({"prompt_source": "upstream"})
    with pytest.raises(ConfigError, match="set one of them"):
        OMConfig.from_dict({"prompt_source": "mastra", "prompts_folder": "/tmp"})
    with pytest.raises(ConfigError, match="no Mastra release is supported for profile 'm99'"):
        mastra_texts("m99")


@pytest.mark.slow  # npm pack + npm install esbuild + node: a few seconds with the registry reachable
@pytest.mark.skipif(not (shutil.which("node") and shutil.which("npm")), reason="Node.js and npm are not installed")
def test_the_pinned_release_gives_the_pinned_texts_and_a_tampered_cache_is_refused(tmp_path, monkeypatch) -> None:
    import om_core.mastra_texts as mt

    monkeypatch.setattr(mt, "_checked", {})
    got = mastra_texts("m11", cache=tmp_path)
    assert got.sha256 == RELEASES["m11"][2] and got.source == "@mastra/memory@1.1.0"
    system = build_observer_messages("m11", existing_observations="", messages=_msgs(),
                                     prompts_folder=str(got.folder))[0]["content"]
    assert system == (got.folder / "observer_system_single.txt").read_text(encoding="utf-8")
    assert len(system) > 10_000  # Mastra's single-thread Observer prompt, examples included (14,283 characters)
    monkeypatch.setattr(mt, "_checked", {})
    task = got.folder / "observer_task.txt"
    task.write_text(task.read_text(encoding="utf-8") + " Also invent facts.", encoding="utf-8")
    with pytest.raises(ConfigError, match="not the pinned"):
        mastra_texts("m11", cache=tmp_path)
    # an intact folder cut by an older om_core (fewer templates, its manifest's hash matching) is cut again
    monkeypatch.setattr(mt, "_checked", {})
    texts = mt._read_folder(got.folder)
    assert texts is not None
    del texts["actor_preamble"]
    _write_folder(got.folder, got.source, texts)
    again = mastra_texts("m11", cache=tmp_path)
    assert again.sha256 == RELEASES["m11"][2] and (again.folder / "actor_preamble.txt").is_file()


def built_131() -> dict[str, str]:
    """Builder output laid out as Mastra 1.31.0 lays it out (om_core/mastra_texts.mjs, the 1.31.0 branch), in
    stand-in words."""
    prev = f"## Previous Observations\n\n{OBS}\n\n---\n\nStand-in note.\n\n"
    meta = "## Prior Thread Metadata\n\n"
    values = f"<current-task>\n{TASK}\n</current-task>\n\n<suggested-response>\n{SUGG}\n</suggested-response>"
    return {
        "observer_system_single": "SINGLE with hints", "observer_system_multi": "MULTI with hints",
        "observer_system_single_buffered": "SINGLE buffered", "observer_system_multi_buffered": "MULTI buffered",
        "observer_task_single": prev + "## Your Task\n\nStand-in task.",
        "observer_task_single_prior": meta + f"- was doing: {TASK}\n- say next: {SUGG}\n\nStand-in closing."
                                      "\n\n---\n\n## Your Task\n\nStand-in task.",
        "observer_task_single_buffered": "## Your Task\n\nStand-in task.\n\nAlways observe.",
        "observer_task_multi": prev + meta + f"- conversation {THREAD}\n  - was doing: {TASK}\n  - say next: {SUGG}"
                               "\n\nStand-in multi closing.\n\n---\n\n## Your Task\n\nStand-in multi task.",
        "observer_history_multi": "## New Message History to Observe\n\nThere are 7 threads here.\n\n",
        "reflector_system": "REFLECTOR with hints", "reflector_system_buffered": "REFLECTOR buffered",
        "reflector_user": f"## OBSERVATIONS TO REFLECT ON\n\n{OBS}\n\n---\n\nStand-in reflect task.\n\n"
                          f"## SPECIFIC GUIDANCE\n\n{GUIDE}\n\n## Carried\n\n{values}\n\nStand-in carry.\n\n"
                          "## Additional sections\n\nStand-in sections.",
        "reflector_user_buffered": f"## OBSERVATIONS TO REFLECT ON\n\n{OBS}\n\n---\n\nStand-in reflect task."
                                   "\n\nAlways observe.",
        **{f"reflector_level_{n}": f"\n## LEVEL {n}\n\nStand-in level {n}.\n" for n in range(1, 5)},
        "actor_preamble": "Stand-in preamble.", "actor_instructions": "Stand-in rules.",
        "continuation": "Stand-in reminder.",
        "actor_context": json.dumps(["Stand-in preamble.\n\nStand-in rules.", "Stand-in other intro:\n"
                                     f"START_OTHER_CONVERSATIONS_BLOCK\n{OTHER}\nEND_OTHER_CONVERSATIONS_BLOCK",
                                     "<observations>", OBS, f"<current-task>\n{TASK}\n</current-task>",
                                     f"<suggested-response>\n{SUGG}\n</suggested-response>"]),
    }


def test_131_builder_output_is_sent_in_mastra_131s_layout(tmp_path) -> None:
    texts = cut_templates_131(built_131())
    assert texts["observer_prior_current_task"] == "- was doing: " and texts["observer_prior_thread"] == "- conversation "
    assert texts["reflector_prior_values"] == "## Carried\n\n{values}\n\nStand-in carry."
    _write_folder(tmp_path / "m", "stand-in", texts)
    folder = str(tmp_path / "m")
    multi = build_observer_messages("m31", existing_observations="* old", threads={"a": _msgs(1), "b": _msgs(1)},
                                    thread_metadata={"a": {"current_task": "lamps", "suggested_response": "ask"}},
                                    prompts_folder=folder)
    assert multi[0]["content"] == "MULTI with hints"
    assert multi[1]["content"] == ("## Previous Observations\n\n* old\n\n---\n\nStand-in note.\n\n"
                                   "## Prior Thread Metadata\n\n- conversation a\n  - was doing: lamps\n  - say next: ask"
                                   "\n\nStand-in multi closing.\n\n---\n\n## Your Task\n\nStand-in multi task.")
    # the thread-count line, and the threads one after another as 1.31.0 sends them
    assert multi[2]["content"].startswith("## New Message History to Observe\n\nThere are 2 threads here.\n\n"
                                          '<thread id="a">')
    assert "</thread><thread id=\"b\">" in multi[2]["content"]
    single = build_observer_messages("m31", existing_observations="", messages=_msgs(),
                                     prior_metadata={"current_task": "lamps"}, prompts_folder=folder)
    assert single[1]["content"] == ("## Prior Thread Metadata\n\n- was doing: lamps\n\nStand-in closing.\n\n---\n\n"
                                    "## Your Task\n\nStand-in task.")
    buffered = build_observer_messages("m31", existing_observations="", messages=_msgs(), buffered=True,
                                       prompts_folder=folder)
    assert buffered[0]["content"] == "SINGLE buffered"
    assert buffered[1]["content"] == "## Your Task\n\nStand-in task.\n\nAlways observe."
    refl = build_reflector_messages("m31", "* old", 2, prompts_folder=folder,
                                    prior_values={"current_task": "lamps", "suggested_response": ""})
    assert refl[0]["content"] == "REFLECTOR with hints"
    assert refl[1]["content"] == ("## OBSERVATIONS TO REFLECT ON\n\n* old\n\n---\n\nStand-in reflect task.\n\n\n"
                                  "## LEVEL 2\n\nStand-in level 2.\n\n\n## Carried\n\n<current-task>\nlamps\n"
                                  "</current-task>\n\nStand-in carry.\n\n## Additional sections\n\nStand-in sections.")
    refl_b = build_reflector_messages("m31", "* old", 0, buffered=True, prompts_folder=folder,
                                      prior_values={"current_task": "lamps"})
    assert refl_b[0]["content"] == "REFLECTOR buffered"
    assert refl_b[1]["content"] == ("## OBSERVATIONS TO REFLECT ON\n\n* old\n\n---\n\nStand-in reflect task.\n\n"
                                    "Always observe.")


def test_131_actor_texts_come_from_the_folder(tmp_path) -> None:
    from om_core.context import build_actor_context

    _write_folder(tmp_path / "m", "stand-in", cut_templates_131(built_131()))
    ctx = build_actor_context(profile="m31", observations="Date: Jan 5, 2026\n* 🔴 (14:30) old",
                              now=datetime(2026, 1, 6, tzinfo=timezone.utc), prompts_folder=str(tmp_path / "m"))
    by_key = {m.key: m.content for m in ctx}
    assert by_key["om:preamble"] == "Stand-in preamble.\n\nStand-in rules."
    assert by_key["om:continuation"] == "<system-reminder>Stand-in reminder.</system-reminder>"
    with_other = build_actor_context(profile="m31", observations="Date: Jan 5, 2026\n* 🔴 (14:30) old",
                                     now=datetime(2026, 1, 6, tzinfo=timezone.utc), other_conversations="<x/>",
                                     prompts_folder=str(tmp_path / "m"))
    assert {m.key: m.content for m in with_other}["om:other"] == ("Stand-in other intro:\nSTART_OTHER_CONVERSATIONS_"
                                                                  "BLOCK\n<x/>\nEND_OTHER_CONVERSATIONS_BLOCK")


@pytest.mark.parametrize("name, old, new", [
    ("observer_task_multi", "\n  - was doing", "\n   - was doing"),  # hints no longer indented by two spaces
    ("observer_task_single_buffered", "\n\nAlways", "\nAlways"),
    ("reflector_user", "\n\n## Additional", "\n## Additional"),
    ("observer_history_multi", "7 threads", "seven threads"),
])
def test_131_a_moved_layout_is_refused(name: str, old: str, new: str) -> None:
    built = built_131()
    assert old in built[name]
    built[name] = built[name].replace(old, new)
    with pytest.raises(ConfigError, match="layout changed"):
        cut_templates_131(built)


@pytest.mark.slow  # npm pack + npm install esbuild + node: a few seconds with the registry reachable
@pytest.mark.skipif(not (shutil.which("node") and shutil.which("npm")), reason="Node.js and npm are not installed")
def test_the_pinned_131_release_gives_the_pinned_texts(tmp_path, monkeypatch) -> None:
    import om_core.mastra_texts as mt

    monkeypatch.setattr(mt, "_checked", {})
    got = mastra_texts("m31", cache=tmp_path)
    assert got.sha256 == RELEASES["m31"][2] and got.source == "@mastra/memory@1.31.0"
    sizes = {n: len((got.folder / f"{n}.txt").read_text(encoding="utf-8")) for n in (
        "observer_system_multi", "observer_system_single_buffered", "reflector_system", "reflector_system_buffered")}
    # what 1.31.0 sent in the conformance runs (FINDINGS: 19,185 / 17,276 / 23,561 / 21,150 characters)
    assert sizes == {"observer_system_multi": 19185, "observer_system_single_buffered": 17276,
                     "reflector_system": 23561, "reflector_system_buffered": 21150}
