"""Every config key a message names exists: the dotted keys in the strings of the bench package (errors, warnings,
notes; docstrings aside) resolve against the composed config tree, the strategies' params dataclasses and the
sections whose keys are the user's (gateway.api_base, model.<role>.params, ...). A message that tells the user to
set `gateway.cache_path` when the key is `output.response_cache` fails here."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from bench.config import to_plain
from bench.strategies import STRATEGY_NAMES, strategy_class
from tests.helpers.runner import compose_cfg

BENCH = Path(__file__).resolve().parents[1] / "bench"
SECTIONS = ("dataset", "model", "strategies", "run", "output", "gateway", "judge", "answer", "replay", "cachesim",
            "run_strategies", "dry_run", "dry_run_sample", "experiment_name")
# a dotted key, starting with a root section; `*` stands for an f-string field, <role> for a placeholder
KEY = re.compile(r"(?<![\w./\-{$])((?:%s)(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|\*|<[a-z ]+>))+)" % "|".join(SECTIONS))
FILE_SUFFIXES = {"py", "yaml", "yml", "json", "jsonl", "html", "md", "log", "png", "duckdb", "sqlite", "parquet", "xz",
                 "gz", "csv", "txt"}
# sections whose keys are the user's to choose (a role, a provider, a model param, a cache profile)
OPEN = ("gateway.api_base", "gateway.api_key_env", "gateway.rpm", "gateway.tpm", "gateway.context_window",
        "cachesim.params")


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "*"
                       for v in node.values)
    return None


def named_keys() -> list[tuple[str, str]]:
    """(dotted key, file:line) for every key named in a non-docstring string of the bench package."""
    out = []
    for path in sorted(BENCH.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr)}
        inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if id(node) in docstrings or id(node) in inner:
                continue
            text = _text(node)
            for m in KEY.finditer(text or ""):
                key = m.group(1)
                if key.rsplit(".", 1)[-1] in FILE_SUFFIXES:
                    continue
                out.append((key, f"{path.relative_to(BENCH.parent)}:{getattr(node, 'lineno', 0)}"))
    return out


def _params_fields(strategy: str, cfg: dict[str, Any]) -> set[str]:
    kinds = STRATEGY_NAMES if strategy == "*" else [cfg["strategies"].get(strategy, {}).get("name") or strategy]
    names: set[str] = {"method", "history_format", "await_background"}  # the job's common params
    for kind in kinds:
        if kind in STRATEGY_NAMES:
            names |= {f.name for f in dataclasses.fields(strategy_class(kind).params_type)}
    return names


def resolves(key: str, cfg: dict[str, Any]) -> bool:
    parts = ["*" if p.startswith("<") else p for p in key.split(".")]
    if any(key == o or key.startswith(o + ".") for o in OPEN):
        return True
    if parts[0] == "model" and len(parts) >= 4 and parts[2] == "params":
        return resolves(".".join(parts[:3]), cfg)  # a role's model params are the user's
    if parts[0] == "strategies" and len(parts) >= 2:
        s = parts[1]
        if s != "*" and s not in cfg["strategies"] and s not in STRATEGY_NAMES:
            return False
        if len(parts) == 2:
            return True
        if parts[2] == "name":
            return len(parts) == 3
        if parts[2] != "params":
            return False
        # a dict-valued param (om's observation/reflection/config) passes further knobs through
        return len(parts) == 3 or parts[3] == "*" or parts[3] in _params_fields(s, cfg)
    return _walk(parts, cfg)


def _walk(parts: list[str], node: Any) -> bool:
    if not parts:
        return True
    if not isinstance(node, dict):
        return False
    head, rest = parts[0], parts[1:]
    if head == "*":  # an f-string field: some key of this mapping (an empty one is the user's to fill)
        return not rest or any(_walk(rest, child) for child in node.values())
    return head in node and _walk(rest, node[head])


@pytest.fixture(scope="module")
def composed(tmp_path_factory) -> dict[str, Any]:
    cfg = to_plain(compose_cfg(tmp_path_factory.mktemp("keys")))
    cfg.pop("hydra", None)
    return cfg


def test_the_scan_finds_keys_and_the_resolver_refuses_wrong_ones(composed) -> None:
    found = {k for k, _ in named_keys()}
    assert {"dataset.limit", "output.response_cache", "gateway.api_key_env"} <= found
    for wrong in ("gateway.cache_path", "dataset.first_n", "gateway.roles.actor.model", "strategies.om.params.nope",
                  "output.response_cache.path", "run.concurrency.x"):
        assert not resolves(wrong, composed), wrong
    for right in ("strategies.om_small.params.message_tokens", "model.<role>.model", "strategies.*.params.top_k",
                  "gateway.api_base.openai", "model.actor.params.api_key", "strategies.om.params.observation.x"):
        assert resolves(right, composed) or right.startswith("strategies.om_small"), right


def test_every_key_a_message_names_exists(composed) -> None:
    wrong = sorted({f"{key} ({where})" for key, where in named_keys() if not resolves(key, composed)})
    assert not wrong, "messages name config keys that do not exist:\n" + "\n".join(wrong)
