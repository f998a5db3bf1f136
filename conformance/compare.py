"""Compare one conformance case: what Mastra sent and showed against what om_core sent and showed.

Pure functions over plain data, so tests can feed them recorded or fabricated logs:
  * request logs: lists of {"seq", "kind": observer|reflector|actor, "body": the chat request} (fake_model.py);
  * pair marks: for each replayed pair, how many requests that client had sent before the pair began;
  * the question-time Actor messages: Mastra's last `actor` request body, om_core's context messages
    ({"role", "key", "content"}).

What is compared (each one `Check`), and what is deliberately not:
  * triggers: for every pair, which OM requests (o = Observer, r = Reflector) it caused, in order;
  * observer: every Observer request's data: the previous observations it shows and each thread's message history
    (thread id and text), byte for byte; requests of one pair are compared as a set (1.1.0 sends a resource's
    thread batches in parallel);
  * reflector: the observations each Reflector request reflects on, byte for byte;
  * params: the request parameters per kind (temperature, max_tokens, ...), except `model`, `stream` and
    `stream_options` (transport: 1.31.0 streams, om_core leaves streaming to its gateway);
  * actor: the question-time Actor context's data: observation chunks, other-conversation blocks,
    current-task/suggested-response, and the raw messages after the continuation reminder.
  * observer request / reflector request (only for a case whose om_core side reads Mastra's own texts,
    prompt_source="mastra"): every Observer and Reflector request's messages in full, byte for byte: the system
    message and the whole user message, wording, headings and layout included;
  * actor texts (such a case): the question-time Actor texts, byte for byte (1.31.0: preamble and continuation
    reminder; 1.1.0: the whole observations system message).
Never compared otherwise: the wording of prompts and fixed Actor texts (om_core's packaged texts are its own words
by design) and Mastra's multi-thread preamble line. Never compared in any case: the raw ids Mastra 1.1.0/1.31.0 show their Observer (mapped with om_core's
own obscuring, `om_core.scopes.display_id`, before comparing: om_core never shows raw ids).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from om_core.scopes import display_id

HISTORY = "## New Message History to Observe"
PREVIOUS = "## Previous Observations"
REFLECT = "## OBSERVATIONS TO REFLECT ON"
TASK = "## Your Task"
RULE = "\n\n---\n\n"
THREAD = re.compile(r'<thread id="([^"]+)">\n(.*?)\n</thread>', re.S)
THREAD_TAG = re.compile(r'<thread id="([^"]+)">')
# 1.31.0's multi-thread prior metadata names each thread on a line of its own ("- thread <id>")
PRIOR_THREAD = re.compile(r"^(- thread )(\S+)$", re.M)
OTHER = re.compile(r'<other-conversation id="[^"]*">.*?</other-conversation>', re.S)
# 1.31.0 sends the Observer's history as one text part per message; these parts are framing, not messages
FRAMING = ("## New Message History", "<thread id=", "\n</thread>", "\n\n")
UNCOMPARED_PARAMS = ("messages", "model", "stream", "stream_options")


@dataclass(frozen=True)
class Check:
    """One comparison: its name, whether both sides agree, and one line (what agreed, or the first difference)."""

    name: str
    ok: bool
    detail: str


def joined(content: Any) -> str:
    """A message's text. A list of text parts (1.31.0) is rejoined as its formatMessagesForObserver joins the
    messages: a newline between two message parts, nothing around framing parts."""
    if isinstance(content, str):
        return content
    out, prev = "", False
    for p in content or []:
        t = p.get("text", "") if isinstance(p, dict) else str(p)
        is_msg = not t.startswith(FRAMING)
        if is_msg and prev:
            out += "\n"
        out += t
        prev = is_msg
    return out


def user_text(body: dict[str, Any]) -> str:
    return "\n\n".join(joined(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user")


def _after(text: str, head: str) -> str | None:
    i = text.find(head)
    return None if i < 0 else text[i + len(head):]


def observer_input(body: dict[str, Any], rename: dict[str, str]) -> dict[str, Any]:
    """The data of one Observer request: {"previous": the previous observations or None, "threads": [[id, history]]}.

    `rename` maps raw thread ids to the ids om_core shows (Mastra shows raw ids in the history's thread tags). A
    history without thread tags (thread scope) is one entry with id "".
    """
    text = user_text(body)
    prev = _after(text, PREVIOUS)
    if prev is not None:
        prev = prev.lstrip("\n")
        prev = prev[: prev.find(RULE)] if RULE in prev else prev
    hist = _after(text, HISTORY) or ""
    if TASK in hist:
        hist = hist[: hist.find(TASK)]
    threads = [[rename.get(t, t), h] for t, h in THREAD.findall(hist)]
    if not threads:
        body_text = hist[hist.find("\n") + 1:] if "\n" in hist else ""
        threads = [["", body_text.strip("\n").removesuffix(RULE.strip("\n")).strip("\n")]]
    return {"previous": prev, "threads": threads}


def reflector_input(body: dict[str, Any]) -> str | None:
    """The observations a Reflector request reflects on, or None when the request has no such section."""
    obs = _after(user_text(body), REFLECT)
    if obs is None:
        return None
    obs = obs.lstrip("\n")
    return obs[: obs.find(RULE)] if RULE in obs else obs


def full_request(body: dict[str, Any], rename: dict[str, str]) -> list[list[str]]:
    """A request's messages in full: [[role, text]], content parts rejoined (`joined`), and the raw thread ids of
    `<thread id="...">` tags and of 1.31.0's prior-metadata lines `- thread <id>` mapped through `rename` (the
    only change: everything else is compared as sent)."""
    def ids(text: str) -> str:
        text = THREAD_TAG.sub(lambda m: f'<thread id="{rename.get(m.group(1), m.group(1))}">', text)
        return PRIOR_THREAD.sub(lambda m: m.group(1) + rename.get(m.group(2), m.group(2)), text)

    return [[str(m.get("role")), ids(joined(m.get("content")))] for m in body.get("messages", [])]


def per_pair(log: Sequence[dict[str, Any]], marks: Sequence[int]) -> list[list[dict[str, Any]]]:
    """The OM requests (not `actor`) of each pair: requests log[marks[k]:marks[k+1]]."""
    bounds = list(marks) + [len(log)]
    return [[r for r in log[bounds[k]:bounds[k + 1]] if r["kind"] != "actor"] for k in range(len(marks))]


def _first_diff(a: str, b: str, width: int = 60) -> str:
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at character {k}: mastra {a[max(0, k - width):k + width]!r} | om_core {b[max(0, k - width):k + width]!r}"


def check_triggers(m_pairs: list[list[dict[str, Any]]], o_pairs: list[list[dict[str, Any]]]) -> Check:
    def points(pairs: list[list[dict[str, Any]]]) -> list[tuple[int, str]]:
        return [(k, "".join(sorted(r["kind"][0] for r in rs))) for k, rs in enumerate(pairs) if rs]

    m, o = points(m_pairs), points(o_pairs)
    if len(m_pairs) != len(o_pairs):
        return Check("triggers", False, f"pairs replayed: mastra {len(m_pairs)}, om_core {len(o_pairs)}")
    if m == o:
        return Check("triggers", True, f"{len(m)} trigger points: " + " ".join(f"{k}:{s}" for k, s in m))
    k = next(i for i in range(max(len(m), len(o))) if i >= len(m) or i >= len(o) or m[i] != o[i])
    return Check("triggers", False, f"trigger point {k + 1} differs: mastra {m[k] if k < len(m) else None}, "
                                    f"om_core {o[k] if k < len(o) else None} (mastra {m}, om_core {o})")


def _keyed(reqs: Iterable[dict[str, Any]], kind: str, rename: dict[str, str]) -> list[str]:
    out = []
    for r in reqs:
        if r["kind"] != kind:
            continue
        data = observer_input(r["body"], rename) if kind == "observer" else reflector_input(r["body"])
        out.append(json.dumps(data, ensure_ascii=False, sort_keys=True))
    return sorted(out)


def _whole(reqs: Iterable[dict[str, Any]], kind: str, rename: dict[str, str]) -> list[str]:
    return sorted("\n".join(f"[{role}]\n{text}" for role, text in full_request(r["body"], rename))
                  for r in reqs if r["kind"] == kind)


def check_inputs(kind: str, m_pairs: list[list[dict[str, Any]]], o_pairs: list[list[dict[str, Any]]],
                 rename: dict[str, str], whole: bool = False) -> Check:
    """Observer or Reflector request data, pair by pair (a pair's requests as a set), byte for byte. `whole`: the
    requests' messages in full (`full_request`: system and user messages, wording included), check "<kind> request"."""
    name = f"{kind} request" if whole else kind
    what = "requests (system and user messages in full)" if whole else "requests"
    n = 0
    for k, (mr, orr) in enumerate(zip(m_pairs, o_pairs)):
        a, b = (_whole(mr, kind, rename), _whole(orr, kind, rename)) if whole else \
            (_keyed(mr, kind, rename), _keyed(orr, kind, rename))
        if len(a) != len(b):
            return Check(name, False, f"pair {k}: mastra sent {len(a)} {kind} requests, om_core {len(b)}")
        for x, y in zip(a, b):
            if x != y:
                return Check(name, False, f"pair {k}: {_first_diff(x, y)}")
        n += len(a)
    if n == 0:
        return Check(name, True, f"no {kind} request on either side")
    return Check(name, True, f"{n} {kind} {what} byte-identical")


def request_params(log: Iterable[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The distinct parameter sets of `kind` requests (everything but UNCOMPARED_PARAMS)."""
    seen: list[dict[str, Any]] = []
    for r in log:
        if r["kind"] == kind:
            p = {k: v for k, v in r["body"].items() if k not in UNCOMPARED_PARAMS}
            if p not in seen:
                seen.append(p)
    return seen


def check_params(m_log: Sequence[dict[str, Any]], o_log: Sequence[dict[str, Any]]) -> Check:
    diffs: list[str] = []
    same: list[str] = []
    for kind in ("observer", "reflector"):
        a, b = request_params(m_log, kind), request_params(o_log, kind)
        if a == b:
            same.append(f"{kind} {a}")
        else:
            diffs.append(f"{kind} mastra {a} om_core {b}")
    return Check("params", not diffs, "; ".join(diffs or same))


def actor_view(messages: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """The data of an Actor context: observation chunks, other-conversation blocks, task/suggested hints, raw messages.

    om_core messages carry a `key` (om:chunk:*, om:task, om:suggested, msg:*; m11's observations are inside
    om:system). Mastra's: 1.31.0 sends a system message "<observations>" then one per chunk (and the hints);
    1.1.0 one system message holding the <observations> block. Raw messages are the non-system messages after the
    continuation reminder (a user message starting "<system-reminder>"), or all when there is none, without
    trailing newlines (@mastra/core 1.2.0 drops an assistant message's trailing newline when it stores the message,
    after its Actor saw it; om_core is given the stored text, as Mastra's Observer was). A user message "." that
    @mastra/core 1.68 puts before a history starting with an assistant message (a provider-compatibility step of the
    agent, not OM's) is dropped from Mastra's side.
    """
    texts = [(m["role"], joined(m.get("content")), m.get("key")) for m in messages]
    system = "\n".join(t for r, t, _ in texts if r == "system")
    hints_of = ("<current-task>", "<suggested-response>")
    if any(k is not None for _, _, k in texts):
        chunks = [t for _, t, k in texts if k and k.startswith("om:chunk:")]
        hints = [t for _, t, k in texts if k in ("om:task", "om:suggested")]
        raw = [f"{r}: {t.rstrip(chr(10))}" for r, t, k in texts if k and k.startswith("msg:")]
    else:
        sys_msgs = [t for r, t, _ in texts if r == "system"]
        after = sys_msgs[sys_msgs.index("<observations>") + 1:] if "<observations>" in sys_msgs else []
        chunks = [t for t in after if not t.startswith(hints_of)]
        hints = [t for t in after if t.startswith(hints_of)]
        rest = [(r, t) for r, t, _ in texts if r != "system"]
        cut = next((i + 1 for i, (r, t) in enumerate(rest) if r == "user" and t.startswith("<system-reminder>")), 0)
        raw = [f"{r}: {t.rstrip(chr(10))}" for r, t in rest[cut:]]
        if len(raw) > 1 and raw[0] == "user: ." and raw[1].startswith("assistant: "):
            raw = raw[1:]  # @mastra/core 1.68's placeholder before a history that starts with an assistant message
    if not chunks and "<observations>" in system and "</observations>" in system:
        i = system.find("<observations>")
        chunks = [system[i:system.find("</observations>", i) + len("</observations>")]]
    return {"observations": chunks, "other_conversations": OTHER.findall(system), "hints": hints, "raw": raw}


def check_actor(name: str, m_msgs: Sequence[dict[str, Any]], o_msgs: Sequence[dict[str, Any]]) -> Check:
    a, b = actor_view(m_msgs), actor_view(o_msgs)
    for part in a:
        if a[part] != b[part]:
            if len(a[part]) != len(b[part]):
                return Check(name, False, f"{part}: mastra {len(a[part])} items, om_core {len(b[part])}")
            i = next(i for i, (x, y) in enumerate(zip(a[part], b[part])) if x != y)
            return Check(name, False, f"{part} item {i}: {_first_diff(a[part][i], b[part][i])}")
    return Check(name, True, ", ".join(f"{len(v)} {k}" for k, v in a.items()) + " byte-identical")


def check_actor_texts(m_msgs: Sequence[dict[str, Any]], o_msgs: Sequence[dict[str, Any]]) -> Check:
    """The Actor-context texts, as om_core sent them with Mastra's texts (prompt_source="mastra"), byte for byte.
    1.31.0 (om_core m31): om_core's `om:preamble` (OBSERVATION_CONTEXT_PROMPT, a blank line,
    OBSERVATION_CONTEXT_INSTRUCTIONS) must be one of Mastra's system messages and its `om:continuation` Mastra's
    `<system-reminder>` message, and its `om:other` block (intro from formatObservationsForContext) Mastra's
    OTHER-conversations system message. 1.1.0 (m11): om_core's whole `om:system` message (preamble, observations, instructions,
    OTHER block and hints, from formatObservationsForContext) must be Mastra's; its continuation reminder is
    inline in processInputStep and stays om_core's wording."""
    by_key = {m.get("key"): joined(m.get("content")) for m in o_msgs}
    m_system = [joined(m.get("content")) for m in m_msgs if m.get("role") == "system"]
    if "om:system" in by_key:
        whole = by_key["om:system"]
        if whole in m_system:
            return Check("actor texts", True, f"the observations system message ({len(whole)} characters) "
                                              "byte-identical")
        near = max(m_system, key=lambda t: sum(a == b for a, b in zip(t, whole)), default="")
        return Check("actor texts", False, f"system message: {_first_diff(near, whole)}")
    pre, cont = by_key.get("om:preamble"), by_key.get("om:continuation")
    if pre is None or cont is None:
        return Check("actor texts", False, "om_core's context has no om:preamble / om:continuation (no observations?)")
    m_reminder = [t for m in m_msgs if m.get("role") == "user" and (t := joined(m.get("content"))).startswith(
        "<system-reminder>")]
    if pre not in m_system:
        near = max(m_system, key=lambda t: sum(a == b for a, b in zip(t, pre)), default="")
        return Check("actor texts", False, f"preamble: {_first_diff(near, pre)}")
    if m_reminder[:1] != [cont]:
        return Check("actor texts", False, f"continuation: {_first_diff(m_reminder[0] if m_reminder else '', cont)}")
    other = by_key.get("om:other")
    if other is not None and other not in m_system:
        near = max(m_system, key=lambda t: sum(a == b for a, b in zip(t, other)), default="")
        return Check("actor texts", False, f"OTHER block: {_first_diff(near, other)}")
    return Check("actor texts", True, f"preamble ({len(pre)} characters), "
                 + (f"OTHER block ({len(other)}), " if other is not None else "")
                 + f"continuation ({len(cont)}) byte-identical")


def compare_case(m_log: Sequence[dict[str, Any]], o_log: Sequence[dict[str, Any]], m_marks: Sequence[int],
                 o_marks: Sequence[int], thread_ids: Iterable[str], m_actor: Sequence[dict[str, Any]],
                 o_actor: Sequence[dict[str, Any]],
                 prep: Sequence[tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]]] = (),
                 wording: bool = False, actor_texts: bool = False) -> list[Check]:
    """Every check of one case. `prep`: (Mastra, om_core) Actor messages at step 0 of each pair, when recorded.
    `wording`: also compare every Observer and Reflector request in full (om_core read Mastra's own texts);
    `actor_texts`: also the question-time Actor-context texts (`check_actor_texts`; 1.31.0 exports them)."""
    rename = {t: display_id(t, True) for t in thread_ids}
    mp, op = per_pair(m_log, m_marks), per_pair(o_log, o_marks)
    checks = [check_triggers(mp, op), check_inputs("observer", mp, op, rename),
              check_inputs("reflector", mp, op, rename), check_params(m_log, o_log),
              check_actor("actor at question time", m_actor, o_actor)]
    if prep:
        bad = [(k, c) for k, (a, b) in enumerate(prep) if not (c := check_actor("", a, b)).ok]
        checks.append(Check("actor per pair", not bad, f"pair {bad[0][0]}: {bad[0][1].detail}" if bad
                            else f"{len(prep)} pairs byte-identical"))
    if wording:
        checks += [check_inputs("observer", mp, op, rename, whole=True),
                   check_inputs("reflector", mp, op, rename, whole=True)]
    if actor_texts:
        checks.append(check_actor_texts(m_actor, o_actor))
    return checks
