"""Typed experiment configuration. Hydra composes YAML from the package's config tree (bench/conf); this schema validates it at start-up so a
typo or a wrong type fails at once with a one-line message naming the key and the fix."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from bench.errors import ConfigError
from bench.roles import Role


@dataclass
class RoleModelCfg:
    model: str = "offline/reader"
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelCfg:
    name: str = "offline"
    actor: RoleModelCfg = field(default_factory=lambda: RoleModelCfg("offline/reader"))
    observer: RoleModelCfg = field(default_factory=lambda: RoleModelCfg("offline/observer"))
    reflector: RoleModelCfg = field(default_factory=lambda: RoleModelCfg("offline/reflector"))
    judge: RoleModelCfg = field(default_factory=lambda: RoleModelCfg("offline/judge"))
    summarizer: RoleModelCfg = field(default_factory=lambda: RoleModelCfg("offline/summarizer"))
    embedder: RoleModelCfg = field(default_factory=lambda: RoleModelCfg("offline/embedder"))
    evaluator: RoleModelCfg = field(default_factory=lambda: RoleModelCfg("offline/evaluator"))
    actor_max_input_tokens: int = 128000

    def role(self, role: Role) -> RoleModelCfg:
        """The configured model of a role (one field per `Role` value)."""
        found: RoleModelCfg = getattr(self, role.value)
        return found


@dataclass
class DatasetCfg:
    name: str = "synthetic"  # what runs are labelled with; also the split (or a file path) when `split` is unset
    benchmark: str = "longmemeval"  # a registered benchmark (bench.benchmarks.BENCHMARKS) or a module:attr path
    split: Optional[str] = None  # the benchmark's split (longmemeval: oracle, s, m, synthetic); null: `name`
    data_dir: Optional[str] = None
    limit: int = 0
    stratified: Optional[int] = None  # N questions, per type in proportion to the dataset (seeded)
    per_type: Optional[int] = None
    ids: Optional[list[str]] = None
    sample: Optional[int] = None
    seed: int = 0
    # "i/n": this job computes the i-th (1-based) of n parts of the chosen questions; every part keeps the run key,
    # writes Parquet shards under output.dir/shards/, and `ombench merge` makes them one run (docs/scale-out.md)
    shard: Optional[str] = None


def parse_shard(text: str) -> tuple[int, int]:
    """`dataset.shard` "i/n" -> (i, n), 1 <= i <= n; ConfigError (one line) otherwise."""
    left, slash, right = str(text).partition("/")
    try:
        i, n = int(left), int(right)
    except ValueError:
        i = n = 0
    if not slash or n < 1 or not 1 <= i <= n:
        raise ConfigError(f"dataset.shard={text!r}: write i/n with 1 <= i <= n (e.g. dataset.shard=2/4 for the second "
                          "of four parts), or null for the whole run")
    return i, n


@dataclass
class StrategyCfg:
    name: str = ""  # the registered strategy (bench.strategies.STRATEGIES); empty = the key it is configured under
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class CacheSimCfg:
    profiles: list[str] = field(default_factory=lambda: ["openai"])
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplayCfg:
    turn_offset_s: float = 5.0
    think_time_s: float = 0.0
    await_background: bool = True


@dataclass
class RetriesCfg:
    """answer.retries: a wrong answer asked again on a fresh question thread (Mastra's LongMemEval runner,
    explorations/longmemeval src/commands/run.ts: `maxRetries = requiresRetry ? 2 : 0`, correct if any try
    passes). Only strategies that ask the question in a question thread of their own (a `question_thread`
    param: om) retry; the single-try score stays the headline (bench.evaluate.retries)."""

    max: int = 0  # retries after a wrong first answer (0 = off; Mastra's runner: 2)
    flags_file: Optional[str] = None  # JSON list or text file of question ids that may retry; null: every question


@dataclass
class AnswerCfg:
    method: str = "con"
    history_format: str = "json"
    max_tokens: int | None = 800  # None: no cap sent (Mastra's runner sets none); the reader reserves UNCAPPED_RESERVE
    temperature: float = 0.0
    system_prompt: str = ""
    # packaged: the project's reader sentences + system_prompt; official: run_generation.py's sentences read at
    # run time (pinned, sha256-checked, as the judge's file), no system message (bench.benchmarks.longmemeval.
    # official_reader)
    prompt: str = "packaged"
    # mastra: Mastra's LongMemEval runner's Actor system text (run.ts), read at run time from this file or the
    # cache (bench.benchmarks.longmemeval.mastra_runner); null: the cache or the pinned download
    mastra_runner_file: Optional[str] = None
    retries: RetriesCfg = field(default_factory=RetriesCfg)



UNCAPPED_RESERVE = 800
"""Tokens the reader prompt leaves free in the Actor's window when `answer.max_tokens` is null (no cap is sent, as
Mastra's LongMemEval runner sends none): LongMemEval's official generation budget."""


def answer_reserve(a: AnswerCfg) -> int:
    """The tokens kept free for the answer in the Actor's window: `answer.max_tokens`, or UNCAPPED_RESERVE if null."""
    return a.max_tokens if a.max_tokens is not None else UNCAPPED_RESERVE


@dataclass
class JudgeCfg:
    source: str = "builtin"  # builtin | official (evaluate_qa.py of a checkout, else the pinned download)
    official_repo: Optional[str] = None
    parse: str = "official"  # official ('yes' anywhere) | mastra (reply is 'yes' or starts with 'yes.')
    ask_reason: bool = False  # Mastra's extra request for a reason after a "no"
    repeats: int = 1
    second_model: Optional[str] = None  # judge every question again with this model (agreement, Cohen's kappa)
    # more judges beside model.judge.model (litellm models): every question judged by each, the headline verdict is
    # their strict majority (yes only when more than half say yes), each verdict stored (bench.evaluate.judge)
    panel: list[str] = field(default_factory=list)
    audit: int = 0  # after the run, `ombench judge-audit --n N` of this judge on the run's dataset (0 = off)


@dataclass
class RunCfg:
    concurrency: int = 4
    epoch: int = 0
    progress: str = "auto"
    checkpoints: bool = True
    fail_fast: bool = False
    max_usd: Optional[float] = None  # stop scheduling questions before this job's spend would pass it
    preflight: bool = True  # keys, context windows and prices checked before any question


@dataclass
class OutputCfg:
    dir: str = "results"
    db: str = "results/bench.duckdb"
    checkpoint_dir: str = "results/checkpoints"
    response_cache: str = "results/response_cache.sqlite"
    response_cache_policy: str = "rw"
    report: bool = True
    report_dir: Optional[str] = None  # None: beside output.db (report_folder)
    report_profile: str = "openai"  # the cache profile the summary and the report's cache figures use
    store_prompts: str = "question"  # none | question (question-time calls) | all (also every replay call; large)


@dataclass
class GatewayCfg:
    max_attempts: int = 6
    max_concurrency: int = 16
    timeout_s: float = 120.0
    rpm: dict[str, int] = field(default_factory=dict)
    tpm: dict[str, int] = field(default_factory=dict)
    api_base: dict[str, str] = field(default_factory=dict)  # role or provider -> base URL (self-hosted, proxies)
    api_key_env: dict[str, str] = field(default_factory=dict)  # role or provider -> env var holding the key
    # self-hosted servers (bench.gateway.local): their defaults, and context windows they do not report
    local_defaults: bool = True
    local_max_concurrency: int | None = None
    local_timeout_s: float | None = 600.0  # wins over timeout_s for a local server; null: timeout_s applies
    local_retry_timeouts: bool = False  # true: a timed-out request to a local server is retried (max_attempts)
    context_window: dict[str, int] = field(default_factory=dict)  # role or provider -> tokens
    direct_providers: bool = True  # in-process providers (the offline engine) skip litellm's call machinery


@dataclass
class RootCfg:
    dataset: DatasetCfg = field(default_factory=DatasetCfg)
    model: ModelCfg = field(default_factory=ModelCfg)
    cachesim: CacheSimCfg = field(default_factory=CacheSimCfg)
    strategies: dict[str, StrategyCfg] = field(default_factory=dict)
    run_strategies: list[str] = field(default_factory=list)  # empty: every strategy under `strategies`, in order
    name: str = "custom"
    experiment_name: str = "custom"
    dry_run: bool = False
    dry_run_sample: int = 20
    replay: ReplayCfg = field(default_factory=ReplayCfg)
    answer: AnswerCfg = field(default_factory=AnswerCfg)
    judge: JudgeCfg = field(default_factory=JudgeCfg)
    run: RunCfg = field(default_factory=RunCfg)
    output: OutputCfg = field(default_factory=OutputCfg)
    gateway: GatewayCfg = field(default_factory=GatewayCfg)


def to_plain(cfg: Any) -> Any:
    """A composed DictConfig as plain containers, interpolations resolved. Raises ConfigError (one line) for a
    value left missing (`???`) or an interpolation that cannot resolve (e.g. an unset ${oc.env:VAR})."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(cfg, dict):
        return dict(cfg)
    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        msg = str(exc).splitlines()[0]
        key = getattr(exc, "full_key", None)
        raise ConfigError(f"config value{f' {key!r}' if key else ''}: {msg}; set it on the command line "
                          f"(e.g. {key or 'KEY'}=VALUE) or in your config files") from None


def _value_for_section(schema: Any, raw: Any, prefix: str = "") -> tuple[str, Any, list[str]] | None:
    """The first place where `raw` gives a plain value for a settings group of `schema` (a dataclass field whose
    type is a dataclass): (dotted path, the value, the group's keys); None if there is none."""
    import dataclasses
    import typing

    if not dataclasses.is_dataclass(schema) or not isinstance(raw, dict):
        return None
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        kind = hints.get(f.name)
        if f.name not in raw or not (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
            continue
        path = f"{prefix}{f.name}"
        value = raw[f.name]
        if value is not None and not isinstance(value, dict):
            return path, value, [g.name for g in dataclasses.fields(kind)]
        found = _value_for_section(kind, value, f"{path}.")
        if found is not None:
            return found
    return None


def validate(cfg: Any) -> RootCfg:
    """Merge a composed DictConfig (hydra key removed) onto the schema and check every value's type and range and
    the cross-field rules. Strategy params are resolved (their types, declared ranges and each strategy's own
    rules) when the job is assembled: `bench.assemble.assemble(cfg)` validates and resolves in one go."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    raw = to_plain(cfg)
    if not isinstance(raw, dict):
        raise ConfigError("the config is not a mapping of sections; check the config tree (bench/conf/config.yaml)")
    raw.pop("hydra", None)
    try:
        merged = OmegaConf.merge(OmegaConf.structured(RootCfg), raw)
        root = OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        msg = str(exc).splitlines()[0]
        key = getattr(exc, "full_key", None)
        section = _value_for_section(RootCfg, raw)
        if section is not None:  # `answer.retries=2`: OmegaConf says "int is not a subclass of RetriesCfg"
            path, value, fields = section
            raise ConfigError(f"{path}={value!r}: {path} is a group of settings ({', '.join(fields)}), not a single "
                              f"value; set one of them, e.g. {path}.{fields[0]}={value}") from None
        raise ConfigError(f"invalid config{f' at {key!r}' if key else ''}: {msg} (fix the value on the command line or in your config files)") from None
    if not isinstance(root, RootCfg):  # a structured config always converts to its dataclass
        raise ConfigError("the config did not convert to RootCfg; check the config tree (bench/conf/config.yaml)")
    _check_strategies(root)
    if root.answer.method not in ("con", "direct"):
        raise ConfigError(f"answer.method={root.answer.method!r}: use 'con' or 'direct'")
    if root.answer.prompt not in ("packaged", "official", "mastra"):
        raise ConfigError(f"answer.prompt={root.answer.prompt!r}: use 'packaged' (the project's words), 'official' "
                          "(LongMemEval's run_generation.py text) or 'mastra' (Mastra's runner's Actor text)")
    if root.answer.history_format not in ("json", "nl"):
        raise ConfigError(f"answer.history_format={root.answer.history_format!r}: use 'json' or 'nl'")
    if root.judge.source not in ("builtin", "official"):
        raise ConfigError(f"judge.source={root.judge.source!r}: use 'builtin' or 'official' (LongMemEval's own templates)")
    from bench.evaluate.judge import PARSE_RULES

    if root.judge.parse not in PARSE_RULES:
        rules = ", ".join(f"'{n}' ({PARSE_RULES.get(n).meaning.split(': ', 1)[-1]})" for n in PARSE_RULES.names())
        raise ConfigError(f"judge.parse={root.judge.parse!r}: use {rules}")
    if root.dataset.stratified is not None and root.dataset.stratified < 1:
        raise ConfigError(f"dataset.stratified={root.dataset.stratified}: give a number of questions >= 1 (or null)")
    if root.dataset.shard is not None:
        parse_shard(root.dataset.shard)
    if root.output.response_cache_policy not in ("rw", "ro", "off"):
        raise ConfigError(f"output.response_cache_policy={root.output.response_cache_policy!r}: use rw, ro or off")
    if root.run.concurrency < 1:
        raise ConfigError("run.concurrency must be ≥ 1")
    if root.run.progress not in ("auto", "rich", "log", "off"):
        raise ConfigError(f"run.progress={root.run.progress!r}: use auto, rich, log or off")
    if root.run.max_usd is not None and root.run.max_usd <= 0:
        raise ConfigError(f"run.max_usd={root.run.max_usd}: give a positive dollar amount, or null for no cap")
    if root.output.store_prompts not in ("none", "question", "all"):
        raise ConfigError(f"output.store_prompts={root.output.store_prompts!r}: use none, question or all")
    from bench.cachesim.registry import PROFILES

    if root.output.report_profile not in PROFILES:
        raise ConfigError(f"output.report_profile={root.output.report_profile!r}: use a cache profile "
                          f"({', '.join(PROFILES)}), one of cachesim.profiles")
    _check_numbers(root)
    return root


def _at_least(key: str, value: Any, low: float, what: str = "", *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
        raise ConfigError(f"{key}={value!r}: must be >= {low:g}{' ' + what if what else ''}"
                          f"{' (or null)' if optional else ''}")


def _positive(key: str, value: Any, what: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{key}={value!r}: must be > 0{' ' + what if what else ''}")


def _check_numbers(root: RootCfg) -> None:
    """Every number of the config in its range, named by its key (one line each, the first found)."""
    m, a, d, g = root.model, root.answer, root.dataset, root.gateway
    for r in Role:
        if not isinstance(m.role(r).model, str) or not m.role(r).model.strip():
            raise ConfigError(f"model.{r.value}.model is empty; name a litellm model (e.g. openai/gpt-4o) or the offline "
                              f"engine's ({r.offline_model})")
    _at_least("answer.max_tokens", a.max_tokens, 1, "tokens", optional=True)
    _at_least("answer.temperature", a.temperature, 0, optional=True)
    if m.actor_max_input_tokens <= answer_reserve(a):
        raise ConfigError(f"model.actor_max_input_tokens={m.actor_max_input_tokens}: must be more than answer.max_tokens "
                          f"({answer_reserve(a)}): the Actor's window holds the prompt and the answer; set the model's "
                          "context window in tokens")
    _at_least("dataset.limit", d.limit, 0, "questions (0 = all)")
    _at_least("dataset.per_type", d.per_type, 1, "questions per type", optional=True)
    _at_least("dataset.sample", d.sample, 1, "questions", optional=True)
    _at_least("judge.repeats", root.judge.repeats, 1)
    _at_least("judge.audit", root.judge.audit, 0, "questions to audit the judge on (0 = off)")
    _at_least("answer.retries.max", a.retries.max, 0, "retries of a wrong answer (0 = off; Mastra's runner: 2)")
    if a.retries.flags_file is not None:
        from bench.evaluate.retries import load_flags

        if a.retries.max == 0:
            raise ConfigError(f"answer.retries.flags_file={a.retries.flags_file!r} is set but answer.retries.max=0: "
                              "set answer.retries.max (Mastra's runner: 2) or remove the file")
        load_flags(a.retries.flags_file)
    _at_least("run.epoch", root.run.epoch, 0)
    _at_least("dry_run_sample", root.dry_run_sample, 0, "questions (0 = all)")
    _at_least("replay.turn_offset_s", root.replay.turn_offset_s, 0, "seconds")
    _at_least("replay.think_time_s", root.replay.think_time_s, 0, "seconds")
    _at_least("gateway.max_attempts", g.max_attempts, 1)
    _at_least("gateway.max_concurrency", g.max_concurrency, 1)
    _positive("gateway.timeout_s", g.timeout_s, "seconds")
    if g.local_timeout_s is not None:
        _positive("gateway.local_timeout_s", g.local_timeout_s, "seconds (or null: gateway.timeout_s applies)")
    _at_least("gateway.local_max_concurrency", g.local_max_concurrency, 1, optional=True)
    for name, url in g.api_base.items():
        if not re.match(r"https?://[^/\s]+", str(url or "")):
            from bench.secrets import redact_text

            raise ConfigError(f"gateway.api_base.{name}={redact_text(str(url))!r} is not an http(s) URL; give the "
                              "server's base URL, e.g. http://localhost:8000/v1")
    for section in ("rpm", "tpm", "context_window"):
        for name, value in getattr(g, section).items():
            _positive(f"gateway.{section}.{name}", value, "(remove the entry to leave it unset)")
    if root.output.response_cache_policy == "ro" and not Path(root.output.response_cache).is_file():
        raise ConfigError(f"output.response_cache={root.output.response_cache!r} does not exist but "
                          "output.response_cache_policy=ro; fill it with a run under rw first, or set "
                          "output.response_cache_policy=off")
    if root.output.response_cache_policy != "off" and not str(root.output.response_cache or "").strip():
        raise ConfigError("output.response_cache is empty while output.response_cache_policy is "
                          f"{root.output.response_cache_policy}; give a file path or set output.response_cache_policy=off")
    if not str(root.output.db or "").strip():
        raise ConfigError("output.db is empty; give the results file's path (default: ${output.dir}/bench.duckdb)")
    from bench.store.db import not_a_results_file

    why = not_a_results_file(root.output.db)
    if why:
        raise ConfigError(why)
    _check_paths(root)


_SQLITE_HEADER = b"SQLite format 3\x00"


def _check_paths(root: RootCfg) -> None:
    """The other files and folders a run writes are of their kind (or absent) before anything is written: a
    checkpoint folder that is a file, a response cache or OM storage file that is a folder or not SQLite."""
    cp = Path(str(root.output.checkpoint_dir or ""))
    if str(cp) and cp.exists() and not cp.is_dir():
        raise ConfigError(f"output.checkpoint_dir={str(cp)!r} is a file, not a folder; give a folder path (default: "
                          "${output.dir}/checkpoints) or move the file aside")
    files: list[tuple[str, Any]] = ([("output.response_cache", root.output.response_cache)]
                                    if root.output.response_cache_policy != "off" else [])
    files += [(f"strategies.{k}.params.storage_path", s.params.get("storage_path"))
              for k, s in root.strategies.items() if k in root.run_strategies and s.params.get("storage_path")]
    for key, value in files:
        p = Path(str(value))
        if p.is_dir():
            raise ConfigError(f"{key}={str(p)!r} is a folder; give a file path (an SQLite file is made there)")
        if p.is_file() and p.stat().st_size:
            with p.open("rb") as fh:
                head = fh.read(len(_SQLITE_HEADER))
            if head != _SQLITE_HEADER:
                raise ConfigError(f"{key}={str(p)!r} is not an SQLite file (it starts with {head[:8]!r}); give a new "
                                  "path, or move the file aside")
            why = _damaged_sqlite(p)
            if why:
                raise ConfigError(f"{key}={str(p)!r} is a damaged SQLite file ({why}); move it aside (it only caches "
                                  "what a run computes: a fresh one is made), then re-run the same command")


def _damaged_sqlite(path: Path) -> str | None:
    """Why SQLite cannot read the file's schema (a malformed image, not a database), or None. Reads only the
    schema, so a large cache is not scanned."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def _check_strategies(root: RootCfg) -> None:
    """Every configured or requested strategy names a registered one; a registered strategy requested without
    a `strategies.<name>` entry runs with its params' defaults."""
    from bench.strategies import STRATEGY_NAMES

    names = ", ".join(STRATEGY_NAMES)
    for key, s in root.strategies.items():
        kind = s.name or key
        if kind not in STRATEGY_NAMES:
            raise ConfigError(f"strategies.{key}: unknown strategy {kind!r}; set name: to one of {names}")
    if not root.run_strategies:
        root.run_strategies = list(root.strategies)
    for key in root.run_strategies:
        if key not in root.strategies:
            if key not in STRATEGY_NAMES:
                raise ConfigError(f"run_strategies: unknown strategy {key!r}; choose from {names} "
                                  f"or configure strategies.{key}.name")
            root.strategies[key] = StrategyCfg(name=key)


def report_folder(output: Any) -> str:
    """Where the end-of-run report goes: output.report_dir, or else beside the results file it reports on
    (`report/` beside `bench.duckdb`, `<stem>-report/` beside any other name), so a run moved to another results
    file never overwrites the report of the default one."""
    if output.report_dir:
        return str(output.report_dir)
    db = Path(str(output.db))
    return str(db.parent / ("report" if db.name == "bench.duckdb" else f"{db.stem}-report"))
