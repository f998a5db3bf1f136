"""The Observer's prompt: system instructions and the user message(s) around the history.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/observer-agent.ts and
observer-runner.ts; the wording is the project's own.

The headings and the thread wrapper are public constants, and `history_from_prompt` / `split_thread_sections`
read a built prompt back, so code that parses Observer prompts (the benchmark's offline engine) follows any
change made here.
"""

from __future__ import annotations

import re
from datetime import timezone, tzinfo
from pathlib import Path
from typing import Any, Mapping, Sequence

import om_core.working_memory as working_format

from .errors import InputError
from .observer_format import format_messages
from .prompts import check_profile, load, whole
from .tokens import TokenCounter
from .types import Message

PromptsFolder = str | Path | None

HISTORY_HEADING = "## New Message History to Observe"
TASK_HEADING = "## Your Task"
PREVIOUS_OBSERVATIONS_HEADING = "## Previous Observations"
PRIOR_METADATA_HEADING = "## Prior Thread Metadata"
HISTORY_END = "\n\n---"  # m11: the rule that closes the history, before the task
THREAD_METADATA_LABEL = "Thread"  # multi-thread prior metadata: "Thread <id>:" then that thread's hints
_THREAD_SECTION = re.compile(r'<thread id="([^"]*)">\n(.*?)\n</thread>', re.DOTALL)

_METADATA_LABELS = {
    "current_task": "Current task",
    "suggested_response": "Suggested response",
    "thread_title": "Thread title",
}


def observer_instruction_set(profile: str, prompts_folder: PromptsFolder = None) -> str:
    """Rules + output format + guidelines: what the Reflector is shown of the Observer's instructions."""
    return "\n\n".join(load(profile, n, prompts_folder) for n in ("observer_rules", "observer_output", "observer_guidelines"))


def build_observer_system_prompt(
    profile: str,
    *,
    multi_thread: bool = False,
    instruction: str | None = None,
    thread_title: bool = False,
    continuation_hints: bool = True,
    prompts_folder: PromptsFolder = None,
    working_memory: bool = False,
) -> str:
    """The Observer's system prompt; `working_memory` adds the `<working-memory>` output section.

    A prompts folder with a whole text (`observer_system_single` / `observer_system_multi`, e.g. Mastra's own,
    om_core.mastra_texts) gives the prompt of a plain call, and `<name>_buffered` that of a buffered call
    (Mastra 1.31.0's); it has none for the variants it does not cover (thread titles, working memory, buffered
    calls without a `_buffered` text): InputError."""
    check_profile(profile)
    name = "observer_system_multi" if multi_thread else "observer_system_single"
    given = whole(profile, name, prompts_folder)
    if given is not None:
        if not continuation_hints:  # a buffered call: the folder's variant without the hint sections, if it has one
            given = whole(profile, f"{name}_buffered", prompts_folder)
        if given is None or thread_title or working_memory:
            raise InputError("the prompts folder's whole Observer prompt covers plain calls only: turn off "
                             "buffering, thread_title and working_memory, or use the packaged texts")
        if instruction and instruction.strip():
            given += "\n\n=== CUSTOM INSTRUCTIONS ===\n" + instruction.strip()
        return given
    names = ["observer_intro", "observer_rules", "observer_output"]
    if continuation_hints:
        names.append("observer_output_hints")
    if thread_title:
        names.append("observer_output_title")
    if working_memory:
        names.append("observer_output_working_memory")
    names += ["observer_guidelines", "observer_multi_thread" if multi_thread else "observer_single_thread"]
    names.append("observer_closing")
    parts = [load(profile, n, prompts_folder) for n in names]
    if instruction and instruction.strip():
        parts.append("=== CUSTOM INSTRUCTIONS ===\n" + instruction.strip())
    return "\n\n".join(parts)


def _metadata_lines(prior: Mapping[str, str] | None) -> list[str]:
    return [f"- {_METADATA_LABELS.get(k, k)}: {v.strip()}" for k, v in (prior or {}).items() if v and str(v).strip()]


def _mastra_metadata_lines(prior: Mapping[str, str] | None, profile: str, folder: PromptsFolder,
                           indent: str = "") -> list[str]:
    """The prior hints in Mastra 1.31.0's layout (observer-agent.ts buildObserverTaskPrompt): one labelled line
    per hint, the labels from a folder holding `observer_prior_current_task` (om_core.mastra_texts); thread titles
    are not shown (Mastra shows them only with includeThreadTitle, which such a folder's prompt refuses)."""
    labels = (("current_task", "observer_prior_current_task"), ("suggested_response", "observer_prior_suggested_response"))
    return [f"{indent}{load(profile, name, folder)}{str(v).strip()}" for key, name in labels
            if (v := (prior or {}).get(key)) and str(v).strip()]


def _mastra_layout(profile: str, folder: PromptsFolder) -> bool:
    return profile == "m31" and whole(profile, "observer_prior_current_task", folder) is not None


def _metadata_block(prior: Mapping[str, str] | None, profile: str, folder: PromptsFolder) -> str | None:
    if _mastra_layout(profile, folder):  # lines, the closing sentence, a rule (then the task follows)
        found = _mastra_metadata_lines(prior, profile, folder)
        closing = load(profile, "observer_prior_metadata", folder)
        return f"{PRIOR_METADATA_HEADING}\n\n" + "\n".join(found) + f"\n\n{closing}\n\n---" if found else None
    lines = _metadata_lines(prior)
    if not lines:
        return None
    return f"{PRIOR_METADATA_HEADING}\n\n" + load(profile, "observer_prior_metadata", folder) + "\n\n" + "\n".join(lines)


def _thread_metadata_block(per_thread: Mapping[str, Mapping[str, str]] | None, profile: str,
                           folder: PromptsFolder) -> str | None:
    """Multi-thread batches: each thread's prior hints under its id (mastra-ai/mastra, packages/memory/src/
    processors/observational-memory/observer-agent.ts, the multi-thread task prompt)."""
    if _mastra_layout(profile, folder):  # "- thread <id>" then its hints indented, threads one after another
        thread = load(profile, "observer_prior_thread", folder)
        found = ["\n".join([f"{thread}{tid}", *lines]) for tid, prior in (per_thread or {}).items()
                 if (lines := _mastra_metadata_lines(prior, profile, folder, "  "))]
        closing = load(profile, "observer_prior_metadata_multi", folder)
        return f"{PRIOR_METADATA_HEADING}\n\n" + "\n".join(found) + f"\n\n{closing}\n\n---" if found else None
    groups = [f"{THREAD_METADATA_LABEL} {tid}:\n" + "\n".join(lines)
              for tid, prior in (per_thread or {}).items() if (lines := _metadata_lines(prior))]
    if not groups:
        return None
    intro = load(profile, "observer_prior_metadata_multi", folder)
    return f"{PRIOR_METADATA_HEADING}\n\n{intro}\n\n" + "\n\n".join(groups)


def _history(
    profile: str,
    messages: Sequence[Message] | None,
    threads: Mapping[str, Sequence[Message]] | None,
    tz: tzinfo,
    counter: TokenCounter | None,
    separator: str = "\n\n",
) -> str:
    if (messages is None) == (threads is None):
        raise InputError("give exactly one of messages= (one thread) or threads= (thread id -> messages)")
    if messages is not None:
        if not messages:
            raise InputError("no messages to observe: messages= is empty")
        return format_messages(messages, profile, tz=tz, counter=counter)
    assert threads is not None
    if not threads or not any(threads.values()):
        raise InputError("no messages to observe: threads= is empty")
    sections = []
    for tid, msgs in threads.items():
        if not tid or '"' in tid or "<" in tid or ">" in tid:
            raise InputError(f"bad thread id {tid!r}: it must be non-empty and free of quotes and angle brackets")
        if msgs:
            sections.append(thread_section(tid, format_messages(msgs, profile, tz=tz, counter=counter)))
    return separator.join(sections)


def build_observer_messages(
    profile: str,
    *,
    existing_observations: str,
    messages: Sequence[Message] | None = None,
    threads: Mapping[str, Sequence[Message]] | None = None,
    prior_metadata: Mapping[str, str] | None = None,
    thread_metadata: Mapping[str, Mapping[str, str]] | None = None,
    buffered: bool = False,
    instruction: str | None = None,
    thread_title: bool = False,
    prompts_folder: PromptsFolder = None,
    tz: tzinfo = timezone.utc,
    counter: TokenCounter | None = None,
    working_memory: str | None = None,
) -> list[dict[str, Any]]:
    """System prompt + user message(s) for one Observer call.

    m31: [system, task prompt, history]; m11: [system, one message: previous → history → task].
    `prior_metadata` keys current_task / suggested_response / thread_title get labels; others show as is.
    `thread_metadata` (multi-thread: thread id as shown -> such a mapping) lists each thread's hints under
    "Thread <id>:" in the same section.
    `buffered` drops the continuation-hint sections and asks for <observations> every time.
    `working_memory` (the current block as text, "" when empty; None: the feature is off) asks for the
    `<working-memory>` section and shows the block under om_core.working_memory.WORKING_MEMORY_HEADING, before
    the task.
    """
    check_profile(profile)
    multi = threads is not None
    intro = whole(profile, "observer_threads_intro", prompts_folder) if profile == "m31" and multi else None
    # with Mastra 1.31.0's texts the thread sections follow one another as 1.31.0 sends them: its history message
    # is one text part per line group and the "\n\n" part between threads is whitespace only, which @mastra/core
    # drops before the request (measured on the wire by the conformance suite: `</thread><thread id=...>`)
    body = _history(profile, messages, threads, tz, counter, "" if intro is not None else "\n\n")
    if profile == "m11":
        # 1.1.0's layout (observer-agent.ts buildObserverPrompt / buildMultiThreadObserverPrompt): a line that
        # counts the threads before a multi-thread history, a `---` rule after the history
        if multi:
            assert threads is not None
            count = sum(1 for msgs in threads.values() if msgs)
            intro = load(profile, "observer_threads_intro", prompts_folder).replace("{threads}", str(count))
            body = f"{intro}\n\n{body}"
        body += HISTORY_END
    elif intro is not None:
        # a folder with Mastra 1.31.0's texts: its multi-thread history opens with the thread-count line too
        # (observer-agent.ts buildMultiThreadObserverHistoryMessage)
        assert threads is not None
        body = intro.replace("{threads}", str(sum(1 for msgs in threads.values() if msgs))) + "\n\n" + body
    history = f"{HISTORY_HEADING}\n\n" + body
    system = build_observer_system_prompt(
        profile,
        multi_thread=multi,
        instruction=instruction,
        thread_title=thread_title,
        continuation_hints=not buffered,
        prompts_folder=prompts_folder,
        working_memory=working_memory is not None,
    )
    context: list[str] = []
    if existing_observations and existing_observations.strip():
        note = load(profile, "observer_previous_note", prompts_folder)
        context.append(f"{PREVIOUS_OBSERVATIONS_HEADING}\n\n{existing_observations.strip()}\n\n---\n\n{note}")
    meta = _metadata_block(prior_metadata, profile, prompts_folder)
    if meta:
        context.append(meta)
    per_thread = _thread_metadata_block(thread_metadata, profile, prompts_folder)
    if per_thread:
        context.append(per_thread)
    if working_memory is not None:
        note = load(profile, "observer_working_memory_note", prompts_folder)
        # read at call time, as working_memory_from_prompt reads it: a new wording reaches both
        heading, empty = working_format.WORKING_MEMORY_HEADING, working_format.EMPTY_BLOCK
        context.append(f"{heading}\n\n{note}\n\n{working_memory.strip() or empty}")
    task = load(profile, "observer_task_multi" if multi else "observer_task", prompts_folder)
    if buffered:
        task += "\n\n" + load(profile, "buffered_note", prompts_folder)
    task = f"{TASK_HEADING}\n\n" + task

    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if profile == "m11":
        out.append({"role": "user", "content": "\n\n".join([*context, history, task])})
    else:
        out.append({"role": "user", "content": "\n\n".join([*context, task])})
        out.append({"role": "user", "content": history})
    return out


def thread_section(thread_id: str, history: str) -> str:
    """One thread's history in a multi-thread Observer prompt: `<thread id="…">`, its messages, `</thread>`."""
    return f'<thread id="{thread_id}">\n{history}\n</thread>'


def split_thread_sections(history: str) -> list[tuple[str | None, str]]:
    """(thread id, its history) for each `thread_section` in `history`; [(None, history)] when it has none."""
    found: list[tuple[str | None, str]] = [(m.group(1), m.group(2)) for m in _THREAD_SECTION.finditer(history)]
    return found or [(None, history)]


def history_from_prompt(text: str) -> str:
    """The message history of an Observer request, from the text of its user message(s) joined in order:
    what follows the last HISTORY_HEADING, up to TASK_HEADING when that follows it (m11, without its closing
    `---` rule), stripped; a multi-thread m11 history keeps its thread-count line. Text
    without the heading is returned stripped, as a whole."""
    i = text.rfind(HISTORY_HEADING)
    if i < 0:
        return text.strip()
    rest = text[i + len(HISTORY_HEADING) :]
    j = rest.find(TASK_HEADING)
    found = (rest[:j] if j >= 0 else rest).strip()
    return found.removesuffix(HISTORY_END.strip()).strip() if j >= 0 else found
