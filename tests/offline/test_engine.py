"""The offline engine's rules: well-formed, deterministic outputs for every role, read from om_core's prompts."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from bench.offline import run_role
from bench.offline.embedder import embed_text
from bench.offline.judge import judge
from bench.offline.reader import NOT_FOUND
from bench.offline.reflector import reflect
from bench.offline.reldates import resolve_relative
from om_core.observer_parse import parse_observer_output
from om_core.observer_prompt import build_observer_messages
from om_core.reflector import build_reflector_messages, compression_level_in_prompt
from om_core.tokens import default_counter
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 12, tzinfo=timezone.utc)  # a Tuesday
ASSISTANT_LIST = (
    "Congratulations on the new puppy! Here are three vets near Oak Park that people like:\n\n"
    "1. **Oak Vet Clinic**: open on Sundays, with a walk-in hour every morning and a small pet shop.\n"
    "2. **Paws & Claws**: specialises in exotic pets, and the staff are known for patience with anxious dogs.\n"
    "3. **Riverside Animal Hospital**: a 24-hour emergency service with an on-site lab and imaging.\n\n"
    "Beagles are energetic, so plan on about an hour of exercise a day. Let me know if you want tips on "
    "house training, crate training or choosing food for a growing beagle puppy."
)
CHAT = [
    ("user", "I adopted a beagle named Pixel yesterday! She is 10 weeks old. Can you recommend a vet near Oak Park?"),
    ("assistant", ASSISTANT_LIST),
    ("user", "Thanks. I start a new job at Lumen Labs next Monday, so I need a dog walker. How much do they cost?"),
    ("assistant", "Dog walkers in most US cities charge between 20 and 30 dollars for a 30-minute walk. Rover and "
                  "Wag list vetted walkers, and many offer a free first meet-and-greet so you can see how they get "
                  "along with Pixel before you commit to a weekly schedule."),
]


def messages(offset_min: int = 0, thread: str | None = None) -> list[Message]:
    return [Message(id=f"{thread}-{i}", role=r, content=c, created_at=T0 + timedelta(minutes=offset_min + i),
                    thread_id=thread) for i, (r, c) in enumerate(CHAT)]


@pytest.mark.parametrize("profile", ["m11", "m31"])
def test_observer_reads_om_core_prompts_and_writes_a_parseable_log(profile: str) -> None:
    prompt = build_observer_messages(profile, existing_observations="", messages=messages())
    out = run_role("observer", prompt)
    parsed = parse_observer_output(out)
    lines = parsed.observations.splitlines()
    assert lines[0] == "Date: Mar 3, 2026"
    red = [ln for ln in lines if ln.startswith("* 🔴 ")]
    assert any("User stated they adopted a beagle named Pixel" in ln and "(meaning Mar 2, 2026)" in ln for ln in red)
    assert any(ln.startswith("* 🔴 (09:12)") for ln in red)
    assert any("Lumen Labs" in ln and "(meaning Mar 9, 2026)" in ln for ln in red)
    asked = [ln for ln in lines if "User asked" in ln]
    assert asked and all(ln.startswith("* 🟡" if profile == "m11" else "* 🔴") for ln in asked)
    assert any(ln.startswith("* 🟡 (09:13) Assistant") for ln in lines)
    assert any("-> Oak Vet Clinic" in ln for ln in lines)
    assert parsed.current_task and parsed.suggested_response
    hist = prompt[-1]["content"]
    counter = default_counter()
    assert counter.count_string(out) < counter.count_string(hist)  # extractive and shorter
    assert run_role("observer", prompt) == out  # deterministic


def test_observer_multi_thread() -> None:
    prompt = build_observer_messages("m31", existing_observations="",
                                     threads={"t1": messages(thread="t1"), "t2": messages(60 * 24, "t2")})
    parsed = parse_observer_output(run_role("observer", prompt), multi_thread=True)
    assert set(parsed.threads) == {"t1", "t2"}
    assert parsed.threads["t2"].observations.startswith("Date: Mar 4, 2026")
    assert parsed.threads["t1"].current_task


def test_relative_dates() -> None:
    d = date(2026, 3, 3)
    assert resolve_relative("I went yesterday", d) == "Mar 2, 2026"
    assert resolve_relative("back on last Friday", d) == "Feb 27, 2026"
    assert resolve_relative("two weeks ago", d) == "Feb 17, 2026"
    assert resolve_relative("3 days ago", d) == "Feb 28, 2026"
    assert resolve_relative("next week", d) == "week of Mar 9, 2026"
    assert resolve_relative("tomorrow morning", d) == "Mar 4, 2026"
    assert resolve_relative("I moved recently", d) is None
    # beyond the calendar (LongMemEval_S 18dcd5a5 asks about something "7000 years ago"): no date, no error
    assert resolve_relative("farming began 7000 years ago", d) is None
    assert resolve_relative("in 99999999 days, or two weeks ago", d) == "Feb 17, 2026"  # the next phrase still counts


LOG = """Date: Mar 1, 2026
* 🔴 (09:00) User stated they live in Oak Park
* 🟡 (09:01) Assistant said: Oak Park has three dog parks
  * -> Lake Park
  * -> Pine Park
* 🟢 (09:02) User might get a cat
* 🔴 (09:03) User asked: which park is closest?
Date: Mar 2, 2026
* 🔴 (10:00) User stated they live in Oak Park
* 🔴 (10:05) User stated they adopted a beagle named Pixel
* 🟡 (10:06) Assistant said: beagles need an hour of exercise a day"""


def test_reflector_compresses_harder_at_each_level() -> None:
    sizes = []
    for level in range(5):
        prompt = build_reflector_messages("m31", LOG, level)
        assert compression_level_in_prompt(prompt[-1]["content"]) == level
        out = run_role("reflector", prompt)
        parsed = parse_observer_output(out)
        body = parsed.observations
        assert "Date: Mar 2, 2026" in body and "adopted a beagle named Pixel" in body
        if level == 4:  # "aim for about 2/10" of this short log: level 4's rules keep more, so the oldest go too
            assert body == "Date: Mar 2, 2026\n* 🔴 (10:05) User stated they adopted a beagle named Pixel"
        else:
            assert body.count("User stated they live in Oak Park") == 1  # duplicate dropped at every level
        sizes.append(len(body))
        if level >= 1:
            assert "🟢" not in body
        if level >= 3:
            assert "🟡" not in body and "->" not in body
        if level == 4:
            assert "User asked" not in body
    assert sizes == sorted(sizes, reverse=True) and sizes[4] < sizes[0]


def test_reflector_reads_m11_retry_prompt() -> None:
    prompt = build_reflector_messages("m11", LOG, 1)
    assert compression_level_in_prompt(prompt[-1]["content"]) == 1
    assert reflect(prompt[-1]["content"]).startswith("<observations>\nDate: Mar 1, 2026")


JUDGE = ("Judge the response.\n\nQuestion: {q}\n\n{field}: {a}\n\nModel Response: {r}\n\n"
         "Is the model response correct? Answer yes or no only.")


@pytest.mark.parametrize(
    ("field", "answer", "response", "verdict"),
    [
        ("Correct Answer", "Pixel", "Your beagle is called Pixel.", "yes"),
        ("Correct Answer", "Pixel", "Your beagle is called Max.", "no"),
        ("Correct Answer", "5", "You went five times.", "yes"),
        ("Correct Answer", "twenty one", "It was 21 dollars", "yes"),
        ("Correct Answer", "3", "You went 4 times.", "no"),
        ("Explanation", "The user never mentioned a cat.", "I don't know; that was not mentioned.", "yes"),
        ("Explanation", "The user never mentioned a cat.", "Your cat is called Tom.", "no"),
        ("Rubric", "The user would prefer suggestions for beagle exercise near Oak Park lakes",
         "Since Pixel is a beagle, try the Oak Park lake trails for exercise.", "yes"),
        ("Rubric", "The user would prefer suggestions for beagle exercise near Oak Park lakes",
         "Here is a recipe for pancakes.", "no"),
    ],
)
def test_judge_rules(field: str, answer: str, response: str, verdict: str) -> None:
    assert judge(JUDGE.format(q="What?", field=field, a=answer, r=response)) == verdict


def test_judge_temporal_off_by_one_and_project_templates() -> None:
    templates = pytest.importorskip("bench.benchmarks.longmemeval.judge_templates").builtin_templates()
    temporal = templates["temporal-reasoning"]
    assert judge(temporal.format(question="How many days?", answer="18 days", response="It took 19 days.")) == "yes"
    assert judge(temporal.format(question="How many days?", answer="18 days", response="It took 25 days.")) == "no"
    default = templates["default"]
    assert judge(default.format(question="How many days?", answer="18 days", response="It took 19 days.")) == "no"
    abst = templates["abstention"]
    assert judge(abst.format(question="Cat?", answer="never said", response="There is no information on it.")) == "yes"


def test_reader_answers_by_retrieval_deterministically() -> None:
    ctx = ("Observations:\n* 🔴 (09:12) User stated they adopted a beagle named Pixel\n"
           "* 🔴 (09:20) User stated they start a new job at Lumen Labs\n"
           "* 🟡 (09:30) Assistant said: walks cost 20 dollars")
    msgs = [{"role": "system", "content": ctx}, {"role": "user", "content": "Question: What is the name of my beagle?"}]
    a1, a2 = run_role("reader", msgs), run_role("actor", msgs)
    assert a1 == a2 and "Pixel" in a1 and "🔴" not in a1
    none = run_role("reader", [{"role": "system", "content": ctx}, {"role": "user", "content": "Favourite opera?"}])
    assert none == NOT_FOUND


def test_summarizer_is_extractive_and_bounded() -> None:
    convo = [{"role": r, "content": c} for r, c in CHAT] + [{"role": "user", "content": "Summarise our chat."}]
    full = run_role("summarizer", convo)
    assert "Pixel" in full and "Lumen Labs" in full
    short = run_role("summarizer", convo, {"max_tokens": 30})
    assert default_counter().count_string(short) <= 30 and len(short) < len(full)


def test_embedder_is_deterministic_and_lexical() -> None:
    a, b, c = embed_text("my beagle Pixel loves the park"), embed_text("Pixel the beagle loves parks"), embed_text(
        "quarterly tax filing deadline")
    assert a == embed_text("my beagle Pixel loves the park") and len(a) == 256
    dot = lambda x, y: sum(i * j for i, j in zip(x, y))  # noqa: E731
    assert abs(dot(a, a) - 1) < 1e-4 and dot(a, b) > dot(a, c)


def test_reflector_compresses_harder_until_its_output_fits_the_cap() -> None:
    from bench.offline.provider import fit_cap
    from om_core.tokens import default_counter

    log = "\n".join(f"{LOG}\n* 🟢 (10:{i % 60:02d}) User mentioned filler detail number {i} about the garden"
                    for i in range(40))
    prompt = build_reflector_messages("m31", log, 0)
    whole = run_role("reflector", prompt)
    cap = len(default_counter().encode(whole)) // 2
    fitted = run_role("reflector", prompt, {"max_tokens": cap})
    assert len(default_counter().encode(fitted)) <= cap
    assert fit_cap(fitted, cap) == (fitted, "stop")  # the provider no longer cuts it: om_core accepts it
    assert "🟢" not in fitted and "adopted a beagle named Pixel" in fitted  # level 1 rules, red lines kept
    assert run_role("reflector", prompt, {"max_tokens": 10 * cap}) == whole  # room enough: the asked level


def test_every_role_has_a_handler_and_its_offline_model_is_served() -> None:
    # the engine dispatches on bench.roles.Role through one table: a role added without a handler fails here
    from bench.offline.engine import HANDLERS, MODELS
    from bench.roles import Role

    assert set(HANDLERS) == set(Role), f"roles without an offline handler: {set(Role) - set(HANDLERS)}"
    for role, handler in HANDLERS.items():
        assert role.offline_model.split("/")[1] in MODELS
        if handler is not None:
            assert isinstance(run_role(role.value, [{"role": "user", "content": "Question: hi?"}]), str)
    with pytest.raises(ValueError, match="unknown offline role"):
        run_role("embedder", [])


def _tokens(text: str) -> int:
    return len(default_counter().encode(text))


def test_reflector_keeps_the_share_its_guidance_asks_for() -> None:
    # unique 🟡 lines: level 1 keeps them all, so "aim for about 8/10" needs a harder level (older 🟡 dropped)
    log = "Date: Mar 1, 2026\n" + "\n".join(
        f"* 🟡 (09:{i % 60:02d}) User planned trip number {i} to city{i} with friend{i} for reason{i}" for i in range(60))
    for profile in ("m11", "m31"):
        prompt = build_reflector_messages(profile, log, 1)
        out = parse_observer_output(run_role("reflector", prompt)).observations
        assert _tokens(out) <= 0.8 * _tokens(log), profile
        assert "trip number 59 " in out  # the newest kept
    assert parse_observer_output(run_role("reflector", build_reflector_messages("m31", log, 0))).observations.count(
        "🟡") == 60  # level 0 asks for no share: every line kept


def test_reflector_output_always_fits_the_cap_newest_kept() -> None:
    from bench.offline.provider import fit_cap

    # unique 🔴 statements: even level 4 keeps every one, so the cap is met by leaving the oldest out
    import random

    rng = random.Random(5)
    words = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ro", "su", "ti") for b in ("ba", "de", "fi", "go", "hu")]
    log = "\n".join(f"Date: Mar {d}, 2026\n" + "\n".join(
        f"* 🔴 (10:{i:02d}) User stated fact {d}-{i} " + " ".join(rng.sample(words, 8)) for i in range(20))
        for d in range(1, 11))
    prompt = build_reflector_messages("m31", log, 4)
    cap = _tokens(log) // 5
    out = run_role("reflector", prompt, {"max_tokens": cap})
    assert fit_cap(out, cap) == (out, "stop")  # not cut by the provider: om_core's truncation guard accepts it
    body = parse_observer_output(out).observations
    assert "fact 10-19 " in body and "fact 1-0 " not in body  # newest kept, oldest left out
    assert body.startswith("Date: Mar ") and "Date: Mar 1, 2026" not in body  # no date header left empty


def test_reflector_keeps_the_asked_share_past_level_4_oldest_left_out() -> None:
    # unique 🔴 statements: every level's rules keep them all, so "aim for about 8/10" (m31's level 1, m11's
    # retry) is met by leaving the oldest out, as a model condensing older observations hardest would
    import random

    rng = random.Random(7)
    syl = ("ka", "lo", "mi", "nu", "pe", "ro", "su", "ti")
    words = [f"{a}{b}{c}" for a in syl for b in ("ba", "de", "fi", "go", "hu") for c in syl]  # no near-duplicates
    log = "\n".join(f"Date: Mar {d}, 2026\n" + "\n".join(
        f"* 🔴 (10:{i:02d}) User stated fact {d}-{i} " + " ".join(rng.sample(words, 8)) for i in range(20))
        for d in range(1, 11))
    for profile in ("m11", "m31"):
        prompt = build_reflector_messages(profile, log, 1)
        body = parse_observer_output(run_role("reflector", prompt)).observations
        assert _tokens(body) <= 0.8 * _tokens(log), profile
        assert "fact 10-19 " in body and "fact 1-0 " not in body  # newest kept, oldest left out
        assert body.count("🔴") >= 0.7 * 200  # no more left out than the share needs
        assert parse_observer_output(run_role("reflector", prompt, {"max_tokens": 10 * _tokens(log)})
                                     ).observations == body  # a roomy cap changes nothing
    assert parse_observer_output(run_role("reflector", build_reflector_messages("m31", log, 0))).observations.count(
        "🔴") == 200  # level 0 asks for no share: every line kept


def test_request_tokens_of_long_texts_equal_the_plain_count() -> None:
    """chat_prompt_tokens counts a long request text by memoised line pieces: the same count as tiktoken's."""
    from bench.offline.engine import LONG_TEXT_CHARS, chat_prompt_tokens
    from om_core.formats import get_encoding

    enc = get_encoding("o200k_base")
    log = "\n".join(f"* 🔴 (09:{i % 60:02d}) User said item {i} costs ${i}.50\n  * -> sub /{i}\n" for i in range(400))
    assert len(log) >= LONG_TEXT_CHARS
    for text in (log, "<observations>\n" + log[::-1] + "\n</observations>"):
        msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": text}]
        assert chat_prompt_tokens(msgs) == 3 + sum(len(enc.encode(m["content"], disallowed_special=())) + 3 for m in msgs)
