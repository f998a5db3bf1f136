"""The model gateway: every model call of the project (Observer, Reflector, Actor, judge, summariser,
embeddings) goes through here, on litellm.

Per call: resolve the role's model and params → response cache (content-addressed; identical concurrent
requests share one provider call; skipped for custom providers registered with `response_cache=False`) →
per-provider gate (RPM/TPM buckets, AIMD concurrency, Retry-After) → litellm with our retries (tenacity;
litellm/SDK retries off), or a registered in-process provider's direct route (`CustomProvider.direct`: the
same params, without litellm's machinery for remote providers) → usage + cost → a `CallRecord` handed to
`bench.records.record_call` (the caller's `collect_calls()` block gets it) and a `Completion` whose `meta`
carries cost, latency, cache hit and retries.

One Gateway per event loop (its locks and buckets belong to the loop that first uses them). In-process
providers (the offline engine) are litellm custom providers registered in `bench.gateway.providers` before the
Gateway is built; the gateway knows them only through that registry.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Awaitable, Callable, TypeVar

from om_core.llm import Completion, Usage

from bench.errors import ConfigError
from bench.gateway.config import GatewayConfig, provider_of
from bench.gateway.errors import ErrorInfo, GatewayError, RetryableCallError, classify, redact
from bench.gateway.limits import AdaptiveConcurrency, ProviderGate, RateLimit, backoff_delay
from bench.gateway.local import TOKEN_SAFETY_MARGIN, ServerDirectory, ServerInfo, is_local, scrub_url, server_token_count
from bench.gateway.providers import DirectModel, check_model, provider_for
from bench.gateway.response_cache import CachedResponse, ResponseCache, request_key
from bench.gateway.usage import cost_of, normalize_usage
from bench.records import CallRecord, issue_number, record_call
from bench.secrets import client_url

T = TypeVar("T")
# sent to a self-hosted server (a base URL on this machine or a private network) when the environment holds no key:
# such servers take any key, and litellm's clients refuse to send a request without one
LOCAL_SERVER_KEY = "no-key-local-server"
MIN_OUTPUT_TOKENS = 16  # a prompt that leaves less room than this in the context window is refused before the call
TEMPLATE_TOKENS_PER_MESSAGE = 8  # chat-template tokens around each message (role markers), an upper bound


@dataclass
class _Prepared:
    label: str  # the role written into the CallRecord
    model: str
    provider: str
    params: dict[str, Any]  # what reaches litellm besides model/messages/routing
    epoch: int
    api_key: str | None
    api_base: str | None
    timeout: float
    cacheable: bool  # False: the provider's responses are recomputed every time, never cached
    local: bool = False  # api_base is a self-hosted server on this machine or a private network
    attempt: int = 0  # > 0: a regeneration of the same request (its own cache key: never the first answer again)
    issued: int = field(default_factory=issue_number)  # when the call started (CallRecord.issued: issue order)

    @property
    def gate_key(self) -> str:
        """Limits are per provider, and per server for a self-hosted one (its own slots, never a provider's)."""
        return f"{self.provider}@{scrub_url(self.api_base)}" if self.local and self.api_base else self.provider


class GatewayChatModel:
    """`ChatModel` bound to one role. A `role=` call param only relabels the CallRecord."""

    def __init__(self, gateway: "Gateway", role: str) -> None:
        self.gateway = gateway
        self.role = role
        self.model_name = gateway.config.role_model(role).model

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        return await self.gateway.complete(self.role, messages, **params)

    def __repr__(self) -> str:
        return f"GatewayChatModel(role={self.role!r}, model={self.model_name!r})"


class Gateway:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        for role, rm in config.roles.items():
            check_model(role, rm.model)
        self.cache: ResponseCache | None = None
        if config.cache_policy != "off":
            self.cache = ResponseCache(config.cache_path or "", config.cache_policy)
        self._gates: dict[str, ProviderGate] = {}
        self._providers: dict[str, tuple[str, bool]] = {}  # model -> (provider, responses cacheable)
        self._direct: dict[str, DirectModel | None] = {}  # provider -> its direct route (config.direct_providers)
        self._inflight: dict[str, asyncio.Future[CachedResponse | None]] = {}
        self._rng = random.Random()
        self.servers = ServerDirectory()  # self-hosted servers, probed once per base URL
        self._env_keys: dict[str, bool] = {}  # model -> whether the environment holds its provider's key

    # ------------------------------------------------------------------ public API
    def model(self, role: str) -> GatewayChatModel:
        return GatewayChatModel(self, role)

    async def complete(self, role: str, messages: list[dict[str, Any]], /, **params: Any) -> Completion:
        p = self._prepare(role, params)
        t0 = time.perf_counter()
        endpoint = await self._endpoint(p)
        keyed = {**p.params, "attempt": p.attempt} if p.attempt else p.params
        key = request_key("chat", p.model, messages, keyed, p.epoch, endpoint=endpoint) if p.cacheable else ""
        return await self._cached(p, messages, key, "chat", t0, lambda: self._chat_call(p, messages))

    async def server(self, role: str) -> ServerInfo | None:
        """What the self-hosted server of `role` says about itself (probed once per base URL), or None when the
        role has no `api_base`."""
        p = self._prepare(role, {})
        return await self.servers.get(p.api_base, p.api_key) if p.api_base else None

    async def endpoint(self, role: str) -> dict[str, str] | None:
        """`role`'s self-hosted server as keys keep it ({base, served}: `_endpoint`), or None without one."""
        return await self._endpoint(self._prepare(role, {}))

    async def _endpoint(self, p: _Prepared) -> dict[str, str] | None:
        """Where a request goes, as the response cache key needs it: the scrubbed base URL and the served model's
        identity (`ServerInfo.identity`); None for a provider's default endpoint."""
        if not p.api_base:
            return None
        info = await self.servers.get(p.api_base, p.api_key)
        return {"base": info.base_url, "served": info.identity(p.model)}

    async def embed(self, texts: list[str], role: str = "embedder", **params: Any) -> list[list[float]]:
        p = self._prepare(role, params)
        out: list[list[float]] = []
        size = self.config.embed_batch_size
        for i in range(0, len(texts), size):
            batch = list(texts[i:i + size])
            t0 = time.perf_counter()
            endpoint = await self._endpoint(p)
            key = request_key("embed", p.model, batch, p.params, p.epoch, endpoint=endpoint) if p.cacheable else ""
            comp = await self._cached(p, None, key, "embed", t0, partial(self._embed_call, p, batch))
            out.extend(comp.meta["embeddings"])
        return out

    def provider_stats(self) -> dict[str, dict[str, Any]]:
        return {
            name: {**g.stats, "concurrency_limit": g.concurrency.limit, "cuts": g.concurrency.cuts,
                   "pauses": g.pauses, "rpm_waits": g.rpm.waits if g.rpm else 0,
                   "tpm_waits": g.tpm.waits if g.tpm else 0}
            for name, g in self._gates.items()
        }

    async def aclose(self) -> None:
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    async def __aenter__(self) -> "Gateway":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ preparation
    def _prepare(self, role: str, params: dict[str, Any]) -> _Prepared:
        rm = self.config.role_model(role)
        merged = {**rm.params, **params}
        label = str(merged.pop("role", None) or role)
        epoch = int(merged.pop("epoch", 0) or 0)
        attempt = int(merged.pop("attempt", 0) or 0)  # om_core's regeneration of a refused output
        provider, cacheable = self._providers.get(rm.model) or self._providers.setdefault(rm.model, _routing(rm.model))
        # the key: the role's params, else the variable gateway.api_key_env names, else the password of the base URL
        # (OpenAI-style clients cannot send credentials inside a URL), else litellm's own variable
        api_key = merged.pop("api_key", None)
        env = self.config.api_key_env.get(role) or self.config.api_key_env.get(provider)
        if api_key is None and env:
            api_key = os.environ.get(env)
            if not api_key:
                raise ConfigError(f"gateway.api_key_env: the variable {env} (API key for {role}) is not set; export it")
        api_base = merged.pop("api_base", None) or self.config.api_base.get(role) or self.config.api_base.get(provider)
        if api_base:
            api_base, url_key = client_url(str(api_base))
            api_key = api_key if api_key is not None else url_key
        local = bool(api_base) and self.config.local_defaults and is_local(str(api_base))
        if api_key is None and not env and api_base and is_local(str(api_base)) and not self._env_key(rm.model):
            api_key = LOCAL_SERVER_KEY
        default_timeout = self.timeout_for(local)
        timeout = float(merged.pop("timeout", None) or default_timeout)
        for k in ("max_retries", "num_retries"):  # retries are ours
            merged.pop(k, None)
        return _Prepared(label, rm.model, provider, merged, epoch, api_key, api_base, timeout, cacheable, local,
                         attempt)

    def timeout_for(self, local: bool) -> float:
        """Seconds a request may take when its role's params set no `timeout`: `local_timeout_s` for a local server
        (`local_defaults`; None there: `timeout_s`), else `timeout_s`."""
        cfg = self.config
        return cfg.local_timeout_s if local and cfg.local_timeout_s is not None else cfg.timeout_s

    def _env_key(self, model: str) -> bool:
        """Whether the environment holds the key litellm wants for `model`'s provider (checked once per model). A
        variable set but empty or blank (`OPENAI_API_KEY=`) counts as absent, as in the preflight: litellm only
        checks that it is present, then sends the empty key (the client refuses: "Missing credentials"), so a local
        server gets LOCAL_SERVER_KEY instead. litellm reads the process environment: the blank variables are left
        out of it for the duration of the check."""
        if model not in self._env_keys:
            from bench.gateway.setup import ensure_litellm, keys_litellm_finds

            got = keys_litellm_finds(ensure_litellm(), model, dict(os.environ))
            self._env_keys[model] = bool(got.get("keys_in_environment"))
        return self._env_keys[model]

    def _gate(self, p: _Prepared) -> ProviderGate:
        key = p.gate_key
        gate = self._gates.get(key)
        if gate is None:
            c = self.config
            rpm, tpm = c.rpm.get(p.provider), c.tpm.get(p.provider)
            gate = ProviderGate(
                key,
                AdaptiveConcurrency(self._concurrency(p), grow_after=c.aimd_grow_after),
                RateLimit(rpm, c.limit_period_s) if rpm else None,
                RateLimit(tpm, c.limit_period_s) if tpm else None,
            )
            self._gates[key] = gate
        return gate

    def _concurrency(self, p: _Prepared) -> int:
        """Requests in flight at once: `max_concurrency` for a provider; for a local server
        `local_max_concurrency`, else the parallel slots it reports (llama.cpp), else 1."""
        if not p.local:
            return self.config.max_concurrency
        if self.config.local_max_concurrency:
            return self.config.local_max_concurrency
        info = self.servers.known(p.api_base or "")
        return info.slots if info is not None and info.slots else 1

    def _direct_route(self, p: _Prepared) -> DirectModel | None:
        """The direct route of `p`'s in-process provider (built once per gateway), or None: no such route, or
        `direct_providers` is off, so the call goes through litellm."""
        if not self.config.direct_providers:
            return None
        if p.provider not in self._direct:
            custom = provider_for(p.model)
            self._direct[p.provider] = custom.direct() if custom is not None and custom.direct is not None else None
        return self._direct[p.provider]

    def _litellm_kwargs(self, p: _Prepared) -> dict[str, Any]:
        kw: dict[str, Any] = dict(p.params)
        kw.update(model=p.model, timeout=p.timeout, max_retries=0, drop_params=True)
        if p.api_key:
            kw["api_key"] = p.api_key
        if p.api_base:
            kw["api_base"] = p.api_base
        return kw

    # ------------------------------------------------------------------ cache + single flight
    async def _cached(self, p: _Prepared, messages: list[dict[str, Any]] | None, key: str, kind: str, t0: float,
                      call: Callable[[], Awaitable[tuple[CachedResponse, int]]]) -> Completion:
        """The response from the cache, from an identical request in flight, or from `call()` (then cached).
        A provider whose responses are not cacheable is called every time (`key` is then empty)."""
        cache = self.cache if p.cacheable else None
        if cache is not None:
            hit = await cache.get(key, kind, p.model)
            if hit is not None:
                return self._finish(p, messages, hit, t0, hit=True, retries=0, key=key)
            waiter = self._inflight.get(key)
            if waiter is not None:  # the same request is on its way: share its answer
                shared = await asyncio.shield(waiter)
                if shared is not None:
                    return self._finish(p, messages, shared, t0, hit=True, retries=0, key=key, dedup=True)
        fut: asyncio.Future[CachedResponse | None] | None = None
        if cache is not None and key not in self._inflight:
            fut = asyncio.get_running_loop().create_future()
            self._inflight[key] = fut
        entry: CachedResponse | None = None
        try:
            entry, attempts = await call()
        except GatewayError as err:
            self._record_error(p, messages, err, t0)
            raise
        finally:
            if fut is not None:
                self._inflight.pop(key, None)
                fut.set_result(entry)
        if cache is not None:
            await cache.put(key, kind, p.model, entry)
        return self._finish(p, messages, entry, t0, hit=False, retries=attempts - 1, key=key)

    # ------------------------------------------------------------------ provider calls
    async def _chat_call(self, p: _Prepared, messages: list[dict[str, Any]]) -> tuple[CachedResponse, int]:
        from bench.gateway.setup import ensure_litellm

        kw = self._litellm_kwargs(p)
        kw["messages"] = messages
        await self._fit_context(p, messages, kw)
        direct = self._direct_route(p)
        if direct is not None:
            name, params = _direct_request(p, kw)

            async def attempt() -> tuple[str, Usage, str, str | None]:
                r = direct.chat(name, messages, params)
                return r.text, r.usage, r.model, r.finish_reason
        else:
            litellm = ensure_litellm()

            async def attempt() -> tuple[str, Usage, str, str | None]:
                resp = await litellm.acompletion(**kw)
                return _parse_chat(resp)

        est = self._token_estimate(p, messages)
        (text, usage, rmodel, finish), attempts, lat = await self._with_retries(p, est, attempt)
        cost = cost_of(p.model, usage)
        return CachedResponse(text=text, usage=usage, cost_usd=cost.usd, cost_known=cost.known, latency_s=lat,
                              response_model=rmodel, finish_reason=finish), attempts

    async def _fit_context(self, p: _Prepared, messages: list[dict[str, Any]], kw: dict[str, Any]) -> None:
        """On a server whose context window is known (it says so, or `gateway.context_window`): the output cap is
        lowered to what fits after the prompt, counted by the server's tokenizer (or o200k x TOKEN_SAFETY_MARGIN);
        a prompt that leaves no room fails here with kind "context", without a call."""
        window = self.context_window(p.label, p)
        if window is None:
            return
        prompt = await self.prompt_tokens(p, messages)
        room = window - prompt
        if room < MIN_OUTPUT_TOKENS:
            raise GatewayError("context", f"the prompt needs about {prompt} tokens of {p.model}'s "
                               f"{window}-token context window; lower the thresholds or use a larger window")
        for cap_key in ("max_tokens", "max_completion_tokens"):
            cap = kw.get(cap_key)
            if isinstance(cap, int) and cap > room:
                kw[cap_key] = room

    def context_window(self, role: str, p: _Prepared | None = None) -> int | None:
        """The context window (tokens) of `role`'s model: `gateway.context_window` for the role or provider, else
        what its server reported when probed; None when unknown."""
        p = p or self._prepare(role, {})
        configured = self.config.context_window.get(role) or self.config.context_window.get(p.provider)
        if configured:
            return int(configured)
        info = self.servers.known(p.api_base) if p.api_base else None
        return info.context_window if info is not None else None

    async def prompt_tokens(self, p: _Prepared, messages: list[dict[str, Any]]) -> int:
        """Tokens of a chat request as its server counts them (its /tokenize, plus a per-message allowance for
        the chat template), else o200k x TOKEN_SAFETY_MARGIN."""
        text = "\n".join(str(m.get("content") or "") for m in messages)
        info = await self.servers.get(p.api_base, p.api_key) if p.api_base else None
        counted = await server_token_count(p.api_base or "", info, p.model, text, p.api_key) if info else None
        if counted is None:
            from om_core.tokens import default_counter

            counted = math.ceil(default_counter().count_string(text) * TOKEN_SAFETY_MARGIN)
        return counted + TEMPLATE_TOKENS_PER_MESSAGE * len(messages)

    async def _embed_call(self, p: _Prepared, batch: list[str]) -> tuple[CachedResponse, int]:
        from bench.gateway.setup import ensure_litellm

        kw = self._litellm_kwargs(p)
        kw.pop("drop_params", None)
        kw["input"] = batch
        direct = self._direct_route(p)
        if direct is not None:
            name, params = _direct_request(p, kw)

            async def attempt() -> tuple[list[list[float]], Usage, str]:
                r = direct.embed(name, batch, params)
                return _direct_vectors(r.vectors, len(batch)), r.usage, r.model
        else:
            litellm = ensure_litellm()

            async def attempt() -> tuple[list[list[float]], Usage, str]:
                resp = await litellm.aembedding(**kw)
                return _parse_embedding(resp, len(batch))

        (vecs, usage, rmodel), attempts, lat = await self._with_retries(p, 0.0, attempt)
        cost = cost_of(p.model, usage)
        return CachedResponse(embeddings=vecs, usage=usage, cost_usd=cost.usd, cost_known=cost.known,
                              latency_s=lat, response_model=rmodel), attempts

    def _token_estimate(self, p: _Prepared, messages: list[dict[str, Any]]) -> float:
        """Tokens a chat request takes from its provider's TPM bucket: the prompt as litellm counts it for
        the model (its tokenizer and chat overheads; o200k when it knows none) + the completion limit."""
        if p.provider not in self.config.tpm:
            return 0.0
        from bench.gateway.setup import ensure_litellm

        prompt = ensure_litellm().token_counter(model=p.model, messages=messages)
        out = p.params.get("max_tokens") or p.params.get("max_completion_tokens") or 0
        return float(prompt + int(out))

    async def _with_retries(self, p: _Prepared, tokens: float,
                            attempt_fn: Callable[[], Awaitable[T]]) -> tuple[T, int, float]:
        from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

        gate = self._gate(p)
        secrets = [p.api_key or ""]
        cfg = self.config

        def wait(rs: RetryCallState) -> float:
            exc = rs.outcome.exception() if rs.outcome else None
            ra = exc.info.retry_after_s if isinstance(exc, RetryableCallError) else None
            return backoff_delay(rs.attempt_number, cfg.backoff_base_s, cfg.backoff_max_s, ra, self._rng)

        n = 0
        try:
            async for att in AsyncRetrying(stop=stop_after_attempt(cfg.max_attempts), wait=wait, reraise=True,
                                           retry=retry_if_exception_type(RetryableCallError)):
                with att:
                    n = att.retry_state.attempt_number
                    async with gate.slot(tokens) as generation:
                        t0 = time.perf_counter()
                        try:
                            result = await attempt_fn()
                        except (RetryableCallError, asyncio.CancelledError):
                            raise
                        except Exception as exc:
                            info = classify(exc)
                            if info.kind == "rate_limit":
                                gate.on_rate_limited(generation, info.retry_after_s)
                            # a local server keeps computing a request its client gave up on: a retry would
                            # queue behind it (and the next behind that), so a timeout there is final unless
                            # gateway.local_retry_timeouts says otherwise
                            final = p.local and info.kind == "timeout" and not cfg.local_retry_timeouts
                            if info.retryable and not final:
                                raise RetryableCallError(info) from exc
                            raise GatewayError(info.kind, redact(info.message, secrets),
                                               status_code=info.status_code, attempts=n) from exc
                        gate.concurrency.on_success()
                        return result, n, time.perf_counter() - t0
        except RetryableCallError as exc:
            i = exc.info
            raise GatewayError(i.kind, f"gave up after {n} attempts: {redact(i.message, secrets)}",
                               status_code=i.status_code, attempts=n) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ accounting
    def _finish(self, p: _Prepared, messages: list[dict[str, Any]] | None, entry: CachedResponse, t0: float, *,
                hit: bool, retries: int, key: str, dedup: bool = False) -> Completion:
        latency = time.perf_counter() - t0
        u = entry.usage
        record_call(CallRecord(
            role=p.label, model=p.model, prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
            cached_tokens_reported=u.cached_tokens, cache_write_tokens_reported=u.cache_write_tokens,
            cost_usd=entry.cost_usd, cost_known=entry.cost_known, latency_s=latency, response_cache_hit=hit,
            retries=retries, messages=messages, response=entry.text, finish_reason=entry.finish_reason,
            issued=p.issued,
        ))
        meta: dict[str, Any] = {
            "cost_usd": entry.cost_usd,  # list cost of the response (the original call's, on a cache hit)
            "cost_usd_paid": 0.0 if hit else entry.cost_usd,  # what this call spent now
            "cost_known": entry.cost_known,
            "latency_s": latency,
            "latency_s_original": entry.latency_s,
            "response_cache_hit": hit,
            "retries": retries,
            "provider": p.provider,
            "response_model": entry.response_model,
            "cache_key": key,
            "finish_reason": entry.finish_reason,
        }
        if dedup:
            meta["deduplicated"] = True
        if entry.embeddings is not None:
            meta["embeddings"] = entry.embeddings
        return Completion(text=entry.text or "", usage=u, model=p.model, meta=meta, finish_reason=entry.finish_reason)

    def _record_error(self, p: _Prepared, messages: list[dict[str, Any]] | None, err: GatewayError,
                      t0: float) -> None:
        record_call(CallRecord(role=p.label, model=p.model, latency_s=time.perf_counter() - t0,
                               retries=max(0, err.attempts - 1), error=str(err), messages=messages,
                               issued=p.issued))


def _routing(model: str) -> tuple[str, bool]:
    """(provider name, whether its responses may be cached) of a model."""
    custom = provider_for(model)
    return provider_of(model), custom is None or custom.response_cache


# what a call's litellm kwargs hold besides the provider's own params (litellm hands those to a custom provider)
_ROUTING_KW = frozenset({"model", "messages", "input", "timeout", "max_retries", "drop_params", "api_key", "api_base"})


def _direct_request(p: _Prepared, kw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the model name after `<provider>/`, the params) a direct route gets for the call litellm would make
    with `kw`: the same params a litellm custom provider receives as `optional_params` (the output cap
    already fitted to the context window)."""
    return p.model.split("/", 1)[-1], {k: v for k, v in kw.items() if k not in _ROUTING_KW}


def _direct_vectors(vectors: list[list[float]], n: int) -> list[list[float]]:
    """A direct route's embeddings, checked and converted as `_parse_embedding` treats a provider's."""
    if len(vectors) != n:
        raise RetryableCallError(ErrorInfo("malformed", f"embedding response has {len(vectors)} vectors for {n} inputs"))
    return [list(map(float, v)) for v in vectors]


def _parse_chat(resp: Any) -> tuple[str, Usage, str, str | None]:
    """(text, usage, the model the provider says answered, finish reason) of a litellm chat response."""
    choices = getattr(resp, "choices", None)
    if not choices:
        raise RetryableCallError(ErrorInfo("malformed", "response has no choices"))
    msg = getattr(choices[0], "message", None)
    text = getattr(msg, "content", None) if msg is not None else None
    finish = getattr(choices[0], "finish_reason", None)
    return (str(text or ""), normalize_usage(getattr(resp, "usage", None)), str(getattr(resp, "model", "") or ""),
            str(finish) if finish else None)


def _parse_embedding(resp: Any, n: int) -> tuple[list[list[float]], Usage, str]:
    data = getattr(resp, "data", None) or []
    items = [(d.get("index", i), d.get("embedding")) if isinstance(d, dict) else
             (getattr(d, "index", i), getattr(d, "embedding", None)) for i, d in enumerate(data)]
    if len(items) != n or any(v is None for _, v in items):
        raise RetryableCallError(ErrorInfo("malformed", f"embedding response has {len(items)} vectors for {n} inputs"))
    vecs = [list(map(float, v)) for _, v in sorted(items, key=lambda t: t[0]) if v is not None]
    return vecs, normalize_usage(getattr(resp, "usage", None)), str(getattr(resp, "model", "") or "")
