
import pytest

from bench.errors import ConfigError, DataError
from bench.benchmarks.longmemeval.rules import judge_short_name, official_model_name, template_name
from bench.evaluate.judge import Judge, parse_mastra, parse_official, parse_strict
from bench.benchmarks.longmemeval.judge_templates import REASON_REQUEST, builtin_templates, extract_official_templates
from om_core.llm import Completion
from tests.helpers.official import FAKE


class Scripted:
    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list[dict], dict]] = []

    async def complete(self, messages, **params):
        self.calls.append((messages, params))
        return Completion(text=self.replies[min(len(self.calls) - 1, len(self.replies) - 1)], model="judge-x")


@pytest.mark.parametrize(
    "qid,qtype,expected",
    [
        ("a1", "single-session-user", "default"),
        ("a2", "single-session-assistant", "default"),
        ("a3", "multi-session", "default"),
        ("a4", "temporal-reasoning", "temporal-reasoning"),
        ("a5", "knowledge-update", "knowledge-update"),
        ("a6", "single-session-preference", "single-session-preference"),
        ("a7_abs", "temporal-reasoning", "abstention"),
        ("gpt4_a8_abs_2", "multi-session", "abstention"),  # substring, not suffix
        ("x_abs", "no-such-type", "abstention"),  # the official script never looks at the type here
    ],
)
def test_template_selection(qid, qtype, expected):
    assert template_name(qid, qtype) == expected


def test_unknown_type_is_a_clear_error():
    with pytest.raises(DataError, match="unknown question_type 'abstention'.*a1"):
        template_name("a1", "abstention")


def test_builtin_rule_sets_have_their_fields_and_rules():
    t = builtin_templates()
    for name, text in t.items():
        assert "\n\nQuestion: {question}\n\n" in text and "\n\nModel Response: {response}\n\n" in text, name
        assert text.rstrip().endswith("yes or no only."), name
    assert "Correct Answer: {answer}" in t["default"]
    assert "off-by-one" in t["temporal-reasoning"]
    assert "updated answer" in t["knowledge-update"]
    assert "Rubric: {answer}" in t["single-session-preference"]
    assert "Explanation: {answer}" in t["abstention"] and "cannot be answered" in t["abstention"]


def test_parsers_disagree_on_no_then_yes():
    reply = "No, although the user said yes earlier"
    assert parse_official(reply) is True and parse_strict(reply) is False
    assert parse_official("  YES.") and parse_strict("  YES.")
    assert not parse_official("no")


async def test_judge_call_params_and_disagreement():
    model = Scripted("No, ... yes")
    j = Judge(model)
    out = await j.judge("q1_abs", "knowledge-update", "Where do I live?", 5, "I don't know")
    assert out.template == "abstention" and out.label is True and out.label_strict is False and out.disagree
    assert out.agreement is None and out.repeats == [("No, ... yes", True)] and out.model == "judge-x"
    (messages, params), = model.calls
    assert messages == [{"role": "user", "content": messages[0]["content"]}]
    assert "Explanation: 5\n\nModel Response: I don't know" in messages[0]["content"]
    assert params == {"temperature": 0, "max_tokens": 10, "role": "judge"}


async def test_repeats_majority_and_agreement():
    j = Judge(Scripted("no", "yes", "yes"), repeats=3)
    out = await j.judge("q", "multi-session", "Q", "A", "H")
    assert out.label is True and out.raw == "yes" and out.agreement == pytest.approx(2 / 3)
    assert [lbl for _, lbl in out.repeats] == [False, True, True]




def test_official_source_extraction(tmp_path):
    f = tmp_path / "LongMemEval" / "src" / "evaluation" / "evaluate_qa.py"
    f.parent.mkdir(parents=True)
    f.write_text(FAKE)
    j = Judge(Scripted("yes"), source="official", official_repo=tmp_path / "LongMemEval")
    t = j.templates
    assert t["default"].startswith("DEFAULT") and t["temporal-reasoning"].startswith("TEMPORAL")
    assert t["knowledge-update"].startswith("KU") and t["single-session-preference"].startswith("PREF")
    assert t["abstention"].startswith("ABS")
    name, text = j.prompt("z", "temporal-reasoning", "Q1", 18, "19 days")
    assert name == "temporal-reasoning"
    assert text == "TEMPORAL rules with {braces} kept.\n\nQuestion: Q1\n\nCorrect Answer: 18\n\nModel Response: 19 days\n\nOK? yes or no."
    assert j.prompt("z", "knowledge-update", "Q", "A", "R")[1].endswith("Correct Answer: A\n\nModel Response: R\n\nOK?")


def test_official_source_errors(tmp_path):
    with pytest.raises(ConfigError, match="evaluate_qa.py not found"):
        Judge(Scripted("yes"), source="official", official_repo=tmp_path)
    with pytest.raises(ConfigError, match="cannot download .*judge.official_repo=PATH"):
        Judge(Scripted("yes"), source="official")  # no checkout, no cache, no network (tests/conftest.py)
    with pytest.raises(ConfigError, match="get_anscheck_prompt"):
        extract_official_templates("def other():\n    return 1\n")
    broken = FAKE.replace("elif task == 'knowledge-update':", "elif task == 'knowledge-updates':")
    with pytest.raises(ConfigError, match="knowledge-update"):
        extract_official_templates(broken)


def test_judge_short_names():
    assert judge_short_name("gpt-4o-2024-08-06") == "gpt-4o"
    assert judge_short_name("openai/gpt-4o-mini-2024-07-18") == "gpt-4o-mini"
    assert judge_short_name("offline/judge") == "judge"


@pytest.mark.parametrize(("reply", "official", "mastra"), [
    ("yes", True, True), ("Yes.", True, True), ("YES. It matches", True, True), ("Yes, it matches", True, False),
    ("yes: it does", True, False), ("no: because the response says yes to the wrong thing", True, False),
    ("no", False, False),
])
def test_parse_rules(reply, official, mastra):
    assert parse_official(reply) is official and parse_mastra(reply) is mastra


async def test_mastra_parse_and_reason_request_are_options():
    j = Judge(Scripted("Yes, the response is correct"), parse="mastra", ask_reason=True)
    out = await j.judge("q1", "multi-session", "Q", "A", "H")
    assert out.label is False  # Mastra's strict parse: not "yes" nor "yes."
    texts = j.templates
    for name in ("default", "temporal-reasoning", "single-session-preference", "abstention"):
        assert texts[name].endswith(REASON_REQUEST), name
    assert not texts["knowledge-update"].endswith(REASON_REQUEST)  # Mastra left this one alone
    plain = Judge(Scripted("Yes, the response is correct"))
    assert (await plain.judge("q1", "multi-session", "Q", "A", "H")).label is True
    assert plain.template_set.sha256 != j.template_set.sha256
    assert plain.protocol()["parse"] == "official: 'yes' anywhere in the reply"
    assert j.protocol()["parse"].startswith("mastra") and "reason after a no" in j.protocol()["templates"]
    with pytest.raises(ConfigError, match="judge.parse='loose'"):
        Judge(Scripted("yes"), parse="loose")


def test_official_model_name():
    assert official_model_name("openai/gpt-4o-2024-08-06") == "gpt-4o-2024-08-06"
    assert official_model_name("gpt-4o-2024-08-06") == "gpt-4o-2024-08-06"
    assert official_model_name("azure/gpt-4o") == "azure/gpt-4o" and official_model_name("offline/judge") == "offline/judge"
