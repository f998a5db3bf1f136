"""The Actor's system text of Mastra's LongMemEval runner (`answer.prompt=mastra`), read at run time.

Upstream: github.com/mastra-ai/mastra `explorations/longmemeval/src/commands/run.ts`, the version with the
`DateInjector` processor and `@mastra/memory/processors`: its `const agentInstructions = \\`...\\`;` (two sentences)
is the first system message of the runner's Agent. The text never enters this repository: it is read out of the
file at run time, from `answer.mastra_runner_file` (a mastra-ai/mastra checkout's run.ts), else the cache, else a
download of RUNNER_REF (a checked file is cached), and checked against INSTRUCTIONS_SHA256 (the sha256 of the two sentences as stored in the
public index of that version). The hash covers the extracted text, not the whole file: run.ts changed 57 times, and
any version that carries these exact sentences gives the same request.

What the runner adds around it, and what om-bench does (docs/om.md, "Differences that remain from Mastra's
runner"): its `DateInjector` rewrites the question as `Current Date: {question_date}\\nQuestion: {question}`, the
layout every om-bench question already has; a second system message `\\ncache: <random>` only defeats OpenAI's
prompt cache and is deliberately not sent; no max tokens and temperature 0 are `answer.max_tokens: null` and
`answer.temperature: 0.0` (what the SDK then sends per model: conformance case actor-params).
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.error
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bench.benchmarks.longmemeval.official_source import _fetch, cache_dir
from bench.errors import ConfigError

RUNNER_REPO_URL = "https://github.com/mastra-ai/mastra"
RUNNER_REL = "explorations/longmemeval/src/commands/run.ts"
# The commit of the DateInjector version is not known to om-bench (the public index stores that version without
# its commit); None: no download, the file comes from answer.mastra_runner_file or the cache. Set it to a commit
# whose run.ts carries the pinned sentences (`git log -S DateInjector -- <RUNNER_REL>` in a mastra checkout).
RUNNER_REF: str | None = None
INSTRUCTIONS_SHA256 = "1359bec03e95c933c2b588f2b44a1ac43c024511fea6759274b369442e6ce1a1"  # the 2 sentences, UTF-8
RAW_BASE_URL = "https://raw.githubusercontent.com/mastra-ai/mastra"
BASE_URL_ENV = "OMBENCH_MASTRA_BASE_URL"  # a mirror of raw.githubusercontent.com/mastra-ai/mastra
_INSTRUCTIONS = re.compile(r"const agentInstructions = `([^`$]*)`;")


@dataclass(frozen=True)
class RunnerActor:
    """The runner's Actor system text and where it came from (`source`: one phrase for manifests and errors)."""

    system_text: str
    sha256: str
    source: str


def runner_instructions(script: str, where: str) -> str:
    """The `agentInstructions` template of run.ts (`where` names the file in the error). Raises ConfigError when
    the file has none (another version of run.ts, or another file)."""
    found = _INSTRUCTIONS.findall(script)
    if len(found) != 1:
        raise ConfigError(f"answer.prompt=mastra: {where} has {len(found)} `const agentInstructions = `...`;` "
                          f"templates, not 1; point answer.mastra_runner_file at {RUNNER_REL} of the version with "
                          "the DateInjector processor")
    return found[0]


def _checked(text: str, where: str, sha256: str) -> str:
    got = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if got != sha256:
        raise ConfigError(f"answer.prompt=mastra: the Actor instructions in {where} have sha256 {got[:12]}…, not the "
                          f"pinned {sha256[:12]}…; refusing them (another version of the runner file or an edit)")
    return got


def cached_path() -> Path:
    return cache_dir() / "mastra" / "runner" / RUNNER_REL


def _store(data: bytes) -> None:
    """Keep a checked run.ts in the cache (atomic: a concurrent run sees the whole file or none)."""
    target = cached_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(target)


@lru_cache(maxsize=4)
def runner_actor(runner_file: str | None = None, sha256: str | None = None) -> RunnerActor:
    """The runner's Actor system text: from `runner_file` (a local run.ts), else the cache, else downloaded at
    RUNNER_REF (then cached); `sha256`: the pinned INSTRUCTIONS_SHA256 unless given. Raises ConfigError with one
    line when it cannot be had or its sha256 differs."""
    sha256 = sha256 or INSTRUCTIONS_SHA256
    if runner_file is not None:
        path = Path(runner_file).expanduser()
        if not path.is_file():
            raise ConfigError(f"answer.mastra_runner_file={runner_file}: not found; give the path of {RUNNER_REL} in a "
                              f"checkout of {RUNNER_REPO_URL}")
        data = path.read_bytes()
        text = runner_instructions(data.decode("utf-8"), str(path))
        got = _checked(text, str(path), sha256)
        _store(data)  # later runs find it without the option
        return RunnerActor(text, got, f"Mastra runner file commands/run.ts ({path})")
    target = cached_path()
    if target.is_file():
        text = runner_instructions(target.read_text(encoding="utf-8"), str(target))
        got = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if got == sha256:
            return RunnerActor(text, got, "Mastra runner file commands/run.ts (cached)")
        target.unlink()  # a damaged or foreign copy: fetch it again
    if RUNNER_REF is None:
        raise ConfigError("answer.prompt=mastra: om-bench pins no commit of Mastra's runner to download yet; set "
                          f"answer.mastra_runner_file=PATH to {RUNNER_REL} of a {RUNNER_REPO_URL} checkout (the "
                          f"version with DateInjector; its instructions must have sha256 {sha256[:12]}…)")
    base = (os.environ.get(BASE_URL_ENV) or RAW_BASE_URL).rstrip("/")
    url = f"{base}/{RUNNER_REF}/{RUNNER_REL}"
    try:
        data = _fetch(url, 15.0)
    except (OSError, urllib.error.URLError) as exc:
        raise ConfigError(f"answer.prompt=mastra: cannot download {url} ({type(exc).__name__}: {exc}); set "
                          f"answer.mastra_runner_file=PATH to a local copy of {RUNNER_REL}") from None
    text = runner_instructions(data.decode("utf-8"), url)
    got = _checked(text, url, sha256)
    _store(data)
    return RunnerActor(text, got, f"Mastra runner file commands/run.ts @{RUNNER_REF[:7]} (downloaded)")
