"""Judge a recorded Observer or Reflector exchange (the request that was sent and the completion that came back)
with the output guards, exactly as `observe` / `reflect` judge a live one: for replaying recorded model
outputs (tests, cassettes) and for measuring the guards' margins on an engine's outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from om_core.guards import Candidate, GuardRole, first_rejection, instruction_text, observer_guards, reflector_guards
from om_core.llm import Completion
from om_core.observer_parse import ObserverOutput, parse_observer_output
from om_core.observer_prompt import PREVIOUS_OBSERVATIONS_HEADING, history_from_prompt
from om_core.reflector import observations_from_prompt, strip_observation_groups

_PREVIOUS_END = "\n\n---\n\n"


@dataclass(frozen=True)
class Review:
    """What the guards made of one recorded output: `reason` is None when it would have become memory."""

    candidate: Candidate
    output: ObserverOutput
    reason: str | None

    @property
    def accepted(self) -> bool:
        return self.reason is None


def _user_text(messages: Sequence[dict[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")


def previous_observations(messages: Sequence[dict[str, Any]]) -> str:
    """The previous observations an Observer request carried (its "## Previous Observations" section), or ""."""
    text = _user_text(messages)
    i = text.find(PREVIOUS_OBSERVATIONS_HEADING)
    if i < 0:
        return ""
    body = text[i + len(PREVIOUS_OBSERVATIONS_HEADING):]
    end = body.find(_PREVIOUS_END)
    return (body[:end] if end >= 0 else body).strip()


def review_output(role: GuardRole, profile: str, messages: Sequence[dict[str, Any]], completion: Completion, *,
                  degenerate_check: bool | None = None) -> Review:
    """Parse `completion` as the answer to the Observer or Reflector request `messages` (as sent) and run that
    role's default guards on it. `degenerate_check` defaults to the profile's rule (on for m31)."""
    check = profile == "m31" if degenerate_check is None else degenerate_check
    if role == "observer":
        source = history_from_prompt(_user_text(messages))
        multi = '<thread id="' in source
        out = parse_observer_output(completion.text, multi_thread=multi, check_degenerate=False)
        instructions = instruction_text(messages, source, previous_observations(messages))
        guards = observer_guards(check)
    else:
        source = observations_from_prompt(_user_text(messages))
        out = parse_observer_output(completion.text, check_degenerate=False)
        instructions = instruction_text(messages, strip_observation_groups(source))
        guards = reflector_guards(check)
    cand = Candidate(role, profile, completion, out.observations, source, instructions, out.parse_mode)
    return Review(cand, out, first_rejection(guards, cand))
