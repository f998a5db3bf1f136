"""om_core's side of a conformance case: replay exactly the messages and times a Mastra driver run stored.

Input: a driver output folder (schedule.json: the pairs in order; record.json: each message as Mastra stored it,
with the id, text and createdAt Mastra used). Each pair is one `prepare_turn` (agent step 0); with mode
"twostep" also `finish_turn([])` (step 1: 1.1.0/m11 observe only there). At the end the question is rendered on
a new thread (or the run's one thread) at the question date. Model calls go to `base_url` (the fake model) as
OpenAI chat-completions requests carrying exactly the parameters om_core passes (temperature, max_tokens).

Output folder: events.json (per pair: the OM events and model calls), final_context.json (the question-time
context messages: role, key, content), actor_contexts.jsonl (the context `prepare_turn` returned per pair),
summary.json.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from om_core import Message, ObservationalMemory, OMConfig
from om_core.llm import Completion, Usage
from om_core.storage import InMemoryStorage

SENT_PARAMS = ("temperature", "max_tokens", "max_completion_tokens", "top_p")


class HTTPChat:
    """om_core ChatModel that posts non-streaming OpenAI chat-completions requests to `base_url`."""

    def __init__(self, base_url: str, model: str) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.calls = 0

    def requests_so_far(self) -> int:
        """The fake model's count of requests from this client (GET <base>/requests)."""
        with urllib.request.urlopen(self.url.removesuffix("/chat/completions") + "/requests", timeout=30) as r:
            return int(json.loads(r.read())["count"])

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            data: dict[str, Any] = json.loads(r.read())
            return data

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        self.calls += 1
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        body.update({k: params[k] for k in SENT_PARAMS if params.get(k) is not None})
        data = await asyncio.to_thread(self._post, body)
        choice = data["choices"][0]
        u = data.get("usage") or {}
        return Completion(text=choice["message"]["content"], model=self.model, finish_reason=choice.get("finish_reason"),
                          usage=Usage(prompt_tokens=u.get("prompt_tokens", 0),
                                      completion_tokens=u.get("completion_tokens", 0)))


def _ts(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(timezone.utc)


async def replay(run: Path, out: Path, base_url: str, profile: str, mode: str, model: str,
                 prompt_source: str = "packaged") -> dict[str, Any]:
    """Replay Mastra run `run` through om_core `profile` (Observer and Reflector named `model`, reading the texts of
    `prompt_source`: "packaged" or "mastra", OMConfig); writes `out` (see the module docstring) and returns its
    summary. Raises ValueError when the run stored other messages than it fed, om_core.ConfigError when the Mastra
    texts cannot be had."""
    sched = json.loads((run / "schedule.json").read_text())
    stored = json.loads((run / "record.json").read_text())["stored"]
    out.mkdir(parents=True, exist_ok=True)
    cfg = OMConfig.from_dict({
        "profile": profile, "scope": sched["scope"], "obscure_thread_ids": True, "prompt_source": prompt_source,
        "observation": {"message_tokens": sched["messageTokens"], "model": model},
        "reflection": {"observation_tokens": sched["observationTokens"], "model": model},
    })
    observer, reflector = HTTPChat(base_url, model), HTTPChat(base_url, model)
    om = ObservationalMemory(cfg, InMemoryStorage(), observer, reflector)
    rid = sched["resourceId"]
    cursor = {tid: 0 for tid in stored}
    events: list[dict[str, Any]] = []
    contexts: list[str] = []
    for p in sched["schedule"]:
        tid = p["threadId"]
        msgs = []
        for m in p["messages"]:
            s = stored[tid][cursor[tid]]
            cursor[tid] += 1
            # the text Mastra stored is what its Observer saw (core 1.2.0 drops a trailing newline of an assistant
            # message merged with the empty response): om_core is given that text too
            if s["role"] != m["role"] or s["text"].rstrip() != m["content"].rstrip():
                raise ValueError(f"{run}: stored message {tid}[{cursor[tid] - 1}] is not the pair's message "
                                 "(run the driver with --nowriter)")
            msgs.append(Message(s["id"], s["role"], s["text"], _ts(s["createdAt"]), thread_id=tid, resource_id=rid))
        now = max(m.created_at for m in msgs)
        requests_before = observer.requests_so_far()
        before = (observer.calls, reflector.calls)
        ctx = await om.prepare_turn(rid, tid, msgs, now)
        ev = list(ctx.events)
        contexts.append(json.dumps({"pair": p["pair"], "messages": [
            {"role": c.role, "key": c.key, "content": c.content} for c in ctx.messages]}, ensure_ascii=False))
        if mode == "twostep":
            ev += await om.finish_turn(rid, tid, [], now)
        await om.wait_idle()
        events.append({"pair": p["pair"], "threadId": tid, "events": ev, "requests_before": requests_before,
                       "observer_calls": observer.calls - before[0], "reflector_calls": reflector.calls - before[1]})
    qdate = _ts(sched["questionDate"])
    qtid = sched["evalThreadId"]
    q = Message(f"{qtid}-q", "user", sched["question"], qdate, thread_id=qtid, resource_id=rid)
    final = await om.context(rid, qtid, qdate, extra_messages=(q,))
    (out / "final_context.json").write_text(json.dumps(
        [{"role": m.role, "key": m.key, "content": m.content} for m in final.messages], ensure_ascii=False, indent=1))
    (out / "actor_contexts.jsonl").write_text("\n".join(contexts) + "\n")
    (out / "events.json").write_text(json.dumps(events, indent=1))
    summary = {"pairs": len(sched["schedule"]), "observer_calls": observer.calls,
               "reflector_calls": reflector.calls, "generation": final.generation}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary
