"""Judge templates: the project's own wording (`builtin`) or the official strings read at run time from a
user's LongMemEval checkout (`official`). No official text is stored in this repository.

Every template is a str.format string with the named fields {question}, {answer}, {response}.
"""

from __future__ import annotations

import ast
import string
from importlib import resources
from pathlib import Path

from bench.errors import ConfigError, DataError

DEFAULT_TYPES = ("single-session-user", "single-session-assistant", "multi-session")
TEMPLATE_NAMES = ("default", "temporal-reasoning", "knowledge-update", "single-session-preference", "abstention")
QUESTION_TYPES = DEFAULT_TYPES + ("temporal-reasoning", "knowledge-update", "single-session-preference")
_FIELDS = ("question", "answer", "response")  # the official .format(question, answer, response) order
OFFICIAL_REL = Path("src/evaluation/evaluate_qa.py")


def template_name(question_id: str, question_type: str) -> str:
    """Which rule set judges this question, exactly as the official script chooses it."""
    if "_abs" in question_id:  # abstention overrides the type (substring, as the official code)
        return "abstention"
    if question_type in DEFAULT_TYPES:
        return "default"
    if question_type in ("temporal-reasoning", "knowledge-update", "single-session-preference"):
        return question_type
    raise DataError(
        f"unknown question_type {question_type!r} for question {question_id!r}; "
        f"expected one of {', '.join(QUESTION_TYPES)}"
    )


def builtin_templates() -> dict[str, str]:
    base = resources.files("bench.evaluate") / "templates"
    return {n: (base / f"{n}.txt").read_text(encoding="utf-8").rstrip("\n") for n in TEMPLATE_NAMES}


# --- official extraction -------------------------------------------------------------------------------


def _to_named(fmt: str) -> str:
    """Turn an official positional '{}' template into our named-field form (literal braces preserved)."""
    out: list[str] = []
    pos = 0
    for literal, field, spec, conv in string.Formatter().parse(fmt):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if field is None:
            continue
        if field == "":
            name = _FIELDS[pos] if pos < len(_FIELDS) else f"extra{pos}"
            pos += 1
        elif field.isdigit():
            name = _FIELDS[int(field)]
        else:
            name = field
        out.append("{" + name + (("!" + conv) if conv else "") + ((":" + spec) if spec else "") + "}")
    return "".join(out)


def _fstring_to_named(node: ast.JoinedStr) -> str:
    out: list[str] = []
    for v in node.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            out.append(v.value.replace("{", "{{").replace("}", "}}"))
        elif isinstance(v, ast.FormattedValue):
            name = v.value.id if isinstance(v.value, ast.Name) else ast.unparse(v.value)
            out.append("{" + name + "}")
    return "".join(out)


def _string_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _to_named(node.value)
    if isinstance(node, ast.JoinedStr):
        return _fstring_to_named(node)
    return None


def _types_in(test: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(test) if isinstance(n, ast.Constant) and n.value in QUESTION_TYPES}


def _mentions_abstention(test: ast.AST) -> tuple[bool, bool]:
    """(mentions 'abstention', negated) for tests like `abstention`, `not abstention`, `'_abs' in qid`."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    names = {n.id for n in ast.walk(inner) if isinstance(n, ast.Name)}
    consts = {n.value for n in ast.walk(inner) if isinstance(n, ast.Constant)}
    return ("abstention" in names or "_abs" in consts), negated


def _collect(stmts: list[ast.stmt], types: set[str] | None, abst: bool | None, found: list) -> None:
    for st in stmts:
        if isinstance(st, ast.If):
            mentions, negated = _mentions_abstention(st.test)
            tys = _types_in(st.test)
            if mentions:
                _collect(st.body, types, not negated, found)
                _collect(st.orelse, types, negated, found)
            else:
                _collect(st.body, tys or types, abst, found)
                _collect(st.orelse, None if tys else types, abst, found)
        elif isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            text = _string_of(st.value)
            if text is not None and "{" in text and len(text) > 40:
                found.append((text, types, abst))
        elif isinstance(st, (ast.For, ast.While, ast.With, ast.Try)):
            for attr in ("body", "orelse", "finalbody"):
                _collect(getattr(st, attr, []) or [], types, abst, found)


def extract_official_templates(source: str, origin: str = "evaluate_qa.py") -> dict[str, str]:
    """Parse the official script and return the five templates keyed by TEMPLATE_NAMES."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ConfigError(f"cannot parse {origin}: {exc}; point official_repo at a LongMemEval checkout") from exc
    fn = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_anscheck_prompt"), None
    )
    if fn is None:
        raise ConfigError(f"no get_anscheck_prompt() in {origin}; point official_repo at a LongMemEval checkout")
    found: list[tuple[str, set[str] | None, bool | None]] = []
    _collect(fn.body, None, None, found)
    out: dict[str, str] = {}
    for text, types, abst in found:
        if abst:
            out.setdefault("abstention", text)
        elif types:
            if types & set(DEFAULT_TYPES):
                out.setdefault("default", text)
            for t in types - set(DEFAULT_TYPES):
                out.setdefault(t, text)
    missing = [n for n in TEMPLATE_NAMES if n not in out]
    if missing:
        raise ConfigError(
            f"could not find the {', '.join(missing)} judge template(s) in {origin}; "
            "check that official_repo is an unmodified LongMemEval checkout"
        )
    for name, text in out.items():
        for f in _FIELDS:
            if "{" + f + "}" not in text:
                raise ConfigError(f"official {name} template in {origin} lacks a {{{f}}} field; check the checkout")
    return out


def official_templates(official_repo: Path | str) -> dict[str, str]:
    path = Path(official_repo).expanduser() / OFFICIAL_REL
    if not path.is_file():
        raise ConfigError(
            f"{path} not found; set official_repo to the root of your LongMemEval checkout "
            "(github.com/xiaowu0162/LongMemEval)"
        )
    return extract_official_templates(path.read_text(encoding="utf-8"), origin=str(path))


def load_templates(source: str = "builtin", official_repo: Path | str | None = None) -> dict[str, str]:
    if source == "builtin":
        return builtin_templates()
    if source == "official":
        if official_repo is None:
            raise ConfigError("judge source 'official' needs official_repo=<path to your LongMemEval checkout>")
        return official_templates(official_repo)
    raise ConfigError(f"unknown judge template source {source!r}; use 'builtin' or 'official'")
