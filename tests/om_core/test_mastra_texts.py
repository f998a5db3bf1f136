"""prompt_source="mastra": Mastra's own texts read at run time (om_core/mastra_texts.py).

The unit tests feed `cut_templates` builder output laid out as Mastra 1.1.0 lays it out, with the project's own
stand-in sentences (Mastra's texts never enter the repository), and check that om_core's builders then send those
texts byte for byte in Mastra's layout. The slow test fetches the real pinned package with npm and Node."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone

import pytest

from om_core.config import OMConfig
from om_core.errors import ConfigError
from om_core.mastra_texts import RELEASES, _write_folder, cut_templates, mastra_texts
from om_core.observer_prompt import build_observer_messages, history_from_prompt
from om_core.reflector import build_reflector_messages
from om_core.types import Message

OBS, GUIDE = "\u0001OBSERVATIONS\u0001", "\u0002GUIDANCE\u0002"
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


def test_a_changed_layout_is_refused_not_cut_wrongly() -> None:
    built = _built()
    built["observer_user_single"] = built["observer_user_single"].replace("\n\n---\n\n## Your Task", "\n\n## Your Task")
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
    with pytest.raises(ConfigError, match="no Mastra release is supported for profile 'm31'"):
        mastra_texts("m31")


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
