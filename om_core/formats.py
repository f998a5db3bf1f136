"""om_core's second public face: the texts it writes and the functions that read them back.

`from om_core import ...` is the library (the engine, its config, storage, models). This module is the
documented contract for tools that read or write om_core's *formats* without running the engine: a
stand-in model that answers Observer and Reflector requests (the harness's offline engine), scripts that
measure the output guards, conformance checks against Mastra. A wording or layout change in om_core either
keeps these functions' round trips (format -> read back) or fails the tests of whoever relies on them.

What is here, by the text it concerns:

- Observer input: `format_messages` (the message history as the Observer reads it, per profile) and its inverse
  `parse_history` (`HistoryEntry`, `history_profile`); `history_from_prompt` and `split_thread_sections` read
  the history (one or several threads) back out of a built Observer request; `build_observer_system_prompt`.
- Observer output: the observation-log markers (`PRIORITY_HIGH` / `PRIORITY_MEDIUM` / `PRIORITY_LOW`,
  `COMPLETED`, `SUB_BULLET`), `format_observation`, `format_sub_observation`, `format_thread_sections`,
  `format_observer_output` and their readers `parse_observer_output`, `observation_text`,
  `is_observation_line` (`ThreadSection`; `ObserverOutput` is on the front door).
- Dates: `format_date_header` / `DATE_HEADER_PREFIX`, `format_observation_date`, `format_meaning` (the
  three-date model's phrases) and `parse_observation_date`.
- Reflector: `build_reflector_system_prompt`; `observations_from_prompt` and `compression_level_in_prompt`
  read a built request back.
- Working memory: `WorkingMemoryEntry` (label, value), `format_working_memory_section`,
  `working_memory_from_prompt`, `parse_working_memory_section`.
- Reviewing outputs as the guards do (docs/om-engine.md, "Output guards"): `review_output`,
  `detect_degenerate_repetition`, `longest_count`, `reproduced_share`, `verbatim_line_share`, and the
  thresholds `COPY_LINE_SHARE`, `COPY_REPRODUCED_SHARE`, `ECHO_LINE_SHARE`.
- Context and tokens: `prefix_stability` (how much of the Actor's context prefix survives between renders) and
  `get_encoding` (the tiktoken encoding om_core counts with).

Names load on first use, as on the front door (`import om_core.formats` is cheap).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names as _EXPORTS, for type checkers and IDEs
    from om_core.context import prefix_stability
    from om_core.dates import (
        DATE_HEADER_PREFIX,
        format_date_header,
        format_meaning,
        format_observation_date,
        parse_observation_date,
    )
    from om_core.degenerate import detect_degenerate_repetition, longest_count
    from om_core.guards import COPY_LINE_SHARE, COPY_REPRODUCED_SHARE, ECHO_LINE_SHARE
    from om_core.observer_format import HistoryEntry, format_messages, history_profile, parse_history
    from om_core.observer_parse import (
        COMPLETED,
        PRIORITY_HIGH,
        PRIORITY_LOW,
        PRIORITY_MEDIUM,
        SUB_BULLET,
        ThreadSection,
        format_observation,
        format_observer_output,
        format_sub_observation,
        format_thread_sections,
        is_observation_line,
        observation_text,
        parse_observer_output,
    )
    from om_core.observer_prompt import build_observer_system_prompt, history_from_prompt, split_thread_sections
    from om_core.overlap import reproduced_share, verbatim_line_share
    from om_core.reflector import build_reflector_system_prompt, compression_level_in_prompt, observations_from_prompt
    from om_core.review import review_output
    from om_core.tokens import get_encoding
    from om_core.working_memory import Entry as WorkingMemoryEntry
    from om_core.working_memory import (
        format_working_memory_section,
        parse_working_memory_section,
        working_memory_from_prompt,
    )

# public name -> (module that defines it, its name there)
_EXPORTS: dict[str, tuple[str, str]] = {
    # Observer input
    "format_messages": ("om_core.observer_format", "format_messages"),
    "parse_history": ("om_core.observer_format", "parse_history"),
    "history_profile": ("om_core.observer_format", "history_profile"),
    "HistoryEntry": ("om_core.observer_format", "HistoryEntry"),
    "history_from_prompt": ("om_core.observer_prompt", "history_from_prompt"),
    "split_thread_sections": ("om_core.observer_prompt", "split_thread_sections"),
    "build_observer_system_prompt": ("om_core.observer_prompt", "build_observer_system_prompt"),
    # Observer output
    "PRIORITY_HIGH": ("om_core.observer_parse", "PRIORITY_HIGH"),
    "PRIORITY_MEDIUM": ("om_core.observer_parse", "PRIORITY_MEDIUM"),
    "PRIORITY_LOW": ("om_core.observer_parse", "PRIORITY_LOW"),
    "COMPLETED": ("om_core.observer_parse", "COMPLETED"),
    "SUB_BULLET": ("om_core.observer_parse", "SUB_BULLET"),
    "ThreadSection": ("om_core.observer_parse", "ThreadSection"),
    "format_observation": ("om_core.observer_parse", "format_observation"),
    "format_sub_observation": ("om_core.observer_parse", "format_sub_observation"),
    "format_thread_sections": ("om_core.observer_parse", "format_thread_sections"),
    "format_observer_output": ("om_core.observer_parse", "format_observer_output"),
    "parse_observer_output": ("om_core.observer_parse", "parse_observer_output"),
    "observation_text": ("om_core.observer_parse", "observation_text"),
    "is_observation_line": ("om_core.observer_parse", "is_observation_line"),
    # dates
    "DATE_HEADER_PREFIX": ("om_core.dates", "DATE_HEADER_PREFIX"),
    "format_date_header": ("om_core.dates", "format_date_header"),
    "format_observation_date": ("om_core.dates", "format_observation_date"),
    "format_meaning": ("om_core.dates", "format_meaning"),
    "parse_observation_date": ("om_core.dates", "parse_observation_date"),
    # Reflector
    "build_reflector_system_prompt": ("om_core.reflector", "build_reflector_system_prompt"),
    "observations_from_prompt": ("om_core.reflector", "observations_from_prompt"),
    "compression_level_in_prompt": ("om_core.reflector", "compression_level_in_prompt"),
    # working memory
    "WorkingMemoryEntry": ("om_core.working_memory", "Entry"),
    "format_working_memory_section": ("om_core.working_memory", "format_working_memory_section"),
    "working_memory_from_prompt": ("om_core.working_memory", "working_memory_from_prompt"),
    "parse_working_memory_section": ("om_core.working_memory", "parse_working_memory_section"),
    # reviewing outputs as the guards do
    "review_output": ("om_core.review", "review_output"),
    "detect_degenerate_repetition": ("om_core.degenerate", "detect_degenerate_repetition"),
    "longest_count": ("om_core.degenerate", "longest_count"),
    "reproduced_share": ("om_core.overlap", "reproduced_share"),
    "verbatim_line_share": ("om_core.overlap", "verbatim_line_share"),
    "COPY_LINE_SHARE": ("om_core.guards", "COPY_LINE_SHARE"),
    "COPY_REPRODUCED_SHARE": ("om_core.guards", "COPY_REPRODUCED_SHARE"),
    "ECHO_LINE_SHARE": ("om_core.guards", "ECHO_LINE_SHARE"),
    # context and tokens
    "prefix_stability": ("om_core.context", "prefix_stability"),
    "get_encoding": ("om_core.tokens", "get_encoding"),
}

__all__ = [  # written out for static tools; tests check it equals _EXPORTS and the TYPE_CHECKING imports
    "format_messages", "parse_history", "history_profile", "HistoryEntry", "history_from_prompt",
    "split_thread_sections", "build_observer_system_prompt",
    "PRIORITY_HIGH", "PRIORITY_MEDIUM", "PRIORITY_LOW", "COMPLETED", "SUB_BULLET", "ThreadSection",
    "format_observation", "format_sub_observation", "format_thread_sections", "format_observer_output",
    "parse_observer_output", "observation_text", "is_observation_line",
    "DATE_HEADER_PREFIX", "format_date_header", "format_observation_date", "format_meaning", "parse_observation_date",
    "build_reflector_system_prompt", "observations_from_prompt", "compression_level_in_prompt",
    "WorkingMemoryEntry", "format_working_memory_section", "working_memory_from_prompt",
    "parse_working_memory_section",
    "review_output", "detect_degenerate_repetition", "longest_count", "reproduced_share", "verbatim_line_share",
    "COPY_LINE_SHARE", "COPY_REPRODUCED_SHARE", "ECHO_LINE_SHARE",
    "prefix_stability", "get_encoding",
]


def __getattr__(name: str) -> Any:
    found = _EXPORTS.get(name)
    if found is None:
        raise AttributeError(f"module 'om_core.formats' has no attribute {name!r}")
    module, attr = found
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
