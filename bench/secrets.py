"""The one secret policy: what counts as a secret, and how it is kept out of everything a run writes.

A secret is
- the value of a config key that names one (`is_secret_key`: api_key, token, password, secret, access_key,
  credentials, authorization..., case-insensitive, as the key or its suffix; `*_env` keys name a variable and are
  not secrets themselves),
- a credential inside a URL: `user:password@host` (or `token@host`) and query parameters such as `?key=`,
  `api_key=`, `token=`, `sig=`,
- the value of an environment variable whose name names one (`OPENAI_API_KEY`, `HF_TOKEN`, ...) or that
  `gateway.api_key_env` names.

How it is kept out (docs/secrets.md has the whole picture):
- `bench.cli.hidden_args` moves a secret typed on the command line into a private environment variable before
  Hydra parses argv, so Hydra's files, folder names and logs hold only `${oc.env:...}`;
- `redact` / `redact_text` replace secrets by `REDACTED` in anything written: the stored config, run names,
  error texts, log records (`RedactingFilter`) and console output (`RedactingStream`);
- `remember` keeps every secret value met in this process, so free text that quotes one (a provider's error
  message, a URL logged by an HTTP client) is redacted too;
- run and ingestion keys never see a secret (`without_secrets`): rotating a key recomputes nothing.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Any, Iterable, Mapping, TextIO
from urllib.parse import unquote

REDACTED = "<redacted>"
MIN_SECRET_LEN = 6  # shorter values are not remembered for free-text redaction (too many false hits)

# words that make a key name a secret, anywhere in its last segment
_SECRET_WORDS = ("api_key", "apikey", "api-key", "access_key", "accesskey", "secret", "password", "passwd",
                 "credential", "authorization", "private_key", "auth_token")
# a key ending like this names where a secret is (an environment variable), not the secret
_REFERENCE_SUFFIXES = ("_env", "-env", "_env_var")
# query parameters that carry a credential besides the secret key names (Google's ?key=, signed URLs' sig=)
_SECRET_PARAMS = frozenset({"key", "sig", "signature", "auth", "code", "access_token", "token"})
# provider key formats, redacted wherever they appear in free text
_KEY_FORMATS = re.compile(r"\b(?:sk-|sk_|hf_|xai-|gsk_|ghp_|gho_|github_pat_|pplx-|AIza)[A-Za-z0-9_\-]{16,}")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_PAIR = re.compile(r"(?P<name>[A-Za-z0-9_.+\-]*[A-Za-z0-9_])(?P<sep>['\"]?\s*[=:]\s*['\"]?)(?P<value>[^\s,'\"&}\]]+)")
_NUMBER = re.compile(r"[+-]?(\d[\d_]*(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}")


def is_secret_key(key: str) -> bool:
    """Whether a config key (dotted or not; a Hydra `+`/`++`/`~` prefix is ignored) names a secret."""
    k = key.lstrip("+~").rsplit(".", 1)[-1].strip().lower()
    if not k or k.endswith(_REFERENCE_SUFFIXES):
        return False
    # "token" alone or as a suffix (hf_token, access-token) is a credential; max_tokens and tokenizer are not
    return any(w in k for w in _SECRET_WORDS) or k == "token" or k.endswith(("_token", "-token"))


def may_be_credential(key: str, value: object) -> bool:
    """Whether `value`, under a key that `is_secret_key`, can be a credential. Never null, empty or a `${...}`
    reference. A number is not one under a key that is a secret only by its "token" ending: that is a typo of
    a count key (`message_token=1000` for `message_tokens`), which keeps Hydra's "did you mean" and its number;
    under password, secret, api_key ... a number stays a secret."""
    if value is None or (isinstance(value, str) and (not value.strip() or is_reference(value)
                                                     or value.strip().startswith("${"))):
        return False
    text = str(value).strip()
    if text.lower() in ("null", "none"):
        return False
    k = key.lstrip("+~").rsplit(".", 1)[-1].strip().lower()
    numeric = isinstance(value, (bool, int, float)) or text.lower() in ("true", "false") or _NUMBER.fullmatch(text)
    return not (numeric and not any(w in k for w in _SECRET_WORDS))


def _secret_param(name: str) -> bool:
    n = name.lower()
    return n in _SECRET_PARAMS or is_secret_key(n)


def is_reference(value: Any) -> bool:
    """A value that points at a secret instead of holding it: an interpolation such as `${oc.env:VAR}`."""
    return isinstance(value, str) and value.strip().startswith("${") and value.strip().endswith("}")


# ---- URLs -------------------------------------------------------------------------------------------------


def _split(url: str) -> tuple[str, str, str, str] | None:
    """(scheme, userinfo or '', host part, rest) of `scheme://[userinfo@]host/rest`, None for a non-URL."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        return None
    m = re.match(r"([^/?#]*)(.*)", rest, re.S)
    authority, tail = (m.group(1), m.group(2)) if m else (rest, "")
    userinfo, at, host = authority.rpartition("@")
    return scheme, userinfo if at else "", host if at else authority, tail


def url_credentials(url: str) -> list[str]:
    """The credential values inside a URL (password or token in the userinfo, secret query values), as written
    and percent-decoded."""
    parts = _split(url)
    if parts is None:
        return []
    _, userinfo, _, tail = parts
    found: list[str] = []
    if userinfo:
        user, colon, password = userinfo.partition(":")
        found.append(password if colon else user)
    _, q, query = tail.partition("?")
    if q:
        for item in query.partition("#")[0].split("&"):
            name, eq, value = item.partition("=")
            if eq and value and _secret_param(unquote(name)):
                found.append(value)
    out: list[str] = []
    for v in found:
        for form in (v, unquote(v)):
            if form and form not in out:
                out.append(form)
    return out


def redact_url(url: str) -> str:
    """The URL with its credentials replaced by REDACTED (`http://user:<redacted>@host/v1?key=<redacted>`)."""
    parts = _split(url)
    if parts is None:
        return url
    scheme, userinfo, host, tail = parts
    if userinfo:
        user, colon, _ = userinfo.partition(":")
        userinfo = f"{user}:{REDACTED}@" if colon else f"{REDACTED}@"
    path, q, query = tail.partition("?")
    if q:
        query, hashmark, fragment = query.partition("#")
        items = []
        for item in query.split("&"):
            name, eq, value = item.partition("=")
            items.append(f"{name}={REDACTED}" if eq and value and _secret_param(unquote(name)) else item)
        tail = f"{path}?{'&'.join(items)}{hashmark}{fragment}"
    return f"{scheme}://{userinfo}{host}{tail}"


def split_url_credentials(url: str) -> tuple[str, str | None]:
    """(the URL without its userinfo, the password or token that was in it). What a client sends: OpenAI-style
    clients authenticate with a bearer key and cannot send credentials inside the URL, so a password there is
    the key."""
    parts = _split(url)
    if parts is None or not parts[1]:
        return url, None
    scheme, userinfo, host, tail = parts
    user, colon, password = userinfo.partition(":")
    return f"{scheme}://{host}{tail}", unquote(password if colon else user) or None


def client_url(url: str) -> tuple[str, str | None]:
    """(the URL an OpenAI-style client can use, the key it carried): the userinfo (`split_url_credentials`) and
    every secret query parameter (`?api_key=`, `?key=`, `?token=` ...) taken out, the first credential found being
    the key. Such clients append their paths (`/embeddings`, `/chat/completions`) to the base URL, so a query left
    in it would make every call a 404; they send the key as a bearer token instead."""
    bare, key = split_url_credentials(url)
    head, q, query = bare.partition("?")
    if not q or _split(bare) is None:
        return bare, key
    query, hashmark, fragment = query.partition("#")
    kept = []
    for item in query.split("&"):
        name, eq, value = item.partition("=")
        if eq and value and _secret_param(unquote(name)):
            key = key or unquote(value)
        elif item:
            kept.append(item)
    return head + (f"?{'&'.join(kept)}" if kept else "") + (hashmark + fragment if hashmark else ""), key


# ---- redaction --------------------------------------------------------------------------------------------

_known: set[str] = set()
_known_lock = threading.Lock()
_known_sorted: list[str] = []


def remember(*values: Any) -> None:
    """Keep secret values met in this process: `redact_text` replaces them wherever they appear."""
    global _known_sorted
    added = False
    with _known_lock:
        for v in values:
            if isinstance(v, str):
                for form in {v.strip(), unquote(v.strip())}:
                    if len(form) >= MIN_SECRET_LEN and not is_reference(form) and form not in _known:
                        _known.add(form)
                        added = True
        if added:
            _known_sorted = sorted(_known, key=len, reverse=True)  # a longer secret first: no partial leftovers


def forget_all() -> None:
    """Drop every remembered value (tests)."""
    global _known_sorted
    with _known_lock:
        _known.clear()
        _known_sorted = []


def secrets_in(obj: Any, key: str = "") -> list[str]:
    """Every secret value inside a config tree: values of secret keys, credentials in URLs."""
    out: list[str] = []
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if is_secret_key(str(k)) and isinstance(v, (str, int)) and not isinstance(v, bool) and v != "":
                if not is_reference(v):
                    out.append(str(v))
            else:
                out.extend(secrets_in(v, str(k)))
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out.extend(secrets_in(v, key))
    elif isinstance(obj, str) and "://" in obj:
        for m in _URL.finditer(obj):
            out.extend(url_credentials(m.group(0)))
    return out


def remember_config(obj: Any) -> None:
    """Remember every secret of a config tree, and the values of the variables `gateway.api_key_env` names."""
    remember(*secrets_in(obj))
    if isinstance(obj, Mapping):
        names = ((obj.get("gateway") or {}).get("api_key_env") or {}) if isinstance(obj.get("gateway"), Mapping) else {}
        if isinstance(names, Mapping):
            remember(*(os.environ.get(str(v), "") for v in names.values()))


def remember_environment(env: Mapping[str, str] | None = None) -> None:
    """Remember the values of environment variables whose names name a secret (OPENAI_API_KEY, HF_TOKEN, ...)."""
    env = os.environ if env is None else env
    remember(*(v for k, v in env.items() if is_secret_key(k)))


def redact_text(text: str) -> str:
    """Free text with every secret replaced by REDACTED: credentials in URLs, `name=value` / `name: value`
    pairs whose name is a secret key, bearer tokens, provider key formats and every remembered value."""
    if not text:
        return text
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)  # before the pairs: `Authorization: Bearer x`
    text = _PAIR.sub(_pair, text)
    text = _KEY_FORMATS.sub(REDACTED, text)
    for v in _known_sorted:
        if v in text:
            text = text.replace(v, REDACTED)
    return text


def _pair(m: re.Match[str]) -> str:
    value = m.group("value")
    if not is_secret_key(m.group("name")) or value == REDACTED or not may_be_credential(m.group("name"), value):
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


def redact(obj: Any) -> Any:
    """A copy of a config tree (mappings, lists, strings) with every secret replaced by REDACTED: the value of a
    secret key (unless empty or a `${...}` reference) and secrets inside strings (`redact_text`)."""
    if isinstance(obj, Mapping):
        return {str(k): (REDACTED if is_secret_key(str(k)) and may_be_credential(str(k), v) else redact(v))
                for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def without_secrets(obj: Any) -> Any:
    """A copy of a config tree with every secret key left out and URL credentials stripped: what run and
    ingestion keys hash (a rotated key or password recomputes nothing)."""
    if isinstance(obj, Mapping):
        return {k: without_secrets(v) for k, v in obj.items() if not is_secret_key(str(k))}
    if isinstance(obj, (list, tuple)):
        return [without_secrets(v) for v in obj]
    if isinstance(obj, str) and "://" in obj:
        return _URL.sub(lambda m: _strip_url(m.group(0)), obj)
    return obj


def _strip_url(url: str) -> str:
    bare, _ = split_url_credentials(url)
    return redact_url(bare)


# ---- logs and console -------------------------------------------------------------------------------------


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (and its traceback text) before a handler writes it.
    Attached to the run log's handler (bench/conf/config.yaml) and to every root handler by `guard_process`."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose args do not format: leave it to the handler's own error path
            return True
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


class RedactingStream:
    """A text stream that redacts what is written to it (the console: stdout and stderr of `ombench run`);
    everything else is the wrapped stream's."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(redact_text(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Attach a RedactingFilter to every handler of `logger` (default: the root logger) that lacks one."""
    target = logger or logging.getLogger()
    for h in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in h.filters):
            h.addFilter(RedactingFilter())


def guard_process(config: Any = None) -> None:
    """What every process of a run does first (the `ombench run` process and each sweep worker): remember the
    secrets of the environment and the config, redact the root logger's handlers."""
    remember_environment()
    if config is not None:
        remember_config(config)
    install_log_filter()


__all__ = [
    "REDACTED", "RedactingFilter", "RedactingStream", "forget_all", "guard_process", "install_log_filter",
    "is_reference", "is_secret_key", "redact", "redact_text", "redact_url", "remember", "remember_config",
    "remember_environment", "secrets_in", "split_url_credentials", "client_url", "url_credentials", "without_secrets",
]
