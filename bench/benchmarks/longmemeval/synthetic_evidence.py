"""Evidence for the synthetic sample: for each question type, dated sessions that make the answer derivable.

A builder gets a seeded rng, the question date, a variant number (cycles through its kinds so a few
questions of one type differ) and whether to make an abstention question; it returns the question, the
gold answer and the evidence sessions with `has_answer` set the way the official files set it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Callable

from bench.benchmarks.longmemeval import synthetic_facts as F
from bench.benchmarks.longmemeval.synthetic_filler import THANKS, WELCOMES, framed_session

Turns = list[dict[str, Any]]


@dataclass
class Evidence:
    question: str
    answer: str | int
    sessions: list[tuple[datetime, Turns]]


def at(rng: random.Random, qdate: datetime, days_before: int) -> datetime:
    """A session time `days_before` calendar days before the question, between 08:00 and 21:59."""
    day = qdate.date() - timedelta(days=days_before)
    return datetime.combine(day, time(rng.randint(8, 21), rng.randint(0, 59)))


def said(rng: random.Random, fact: str, holds_answer: bool = True) -> Turns:
    turns: Turns = framed_session(rng, fact)
    for k, t in enumerate(turns):
        t["has_answer"] = holds_answer and k == 0
    return turns


def ordinal_day(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def relative_phrase(rng: random.Random, said_on: date, happened: date) -> str:
    """How a person would date an event when talking on `said_on`; always resolvable to exactly one day."""
    delta = (said_on - happened).days
    options = [f"on {F.MONTHS[happened.month - 1]} {ordinal_day(happened.day)}"]
    if delta == 0:
        options.append("earlier today")
    elif delta == 1:
        options.append("yesterday")
    elif 2 <= delta <= 6:
        options += [f"{F.NUMBER_WORDS[delta]} days ago", f"last {F.WEEKDAY_NAMES[happened.weekday()]}"]
    elif delta in (7, 14, 21):
        options.append({7: "a week ago", 14: "two weeks ago", 21: "three weeks ago"}[delta])
    return rng.choice(options[1:] or options) if rng.random() < 0.8 else options[0]


def _yours(phrase: str) -> str:
    """The user's "my cousin's wedding" is "your cousin's wedding" in an explanation addressed to them."""
    return " ".join("your" if w == "my" else w for w in phrase.split(" "))


def _days_answer(n: int) -> str:
    return f"{n} days. {n + 1} days (including the last day) is also acceptable."


# ---------------------------------------------------------------- single-session-user


def single_session_user(rng: random.Random, qdate: datetime, variant: int, abstain: bool) -> Evidence:
    kind = variant % 5
    when = at(rng, qdate, rng.randint(3, 80))
    if kind == 0:
        animal, other = rng.sample(F.ANIMALS, 2)
        pet = rng.choice(F.PET_NAMES)
        fact = f"We adopted a {animal} a few weeks ago and named her {pet}."
        q, a = f"What did I name the {animal} I adopted?", pet
        abs_q = f"What did I name the {other} I adopted?"
        abs_a = f"You did not mention adopting a {other}. You mentioned adopting a {animal} named {pet}."
    elif kind == 1:
        minutes, mode = rng.randrange(15, 80, 5), rng.choice(F.MODES)
        fact = f"My commute to the office takes about {minutes} minutes each way by {mode}."
        q, a = "How long is my commute to the office each way?", f"{minutes} minutes"
        abs_q = f"How much does my monthly {mode} pass cost?"
        abs_a = f"You did not mention what a {mode} pass costs. You only said your commute takes about {minutes} minutes by {mode}."
    elif kind == 2:
        item, other = rng.sample(F.ITEMS, 2)
        store = rng.choice(F.STORES)
        fact = f"I found my {item} at {store}, and I love it."
        q, a = f"Where did I get my {item}?", store
        abs_q = f"Where did I get my {other}?"
        abs_a = f"You did not mention where you got a {other}. You mentioned finding your {item} at {store}."
    elif kind == 3:
        relation, other = rng.sample(F.RELATIONS, 2)
        person, city = rng.choice(F.PEOPLE), rng.choice(F.CITIES)
        fact = f"My {relation} {person} just moved to {city}, so I'll be visiting a lot."
        q, a = f"Which city did my {relation} move to?", city
        abs_q = f"Which city did my {other} move to?"
        abs_a = f"You did not mention your {other} moving. You mentioned that your {relation} {person} moved to {city}."
    else:
        major = rng.choice(F.MAJORS)
        fact = f"Back in college I majored in {major}."
        q, a = "What did I major in at college?", major
        abs_q = "What did I minor in at college?"
        abs_a = f"You did not mention a minor. You only mentioned majoring in {major}."
    if abstain:
        return Evidence(abs_q, abs_a, [(when, said(rng, fact, holds_answer=False))])
    return Evidence(q, a, [(when, said(rng, fact))])


# ---------------------------------------------------------------- single-session-assistant


def _listing(intro: str, lines: list[str], outro: str) -> str:
    return intro + "\n\n" + "\n".join(f"{k}. {line}" for k, line in enumerate(lines, 1)) + "\n\n" + outro


def single_session_assistant(rng: random.Random, qdate: datetime, variant: int, abstain: bool) -> Evidence:
    kind = variant % 4
    pos = rng.randrange(3)
    if kind == 0:
        genre = rng.choice(F.GENRES)
        titles = [f"The {a} {n}" for a, n in zip(rng.sample(F.TITLE_ADJ, 3), rng.sample(F.TITLE_NOUN, 3))]
        authors = [f"{first} {last}" for first, last in zip(rng.sample(F.AUTHOR_FIRST, 3), rng.sample(F.AUTHOR_LAST, 3))]
        ask = f"I'm choosing the next few picks for my book club. Could you suggest three {genre} novels?"
        reply = _listing(f"Here are three {genre} novels that tend to spark good discussions:",
                         [f"*{t}* by {au}: {rng.choice(F.BLURBS)}." for t, au in zip(titles, authors)],
                         "Any of these should work well for a group.")
        q = f"You suggested some {genre} novels for my book club. Who wrote the {F.ORDINALS[pos]} one on your list?"
        a: str | int = authors[pos]
    elif kind == 1:
        region = rng.choice(F.REGIONS)
        names = [f"{x} {y}" for x, y in zip(rng.sample(F.TRAIL_A, 3), rng.sample(F.TRAIL_B, 3))]
        kms = rng.sample(range(4, 19), 3)
        ask = f"I'll be staying near {region} next month. Can you suggest a few day hikes?"
        reply = _listing(f"Here are some day hikes around {region}:",
                         [f"**{n}**: about {k} km, with {rng.choice(F.TRAIL_FEATURES)}." for n, k in zip(names, kms)],
                         "Check trail conditions before you set out.")
        q, a = f"One of the hikes you suggested near {region} was {kms[pos]} km long. What was it called?", names[pos]
    elif kind == 2:
        dish = rng.choice(F.DISHES)
        ingredients = rng.sample(F.INGREDIENTS, 5)
        amounts = [f"{rng.randrange(20, 500, 10)} grams" for _ in ingredients]
        pos = rng.randrange(5)
        ask = f"Could you give me a recipe for {dish}?"
        reply = _listing(f"Here is a simple version of {dish}. You'll need:",
                         [f"{amt} of {ing}" for amt, ing in zip(amounts, ingredients)],
                         "Combine everything in stages, taste as you go, and adjust the seasoning at the end.")
        q, a = f"In the recipe for {dish} you gave me, how much {ingredients[pos]} did it call for?", amounts[pos]
    else:
        exam = rng.choice(F.EXAMS)
        days = rng.sample(F.WEEKDAY_NAMES[:6], 5)
        subjects = rng.sample(F.STUDY_SUBJECTS, 5)
        pos = rng.randrange(5)
        ask = f"Can you make me a weekly study plan for my {exam}?"
        reply = _listing(f"Here's a balanced week of preparation for your {exam}:",
                         [f"{d}: {s} ({rng.randrange(30, 120, 15)} minutes)" for d, s in zip(days, subjects)],
                         "Keep Sunday free to rest and catch up.")
        q, a = f"In the study plan you made for my {exam}, which day did you set aside for {subjects[pos]}?", days[pos]
    turns: Turns = [{"role": "user", "content": ask, "has_answer": False}, {"role": "assistant", "content": reply, "has_answer": True}]
    if rng.random() < 0.5:
        turns += [{"role": "user", "content": rng.choice(THANKS), "has_answer": False},
                  {"role": "assistant", "content": rng.choice(WELCOMES), "has_answer": False}]
    return Evidence(q, a, [(at(rng, qdate, rng.randint(3, 80)), turns)])


# ---------------------------------------------------------------- single-session-preference


def single_session_preference(rng: random.Random, qdate: datetime, variant: int, abstain: bool) -> Evidence:
    kind = variant % 5
    if kind == 0:
        diet = rng.choice(list(F.DIETS))
        cuisine, flavour = rng.choice(F.CUISINES), rng.choice(F.FLAVOURS)
        fact = f"I've been {diet} for years, and I'm obsessed with {cuisine} food, especially {flavour}."
        q = "Can you suggest something I could cook for dinner this weekend?"
        a = (f"The user would prefer {diet} recipes inspired by {cuisine} cooking, ideally with {flavour}. "
             f"They would not prefer dishes with {F.DIETS[diet]} or suggestions that ignore their love of {cuisine} food.")
    elif kind == 1:
        landscape, activity = rng.choice(F.LANDSCAPES), rng.choice(F.HOLIDAY_ACTIVITIES)
        fact = f"I'm not a beach person at all; on holiday I'd much rather be {activity} in {landscape}, and I go by train whenever I can."
        q = f"I have a week off in {rng.choice(F.MONTHS)}. Any ideas for a trip?"
        a = (f"The user would prefer a trip centred on {activity} in {landscape}, reachable by train. "
             "They would not prefer beach resorts or plans built around flying.")
    elif kind == 2:
        instrument, genre = rng.choice(F.INSTRUMENTS), rng.choice(F.MUSIC_GENRES)
        fact = f"I've been teaching myself the {instrument}, and I mostly listen to {genre}."
        q = "Can you recommend some songs I could learn next?"
        a = (f"The user would prefer {genre} songs that suit a self-taught {instrument} player. "
             "They would not prefer songs for other instruments or from unrelated genres.")
    elif kind == 3:
        sport = rng.choice(F.LOW_IMPACT)
        fact = f"I hurt my knee last year, so these days I stick to low-impact exercise, mostly {sport}."
        q = "Could you put together a workout plan for me for this week?"
        a = (f"The user would prefer a low-impact plan built around {sport} that protects their knee. "
             "They would not prefer running, jumping or other high-impact exercise.")
    else:
        subject = rng.choice(F.PODCAST_SUBJECTS)
        fact = f"I love long-form interview podcasts about {subject}; I can listen to those for hours."
        q = "Any recommendations for something to listen to on my next long drive?"
        a = (f"The user would prefer long-form interview podcasts about {subject}. "
             "They would not prefer music playlists or podcasts on unrelated topics.")
    return Evidence(q, a, [(at(rng, qdate, rng.randint(3, 80)), said(rng, fact))])


# ---------------------------------------------------------------- multi-session


def multi_session(rng: random.Random, qdate: datetime, variant: int, abstain: bool) -> Evidence:
    kind = variant % 4
    a: str | int  # LongMemEval answers are strings or integers
    k = rng.randint(2, 4)
    # at least four days apart, so "today"/"this week" in one mention never overlaps another
    offsets = sorted((w * 7 + rng.randint(0, 3) for w in rng.sample(range(1, 12), k)), reverse=True)
    if kind == 0:
        plants = rng.sample(F.PLANTS, k)
        facts = [f"I bought a {p} for my balcony {rng.choice(['yesterday', 'this morning', 'over the weekend'])}." for p in plants]
        q, a = "How many plants have I bought for my balcony?", k
        abs_q = "How many plants have I bought for my kitchen windowsill?"
        abs_a = f"You did not mention buying plants for a kitchen windowsill. You mentioned buying plants for your balcony ({', '.join(plants)})."
    elif kind == 1:
        things = rng.sample(F.GARDEN_THINGS, k)
        amounts = [rng.randrange(12, 160) for _ in things]
        facts = [f"I spent ${m} on {t} for the community garden." for t, m in zip(things, amounts)]
        q, a = "How much have I spent on the community garden in total?", f"${sum(amounts)}"
        abs_q = "How much have I spent on the school fundraiser in total?"
        abs_a = "You did not mention spending anything on a school fundraiser. You only mentioned spending on the community garden."
    elif kind == 2:
        hours = [rng.randint(2, 6) for _ in range(k)]
        facts = [f"I volunteered {h} hours at the food bank today." for h in hours]
        q, a = "How many hours have I volunteered at the food bank in total?", sum(hours)
        abs_q = "How many hours have I volunteered at the animal shelter?"
        abs_a = "You did not mention volunteering at an animal shelter. You only mentioned volunteering at the food bank."
    else:
        museums = rng.sample(F.MUSEUMS, k)
        facts = [f"I finally visited {m} {rng.choice(['yesterday', 'last weekend', 'this afternoon'])}." for m in museums]
        q, a = "How many museums have I visited recently?", k
        abs_q = "How many concerts have I been to recently?"
        abs_a = f"You did not mention going to any concerts. You mentioned visiting museums ({', '.join(museums)})."
    if abstain:
        return Evidence(abs_q, abs_a, [(at(rng, qdate, d), said(rng, f, holds_answer=False)) for d, f in zip(offsets, facts)])
    return Evidence(q, a, [(at(rng, qdate, d), said(rng, f)) for d, f in zip(offsets, facts)])


# ---------------------------------------------------------------- temporal-reasoning

SAY_DELAYS = (0, 1, 2, 3, 4, 5, 6, 7, 14, 21)  # days between an event and the session that mentions it


def _event_session(rng: random.Random, qdate: datetime, event: tuple[str, str, str], event_offset: int, delay: int,
                   holds_answer: bool = True) -> tuple[datetime, Turns]:
    when = at(rng, qdate, event_offset - delay)
    happened = qdate.date() - timedelta(days=event_offset)
    phrase = relative_phrase(rng, when.date(), happened)
    return when, said(rng, f"{event[1][:1].upper() + event[1][1:]} {phrase}.", holds_answer)


def temporal_reasoning(rng: random.Random, qdate: datetime, variant: int, abstain: bool) -> Evidence:
    kind = 0 if abstain else variant % 3
    e1, e2 = rng.sample(F.EVENTS, 2)
    d1, d2 = rng.choice(SAY_DELAYS), rng.choice(SAY_DELAYS)
    a1 = rng.randint(max(d1 + 1, 25), 90)  # e1 happens first
    a2 = rng.randint(d2 + 1, a1 - 3)  # a1 >= 25 > max delay + 3, so the range is never empty
    if abstain:
        q = f"How many days passed between {e1[0]} and {e2[0]}?"
        a = f"You mentioned {_yours(e1[0])} but never mentioned {_yours(e2[0])}, so the number of days between them cannot be determined."
        return Evidence(q, a, [_event_session(rng, qdate, e1, a1, d1, holds_answer=False)])
    sessions = [_event_session(rng, qdate, e1, a1, d1), _event_session(rng, qdate, e2, a2, d2)]
    if kind == 0:
        q, ans = f"How many days passed between {e1[0]} and {e2[0]}?", _days_answer(a1 - a2)
    elif kind == 1:
        sessions = sessions[:1]
        q, ans = f"How many days ago did I {e1[2]}?", _days_answer(a1)
    else:
        first, second = (e1, e2) if rng.random() < 0.5 else (e2, e1)
        q, ans = f"Which happened first, {first[0]} or {second[0]}?", e1[0]
    return Evidence(q, ans, sessions)


# ---------------------------------------------------------------- knowledge-update


def knowledge_update(rng: random.Random, qdate: datetime, variant: int, abstain: bool) -> Evidence:
    kind = variant % 5
    a: str | int  # LongMemEval answers are strings or integers
    old_day = rng.randint(40, 85)
    new_day = rng.randint(2, old_day - 10)
    if kind == 0:
        old_s = rng.randint(25 * 60, 32 * 60)
        new_s = old_s - rng.randint(30, 150)
        t_old, t_new = f"{old_s // 60}:{old_s % 60:02d}", f"{new_s // 60}:{new_s % 60:02d}"
        old = f"My best 5k time so far is {t_old}, and I'm trying to get faster."
        new = f"I set a new 5k personal best this morning: {t_new}!"
        q, a = "What is my current personal best for the 5k?", t_new
        abs_q, abs_a = "What is my current personal best for the half-marathon?", f"You did not mention a half-marathon time. You mentioned 5k personal bests of {t_old} and later {t_new}."
    elif kind == 1:
        ladder, company = rng.choice(F.JOB_LADDERS), rng.choice(F.COMPANIES)
        step = rng.randrange(2)
        old = f"I work as a {ladder[step]} at {company}."
        new = f"Big news: I got promoted to {ladder[step + 1]} at {company}!"
        q, a = "What is my current job title?", ladder[step + 1]
        abs_q, abs_a = "How much is my salary after the promotion?", f"You did not mention your salary. You mentioned being promoted from {ladder[step]} to {ladder[step + 1]}."
    elif kind == 2:
        before = rng.randint(3, 12)
        after = before + rng.randint(1, 4)
        old = f"I've read {before} books so far this year."
        new = f"I just finished another novel, which makes {after} books this year."
        q, a = "How many books have I read this year?", after
        abs_q, abs_a = "How many podcasts have I listened to this year?", f"You did not mention how many podcasts you listened to. You mentioned reading {after} books this year."
    elif kind == 3:
        n_old, n_new = rng.sample(F.NEIGHBOURHOODS, 2)
        old = f"We live in {n_old}, close to the river."
        new = f"We finally moved house; we're in {n_new} now."
        q, a = "Which neighbourhood do I live in now?", n_new
        abs_q, abs_a = "What is the name of my new landlord?", f"You did not mention a landlord. You mentioned moving from {n_old} to {n_new}."
    else:
        c_old, c_new = rng.sample(F.CARS, 2)
        old = f"I drive an old {c_old} that has been very reliable."
        new = f"I traded in my {c_old} for a {c_new} last weekend."
        q, a = "What car do I drive now?", c_new
        abs_q, abs_a = f"What colour is my {c_new}?", f"You did not mention the colour of your {c_new}. You mentioned trading in your {c_old} for it."
    if abstain:
        return Evidence(abs_q, abs_a, [(at(rng, qdate, old_day), said(rng, old, False)), (at(rng, qdate, new_day), said(rng, new, False))])
    return Evidence(q, a, [(at(rng, qdate, old_day), said(rng, old)), (at(rng, qdate, new_day), said(rng, new))])


BUILDERS: dict[str, Callable[[random.Random, datetime, int, bool], Evidence]] = {
    "single-session-user": single_session_user,
    "single-session-assistant": single_session_assistant,
    "single-session-preference": single_session_preference,
    "multi-session": multi_session,
    "temporal-reasoning": temporal_reasoning,
    "knowledge-update": knowledge_update,
}
# Abstention questions exist for these four types in the official data (HF xiaowu0162/longmemeval-cleaned).
ABSTENTION_TYPES = ("single-session-user", "multi-session", "temporal-reasoning", "knowledge-update")
