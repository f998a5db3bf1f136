"""Every `ombench run` command the README and docs show composes and validates as typed (a renamed key, group or
experiment breaks the docs here first), and a documented threshold sweep runs on data whose haystacks reach its
thresholds."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from bench.cli.run import config_dir, open_mapping_overrides
from bench.config import validate

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# flags of `ombench run` that are not config overrides (--config-dir takes the user's own folder: not composable here)
FLAGS = {"-m", "--multirun", "--skip-preflight"}


def documented_run_commands() -> list[tuple[str, str]]:
    """(file name, command) for each `ombench run ...` in a shell code block or an inline code span of the docs
    (placeholders such as `ombench run -m ...` and commands on the user's own --config-dir left out)."""
    out = []
    for doc in DOCS:
        shell, prose, in_block = [], [], False
        for ln in doc.read_text(encoding="utf-8").replace("\\\n", " ").splitlines():
            if ln.startswith("```"):
                in_block = not in_block
            else:
                (shell if in_block else prose).append(ln)
        found = [ln.split(" #")[0] for ln in shell]
        found += re.findall(r"`([^`]*ombench run [^`]*)`", " ".join(prose))
        for ln in found:
            m = re.search(r"ombench run (.*)", ln)
            if m and "..." not in m.group(1) and "--config-dir" not in m.group(1) and "-sc " not in m.group(1):
                out.append((doc.name, m.group(1).strip()))
    return out


def _one_job(arg: str) -> str:
    """A sweep override (`key=a,b,c` under -m) as its first job's value: each job composes as that one does."""
    key, _, value = arg.partition("=")
    return f"{key}={value.split(',')[0]}" if "," in value and not value.startswith(("[", "{")) else arg


def _overrides(command: str) -> list[str]:
    command = command.replace("$k", "1")  # a shell variable of a recipe (machine k of n): its first machine
    words = shlex.split(command)
    sweep = any(w in ("-m", "--multirun") for w in words)
    args = [_one_job(a) if sweep else a for a in words
            if a not in FLAGS and not a.startswith(("hydra/", "hydra."))]
    assert all("=" in a for a in args), f"not an override in {command!r}: {args}"
    return open_mapping_overrides(args)


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def help_run_commands() -> list[tuple[str, str]]:
    """The commands `ombench run --help` shows (its header in bench/conf/config.yaml)."""
    from omegaconf import OmegaConf

    header = OmegaConf.load(Path(config_dir()) / "config.yaml").hydra.help.header
    return [("run --help", m.group(1).split("   ")[0].strip()) for m in re.finditer(r"ombench run (.*)", header)
            if "=" in m.group(1)]


COMMANDS = documented_run_commands() + help_run_commands()


def test_the_docs_show_run_commands():
    assert len(COMMANDS) >= 10 and {"README.md", "run --help"} <= {f for f, _ in COMMANDS}


@pytest.mark.parametrize("doc, command", COMMANDS, ids=[f"{f}:{c[:60]}" for f, c in COMMANDS])
def test_documented_run_command_composes_and_validates(doc: str, command: str):
    root = validate(_compose(_overrides(command)))
    assert root.run_strategies is not None


def test_documented_threshold_sweeps_name_a_real_dataset():
    sweeps = [(f, c) for f, c in COMMANDS if "experiment=om_threshold_sweep" in c]
    assert sweeps
    for doc, command in sweeps:  # the synthetic sample's ~6k-token haystacks never reach 10k-40k thresholds
        root = validate(_compose(_overrides(command)))
        assert root.dataset.name != "synthetic", f"{doc}: {command}"


# paths the docs name that are not in this repository on purpose: upstream code (LongMemEval's src/, Mastra's
# packages/ and its TypeScript files), what a run writes (results/, Hydra's .hydra/), recordings kept beside the
# repository (shared/cassettes/), the user's own places
ELSEWHERE = ("src/", "packages/", "results/", ".hydra/", "shared/cassettes/", "~/", "$", "http")


def test_docs_name_only_files_of_the_repository():
    missing = []
    for doc in DOCS:
        for path in re.findall(r"`([\w.~$/-]+/[\w.-]+\.\w+)`", doc.read_text(encoding="utf-8")):
            if path.startswith(ELSEWHERE) or path.endswith(".ts"):
                continue
            if not any((base / path).exists() for base in (ROOT, doc.parent, ROOT / "bench", ROOT / "bench" / "conf")):
                missing.append(f"{doc.name}: {path}")
    assert not missing, missing


def test_every_subcommand_option_says_what_it_does():
    import argparse

    from bench.cli.commands import build_parser

    def walk(parser: argparse.ArgumentParser, path: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction):
                yield path, "/".join(action.option_strings) or action.dest, action.help

    silent = [f"{p} {opt}" for p, opt, text in walk(build_parser(), "ombench") if not text]
    assert not silent, silent
