"""Every Observer and Reflector response a real small model gave (shared/cassettes/qwen05b-oracle3.jsonl: qwen2.5
0.5B under llama.cpp, every role) replayed through the parsers and guards, keyed by the request it answered:
none of them becomes memory; a well-formed output for the same request does; the Reflector's example block (the
beagle named Pixel) is never committed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.offline.engine import run_role
from om_core.guards import COPIED, NOT_A_LOG, PROMPT_ECHO, PROMPT_EXAMPLE, TRUNCATED
from om_core.llm import Completion
from om_core.observer_prompt import HISTORY_HEADING
from om_core.reflector import observations_from_prompt
from om_core.review import review_output

CASSETTE = Path("/work/shared/cassettes/qwen05b-oracle3.jsonl")
pytestmark = pytest.mark.skipif(not CASSETTE.is_file(), reason=f"cassette {CASSETTE} is not on this machine")

# what each recorded output is, read by hand (index = line of the cassette)
EXPECTED = {
    1: COPIED, 2: COPIED, 3: TRUNCATED, 4: COPIED, 5: COPIED, 9: COPIED, 10: NOT_A_LOG, 11: NOT_A_LOG,
    12: NOT_A_LOG, 15: COPIED, 16: COPIED, 17: COPIED, 27: TRUNCATED, 28: TRUNCATED, 29: TRUNCATED,
    6: PROMPT_EXAMPLE, 31: PROMPT_EXAMPLE, 32: PROMPT_ECHO, 33: TRUNCATED, 34: PROMPT_ECHO,
}


def memory_calls() -> list[tuple[int, dict[str, Any]]]:
    rows = [json.loads(line) for line in CASSETTE.read_text().splitlines() if line.strip()]
    return [(i, r) for i, r in enumerate(rows) if r["role"] in ("observer", "reflector")]


def recorded(row: dict[str, Any]) -> Completion:
    return Completion(row["response_text"], finish_reason=row["finish_reason"])


def test_the_cassette_holds_the_recorded_failures():
    calls = memory_calls()
    assert sorted(i for i, _ in calls) == sorted(EXPECTED)
    assert not any("<observations>" in r["response_text"] for _, r in calls if r["role"] == "observer")


@pytest.mark.parametrize("profile", ["m31", "m11"])
def test_no_recorded_output_becomes_memory(profile):
    """Keyed by request: each response is judged against the request it answered, with the default guards of
    both profiles (m11 without the repetition check). The first refusal names what went wrong."""
    for i, row in memory_calls():
        review = review_output(row["role"], profile, row["request"]["messages"], recorded(row))
        assert review.reason == EXPECTED[i], (i, review.reason, row["response_text"][:120])


def well_formed(row: dict[str, Any]) -> str:
    """A faithful, well-formed answer to the same request, written by the offline engine: its Observer for an
    Observer request; for a Reflector request, the offline Observer's log of the observations it was asked to
    reflect on (which the 0.5B Observer had filled with copied chat)."""
    messages = row["request"]["messages"]
    if row["role"] == "observer":
        return run_role("observer", messages)
    body = observations_from_prompt(str(messages[-1]["content"]))
    return run_role("observer", [{"role": "user", "content": f"{HISTORY_HEADING}\n\n{body}"}])


@pytest.mark.parametrize("profile", ["m31", "m11"])
def test_a_well_formed_output_for_the_same_request_becomes_memory(profile):
    for i, row in memory_calls():
        review = review_output(row["role"], profile, row["request"]["messages"],
                               Completion(well_formed(row), finish_reason="stop"))
        assert review.accepted, (i, review.reason)
        assert review.output.observations.strip()


def test_the_beagle_example_is_never_committed():
    """The Reflector echoing its prompt's example block, alone (recorded) or mixed into a real log, is refused;
    so is the same text from the Observer."""
    for i, row in memory_calls():
        if row["role"] != "reflector":
            continue
        real = well_formed(row)
        example = recorded(memory_calls()[[k for k, _ in memory_calls()].index(31)][1]).text
        example_block = example.split("<observations>\n", 1)[1].split("</observations>", 1)[0]
        mixed = real.replace("<observations>\n", "<observations>\n" + example_block, 1)
        for profile in ("m31", "m11"):
            review = review_output("reflector", profile, row["request"]["messages"], Completion(mixed))
            assert review.reason == PROMPT_EXAMPLE, (i, profile)
    obs_row = next(r for _, r in memory_calls() if r["role"] == "observer")
    review = review_output("observer", "m31", obs_row["request"]["messages"], Completion(example))
    assert not review.accepted
