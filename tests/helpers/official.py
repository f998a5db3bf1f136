"""A stand-in for LongMemEval's src/evaluation/evaluate_qa.py with the same structure (a get_anscheck_prompt()
choosing one of five str.format templates) and our own placeholder wording: the official text is never
stored in this repository. Tests point `judge.official_repo` at a checkout holding it."""

from __future__ import annotations

from pathlib import Path

FAKE = '''
import json

def helper():
    return "not a template {}"

def get_anscheck_prompt(task, question, answer, response, abstention=False):
    if not abstention:
        if task in ['single-session-user', 'single-session-assistant', 'multi-session']:
            template = "DEFAULT rules for the judge, plain. \\n\\nQuestion: {}\\n\\nCorrect Answer: {}\\n\\nModel Response: {}\\n\\nOK? yes or no."
            prompt = template.format(question, answer, response)
        elif task == 'temporal-reasoning':
            template = "TEMPORAL rules with {{braces}} kept.\\n\\nQuestion: {}\\n\\nCorrect Answer: {}\\n\\nModel Response: {}\\n\\nOK? yes or no."
            prompt = template.format(question, answer, response)
        elif task == 'knowledge-update':
            template = f"KU rules as an f-string.\\n\\nQuestion: {question}\\n\\nCorrect Answer: {answer}\\n\\nModel Response: {response}\\n\\nOK?"
            prompt = template
        elif task == 'single-session-preference':
            template = "PREF rules for the judge.\\n\\nQuestion: {}\\n\\nRubric: {}\\n\\nModel Response: {}\\n\\nOK? yes or no."
            prompt = template.format(question, answer, response)
        else:
            raise NotImplementedError
    else:
        template = "ABS rules for the judge here.\\n\\nQuestion: {}\\n\\nExplanation: {}\\n\\nModel Response: {}\\n\\nOK? yes or no."
        prompt = template.format(question, answer, response)
    return prompt
'''

REL = Path("src/evaluation/evaluate_qa.py")


def make_checkout(root: Path, text: str = FAKE) -> Path:
    """A LongMemEval-shaped checkout at `root` holding `text` as its evaluate_qa.py; returns `root`."""
    f = root / REL
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text, encoding="utf-8")
    return root
