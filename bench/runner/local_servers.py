"""Self-hosted model servers, before a run: what each role's server serves (its identity joins the run key), its
context window, and whether the calls the run will make fit in it.

For every role routed to a base URL (`gateway.api_base`), the server is asked once (bench.gateway.local): its
/v1/models entries, its context window (llama.cpp /props, vLLM max_model_len, else `gateway.context_window`),
its tokenizer (/tokenize). Token counts are o200k (the thresholds' unit) times the server's own ratio, measured
with /tokenize on om_core's Observer prompt, or `TOKEN_SAFETY_MARGIN` (1.35) when the server has no tokenizer.

Checks (`check_endpoints`), one line each, naming the setting to change:
* error: the smallest call a role will make does not fit the window (the Actor: `model.actor_max_input_tokens`,
  which holds the reader prompt and `answer.max_tokens`; OM's Observer: its instructions, `message_tokens` and its output cap; the Reflector:
  its instructions, `observation_tokens` and its cap);
* warning: the largest call may not fit (OM's Observer with a full observation log, a reflection at its
  block-after size), or the window is unknown.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, TypeVar

from bench.config import RootCfg

if TYPE_CHECKING:
    from bench.assemble import Job
from bench.gateway.local import TOKEN_SAFETY_MARGIN, ServerInfo, probe_server, scrub_url, server_token_count
from bench.roles import Role

R = TypeVar("R", Role, str)  # a role of the config (Role) or a gateway role of an extra judge (str)

RATIO_SLACK = 1.05  # on top of a measured tokenizer ratio: texts differ from the sample it was measured on
TEMPLATE_TOKENS = 64  # chat template and message overhead of one request, an upper bound
MIN_OUTPUT_ROOM = 256  # the least room an Observer/Reflector call needs for its output (its cap is lowered to fit)


@dataclass(frozen=True)
class Endpoint:
    """One role's self-hosted server, as it described itself."""

    role: str
    model: str
    base_url: str  # scrubbed
    info: ServerInfo
    context_window: int | None  # tokens as the server counts them
    window_source: str  # "server", "config" or "unknown"
    ratio: float  # server tokens per o200k token (measured x RATIO_SLACK, or TOKEN_SAFETY_MARGIN)
    ratio_source: str  # "tokenize" or "margin"

    def identity(self) -> dict[str, str]:
        """What the run key keeps of it: the base URL and the served model's identity."""
        return {"base": self.base_url, "served": self.info.identity(self.model)}

    def server_tokens(self, o200k: int) -> int:
        return math.ceil(o200k * self.ratio) + TEMPLATE_TOKENS


def _provider(model: str) -> str:
    from bench.gateway.config import provider_of  # the gateway's routing: its api_base look-up uses the same

    return provider_of(model)


def routed_roles(cfg: RootCfg, roles: Iterable[Role]) -> dict[Role, tuple[str, str]]:
    """role -> (model, base URL) for the roles sent to a base URL."""
    out = {}
    for role in roles:
        model = cfg.model.role(role).model
        base = cfg.gateway.api_base.get(role.value) or cfg.gateway.api_base.get(_provider(model))
        if base:
            out[role] = (model, str(base))
    return out


def _api_key(cfg: RootCfg, role: Role | str, model: str, base: str) -> str | None:
    """The key the gateway will send (bench.gateway.gateway `_prepare`): the variable gateway.api_key_env names,
    else the password inside the base URL, else OPENAI_API_KEY for an openai model."""
    import os

    from bench.secrets import client_url

    name = role.value if isinstance(role, Role) else role
    env = cfg.gateway.api_key_env.get(name) or cfg.gateway.api_key_env.get(_provider(model))
    if env:
        return os.environ.get(env)
    return client_url(base)[1] or (os.environ.get("OPENAI_API_KEY") if _provider(model) == "openai" else None)


async def _probe(cfg: RootCfg, routed: Mapping[R, tuple[str, str]]) -> dict[R, Endpoint]:
    from om_core.formats import build_observer_system_prompt
    from om_core.tokens import default_counter

    sample = build_observer_system_prompt("m31")
    o200k = default_counter().count_string(sample)
    infos: dict[str, ServerInfo] = {}
    out: dict[R, Endpoint] = {}
    for role, (model, base) in routed.items():
        name = role.value if isinstance(role, Role) else str(role)
        key = _api_key(cfg, role, model, base)
        info = infos.get(scrub_url(base)) or await probe_server(base, key)
        infos[scrub_url(base)] = info
        configured = cfg.gateway.context_window.get(name) or cfg.gateway.context_window.get(_provider(model))
        window, source = ((int(configured), "config") if configured
                          else (info.context_window, "server") if info.context_window else (None, "unknown"))
        counted = await server_token_count(base, info, model, sample, key)
        ratio, how = ((counted / o200k) * RATIO_SLACK, "tokenize") if counted else (TOKEN_SAFETY_MARGIN, "margin")
        out[role] = Endpoint(name, model, info.base_url, info, window, source, ratio, how)
    return out


def probe_endpoints(cfg: RootCfg, roles: Iterable[Role]) -> dict[Role, Endpoint]:
    """Ask the server of every role routed to a base URL what it serves (synchronous: before the run's loop)."""
    routed = routed_roles(cfg, roles)
    return asyncio.run(_probe(cfg, routed)) if routed else {}


def endpoint_identities(endpoints: dict[Role, Endpoint]) -> dict[str, dict[str, str]]:
    """role -> {base, served}: what the run key and the response cache keep of each self-hosted server."""
    return {role.value: ep.identity() for role, ep in sorted(endpoints.items())}


@dataclass(frozen=True)
class CallSize:
    """The o200k tokens of one role's calls: the smallest it will send, the largest it may, and who sets them."""

    role: Role
    least: int
    most: int
    setting: str  # what to lower when it does not fit


def _job(cfg: Job | RootCfg) -> Job:
    from bench.assemble import assemble

    return cfg if not isinstance(cfg, RootCfg) else assemble(cfg)


def call_sizes(cfg: Job | RootCfg, strategies: Iterable[str]) -> list[CallSize]:
    """What the run's calls carry: the Actor's window plus its answer budget, and per strategy running om_core's
    engine (its resolved `OMConfig`) its Observer and Reflector requests (instructions + thresholds + caps)."""
    from om_core import OMConfig

    job = _job(cfg)
    window = job.cfg.model.actor_max_input_tokens  # the reader prompt is cut to it less answer.max_tokens: both fit
    out = [CallSize(Role.ACTOR, window, window, "model.actor_max_input_tokens")]
    for key in strategies:
        resolved = job.spec(key).resolved
        if isinstance(resolved, OMConfig):
            out += _om_sizes(key, resolved)
    return out


def _om_sizes(key: str, c: Any) -> list[CallSize]:
    from om_core import default_counter
    from om_core.formats import build_observer_system_prompt, build_reflector_system_prompt

    count = default_counter().count_string
    multi = c.scope == "resource"
    observer = count(build_observer_system_prompt(c.profile, multi_thread=multi)) + 200  # + the task message
    reflector = count(build_reflector_system_prompt(c.profile)) + 200
    o, r = c.observation, c.reflection
    obs_cap, refl_cap = c.observer_output_cap or 0, c.reflector_output_cap or 0
    block = c.block_after_tokens or o.message_tokens
    refl_block = c.reflection_block_after_tokens or r.observation_tokens
    where = f"strategies.{key}.params"
    room = MIN_OUTPUT_ROOM
    return [
        CallSize(Role.OBSERVER, observer + o.message_tokens + room, observer + block + refl_block + obs_cap,
                 f"{where}.message_tokens or {where}.observation.max_output_tokens"),
        CallSize(Role.REFLECTOR, reflector + r.observation_tokens + room, reflector + refl_block + refl_cap,
                 f"{where}.observation_tokens or {where}.reflection.max_output_tokens"),
    ]


def probe_extra_judges(cfg: RootCfg) -> dict[str, Endpoint]:
    """The self-hosted servers of judge.panel's members and judge.second_model (by their gateway roles), probed as
    the main judge's are: a server where nothing answers is an error, an unknown window a warning."""
    from bench.assemble import SECOND_JUDGE, panel_members, panel_roles

    members = panel_members(cfg.model.judge.model, cfg.judge.panel)
    judges = dict(zip(panel_roles(members), members))
    if cfg.judge.second_model:
        judges[SECOND_JUDGE] = cfg.judge.second_model
    routed: dict[str, tuple[str, str]] = {}
    for name, model in judges.items():
        base = cfg.gateway.api_base.get(name) or cfg.gateway.api_base.get(_provider(model))
        if base and not model.startswith("offline/"):
            routed[name] = (model, str(base))
    return asyncio.run(_probe(cfg, routed)) if routed else {}


def check_endpoints(endpoints: Mapping[Any, Endpoint], sizes: list[CallSize]) -> list[tuple[str, str]]:
    """(level, message) findings: "error" when a role's smallest call cannot fit its server's window, "warning"
    when its largest may not, or when the window is unknown."""
    out: list[tuple[str, str]] = []
    down: dict[str, list[Endpoint]] = {}
    for ep in endpoints.values():
        if ep.info.down:
            down.setdefault(ep.base_url, []).append(ep)
    for base, eps in down.items():  # one line per server, naming every role it serves
        out.append(("error", f"{', '.join(sorted(e.role for e in eps))}: nothing answers at {base} ({eps[0].info.down}); "
                             f"start the server of {eps[0].model} there, or fix gateway.api_base (--skip-preflight "
                             "skips this check)"))
    for ep in endpoints.values():
        where = f"{ep.model} at {ep.base_url}"
        if ep.info.down:
            continue
        if ep.context_window is None:
            out.append(("warning", f"{ep.role}: {where} does not say its context window; set "
                                   f"gateway.context_window.{ep.role}=<tokens> so calls are checked and fitted"))
            continue
        for s in sizes:
            if s.role.value != ep.role:
                continue
            need = ep.server_tokens(s.least)
            how = "its /tokenize" if ep.ratio_source == "tokenize" else f"o200k x {TOKEN_SAFETY_MARGIN}"
            if need > ep.context_window:
                fit = max(0, int((ep.context_window - TEMPLATE_TOKENS) / ep.ratio))
                out.append(("error", f"{ep.role}: calls need at least {need} tokens ({how}) but {where} has a "
                                     f"{ep.context_window}-token window; lower {s.setting} (about {fit} o200k tokens "
                                     "fit in all)"))
            elif ep.server_tokens(s.most) > ep.context_window:
                out.append(("warning", f"{ep.role}: the largest calls may need {ep.server_tokens(s.most)} tokens "
                                       f"({how}), over the {ep.context_window}-token window of {where}; the output "
                                       f"cap is lowered to fit, or lower {s.setting}"))
    return out


def check_local_servers(cfg: Job | RootCfg) -> list[str]:
    """Probe the self-hosted servers of the job's roles and check its calls fit their windows. Returns the warnings
    (one line each); raises UserError with one line per error."""
    from bench.errors import UserError

    job = _job(cfg)
    roles: set[Role] = {Role.ACTOR, Role.JUDGE}
    for spec in job.strategies.values():
        roles |= set(spec.roles)
    endpoints: dict[Any, Endpoint] = dict(probe_endpoints(job.cfg, roles))
    endpoints.update(probe_extra_judges(job.cfg))
    if not endpoints:
        return []
    findings = check_endpoints(endpoints, call_sizes(job, job.cfg.run_strategies))
    errors = [m for level, m in findings if level == "error"]
    if errors:
        raise UserError("\n".join(errors))
    return [m for level, m in findings if level == "warning"]
