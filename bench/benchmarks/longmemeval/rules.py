"""LongMemEval's rules, each written once: its question types (in the order its metrics are printed), their short
labels, the abstention rule, which judge template a question gets, and the official judge model.

Sources (github.com/xiaowu0162/LongMemEval): `src/evaluation/evaluate_qa.py` (`get_anscheck_prompt`: template
choice and the abstention rule, a substring test on the question id; the judge model and its short names in
`model_zoo`), `src/evaluation/print_qa_metrics.py` (type order; abstention items stay in their type).
"""

from __future__ import annotations

from bench.errors import DataError

# The six question types, as LongMemEval's README lists them: the order dataset summaries, per-type subsets and
# the synthetic sample go through them (seeded subsets depend on it).
QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
# print_qa_metrics.py's order: per-type tables, figures and the summary
METRIC_ORDER = tuple(QUESTION_TYPES[i] for i in (0, 2, 1, 3, 4, 5))
SHORT_LABELS = {"single-session-user": "SSU", "single-session-preference": "SSP", "single-session-assistant": "SSA",
                "multi-session": "MS", "temporal-reasoning": "TR", "knowledge-update": "KU"}
# judged with the default template (evaluate_qa.py); the three others each have their own, abstention overrides all
DEFAULT_TYPES = ("single-session-user", "single-session-assistant", "multi-session")
TEMPLATE_NAMES = ("default", "temporal-reasoning", "knowledge-update", "single-session-preference", "abstention")

OFFICIAL_JUDGE = "gpt-4o-2024-08-06"
# Official short names used in `.eval-results-<short>` file suffixes (evaluate_qa.py's model_zoo).
JUDGE_SHORT = {"gpt-4o-2024-08-06": "gpt-4o", "gpt-4o-mini-2024-07-18": "gpt-4o-mini"}

LEGEND = ("SSU single-session-user, SSP single-session-preference, SSA single-session-assistant, "
          "MS multi-session, TR temporal-reasoning, KU knowledge-update (abstention items stay in their type).")


def is_abstention(question_id: str) -> bool:
    """An unanswerable question: `_abs` anywhere in its id (a substring, as the official code tests it)."""
    return "_abs" in question_id


def template_name(question_id: str, question_type: str) -> str:
    """Which rule set judges this question, exactly as the official script chooses it. Raises DataError for a
    type LongMemEval does not have."""
    if is_abstention(question_id):  # abstention overrides the type
        return "abstention"
    if question_type in DEFAULT_TYPES:
        return "default"
    if question_type in ("temporal-reasoning", "knowledge-update", "single-session-preference"):
        return question_type
    raise DataError(
        f"unknown question_type {question_type!r} for question {question_id!r}; "
        f"expected one of {', '.join(DEFAULT_TYPES + TEMPLATE_NAMES[1:4])}"
    )


def judge_short_name(model: str) -> str:
    """The `.eval-results-<short>` suffix: the official short name, else the model's last path part."""
    name = model.split("/")[-1]
    return JUDGE_SHORT.get(name, name)


def official_model_name(model: str) -> str:
    """The name the official scripts write and assert (`gpt-4o-2024-08-06`): the OpenAI model id without
    litellm's `openai/` routing prefix. Other providers' names stay whole (they are not the official judge)."""
    return model.split("/", 1)[1] if model.startswith("openai/") else model
