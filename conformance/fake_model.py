"""The conformance suite's fake model: a deterministic OpenAI-compatible chat endpoint on 127.0.0.1 (stdlib only).

POST /<client>/v1/chat/completions, JSON or SSE (`"stream": true`, as @mastra/memory 1.31.0 asks); POST
/<client>/v1/responses (OpenAI's Responses API, which Mastra's model router uses for `openai/...` models), JSON
only, answered as the Actor ("OK."; conformance/actor_params.py reads its request parameters); GET
/<client>/v1/requests answers {"count": requests so far} (how the drivers mark where each pair begins). Every request
is kept, per client (the first path segment: e.g. `mastra`, `omcore`), as {"seq", "kind", "body", "response"} and
appended to <logdir>/<client>.jsonl when a logdir is given.

The answer is a pure function of the request's user text, so two implementations that send the same Observer or
Reflector input get byte-identical answers and stay comparable request after request:
  * Observer (user text holds "## New Message History to Observe"): one observation line per message
    (`* 🔴 (HH:MM) User said: <first 12 words>`, `* 🟡 (HH:MM) Assistant replied: <first 6 words>`), a `Date:` line per
    day, grouped per `<thread id>` for a multi-thread history, then <current-task> and <suggested-response> (never naming the thread id:
    Mastra's Observer sees raw ids, om_core's obscured ones, and the answer must not tell them apart).
  * Reflector (user text holds "## OBSERVATIONS TO REFLECT ON"): Date lines and tags kept, every second observation
    line dropped, the kept ones cut to 8 words.
  * anything else (the Actor): "OK."
Histories are read in both layouts: 1.1.0/m11 (`**User (May 20, 2023, 2:21 AM):**` headers) and 1.31.0/m31 (a
`May 20 2023:` line, then `User (2:21 AM): text`, the time printed only when it changes).

This is not tests/helpers/fakeserver.py: that one answers JSON only (1.31.0 streams), has one route, and belongs to
the test package; the suite runs outside pytest.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HISTORY = "## New Message History to Observe"
REFLECT = "## OBSERVATIONS TO REFLECT ON"
M11_HEAD = re.compile(r"^\*\*([A-Za-z]+) \(([A-Z][a-z]{2}) (\d{1,2}), (\d{4}), (\d{1,2}):(\d{2}) ([AP]M)\):\*\*$")
M31_DATE = re.compile(r"^([A-Z][a-z]{2}) (\d{1,2}) (\d{4}):$")
M31_LINE = re.compile(r"^(User|Assistant|Tool|System)(?: \((\d{1,2}):(\d{2}) ([AP]M)\))?: ?(.*)$")
THREAD = re.compile(r'<thread id="([^"]*)">\n(.*?)\n</thread>', re.DOTALL)


def _clock24(h: str, m: str, ampm: str) -> str:
    return f"{int(h) % 12 + (12 if ampm == 'PM' else 0):02d}:{m}"


def _words(text: str, n: int) -> str:
    w = text.split()
    return " ".join(w[:n]) + (" ..." if len(w) > n else "")


def parse_history(history: str) -> list[tuple[str, str, str, str]]:
    """(date 'Mon D, YYYY', 'HH:MM', role, text) for each message of a formatted history (either layout)."""
    out: list[tuple[str, str, str, str]] = []
    cur: list[str] | None = None
    date = ""
    for raw in history.split("\n"):
        line = raw.rstrip()
        m = M11_HEAD.match(line.strip())
        if m:
            if cur:
                out.append((cur[0], cur[1], cur[2], cur[3]))
            cur = [f"{m.group(2)} {m.group(3)}, {m.group(4)}", _clock24(m.group(5), m.group(6), m.group(7)),
                   m.group(1), ""]
            continue
        m = M31_DATE.match(line.strip())
        if m:
            date = f"{m.group(1)} {m.group(2)}, {m.group(3)}"
            continue
        m = M31_LINE.match(line.strip()) if date else None
        if m:
            if cur:
                out.append((cur[0], cur[1], cur[2], cur[3]))
            t = _clock24(m.group(2), m.group(3), m.group(4)) if m.group(2) else (cur[1] if cur else "00:00")
            cur = [date, t, m.group(1), m.group(5)]
            continue
        if line.strip() == "---":
            continue
        if cur is not None:
            cur[3] += ("\n" if cur[3] else "") + line
    if cur:
        out.append((cur[0], cur[1], cur[2], cur[3]))
    return out


def _observe_block(history: str) -> str:
    lines: list[str] = []
    date = None
    for d, t, role, text in parse_history(history):
        if d != date:
            date = d
            lines.append(f"Date: {d}")
        if role == "User":
            lines.append(f"* 🔴 ({t}) User said: {_words(text, 12)}")
        else:
            lines.append(f"* 🟡 ({t}) {role} replied: {_words(text, 6)}")
    return "\n".join(lines)


def observer_answer(user_text: str) -> str:
    hist = user_text[user_text.find(HISTORY) + len(HISTORY):]
    end = hist.find("\n\n---\n\n## Your Task")
    if end < 0:
        end = hist.find("## Your Task")
    hist = hist[:end] if end >= 0 else hist
    threads = THREAD.findall(hist)
    if threads:
        parts = []
        for tid, h in threads:
            n = len(parse_history(h))
            parts.append(f'<thread id="{tid}">\n{_observe_block(h)}\n'
                         f"<current-task>\nPrimary: continue this thread ({n} messages seen)\n</current-task>\n"
                         "<suggested-response>\nAsk how the plan for this thread went.\n</suggested-response>\n"
                         "</thread>")
        return "<observations>\n" + "\n".join(parts) + "\n</observations>"
    n = len(parse_history(hist))
    return (f"<observations>\n{_observe_block(hist)}\n</observations>\n"
            f"<current-task>\nPrimary: continue the conversation ({n} messages seen)\n</current-task>\n"
            "<suggested-response>\nAsk how the plan went.\n</suggested-response>")


def reflector_answer(user_text: str) -> str:
    body = user_text[user_text.find(REFLECT) + len(REFLECT):]
    end = body.find("\n\n---\n\n")
    body = body[:end] if end >= 0 else body
    out: list[str] = []
    k = 0
    for raw in body.split("\n"):
        s = raw.strip()
        if not s or s.startswith("--- message boundary"):
            continue
        if s.startswith("Date:") or s.startswith("<"):
            out.append(s)
            continue
        k += 1
        if k % 2 == 1:
            out.append(_words(s, 8))
    return "<observations>\n" + "\n".join(out) + "\n</observations>"


def user_text(body: dict[str, Any]) -> str:
    """The user messages' text, a content-part list joined with newlines (1.31.0 sends one part per message)."""
    parts = []
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, list):
            c = "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
        parts.append(str(c or ""))
    return "\n\n".join(parts)


def answer(body: dict[str, Any]) -> tuple[str, str]:
    """(kind: observer | reflector | actor, reply text) for one chat request body."""
    text = user_text(body)
    if HISTORY in text:
        return "observer", observer_answer(text)
    if REFLECT in text:
        return "reflector", reflector_answer(text)
    return "actor", "OK."


@dataclass
class FakeModel:
    """The endpoint, started in a background thread: `with FakeModel(logdir) as fm: fm.base_url("mastra")`."""

    logdir: Path | None = None
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def base_url(self, client: str) -> str:
        assert self._server is not None, "FakeModel not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/{client}/v1"

    def __enter__(self) -> "FakeModel":
        fm = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    self.send_error(400)
                    return
                client = self.path.strip("/").split("/")[0] or "default"
                if self.path.rstrip("/").endswith("/responses"):
                    data, ctype = fm._responses_reply(client, body)
                else:
                    data, ctype = fm._reply(client, body)
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                # GET /<client>/v1/requests -> {"count": n}: the drivers read it as each pair begins (pair marks)
                client = self.path.strip("/").split("/")[0] or "default"
                with fm._lock:
                    n = len(fm.requests.get(client, []))
                data = json.dumps({"count": n}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, name="conformance-fake-model", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _log(self, client: str, rec: dict[str, Any]) -> None:
        with self._lock:
            log = self.requests.setdefault(client, [])
            rec["seq"] = len(log) + 1
            log.append(rec)
            if self.logdir is not None:
                with open(self.logdir / f"{client}.jsonl", "a", encoding="utf-8") as f:
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    def _responses_reply(self, client: str, body: dict[str, Any]) -> tuple[bytes, str]:
        """A Responses API request (kept with kind "actor") answered "OK." as one output message."""
        text = "OK."
        self._log(client, {"seq": 0, "kind": "actor", "api": "responses", "body": body, "response": text})
        n_in, n_out = len(json.dumps(body)) // 4, 1
        return json.dumps({
            "id": "resp-fake-1", "object": "response", "created_at": 0, "status": "completed",
            "model": body.get("model", "fake"), "incomplete_details": None, "error": None,
            "output": [{"type": "message", "id": "msg-fake-1", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
        }).encode(), "application/json"

    def _reply(self, client: str, body: dict[str, Any]) -> tuple[bytes, str]:
        kind, text = answer(body)
        with self._lock:
            log = self.requests.setdefault(client, [])
            rec = {"seq": len(log) + 1, "kind": kind, "body": body, "response": text}
            log.append(rec)
            if self.logdir is not None:
                with open(self.logdir / f"{client}.jsonl", "a", encoding="utf-8") as f:
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        model = body.get("model", "fake")
        n_in, n_out = len(json.dumps(body)) // 4, len(text) // 4
        usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
        if not body.get("stream"):
            return json.dumps({"id": "fake-1", "object": "chat.completion", "created": 0, "model": model,
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                            "finish_reason": "stop"}],
                               "usage": usage}, ensure_ascii=False).encode(), "application/json"
        chunk = {"id": "fake-1", "object": "chat.completion.chunk", "created": 0, "model": model}
        events = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                          "finish_reason": None}]},
                  {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {**chunk, "choices": [], "usage": usage}]
        payload = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events) + "data: [DONE]\n\n"
        return payload.encode(), "text/event-stream"
