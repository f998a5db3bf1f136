"""Gateway errors and the classification of provider exceptions into retryable or not.

Waiting fixes rate limits, server errors, timeouts, dropped connections and malformed responses; it never
fixes a missing or wrong key (auth), an exhausted quota, a bad request, a prompt past the context window or
an unknown model, so those fail at once. litellm reports some of them under a retryable class (a missing
OpenAI key is an InternalServerError, a missing Gemini key an APIConnectionError), so the message is read too.
"""

from __future__ import annotations

import email.utils
import re
import time
from dataclasses import dataclass
from typing import Any

# kinds that waiting and retrying can fix
RETRYABLE_KINDS = frozenset({"rate_limit", "server", "timeout", "connection", "malformed"})
# kinds after which every later call to the same model fails the same way: a run stops at the first one
RUN_FATAL_KINDS = frozenset({"auth", "quota", "not_found"})

# lower-cased message patterns that name a non-retryable cause whatever class litellm raised
_MESSAGE_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("context_window", re.compile(r"context_length_exceeded|maximum context length|context window|prompt is too long"
                                  r"|input is too long|too many input tokens")),
    ("quota", re.compile(r"insufficient_quota|exceeded your current quota|credit balance is too low")),
    ("auth", re.compile(r"missing credentials|missing [\w-]+ ?api key|(missing|no|invalid|incorrect) api[ _]key"
                        r"|api key not (valid|found|set)|invalid_api_key|api_key client option must be set"
                        r"|invalid x-api-key|unauthori[sz]ed")),
    ("not_found", re.compile(r"model_not_found|does not exist|model not found|no such model|unknown model")),
)


class GatewayError(Exception):
    """A model call that failed for good. `kind` says why; the caller fails only this sample."""

    def __init__(self, kind: str, message: str, *, status_code: int | None = None, attempts: int = 1) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.status_code = status_code
        self.attempts = attempts

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS


@dataclass(frozen=True)
class ErrorInfo:
    kind: str
    message: str
    status_code: int | None = None
    retry_after_s: float | None = None

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS


class RetryableCallError(Exception):
    """Internal: raised inside the retry loop for an error worth another attempt."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


def _headers(exc: BaseException) -> Any:
    h = getattr(exc, "litellm_response_headers", None)
    if h is None:
        resp = getattr(exc, "response", None)
        h = getattr(resp, "headers", None)
    return h


def retry_after_seconds(exc: BaseException) -> float | None:
    """Retry-After (seconds or HTTP date) or retry-after-ms from the error's response headers."""
    h = _headers(exc)
    if not h:
        return None
    try:
        ms = h.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        ra = h.get("retry-after")
        if ra is None:
            return None
        try:
            return max(0.0, float(ra))
        except ValueError:
            when = email.utils.parsedate_to_datetime(ra)
            return max(0.0, when.timestamp() - time.time())
    except Exception:
        return None


def classify(exc: BaseException) -> ErrorInfo:
    """Map a litellm/openai/httpx exception to an ErrorInfo. Matching is by class name so that this module
    needs no litellm import; the names are litellm's exception mapping (same across providers)."""
    names = {c.__name__ for c in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    msg = str(exc) or type(exc).__name__
    ra = retry_after_seconds(exc)

    def info(kind: str) -> ErrorInfo:
        return ErrorInfo(kind, msg, status, ra)

    if "ContextWindowExceededError" in names:
        return info("context_window")
    if "ContentPolicyViolationError" in names:
        return info("content_policy")
    if names & {"AuthenticationError", "PermissionDeniedError"} or status in (401, 403):
        return info("auth")
    low = msg.lower()
    for kind, pattern in _MESSAGE_KINDS:
        if pattern.search(low):
            return info(kind)
    if "RateLimitError" in names or status == 429:
        return info("rate_limit")
    if names & {"Timeout", "APITimeoutError", "TimeoutError", "ReadTimeout", "ConnectTimeout"} or status == 408:
        return info("timeout")
    if "NotFoundError" in names or status == 404:
        return info("not_found")
    if names & {"BadRequestError", "UnprocessableEntityError", "UnsupportedParamsError"} or status in (400, 422):
        return info("bad_request")
    if names & {"InternalServerError", "ServiceUnavailableError", "BadGatewayError"} or (status and status >= 500):
        return info("server")
    if names & {"APIConnectionError", "ConnectError", "RemoteProtocolError", "ReadError", "ClientError",
                "ConnectionError"}:
        return info("connection")
    if names & {"JSONDecodeError", "APIResponseValidationError", "ValidationError"}:
        return info("malformed")
    if "APIError" in names and status is not None and status >= 500:
        return info("server")
    return ErrorInfo("unknown", f"{type(exc).__name__}: {msg}", status, ra)


def parse_error_text(text: str) -> tuple[str, str, str]:
    """(phase, kind, message) of a stored question error such as `answer: auth: ...` (the phase, then the
    GatewayError's `kind: message`); kind is "unknown" for text of another shape."""
    phase, _, rest = text.partition(": ")
    kind, sep, message = rest.partition(": ")
    if not sep or not kind.replace("_", "").isalpha() or kind != kind.lower():
        return phase, "unknown", rest
    return phase, kind, message


def redact(text: str, secrets: list[str]) -> str:
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text
