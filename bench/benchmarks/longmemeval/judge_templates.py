"""Judge templates: the project's own wording (`builtin`) or the official strings read at run time out of
LongMemEval's `evaluate_qa.py` (`official`: a user's checkout, or the pinned file downloaded and cached by
`bench.benchmarks.longmemeval.official_source`). No official text is stored in this repository.

Every template is a str.format string with the named fields {question}, {answer}, {response}.
`resolve_templates` returns them as a `TemplateSet` that also says where they came from and hashes their
text (the run key includes the hash, so an edited template never reuses old labels).
"""

from __future__ import annotations

import ast
import string
from importlib import resources
from pathlib import Path

from bench.benchmarks.longmemeval.rules import DEFAULT_TYPES, QUESTION_TYPES, TEMPLATE_NAMES
from bench.errors import ConfigError
from bench.evaluate.templates import TemplateSet
_FIELDS = ("question", "answer", "response")  # the official .format(question, answer, response) order
# Mastra's judge asks for a reason after a "no" at the end of every template but knowledge-update
# (mastra-ai/mastra explorations/longmemeval/src/evaluation/longmemeval-metric.ts); `ask_reason` adds this
# request, in our words, to the same templates.
REASON_REQUEST = 'If your answer is "no", give the reason after it, as in "no: because ...".'
REASON_TEMPLATES = ("default", "temporal-reasoning", "single-session-preference", "abstention")


def builtin_templates() -> dict[str, str]:
    base = resources.files("bench.benchmarks.longmemeval") / "templates"
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


def official_templates(official_repo: Path | str | None = None) -> dict[str, str]:
    """The five templates of the official script (a checkout, else the pinned download). Raises ConfigError."""
    return resolve_templates("official", official_repo).texts


def with_reason_request(texts: dict[str, str]) -> dict[str, str]:
    """The templates with Mastra's extra request for a reason after a "no" (see REASON_REQUEST)."""
    return {n: (f"{t} {REASON_REQUEST}" if n in REASON_TEMPLATES else t) for n, t in texts.items()}


def resolve_templates(source: str = "builtin", official_repo: Path | str | None = None, *,
                      ask_reason: bool = False, base_url: str | None = None, download: bool = True) -> TemplateSet:
    """The judge templates of `source`. `official` reads `official_repo`'s script, else the pinned official
    file (cached, or downloaded once unless `download` is False: bench.benchmarks.longmemeval.official_source). Raises
    ConfigError with one line."""
    if source == "builtin":
        texts, description = builtin_templates(), "om-bench builtin wording"
    elif source == "official":
        from bench.benchmarks.longmemeval.official_source import official_file

        found = official_file(official_repo, base_url=base_url, download=download)
        texts, description = extract_official_templates(found.text, origin=str(found.path)), found.describe()
    else:
        raise ConfigError(f"unknown judge template source {source!r}; use 'builtin' or 'official'")
    if ask_reason:
        texts = with_reason_request(texts)
    return TemplateSet(texts, source, description, ask_reason)


def load_templates(source: str = "builtin", official_repo: Path | str | None = None) -> dict[str, str]:
    return resolve_templates(source, official_repo).texts
