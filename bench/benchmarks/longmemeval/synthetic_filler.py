"""Filler sessions for the synthetic sample: generic help-desk conversations assembled from topic banks.

User turns only ask questions (never state personal facts, events, purchases or numbers about themselves),
so filler can never contradict or duplicate the evidence a question depends on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    name: str
    subjects: tuple[str, ...]
    asks: tuple[str, ...]  # user openers, with {subject}
    aspects: tuple[str, ...]  # what follow-up questions dig into
    tips: tuple[str, ...]  # assistant advice sentences, "Title: body"


TOPICS: tuple[Topic, ...] = (
    Topic(
        "cooking",
        ("a weeknight stir-fry", "homemade bread", "a pot of lentil soup", "roasted vegetables", "a simple risotto", "fresh pasta dough"),
        ("How do I make {subject} without it turning out bland?", "What's the trick to getting {subject} right on the first try?", "Can you walk me through {subject}?"),
        ("seasoning", "timing", "the right pan", "storing leftovers", "prepping ahead"),
        ("Heat management: let the pan get properly hot before anything goes in, or the food steams instead of browning.",
         "Salt in stages: a pinch early and a taste at the end gives a rounder flavour than one big dose.",
         "Acid at the finish: a squeeze of lemon or a splash of vinegar wakes up a dish that tastes flat.",
         "Mise en place: chop and measure everything before you start so nothing burns while you hunt for an ingredient.",
         "Rest the dough: gluten relaxes while it sits, which makes shaping far easier.",
         "Stock matters: a good stock carries most of the flavour in soups and grains.",
         "Don't crowd the tray: vegetables need space around them to caramelise.",
         "Taste as you go: recipes are guides, and your ingredients will differ from the author's."),
    ),
    Topic(
        "gardening",
        ("tomatoes in containers", "a shady flower bed", "herbs on a windowsill", "a compost heap", "raised vegetable beds", "climbing roses"),
        ("What should I know about growing {subject}?", "Any advice for {subject}? I'm a complete beginner.", "Why do people struggle with {subject}?"),
        ("watering", "soil", "pests", "sunlight", "pruning"),
        ("Water deeply, less often: roots follow moisture downwards, and shallow daily sprinkles keep them near the surface.",
         "Feed the soil: a layer of compost each season does more than any single fertiliser.",
         "Check drainage: most container failures come from pots that hold water at the bottom.",
         "Mulch: a few centimetres of bark or straw keeps moisture in and weeds down.",
         "Watch the light: six hours of direct sun is the usual minimum for fruiting plants.",
         "Rotate crops: moving plant families around each year breaks pest and disease cycles.",
         "Prune with purpose: cut just above an outward-facing bud to open up the centre.",
         "Companion planting: basil and marigolds near vegetables can distract some common pests."),
    ),
    Topic(
        "personal finance",
        ("an emergency fund", "paying down credit card debt", "a monthly budget", "index funds", "saving for a down payment", "retirement accounts"),
        ("Can you explain how to approach {subject}?", "What are the common mistakes with {subject}?", "Where should someone start with {subject}?"),
        ("interest rates", "automation", "tracking spending", "risk", "taxes"),
        ("Pay yourself first: move savings out on payday so they never sit in the spending account.",
         "Avalanche versus snowball: paying the highest rate first saves the most, smallest balance first keeps motivation up.",
         "Automate: scheduled transfers remove the monthly decision, which is where plans usually break.",
         "Know your fees: an expense ratio that looks tiny compounds into a large sum over decades.",
         "Separate goals: different accounts for different goals make progress visible.",
         "Review quarterly: a short check every few months catches drift before it becomes a problem.",
         "Diversify: spreading money across many holdings reduces the damage any single one can do.",
         "Mind the tax wrapper: the same investment can grow very differently inside and outside a tax-advantaged account."),
    ),
    Topic(
        "programming",
        ("Python list comprehensions", "unit testing", "reading a stack trace", "Git branching", "regular expressions", "async code in Python"),
        ("Could you explain {subject} with a simple example?", "I keep getting confused by {subject}. What's the mental model?", "What are good habits for {subject}?"),
        ("performance", "readability", "debugging", "edge cases", "tooling"),
        ("Start small: reproduce the problem in the fewest lines you can before changing anything.",
         "Name things well: a clear variable name often removes the need for a comment.",
         "Test the edges: empty inputs, single items and very large inputs catch most bugs.",
         "Read from the bottom: the last frame of a traceback usually points at the real failure.",
         "Commit often: small commits make it easy to find which change broke something.",
         "Prefer clarity: a plain loop is fine when a one-liner would need a second read.",
         "Use the REPL: trying an expression interactively is faster than rerunning a whole program.",
         "Let tools help: a linter and a formatter settle style questions so reviews can focus on logic."),
    ),
    Topic(
        "travel planning",
        ("a long weekend in a new city", "packing light", "travelling by overnight train", "a road trip itinerary", "jet lag", "booking accommodation"),
        ("How should I plan {subject}?", "What do experienced travellers do about {subject}?", "Any tips for {subject}?"),
        ("budget", "timing", "luggage", "local transport", "safety"),
        ("Anchor each day: pick one main sight per day and let the rest fill in around it.",
         "Pack a capsule: clothes in two or three colours that all combine halve what you need.",
         "Book the bottlenecks: popular museums and trains sell out, everything else can stay flexible.",
         "Carry copies: a photo of your passport and bookings saves hours if something goes missing.",
         "Shift gradually: moving your sleep an hour a day before departure softens jet lag.",
         "Walk a neighbourhood: the streets around a sight are often more memorable than the sight itself.",
         "Check transit passes: day passes usually pay for themselves after three rides.",
         "Leave slack: a free afternoon absorbs delays without wrecking the plan."),
    ),
    Topic(
        "home repair",
        ("a dripping tap", "squeaky floorboards", "patching drywall", "a running toilet", "sticking doors", "re-caulking a bathtub"),
        ("How hard is it to fix {subject} myself?", "What tools do I need for {subject}?", "Can you give me step-by-step help with {subject}?"),
        ("tools", "safety", "materials", "when to call a professional", "cost"),
        ("Shut off the supply: find the isolation valve before touching any plumbing.",
         "Take a photo first: a picture of how parts fit together makes reassembly painless.",
         "Use the right fixing: screws meant for wood will not hold in plasterboard without anchors.",
         "Work in thin coats: several light layers of filler sand smoother than one thick one.",
         "Clean before sealing: new caulk will not bond to old residue or soap film.",
         "Lubricate hinges: a little graphite or silicone spray often cures a sticking door.",
         "Know your limits: anything involving gas or the main electrical panel belongs to a licensed pro.",
         "Buy spare washers: they cost little and are the usual culprit in leaks."),
    ),
    Topic(
        "fitness",
        ("a beginner strength routine", "stretching after runs", "building endurance", "improving posture", "home workouts without equipment", "warming up properly"),
        ("What's a sensible way to approach {subject}?", "How often should someone work on {subject}?", "Could you outline {subject} for me?"),
        ("rest days", "form", "progression", "nutrition", "motivation"),
        ("Progress slowly: adding a little load or distance each week keeps injuries away.",
         "Form before weight: a movement done well with less load builds more than a sloppy heavy one.",
         "Schedule rest: muscles adapt during recovery, not during the workout itself.",
         "Warm up with movement: a few minutes of easy motion prepares joints better than static holds.",
         "Mix it up: combining strength, mobility and cardio covers more than any one alone.",
         "Track sessions: a simple log shows progress that the mirror hides.",
         "Sleep counts: poor sleep undoes a surprising amount of training.",
         "Protein spread: spreading protein across meals supports recovery better than one large serving."),
    ),
    Topic(
        "photography",
        ("shooting in low light", "composing landscapes", "portrait lighting", "manual mode", "editing RAW files", "street photography"),
        ("How can I get better at {subject}?", "What settings matter most for {subject}?", "Could you explain the basics of {subject}?"),
        ("shutter speed", "aperture", "ISO", "framing", "post-processing"),
        ("Balance the triangle: shutter speed, aperture and ISO trade off against each other for the same exposure.",
         "Use the thirds: placing the subject off-centre usually makes a livelier frame.",
         "Find the light first: the same scene can look flat at noon and glowing an hour before sunset.",
         "Steady the camera: below about 1/60 of a second, a support or stabilisation helps a lot.",
         "Shoot RAW: it keeps far more room to fix exposure and colour afterwards.",
         "Watch the edges: stray objects at the border pull the eye away from the subject.",
         "Expose for highlights: blown-out skies are much harder to recover than dark shadows.",
         "Edit lightly: small global adjustments beat heavy local ones for a natural look."),
    ),
    Topic(
        "language learning",
        ("learning Spanish vocabulary", "practising pronunciation", "reading in a foreign language", "grammar drills", "finding a conversation partner", "spaced repetition"),
        ("What's an efficient way to handle {subject}?", "How much time should I spend on {subject}?", "Do you have a method for {subject}?"),
        ("consistency", "listening", "speaking practice", "apps", "immersion"),
        ("Little and often: fifteen minutes daily beats two hours once a week.",
         "Learn in chunks: whole phrases stick better than isolated words.",
         "Shadow native audio: repeating right after a speaker trains rhythm and sounds together.",
         "Read graded texts: material slightly above your level builds vocabulary without frustration.",
         "Speak early: mistakes in conversation are how the grammar finally settles.",
         "Review on a schedule: spaced repetition brings words back just before you would forget them.",
         "Label your world: sticky notes on household objects turn the flat into a flashcard deck.",
         "Think aloud: narrating simple actions in the target language builds fluency cheaply."),
    ),
    Topic(
        "history",
        ("the printing press", "the Silk Road", "the building of medieval cathedrals", "the history of the calendar", "ancient Roman roads", "the invention of the telegraph"),
        ("Can you tell me about {subject}?", "Why was {subject} so important?", "What's a good summary of {subject}?"),
        ("causes", "key figures", "long-term effects", "common myths", "sources"),
        ("Context first: most inventions spread because an economic need was already waiting for them.",
         "Networks matter: ideas travelled along trade routes alongside silk, spices and coins.",
         "Labour was local: large building projects employed whole towns for generations.",
         "Standards spread power: shared measures, roads and calendars helped rulers govern distant places.",
         "Myths persist: many popular stories were invented centuries later to make a better tale.",
         "Read primary sources: letters and accounts from the period often contradict later summaries.",
         "Change was slow: what looks like a revolution in hindsight took decades to reach ordinary people.",
         "Follow the money: who paid for a project usually explains why it was built the way it was."),
    ),
    Topic(
        "career",
        ("writing a resume", "preparing for a performance review", "asking for feedback", "networking events", "negotiating salary", "writing a cover letter"),
        ("How should I go about {subject}?", "What do hiring managers look for in {subject}?", "Any advice on {subject}?"),
        ("wording", "preparation", "follow-up", "confidence", "examples"),
        ("Lead with outcomes: say what changed because of your work, with numbers where you can.",
         "Tailor each time: mirroring the language of the posting shows you read it.",
         "Prepare stories: two or three concrete examples answer most behavioural questions.",
         "Ask specific questions: 'what should I do more of' gets more useful answers than 'any feedback'.",
         "Know the range: research typical pay for the role before any number is mentioned.",
         "Follow up briefly: a short thank-you note within a day keeps you memorable.",
         "Keep it to a page: for most roles, one well-edited page beats two padded ones.",
         "Practise aloud: rehearsing answers out loud exposes the parts that ramble."),
    ),
    Topic(
        "astronomy",
        ("spotting planets with binoculars", "the phases of the moon", "meteor showers", "choosing a first telescope", "light pollution", "finding constellations"),
        ("Could you explain {subject}?", "What's the best way to get started with {subject}?", "Why does {subject} work the way it does?"),
        ("timing", "equipment", "dark-sky sites", "apps and charts", "weather"),
        ("Let your eyes adapt: twenty minutes away from screens reveals many more faint stars.",
         "Use red light: a red torch keeps your night vision while you read a chart.",
         "Start with binoculars: they show craters, moons of Jupiter and star clusters cheaply.",
         "Aperture wins: for telescopes, the diameter of the main lens or mirror matters most.",
         "Check the moon: a bright moon washes out faint objects, so plan around new moon.",
         "Look after midnight: meteor rates usually climb in the early morning hours.",
         "Learn a few anchors: a handful of bright constellations lets you find the rest by hopping.",
         "Let the scope cool: a telescope brought outside needs time to match the air temperature."),
    ),
    Topic(
        "productivity",
        ("managing a to-do list", "deep work sessions", "email overload", "planning a week", "avoiding procrastination", "running shorter meetings"),
        ("What's a good system for {subject}?", "How do people stay on top of {subject}?", "Can you suggest a routine for {subject}?"),
        ("prioritising", "focus", "tools", "habits", "reviewing"),
        ("Pick three: choosing the three tasks that matter most keeps the list honest.",
         "Batch the shallow work: answering messages in two or three blocks protects the rest of the day.",
         "Time-box: a fixed slot makes starting easier than an open-ended task.",
         "Write the next action: 'draft the first paragraph' is easier to begin than 'write report'.",
         "Review weekly: half an hour at the end of each week resets priorities before they pile up.",
         "Agenda or no meeting: a meeting without a written goal tends to expand to fill the hour.",
         "Remove friction: closing tabs and silencing notifications does more than willpower.",
         "Capture everything: an inbox for stray ideas stops them from nagging at you."),
    ),
    Topic(
        "music theory",
        ("major and minor scales", "chord progressions", "reading sheet music", "keeping time", "intervals", "writing a simple melody"),
        ("Can you explain {subject} in plain language?", "What's the easiest way to practise {subject}?", "Why does {subject} matter for playing songs?"),
        ("ear training", "practice routines", "notation", "rhythm", "harmony"),
        ("Patterns over rules: a scale is a fixed pattern of whole and half steps you can start anywhere.",
         "Hear it first: singing an interval before playing it trains the ear faster than reading about it.",
         "Use a metronome: practising slowly in time beats practising fast and unevenly.",
         "Learn common progressions: a handful of chord sequences underlies a huge share of popular songs.",
         "Count aloud: saying the beats while clapping rhythms fixes timing problems quickly.",
         "Read a little daily: a few lines of sight-reading each day adds up surprisingly fast.",
         "Resolve tension: melodies feel finished when they come back to the home note.",
         "Transcribe: working out a short tune by ear ties theory to real music."),
    ),
)

INTROS = (
    "Good question. Here is how I would think about {subject}.",
    "Happy to help with {subject}. A few points make the biggest difference.",
    "{Subject} is easier once a few basics are in place.",
    "Sure. With {subject}, people usually get the most out of the following.",
    "Here's a practical overview of {subject}.",
    "There's no single right way to handle {subject}, but these ideas work for most people.",
)
CLOSERS = (
    "If you tell me more about your situation, I can tailor this further.",
    "Start with one or two of these rather than everything at once.",
    "Let me know which part you'd like to go deeper on.",
    "Most of this becomes second nature after a few weeks of practice.",
    "Feel free to come back with follow-up questions as you try it.",
    "",
)
FOLLOWUPS = (
    "Thanks, that helps. Could you say more about {aspect}?",
    "Interesting. How does {aspect} fit into this?",
    "What would you say is the most common mistake with {aspect}?",
    "Okay. And what about {aspect}? I've read conflicting advice.",
    "That makes sense. Is {aspect} really that important for a beginner?",
    "Could you give me a concrete example involving {aspect}?",
)
ASPECT_REPLIES = (
    "On {aspect}: {tip}",
    "When it comes to {aspect}, the key idea is simple. {tip}",
    "Good follow-up. For {aspect}, {tip_lower}",
    "People often overthink {aspect}. In practice, {tip_lower}",
)
THANKS = ("Great, thank you!", "Perfect, I'll try that.", "Thanks, this is really useful.", "Got it, appreciate the help.")
OPENING_PREFIXES = ("", "", "Quick question.", "Hi!", "Hey, I could use some help.", "Hello again.", "Something I've wondered about:")
OPENING_SUFFIXES = ("", "", "Please keep it practical.", "A short list is fine.", "I'd appreciate a clear explanation.",
                    "Where would you start?", "Explain it like I'm new to this.")
WELCOMES = ("You're welcome! Good luck with it.", "Glad it helped. Enjoy!", "Anytime. Have fun trying it out.")


def _tip_body(tip: str) -> str:
    return tip.split(": ", 1)[1] if ": " in tip else tip


def _assistant_overview(rng: random.Random, topic: Topic, subject: str) -> str:
    intro = rng.choice(INTROS).format(subject=subject, Subject=subject[:1].upper() + subject[1:])
    tips = rng.sample(topic.tips, rng.randint(3, 5))
    body = "\n".join(f"{k}. **{t.split(': ', 1)[0]}**: {_tip_body(t)}" for k, t in enumerate(tips, 1))
    closer = rng.choice(CLOSERS)
    return f"{intro}\n\n{body}" + (f"\n\n{closer}" if closer else "")


def _assistant_aspect(rng: random.Random, topic: Topic, aspect: str) -> str:
    tips = rng.sample(topic.tips, 2)
    body = _tip_body(tips[0])
    first = rng.choice(ASPECT_REPLIES).format(aspect=aspect, tip=body, tip_lower=body[:1].lower() + body[1:])
    return f"{first} It also helps to remember this: {_tip_body(tips[1]).rstrip('.')}."


def filler_session(rng: random.Random, max_pairs: int | None = None) -> list[dict[str, str]]:
    """One conversation: an opening question, an overview, 0-3 follow-ups, sometimes a thank-you exchange."""
    topic = rng.choice(TOPICS)
    subject = rng.choice(topic.subjects)
    opening = " ".join(p for p in (rng.choice(OPENING_PREFIXES), rng.choice(topic.asks).format(subject=subject), rng.choice(OPENING_SUFFIXES)) if p)
    turns = [
        {"role": "user", "content": opening},
        {"role": "assistant", "content": _assistant_overview(rng, topic, subject)},
    ]
    for aspect in rng.sample(topic.aspects, rng.randint(1, 3)):
        turns.append({"role": "user", "content": rng.choice(FOLLOWUPS).format(aspect=aspect)})
        turns.append({"role": "assistant", "content": _assistant_aspect(rng, topic, aspect)})
    if rng.random() < 0.3:
        turns.append({"role": "user", "content": rng.choice(THANKS)})
        turns.append({"role": "assistant", "content": rng.choice(WELCOMES)})
    if max_pairs is not None:
        turns = turns[: max(2, 2 * max_pairs)]
    return turns


def _lower_first(text: str) -> str:
    if text.startswith(("I ", "I'")) or text[:2].isupper():
        return text
    return text[:1].lower() + text[1:]


def framed_session(rng: random.Random, fact: str, follow_ups: int | None = None) -> list[dict[str, str]]:
    """An ordinary help request whose opening user turn also mentions `fact` (turn 0 carries the evidence)."""
    topic = rng.choice(TOPICS)
    subject = rng.choice(topic.subjects)
    ask = rng.choice(topic.asks).format(subject=subject)
    opening = f"{fact} {ask}" if rng.random() < 0.5 else f"{ask} {rng.choice(ASIDES)} {_lower_first(fact)}"
    turns = [{"role": "user", "content": opening}, {"role": "assistant", "content": _assistant_overview(rng, topic, subject)}]
    n = rng.randint(0, 2) if follow_ups is None else follow_ups
    for aspect in rng.sample(topic.aspects, n):
        turns.append({"role": "user", "content": rng.choice(FOLLOWUPS).format(aspect=aspect)})
        turns.append({"role": "assistant", "content": _assistant_aspect(rng, topic, aspect)})
    return turns


ASIDES = ("By the way,", "Also, unrelated:", "Side note:", "Oh, and", "Random aside:")
