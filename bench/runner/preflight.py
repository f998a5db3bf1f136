"""Preflight: what can be known before the first question is sent, checked before any data is loaded or any
result written, so a run that cannot succeed fails in seconds with one line per problem (exit 2).

The checks are independent functions over one `PreflightContext` (the assembled job: its config, the model of
every role it will call, its strategies resolved once), registered by name in `CHECKS` (a `bench.registry`
registry); a later check is one function and one `register_check` call. Each yields `Finding`s: an `error` stops the run, a `warning` is printed and the run
goes on. `run.preflight=false` (`ombench run --skip-preflight`) skips them all, for gateways they
misjudge.

Built in:
- `credentials`: every real provider's key is in the environment (litellm's `validate_environment`, or the
  variable named in `gateway.api_key_env`); a role served from a base URL on this machine or a private network
  (`gateway.api_base`: a self-hosted server, sent a placeholder key) or by an in-process provider (the offline
  engine) needs none; a remote base URL (a proxy) needs its provider's key as usual. Skipped in a dry run.
- `context_windows`: `model.actor_max_input_tokens` and the tokens each strategy's calls carry at least
  (`StrategyBase.call_inputs`: OM's thresholds as its resolved engine config holds them, compaction's) fit the
  models' context windows (litellm's model info); a window litellm does not know is a warning.
- `prices`: every real model has a price in litellm's price map (else its cost is recorded as unknown).
- `judge_templates`: `judge.source=official` finds the official script (a checkout, the cache, or the
  pinned download).
- `credentials`, `prices` and `local_servers` cover the extra judges too (`judge.panel`'s members as
  `panel_judge_N`, `judge.second_model` as `second_judge`: their gateway roles).
- `local_servers`: every role served from a base URL (`gateway.api_base`) is probed, and the calls the run will
  make must fit its context window (bench.runner.local_servers; the two checks above leave those roles to it).
  Skipped in a dry run.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, TextIO

from bench.config import RootCfg
from bench.errors import ConfigError, UserError
from bench.registry import Registry
from bench.roles import Role

if TYPE_CHECKING:
    from bench.assemble import Job

Level = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    check: str
    level: Level
    message: str  # one line naming the thing and the fix


class PreflightError(UserError):
    """One or more preflight errors; its text is one line per error."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("\n".join(f.message for f in findings))
        self.findings = findings


@dataclass
class PreflightContext:
    """What the checks see: the config, whether this is a dry run, and the model of every role the job calls
    (the actor and the judge, plus the roles its strategies declare) with the tokens each role's calls carry."""

    cfg: RootCfg
    dry_run: bool
    roles: dict[Role, str]  # role -> litellm model string
    inputs: list[tuple[str, Role, int]] = field(default_factory=list)  # (strategy, role, tokens per call at least)
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)  # where keys are looked for
    job: Job | None = None  # the assembled job (its judge templates, resolved once)
    # judges beside model.judge.model, by gateway role: second_judge (judge.second_model), judge.panel's members
    judges: dict[str, str] = field(default_factory=dict)
    _info: dict[str, dict[str, Any] | None] = field(default_factory=dict, repr=False)

    def provider(self, model: str) -> str:
        """The provider the gateway routes `model` to (bench.gateway.provider_of, the one spelling)."""
        from bench.gateway.config import provider_of

        return provider_of(model)

    def in_process(self, model: str) -> bool:
        """Served by a registered in-process provider (the offline engine): no key, no window, no price."""
        from bench.gateway.providers import provider_for

        return provider_for(model) is not None

    def model_of(self, role: Role | str) -> str:
        return self.roles[role] if isinstance(role, Role) else self.judges[role]

    def api_base(self, role: Role | str) -> str | None:
        gw, name = self.cfg.gateway, role.value if isinstance(role, Role) else role
        return gw.api_base.get(name) or gw.api_base.get(self.provider(self.model_of(role)))

    def key_env(self, role: Role | str) -> str | None:
        gw, name = self.cfg.gateway, role.value if isinstance(role, Role) else role
        return gw.api_key_env.get(name) or gw.api_key_env.get(self.provider(self.model_of(role)))

    def called(self) -> dict[Role | str, str]:
        """Every role this job calls with its model: `roles`, then the extra judges (`judges`)."""
        return _merged(self.roles, self.judges)

    def real_roles(self) -> dict[Role, str]:
        return {r: m for r, m in self.roles.items() if not self.in_process(m)}

    def hosted_roles(self) -> dict[Role, str]:
        """Real roles served by a provider's own API (not a self-hosted base URL, checked by `local_servers`)."""
        return {r: m for r, m in self.real_roles().items() if not self.api_base(r)}

    def hosted_judges(self) -> dict[str, str]:
        """The extra judges (judge.second_model, judge.panel) served by a provider's own API."""
        return {r: m for r, m in self.judges.items() if not self.in_process(m) and not self.api_base(r)}

    def model_info(self, model: str) -> dict[str, Any] | None:
        """litellm's model info (context window, prices) or None when it does not know the model."""
        if model not in self._info:
            from bench.gateway.setup import ensure_litellm

            try:
                self._info[model] = dict(ensure_litellm().get_model_info(model))
            except Exception:  # litellm raises for unmapped models
                self._info[model] = None
        return self._info[model]


Check = Callable[[PreflightContext], Iterable[Finding]]


def _merged(roles: Mapping[Role, str], judges: Mapping[str, str]) -> dict[Role | str, str]:
    out: dict[Role | str, str] = {}
    for r, m in roles.items():
        out[r] = m
    for name, m in judges.items():
        out[name] = m
    return out


def _roles_of(job: Job) -> tuple[dict[Role, str], list[tuple[str, Role, int]]]:
    cfg = job.cfg
    roles = {Role.ACTOR: cfg.model.actor.model, Role.JUDGE: cfg.model.judge.model}
    inputs: list[tuple[str, Role, int]] = []
    for key, spec in job.strategies.items():
        for role in sorted(spec.roles):
            roles.setdefault(role, cfg.model.role(role).model)
        inputs.extend((key, role, tokens) for role, tokens in spec.call_inputs().items())
    return roles, inputs


def build_context(job: Job | RootCfg, *, dry_run: bool = False) -> PreflightContext:
    """The checks' view of an assembled job (a `RootCfg` is assembled first)."""
    from bench import offline
    from bench.assemble import assemble

    offline.register()  # the offline engine is an in-process provider: it needs no key
    if isinstance(job, RootCfg):
        job = assemble(job)
    roles, inputs = _roles_of(job)
    return PreflightContext(job.cfg, dry_run, roles, inputs, job=job, judges=_extra_judges(job.cfg))


def _extra_judges(cfg: RootCfg) -> dict[str, str]:
    """judge.second_model and judge.panel's members (less model.judge.model) by the gateway role that calls them."""
    from bench.assemble import SECOND_JUDGE, panel_members, panel_roles

    members = panel_members(cfg.model.judge.model, cfg.judge.panel)
    out = dict(zip(panel_roles(members), members))
    if cfg.judge.second_model:
        out[SECOND_JUDGE] = cfg.judge.second_model
    return out


# ---- the checks -------------------------------------------------------------------------------------------


def _alternatives(keys: list[str]) -> str:
    # litellm lists either-or keys for some providers (gemini: GOOGLE_API_KEY, GEMINI_API_KEY) and required
    # sets for others (azure: key, base and version)
    if len(keys) > 1 and all(k.endswith(("_API_KEY", "_TOKEN")) for k in keys):
        return " or ".join(reversed(keys))
    return " and ".join(keys)


def unused_gateway_settings(ctx: PreflightContext) -> Iterable[Finding]:
    """A warning for each `gateway.api_key_env` / `gateway.api_base` entry that applies to no role this job calls:
    its key names neither a called role nor the provider of a called role's model (the gateway reads a role's
    entry for every call of the role, in-process ones too)."""
    used = {r.value for r in ctx.roles} | {ctx.provider(m) for m in ctx.roles.values()}
    from bench.assemble import panel_members, panel_roles

    extra_judges = [m for m in (ctx.cfg.judge.second_model, *panel_members(ctx.cfg.model.judge.model,
                                                                          ctx.cfg.judge.panel)) if m]
    used |= {ctx.provider(m) for m in extra_judges} | set(panel_roles(ctx.cfg.judge.panel)) | {"second_judge"}
    gw = ctx.cfg.gateway
    for section, mapping in (("api_key_env", gw.api_key_env), ("api_base", gw.api_base)):
        for key in mapping:
            if key not in used:
                called = ", ".join(f"{r.value} ({m})" for r, m in ctx.roles.items())
                yield Finding("credentials", "warning",
                              f"gateway.{section}.{key} applies to no role this run calls ({called}); "
                              "it is ignored: check the role or provider name, or drop the setting")
    yield from _unused_timeout(ctx)


def _unused_timeout(ctx: PreflightContext) -> Iterable[Finding]:
    """A warning when `gateway.timeout_s` was changed but every real role calls a local server, where
    `gateway.local_timeout_s` wins (bench.gateway.Gateway.timeout_for)."""
    from bench.config import GatewayCfg
    from bench.gateway.local import is_local

    gw = ctx.cfg.gateway
    real = ctx.real_roles()
    if gw.timeout_s == GatewayCfg().timeout_s or not real or not gw.local_defaults or gw.local_timeout_s is None:
        return
    if all((base := ctx.api_base(role)) and is_local(base) for role in real):
        yield Finding("credentials", "warning",
                      f"gateway.timeout_s={gw.timeout_s:g} applies to no role this run calls: every one calls a local "
                      f"server, where gateway.local_timeout_s={gw.local_timeout_s:g} wins; set that instead "
                      "(or gateway.local_timeout_s=null to use timeout_s there)")


def check_credentials(ctx: PreflightContext) -> Iterable[Finding]:
    yield from unused_gateway_settings(ctx)
    if ctx.dry_run:
        return
    from bench.gateway.local import is_local
    from bench.gateway.setup import ensure_litellm
    from bench.secrets import client_url

    litellm = None
    # gateway.api_key_env: the gateway reads the named variable for every call of the role (in-process ones too)
    unset: dict[str, list[str]] = {}  # config key -> roles
    for role, model in ctx.called().items():
        var = ctx.key_env(role)
        name = role.value if isinstance(role, Role) else role
        if var is not None and not ctx.env.get(var):
            entry = name if name in ctx.cfg.gateway.api_key_env else ctx.provider(model)
            unset.setdefault(f"gateway.api_key_env.{entry}={var}", []).append(str(role))
    for setting, roles in unset.items():
        var = setting.split("=", 1)[1]
        yield Finding("credentials", "error",
                      f"{setting} names an unset environment variable ({', '.join(roles)}): export {var}=<key> "
                      "or drop the setting (keys are read from the environment, never stored)")
    needs: dict[str, list[tuple[Role | str, str]]] = {}  # variable(s) to set -> roles (and models) needing it
    real = _merged(ctx.real_roles(), {r: m for r, m in ctx.judges.items() if not ctx.in_process(m)})
    for role, model in real.items():
        if ctx.key_env(role) is not None:  # checked above
            continue
        base = ctx.api_base(role)
        if base and is_local(base):  # a self-hosted server takes any key (the gateway sends a placeholder)
            continue
        if base and client_url(base)[1]:  # the URL's password or ?api_key= is sent as the key
            continue
        litellm = litellm or ensure_litellm()
        missing = _missing_keys(litellm, model, ctx.env)
        if missing:
            needs.setdefault(_alternatives(missing), []).append((role, model))
    for var, users in needs.items():
        (role, model), rest = users[0], users[1:]
        also = "; also needed by " + ", ".join(f"{r} ({m})" for r, m in rest) if rest else ""
        yield Finding("credentials", "error",
                      f"{role} model {model} needs an API key: set {var} in the environment{also} "
                      "(keys are read from the environment, never stored; --skip-preflight skips this check)")


def _missing_keys(litellm: Any, model: str, env: Mapping[str, str]) -> list[str]:
    """The variables litellm wants for `model` and does not find in `env`; a variable set but empty (or blank,
    `OPENAI_API_KEY=`) counts as missing: litellm only checks that it is present. litellm reads the process
    environment, so it is asked with `env` (blank values removed) in its place for the duration of the call."""
    from bench.gateway.setup import keys_litellm_finds

    got = keys_litellm_finds(litellm, model, env)
    if got.get("keys_in_environment"):
        return []
    return [str(k) for k in got.get("missing_keys") or []]


def _window(ctx: PreflightContext, model: str) -> int | None:
    info = ctx.model_info(model)
    if not info:
        return None
    w = info.get("max_input_tokens") or info.get("max_tokens")
    return int(w) if w else None


def check_context_windows(ctx: PreflightContext) -> Iterable[Finding]:
    real = ctx.hosted_roles()
    unknown: list[str] = []
    actor = real.get(Role.ACTOR)
    if actor:
        w = _window(ctx, actor)
        cap = ctx.cfg.model.actor_max_input_tokens
        if w is None:
            unknown.append(f"actor {actor}")
        elif cap > w:
            yield Finding("context_windows", "error",
                          f"model.actor_max_input_tokens={cap:,} exceeds the context window of actor {actor} "
                          f"({w:,} tokens); set model.actor_max_input_tokens={w}")
    for strategy, role, tokens in ctx.inputs:
        model = real.get(role)
        if model is None:
            continue
        w = _window(ctx, model)
        if w is None:
            if f"{role} {model}" not in unknown:
                unknown.append(f"{role} {model}")
        elif tokens > w:
            yield Finding("context_windows", "error",
                          f"strategies.{strategy}: each {role} call carries at least {tokens:,} tokens, more than the "
                          f"context window of {model} ({w:,}); lower the strategy's thresholds or pick a larger model")
    if unknown:
        yield Finding("context_windows", "warning",
                      f"litellm does not know the context window of {', '.join(unknown)}: not checked "
                      "(a call past the window fails that question)")


def check_prices(ctx: PreflightContext) -> Iterable[Finding]:
    hosted = _merged(ctx.hosted_roles(), ctx.hosted_judges())
    unpriced = [f"{r} {m}" for r, m in hosted.items() if not _priced(ctx, m)]
    if unpriced:
        yield Finding("prices", "warning",
                      f"no price in litellm's price map for {', '.join(unpriced)}: their cost is recorded as unknown "
                      "($0 in totals)")


def _priced(ctx: PreflightContext, model: str) -> bool:
    info = ctx.model_info(model)
    return bool(info) and any(isinstance(v, (int, float)) and v > 0 for k, v in (info or {}).items()
                              if k.endswith("cost_per_token"))


def check_judge_templates(ctx: PreflightContext) -> Iterable[Finding]:
    j = ctx.cfg.judge
    if j.source != "official" or ctx.dry_run:  # a dry run falls back to the builtin wording by itself
        return
    try:
        if ctx.job is not None:
            _ = ctx.job.judge.templates  # resolved once: the run reads the same set
        else:
            from bench.benchmarks import get_benchmark

            get_benchmark(ctx.cfg.dataset.benchmark).judge_templates(j.source, j.official_repo,
                                                                      ask_reason=j.ask_reason)
    except ConfigError as exc:
        yield Finding("judge_templates", "error", str(exc))


def check_local_servers(ctx: PreflightContext) -> Iterable[Finding]:
    if ctx.dry_run:  # a dry run calls no server
        return
    from bench.runner.local_servers import check_local_servers as probe

    try:
        warnings = probe(ctx.job if ctx.job is not None else ctx.cfg)
    except UserError as exc:
        for line in str(exc).splitlines():
            yield Finding("local_servers", "error", line)
        return
    for line in warnings:
        yield Finding("local_servers", "warning", line)


CHECKS: Registry[Check] = Registry("preflight check", {
    "credentials": check_credentials,
    "context_windows": check_context_windows,
    "prices": check_prices,
    "judge_templates": check_judge_templates,
    "local_servers": check_local_servers,
})
# checks that may reach the network: skipped once an earlier check found an error (the run cannot start
# anyway, and the answer should come at once)
NETWORK_CHECKS: set[str] = {"judge_templates", "local_servers"}


def register_check(name: str, check: Check, *, network: bool = False) -> None:
    """Add (or replace) a named check; it runs after the ones registered before it. `network`: it may wait
    on the network, so it is skipped when an earlier check already failed."""
    CHECKS.register(name, check)
    if network:
        NETWORK_CHECKS.add(name)
    else:
        NETWORK_CHECKS.discard(name)


def run_checks(ctx: PreflightContext, names: Iterable[str] | None = None) -> list[Finding]:
    """Every registered check (or those named), in registration order; their findings in that order."""
    out: list[Finding] = []
    for name in (list(names) if names is not None else list(CHECKS)):
        if name in NETWORK_CHECKS and any(f.level == "error" for f in out):
            continue
        out.extend(CHECKS.get(name)(ctx))
    return out


def preflight(cfg: Job | RootCfg, *, dry_run: bool = False, out: TextIO | None = None) -> list[Finding]:
    """Run every check; print warnings (one line each) and raise PreflightError when any check found an error.
    Returns the findings of a run that may go on."""
    stream = out or sys.stderr
    ctx = build_context(cfg, dry_run=dry_run)
    findings = run_checks(ctx)
    errors = [f for f in findings if f.level == "error"]
    for f in findings:
        if f.level == "warning":
            print(f"ombench: warning: {f.message}", file=stream)
    if errors:
        raise PreflightError(errors)
    return findings
