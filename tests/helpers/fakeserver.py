"""A local fake OpenAI-compatible server for tests and throughput benchmarks.

Serves `/v1/chat/completions` and `/v1/embeddings` on a loopback port from a background thread, so it works
both from plain code (context manager) and from inside an asyncio test. litellm talks to it as
`openai/<name>` with `api_base=server.base_url` and any dummy api_key.

Faults are injected either by a fixed schedule (arrival index -> kind) or by a seeded rate. The rate
decision is a function of (seed, request body, how often that body was seen), so which requests fail does
not depend on arrival order under concurrency.

Like a self-hosted server it also answers `GET /v1/models` (the `models` entries, changeable while it runs: a
model swap), `GET /props` when `props` is given (llama.cpp: `{"default_generation_settings": {"n_ctx": ...},
"total_slots": ...}`), `POST /tokenize` when `tokenizer` is given (vLLM `{"model", "prompt"}` -> `count` and
`tokens`, llama.cpp `{"content"}` -> `tokens`), and can cut replies at `max_tokens` (`enforce_max_tokens`) or
report any `finish_reason`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import socket
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

from aiohttp import web

FaultKind = Literal["429", "500", "503", "timeout", "malformed", "401", "400", "context"]
ALL_FAULTS: tuple[str, ...] = ("429", "500", "503", "timeout", "malformed", "401", "400", "context")
TRANSIENT_FAULTS: tuple[str, ...] = ("429", "500", "timeout", "malformed")

Responder = Callable[[dict[str, Any]], str] | Mapping[str, str] | None
Tokenizer = Callable[[str], list[int]]  # the server's own tokenizer, for /tokenize and max_tokens cuts
Embedder = Callable[[str, int], list[float]]  # (text, dimensions) -> vector
UsageFn = Callable[[dict[str, Any], str], dict[str, Any]]
Schedule = Mapping[int, str] | Sequence[str | None] | Callable[[int, dict[str, Any]], str | None] | None


def body_key(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def last_user_text(body: dict[str, Any]) -> str:
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):  # content parts
                return " ".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
            return str(c or "")
    return ""


def default_reply(body: dict[str, Any]) -> str:
    """Deterministic echo: a function of the request body only."""
    text = last_user_text(body)
    digest = body_key({"model": body.get("model"), "messages": body.get("messages")})[:8]
    return f"echo[{digest}]: {text[:200]}"


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector derived from the text's hash: equal texts give equal vectors, nothing more."""
    digest = b""
    while len(digest) < 2 * dim:
        digest += hashlib.blake2b(f"{len(digest)}\x00{text}".encode(), digest_size=64).digest()
    vec = [int.from_bytes(digest[2 * i : 2 * i + 2], "little") / 32768.0 - 1.0 for i in range(dim)]
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def _count(text: str) -> int:
    from om_core.tokens import default_counter

    return default_counter().count_string(text)


@dataclass
class FakeServerStats:
    requests: int = 0  # every chat or embedding request that reached a handler
    chat_requests: int = 0
    info_requests: Counter = field(default_factory=Counter)  # GET /v1/models, GET /props, POST /tokenize
    chat_bodies: list[dict[str, Any]] = field(default_factory=list)  # every chat request body, in arrival order
    embedding_requests: int = 0
    ok: int = 0
    in_flight: int = 0
    max_in_flight: int = 0  # the most requests the server held at once (checks client-side concurrency bounds)
    faults: Counter = field(default_factory=Counter)
    log: list[tuple[int, str, str, str | None]] = field(default_factory=list)  # (index, path, model, fault)
    auth: Counter = field(default_factory=Counter)  # Authorization header -> requests that carried it (any path)


class FakeOpenAIServer:
    """Scripted OpenAI-compatible server on 127.0.0.1.

    responder: None (echo), a dict {last user text: reply} (falls back to echo) or a callable(body) -> reply.
    latency_s: sleep before every answer. fault_rate/fault_kinds/seed: random faults; schedule: fixed faults
    by 0-based arrival index (dict, list, or callable(index, body)). cached_tokens: int or callable(body)
    for `usage.prompt_tokens_details.cached_tokens`; usage: callable(body, reply) -> usage dict, overriding all.
    embedder: callable(text, dimensions) -> vector for `/v1/embeddings` (default `hashed_embedding`, which has
    no notion of similarity; pass e.g. the offline engine's embedder when a test needs lexical similarity).
    models: the `/v1/models` entries (assign `.models` to swap the model while running). props: the body of
    `GET /props` (404 when None). tokenizer: callable(text) -> token ids for `POST /tokenize` (404 when None) and
    for `enforce_max_tokens` (else o200k). enforce_max_tokens: a reply longer than the request's `max_tokens`
    is cut there with `finish_reason` "length". finish_reason: the reported reason, or callable(body) -> reason.
    """

    def __init__(
        self,
        responder: Responder = None,
        *,
        latency_s: float = 0.0,
        fault_rate: float = 0.0,
        fault_kinds: Sequence[str] = TRANSIENT_FAULTS,
        seed: int = 0,
        schedule: Schedule = None,
        cached_tokens: int | Callable[[dict[str, Any]], int] = 0,
        usage: UsageFn | None = None,
        retry_after_s: float = 0.05,
        hang_s: float = 30.0,
        embed_dim: int = 16,
        embedder: Embedder = hashed_embedding,
        count_tokens: bool = True,
        models: Sequence[Mapping[str, Any]] | None = None,
        props: Mapping[str, Any] | None = None,
        tokenizer: Tokenizer | None = None,
        enforce_max_tokens: bool = False,
        finish_reason: str | Callable[[dict[str, Any]], str] = "stop",
    ) -> None:
        unknown = [k for k in fault_kinds if k not in ALL_FAULTS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; use any of {ALL_FAULTS}")
        self.responder = responder
        self.latency_s = latency_s
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.seed = seed
        self.schedule = schedule
        self.cached_tokens = cached_tokens
        self.usage_fn = usage
        self.retry_after_s = retry_after_s
        self.hang_s = hang_s
        self.embed_dim = embed_dim
        self.embedder = embedder
        self.count_tokens = count_tokens
        self.models: list[dict[str, Any]] = [dict(m) for m in (models or [{"id": "fake-model", "object": "model"}])]
        self.props = dict(props) if props is not None else None
        self.tokenizer = tokenizer
        self.enforce_max_tokens = enforce_max_tokens
        self.finish_reason = finish_reason
        self.stats = FakeServerStats()
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self.port: int = 0

    # ---------------------------------------------------------------- lifecycle
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "FakeOpenAIServer":
        ready = threading.Event()
        errors: list[BaseException] = []

        def _run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:  # pragma: no cover - port/bind problems
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup() if self._runner else asyncio.sleep(0))
            loop.close()

        self._thread = threading.Thread(target=_run, name="fake-openai-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if errors:
            raise errors[0]
        return self

    async def _start_site(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._tracked(self._chat))
        app.router.add_post("/v1/embeddings", self._tracked(self._embeddings))
        app.router.add_get("/v1/models", self._tracked(self._models))
        app.router.add_get("/props", self._tracked(self._props))
        app.router.add_post("/tokenize", self._tracked(self._tokenize))
        # handler_cancellation: a client that timed out stops a hanging handler instead of leaking it
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # bound here, so its free port is known
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        loop = self._loop
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        self._loop = None
        self._thread = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset_stats(self) -> None:
        with self._lock:
            self.stats = FakeServerStats()

    def _tracked(self, handler: Callable[[web.Request], Any]) -> Callable[[web.Request], Any]:
        async def run(request: web.Request) -> web.StreamResponse:
            with self._lock:
                self.stats.auth[request.headers.get("Authorization", "")] += 1
                self.stats.in_flight += 1
                self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            try:
                return await handler(request)
            finally:
                with self._lock:
                    self.stats.in_flight -= 1

        return run

    # ---------------------------------------------------------------- faults
    def _pick_fault(self, index: int, body: dict[str, Any]) -> str | None:
        sch = self.schedule
        if sch is not None:
            if callable(sch):
                return sch(index, body)
            if isinstance(sch, Mapping):
                return sch.get(index)
            return sch[index] if index < len(sch) else None
        if self.fault_rate <= 0:
            return None
        key = body_key(body)
        with self._lock:
            attempt = self._seen[key]
            self._seen[key] += 1
        rng = random.Random(f"{self.seed}:{key}:{attempt}")
        if rng.random() >= self.fault_rate:
            return None
        return rng.choice(self.fault_kinds)

    async def _fault_response(self, kind: str) -> web.StreamResponse | None:
        def err(status: int, message: str, etype: str, code: str, headers: dict[str, str] | None = None):
            payload = {"error": {"message": message, "type": etype, "param": None, "code": code}}
            return web.json_response(payload, status=status, headers=headers)

        if kind == "429":
            ra = self.retry_after_s
            return err(429, "Rate limit reached for requests (fake server)", "requests", "rate_limit_exceeded",
                       {"Retry-After": f"{ra:g}", "retry-after-ms": str(int(ra * 1000))})
        if kind in ("500", "503"):
            return err(int(kind), "The server had an error while processing your request (fake)", "server_error",
                       "server_error")
        if kind == "401":
            return err(401, "Incorrect API key provided (fake server)", "invalid_request_error", "invalid_api_key")
        if kind == "400":
            return err(400, "Invalid request: unsupported parameter (fake server)", "invalid_request_error",
                       "invalid_request")
        if kind == "context":
            return err(400, "This model's maximum context length is 128000 tokens. However, your messages resulted "
                       "in 200000 tokens. Please reduce the length of the messages.", "invalid_request_error",
                       "context_length_exceeded")
        if kind == "malformed":
            return web.Response(status=200, text='{"id": "chatcmpl-fake", "choices": [{"index": 0, "mess',
                                content_type="application/json")
        if kind == "timeout":
            await asyncio.sleep(self.hang_s)
            return None  # the client gave up long ago; answer normally if it did not
        raise ValueError(kind)  # pragma: no cover

    async def _admit(self, request: web.Request, path: str) -> tuple[dict[str, Any], web.StreamResponse | None]:
        try:
            body = await request.json()
        except Exception:
            return {}, web.json_response({"error": {"message": "body is not JSON", "code": "bad_json"}}, status=400)
        with self._lock:
            index = self.stats.requests
            self.stats.requests += 1
            if path == "chat":
                self.stats.chat_requests += 1
            else:
                self.stats.embedding_requests += 1
        fault = self._pick_fault(index, body)
        with self._lock:
            self.stats.log.append((index, path, str(body.get("model", "")), fault))
            if fault:
                self.stats.faults[fault] += 1
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        if fault:
            resp = await self._fault_response(fault)
            if resp is not None:
                return body, resp
        return body, None

    # ---------------------------------------------------------------- endpoints
    def _reply_text(self, body: dict[str, Any]) -> str:
        r = self.responder
        if r is None:
            return default_reply(body)
        if callable(r):
            return r(body)
        return r.get(last_user_text(body), default_reply(body))

    def _usage(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        if self.usage_fn is not None:
            return self.usage_fn(body, text)
        if self.count_tokens:
            prompt = sum(_count(str(m.get("content") or "")) + 3 for m in body.get("messages") or []) + 3
            completion = _count(text)
        else:
            prompt, completion = 10, 20
        cached = self.cached_tokens(body) if callable(self.cached_tokens) else self.cached_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": min(cached, prompt)},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }

    def _tokens(self, text: str) -> list[int]:
        if self.tokenizer is not None:
            return self.tokenizer(text)
        from om_core.tokens import default_counter

        return default_counter().encode(text)

    def _finish(self, body: dict[str, Any], text: str) -> tuple[str, str]:
        """The reply, cut at max_tokens when enforced, and its finish reason."""
        finish = self.finish_reason(body) if callable(self.finish_reason) else self.finish_reason
        cap = body.get("max_tokens") or body.get("max_completion_tokens")
        if self.enforce_max_tokens and isinstance(cap, int) and len(self._tokens(text)) > cap:
            from om_core.tokens import default_counter

            if self.tokenizer is None:
                text = default_counter().decode(self._tokens(text)[:cap])
            else:  # a custom tokenizer has no decoder: cut by the share of tokens kept
                text = text[: max(1, len(text) * cap // len(self._tokens(text)))]
            finish = "length"
        return text, finish

    async def _info(self, name: str) -> None:
        with self._lock:  # not in `requests`: fault schedules index chat and embedding requests only
            self.stats.info_requests[name] += 1

    async def _models(self, request: web.Request) -> web.StreamResponse:
        await self._info("models")
        return web.json_response({"object": "list", "data": [{**m, "created": 1_700_000_000} for m in self.models]})

    async def _props(self, request: web.Request) -> web.StreamResponse:
        await self._info("props")
        if self.props is None:
            return web.json_response({"error": {"message": "Not Found", "code": 404}}, status=404)
        return web.json_response(self.props)

    async def _tokenize(self, request: web.Request) -> web.StreamResponse:
        await self._info("tokenize")
        if self.tokenizer is None:
            return web.json_response({"error": {"message": "Not Found", "code": 404}}, status=404)
        body = await request.json()
        if "prompt" in body:  # vLLM
            tokens = self.tokenizer(str(body["prompt"]))
            return web.json_response({"count": len(tokens), "max_model_len": 0, "tokens": tokens})
        return web.json_response({"tokens": self.tokenizer(str(body.get("content", "")))})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, fault = await self._admit(request, "chat")
        if fault is not None:
            return fault
        with self._lock:
            self.stats.chat_bodies.append(body)
        text, finish = self._finish(body, self._reply_text(body))
        digest = body_key(body)[:12]
        payload = {
            "id": f"chatcmpl-{digest}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", "fake"),
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                         "logprobs": None}],
            "usage": self._usage(body, text),
        }
        with self._lock:
            self.stats.ok += 1
        return web.json_response(payload)

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body, fault = await self._admit(request, "embeddings")
        if fault is not None:
            return fault
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs or []]
        dim = int(body.get("dimensions") or self.embed_dim)
        data = [{"object": "embedding", "index": i, "embedding": self.embedder(t, dim)} for i, t in enumerate(texts)]
        tokens = sum(_count(t) for t in texts) if self.count_tokens else len(texts)
        with self._lock:
            self.stats.ok += 1
        return web.json_response({"object": "list", "data": data, "model": body.get("model", "fake"),
                                  "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
