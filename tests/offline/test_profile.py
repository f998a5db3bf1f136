"""The offline Observer's working-memory rules (bench.offline.profile): what it takes from the user's words."""

from __future__ import annotations

from bench.offline.profile import MAX_ITEMS, profile_updates, statements


def test_statements_the_patterns_spell_out():
    got = statements([
        "Hi, my name is Ana Lima. I live in Lisbon, Portugal. I work as a data engineer at a bank.",
        "I'm vegetarian and I'm allergic to shellfish. I love jazz concerts but I don't like loud bars.",
        "My favorite author is Saramago. I'm currently working on a kitchen remodel. My dog Pixel loves walks.",
    ])
    assert got == [
        ("name", "Ana Lima"), ("lives in", "Lisbon, Portugal"), ("job", "data engineer at a bank"),
        ("diet", "vegetarian"), ("allergies", "shellfish"), ("likes", "jazz concerts"), ("dislikes", "loud bars"),
        ("favorite author", "Saramago"), ("current projects", "a kitchen remodel"), ("pets", "dog Pixel"),
    ]


def test_interests_plans_and_learning():
    got = statements(["I've been getting into audiobooks lately. I'm planning to join the photography club.",
                      "I've been teaching myself the cello, and I mostly listen to baroque music.",
                      "I'm also interested in computer vision, can you recommend resources?"])
    assert got == [("interests", "audiobooks lately"), ("plans", "join the photography club"),
                   ("likes", "baroque music"), ("learning", "cello"), ("interests", "computer vision")]


def test_what_is_not_a_statement_about_the_user():
    assert statements(["I'd like a recipe please.", "I like it.", "Can you call me back?", "my name is unknown",
                       "I love that you asked.", "They live in Rome."]) == []


def test_updates_merge_lists_keep_the_newest_items_and_skip_what_is_known():
    shown = [("name", "Ana"), ("likes", "fado")]
    texts = ["My name is Ana. I love jazz.", "I love fado.", *[f"I love hobby{i}." for i in range(6)],
             "I live in Porto.", "I live in Lisbon."]
    updates = dict(profile_updates(shown, texts))
    assert "name" not in updates  # unchanged
    assert updates["lives in"] == "Lisbon"  # single-valued: the newest
    likes = updates["likes"].split("; ")
    assert len(likes) == MAX_ITEMS and likes[-1] == "hobby5" and "fado" not in likes[-2:]
    assert profile_updates([("likes", "jazz")], ["I love jazz."]) == []
