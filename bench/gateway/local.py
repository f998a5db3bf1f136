"""Self-hosted OpenAI-compatible servers (llama.cpp, llama-cpp-python, vLLM, ...): what they say about
themselves, asked once per base URL.

* Served identity (`/v1/models`): the model entries the server lists, hashed, so the response cache and the run
  key change when another model is loaded behind the same name (`ServerInfo.identity`).
* Context window: llama.cpp `/props` (`default_generation_settings.n_ctx`, or `n_ctx`), vLLM `/v1/models`
  (`max_model_len`); None when the server does not say (configure `gateway.context_window`).
* Parallel slots: llama.cpp `/props` `total_slots` (how many requests it computes at once).
* Tokenizer: `/tokenize` (vLLM `{"model", "prompt"}` -> `count`/`tokens`; llama.cpp `{"content"}` -> `tokens`)
  or llama-cpp-python `/extras/tokenize` (`{"input"}` -> `tokens`). Without one, token counts are o200k counts
  times `TOKEN_SAFETY_MARGIN`.

A server "is local" when its host is a loopback or private address (`is_local`): such a server usually computes
one request at a time and keeps computing a request its client gave up on, so the gateway gives it one request
at a time by default, a long timeout, and never retries a timed-out request (bench.gateway.gateway).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.secrets import client_url

# o200k tokens x this = a safe upper bound of a server's own count when it offers no tokenizer: tokenizers with
# smaller vocabularies need more tokens for the same English text (Llama 2's 32k vocabulary about 1.3x o200k;
# Qwen2.5's 151k vocabulary measured 1.0-1.1x on the recorded cassette requests).
TOKEN_SAFETY_MARGIN = 1.35
PROBE_TIMEOUT_S = 10.0
_VOLATILE = frozenset({"created", "owned_by", "permission", "permissions"})
_LOCAL_NAMES = frozenset({"localhost", "host.docker.internal"})


def scrub_url(url: str) -> str:
    """A base URL without credentials, query or fragment, and without a trailing slash: what may be stored
    (run keys, cache keys, the manifest)."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def is_local(url: str) -> bool:
    """Whether a base URL points at this machine or a private network (a self-hosted server)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in _LOCAL_NAMES or host.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_unspecified


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without a trailing `/v1` (llama.cpp serves /props and /tokenize there)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


@dataclass
class ServerInfo:
    """What a server said about itself. `models`: its /v1/models entries (volatile fields dropped)."""

    base_url: str  # scrubbed
    models: list[dict[str, Any]] = field(default_factory=list)
    context_window: int | None = None  # tokens, as the server counts them
    slots: int | None = None  # requests computed at once (llama.cpp)
    tokenize_path: str | None = None  # "/tokenize" or "/extras/tokenize" when the server tokenizes
    tokenize_body: str | None = None  # "vllm", "llama.cpp" or "llama-cpp-python"
    reachable: bool = True
    down: str | None = None  # why nothing answered at all (connection refused, no such host, timed out)

    def model_entry(self, model: str) -> dict[str, Any] | None:
        """The entry of the model a request names (`openai/<id>` or `<id>`), or the only one served."""
        name = model.split("/", 1)[1] if "/" in model else model
        for entry in self.models:
            if entry.get("id") in (name, model):
                return entry
        return self.models[0] if len(self.models) == 1 else None

    def identity(self, model: str) -> str:
        """A short hash of what serves `model` here: its /v1/models entry (or every entry when the name is not
        listed) and the base URL. Another model loaded behind the same name gives another identity."""
        entry = self.model_entry(model)
        payload = {"base": self.base_url, "served": entry if entry is not None else self.models}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def served_name(self, model: str) -> str:
        entry = self.model_entry(model)
        return str(entry.get("id")) if entry else ""


def _clean_entry(entry: Any) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in _VOLATILE} if isinstance(entry, dict) else {"id": str(entry)}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def probe_server(base_url: str, api_key: str | None = None, *, timeout_s: float = PROBE_TIMEOUT_S) -> ServerInfo:
    """Ask the server at `base_url` (e.g. `http://127.0.0.1:8080/v1`) what it serves. Never raises: an
    unreachable server gives `reachable=False` (the call that follows fails with the gateway's own error)."""
    import httpx

    info = ServerInfo(scrub_url(base_url))
    base_url, url_key = client_url(base_url)  # a password in the URL is the key, never sent in it
    api_key = api_key or url_key
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = server_root(base_url)
    async with httpx.AsyncClient(timeout=timeout_s, headers=headers) as client:
        try:
            resp = await client.get(base_url.rstrip("/") + "/models")
            data = resp.json().get("data") if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            info.reachable = False
            if isinstance(exc, httpx.TransportError):  # nothing answered (an answer without a model list is not this)
                info.down = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
            return info
        info.models = [_clean_entry(e) for e in data or []]
        windows = [w for e in info.models if (w := _int(e.get("max_model_len")))]
        info.context_window = min(windows) if windows else None
        try:
            props = await client.get(root + "/props")
            p = props.json() if props.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            p = {}
        if isinstance(p, dict):
            gen = p.get("default_generation_settings") or {}
            info.context_window = info.context_window or _int(gen.get("n_ctx")) or _int(p.get("n_ctx"))
            info.slots = _int(p.get("total_slots"))
        await _find_tokenizer(client, root, info)
    return info


_TOKENIZERS = (("/tokenize", "vllm"), ("/tokenize", "llama.cpp"), ("/extras/tokenize", "llama-cpp-python"))


def _tokenize_request(kind: str, model: str, text: str) -> dict[str, Any]:
    if kind == "vllm":
        return {"model": model, "prompt": text, "add_special_tokens": False}
    if kind == "llama.cpp":
        return {"content": text, "add_special": False}
    return {"input": text}


def _token_count(payload: Any) -> int | None:
    if not isinstance(payload, dict):
        return None
    if _int(payload.get("count")) is not None:
        return int(payload["count"])
    tokens = payload.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None


async def _find_tokenizer(client: Any, root: str, info: ServerInfo) -> None:
    model = str(info.models[0].get("id", "")) if info.models else ""
    for path, kind in _TOKENIZERS:
        try:
            resp = await client.post(root + path, json=_tokenize_request(kind, model, "hello world"))
            ok = resp.status_code == 200 and _token_count(resp.json()) is not None
        except Exception:  # a server without the endpoint answers 404/405 or garbage
            ok = False
        if ok:
            info.tokenize_path, info.tokenize_body = path, kind
            return


async def server_token_count(base_url: str, info: ServerInfo, model: str, text: str, api_key: str | None = None, *,
                             timeout_s: float = PROBE_TIMEOUT_S) -> int | None:
    """`text`'s token count by the server's own tokenizer, or None when it offers none (or the call fails)."""
    if not info.tokenize_path or not info.tokenize_body:
        return None
    import httpx

    name = info.served_name(model) or (model.split("/", 1)[1] if "/" in model else model)
    base_url, url_key = client_url(base_url)
    api_key = api_key or url_key
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(timeout=timeout_s, headers=headers) as client:
            resp = await client.post(server_root(base_url) + info.tokenize_path,
                                     json=_tokenize_request(info.tokenize_body, name, text))
            return _token_count(resp.json()) if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


class ServerDirectory:
    """One probe per base URL for the lifetime of a gateway (concurrent callers share it)."""

    def __init__(self) -> None:
        self._infos: dict[str, ServerInfo] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def known(self, base_url: str) -> ServerInfo | None:
        return self._infos.get(scrub_url(base_url))

    async def get(self, base_url: str, api_key: str | None = None) -> ServerInfo:
        key = scrub_url(base_url)
        if key in self._infos:
            return self._infos[key]
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._infos:
                self._infos[key] = await probe_server(base_url, api_key)
        return self._infos[key]
