"""Retrieval mode: observation groups that point back at raw messages, and the `recall` tool that pages
through stored messages by cursor with low/high detail (mastra-ai/mastra,
packages/memory/src/processors/observational-memory/observation-groups.ts and
packages/memory/src/tools/om-tools.ts)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, Sequence

from om_core.errors import InputError
from om_core.storage.base import Storage
from om_core.tokens import TokenCounter, default_counter, get_encoding
from om_core.types import Message

LOW_TEXT, LOW_TOOL, LOW_OTHER = 100, 20, 30  # per-part token budgets at low detail
EXPAND_USER_TEXT, EXPAND_OTHER = 200, 50  # how far leftover budget re-expands parts
HIGH_PART = 4000  # per-part cap at high detail
RESULT_BUDGET = 2000  # whole low-detail result
MAX_LIMIT, MAX_PAGE = 20, 50

_GROUP = re.compile(r'<observation-group id="([0-9a-f]+)" range="([^"]*)"(?: kind="([^"]*)")?>\n?(.*?)\n?</observation-group>',
                    re.DOTALL)
_GROUP_HEADING = re.compile(r"^## Group `([0-9a-f]+)`[ \t]*$", re.MULTILINE)


# ---- observation groups -----------------------------------------------------------------------------


def message_range(messages: Sequence[Message]) -> str:
    """`firstId:lastId` over the messages that have visible content."""
    visible = [m for m in messages if m.content.strip() or m.tool_calls] or list(messages)
    return f"{visible[0].id}:{visible[-1].id}" if visible else ":"


def group_id(range_: str, text: str) -> str:
    return hashlib.sha256(f"{range_}\n{text}".encode("utf-8")).hexdigest()[:16]


def wrap_observation_group(text: str, messages: Sequence[Message], kind: str | None = None) -> str:
    if not text.strip():
        return text
    rng = message_range(messages)
    return _wrap(text, rng, kind)


def _wrap(text: str, rng: str, kind: str | None) -> str:
    kind_attr = f' kind="{kind}"' if kind else ""
    return f'<observation-group id="{group_id(rng, text)}" range="{rng}"{kind_attr}>\n{text.strip()}\n</observation-group>'


@dataclass(frozen=True)
class ObservationGroup:
    id: str
    range: str
    content: str
    kind: str | None = None


def parse_observation_groups(text: str) -> list[ObservationGroup]:
    return [ObservationGroup(m.group(1), m.group(2), m.group(4), m.group(3)) for m in _GROUP.finditer(text)]


def render_observation_groups(text: str) -> str:
    """Actor rendering of groups: a `## Group` heading and the range the recall tool accepts as cursor."""
    return _GROUP.sub(lambda m: f"## Group `{m.group(1)}`\n_range: `{m.group(2)}`_\n\n{m.group(4).strip()}", text)


def reconcile_reflection_groups(reflection: str, source: str) -> str:
    """Re-wrap a reflection of grouped observations: by `## Group` headings if the Reflector kept them,
    else as one `kind="reflection"` group spanning the first to the last source range."""
    groups = {g.id: g for g in parse_observation_groups(source)}
    if not groups:
        return reflection
    heads = list(_GROUP_HEADING.finditer(reflection))
    known = [h for h in heads if h.group(1) in groups]
    if known:
        out = [reflection[: known[0].start()].strip()] if reflection[: known[0].start()].strip() else []
        for i, h in enumerate(known):
            end = known[i + 1].start() if i + 1 < len(known) else len(reflection)
            body = re.sub(r"^_range: `[^`]*`_\s*", "", reflection[h.end():end].strip())
            out.append(_wrap(body, groups[h.group(1)].range, groups[h.group(1)].kind))
        return "\n\n".join(x for x in out if x.strip())
    ranges = [g.range for g in groups.values()]
    first, last = ranges[0].split(":")[0], ranges[-1].split(":")[-1]
    return _wrap(reflection, f"{first}:{last}", "reflection")


def retrieval_instructions(scope: str = "resource", custom: str | None = None) -> str:
    """How the Actor should use the recall tool (our own wording of the rules of Mastra's
    `getRetrievalInstructions`, observational-memory/constants.ts)."""
    where = "any of this user's conversations" if scope == "resource" else "this conversation"
    text = (
        "RECALL: observations are summaries. Each `## Group` carries a `_range_` of raw message ids from "
        f"{where}. Call the `recall` tool when the user refers to specific earlier content, asks to repeat or "
        "show something exactly (code, quotes, URLs, numbers), or when you need to verify or expand a detail; "
        "prefer recalling over guessing. Pass a message id or a whole range `first:last` as `cursor`. "
        "`page: 1` reads forward from the cursor, `page: -1` backward; follow `hasNextPage`/`hasPrevPage`. "
        "Use `detail: \"high\"` (with `partIndex`) when a part was shown truncated; follow the "
        "`[truncated — call recall …]` hints. Do not recall when the observations already answer the question."
    )
    return text + ("\n\n" + custom.strip() if custom and custom.strip() else "")


# ---- the recall tool --------------------------------------------------------------------------------


def recall_tool_schema() -> dict[str, Any]:
    """OpenAI-style function schema of the `recall` tool."""
    return {
        "type": "function",
        "function": {
            "name": "recall",
            "description": "Read raw past messages around a cursor (a message id or an observation-group range).",
            "parameters": {
                "type": "object",
                "properties": {
                    "cursor": {"type": "string", "description": "message id or range 'firstId:lastId'"},
                    "threadId": {"type": "string", "description": "limit to one thread ('current' allowed)"},
                    "anchor": {"type": "string", "enum": ["start", "end"], "default": "start"},
                    "page": {"type": "integer", "minimum": -MAX_PAGE, "maximum": MAX_PAGE, "default": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": MAX_LIMIT},
                    "detail": {"type": "string", "enum": ["low", "high"], "default": "low"},
                    "partIndex": {"type": "integer", "minimum": 0, "description": "one part at high detail"},
                },
                "additionalProperties": False,
            },
        },
    }


def _parts(m: Message) -> list[tuple[str, str]]:
    """(kind, text) parts of a message: its text, then each tool call and its outcome."""
    parts: list[tuple[str, str]] = []
    if m.content.strip():
        parts.append(("text", m.content))
    for tc in m.tool_calls:
        parts.append(("tool-call", f"{tc.name}({json.dumps(tc.args, ensure_ascii=False)})"))
        if tc.state != "call":
            parts.append(("tool-result", f"{tc.name} {tc.state}: {json.dumps(tc.result, ensure_ascii=False, default=str)}"))
    return parts


def _cut(text: str, budget: int, counter: TokenCounter, hint: str) -> tuple[str, int, bool]:
    ids = counter.encode(text)
    if len(ids) <= budget:
        return text, len(ids), False
    head = get_encoding(counter.encoding_name).decode(list(ids[:budget]))
    return f"{head} … {hint}", budget, True


def _validate(page: int, limit: int, detail: str, anchor: str) -> int:
    if detail not in ("low", "high"):
        raise InputError(f"detail: must be 'low' or 'high', got {detail!r}")
    if anchor not in ("start", "end"):
        raise InputError(f"anchor: must be 'start' or 'end', got {anchor!r}")
    if not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"limit: must be within 1..{MAX_LIMIT}, got {limit}")
    if not -MAX_PAGE <= page <= MAX_PAGE:
        raise InputError(f"page: must be within -{MAX_PAGE}..{MAX_PAGE}, got {page}")
    return page or 1


async def recall(storage: Storage, resource_id: str, *, cursor: str | None = None, thread_id: str | None = None,
                 page: int = 1, limit: int = 20, detail: Literal["low", "high"] = "low",
                 anchor: Literal["start", "end"] = "start", part_index: int | None = None,
                 counter: TokenCounter | None = None) -> dict[str, Any]:
    """Page through stored raw messages. Page 1 starts at the cursor (inclusive) and reads forward; page −1
    is the `limit` messages just before it. Without a cursor, `anchor` picks the thread's start or end.

    `cursor` is a message id or a group range `firstId:lastId`; `limit` 1..20 messages per page; low detail
    cuts each text part to 100 tokens (tool parts to 20), high detail to 4,000; `part_index` (high detail)
    returns one part of the cursor message. Returns a JSON-safe dict: `messages` (id, role, threadId,
    createdAt ISO, content), `page`, `limit`, `detail`, `hasNextPage`, `hasPrevPage`, `tokens` (tokens
    returned), `truncated`, `cursor`. Raises InputError for out-of-range arguments or an unknown cursor.
    Rules from mastra-ai/mastra, packages/memory/src/tools/om-tools.ts (the `recall` tool)."""
    page = _validate(page, limit, detail, anchor)
    counter = counter or default_counter()
    if cursor and ":" in cursor:
        first, last = cursor.split(":", 1)
        cursor = first if anchor == "start" else last
    window = _window(storage, resource_id, thread_id, cursor, page, limit, anchor)
    msgs, has_prev, has_next = window
    if part_index is not None:
        if not cursor or detail != "high":
            raise InputError("partIndex: needs a message id as cursor and detail='high'")
        target = storage.get_message(cursor)
        if target is None or target.resource_id != resource_id:
            raise InputError(f"cursor: message {cursor!r} not found for this resource")
        parts = _parts(target)
        if not 0 <= part_index < len(parts):
            raise InputError(f"partIndex: message {cursor!r} has parts 0..{len(parts) - 1}")
        text, used, cut = _cut(parts[part_index][1], HIGH_PART, counter, "[truncated at high detail]")
        return {"messages": [{"id": target.id, "role": target.role, "threadId": target.thread_id,
                              "createdAt": target.created_at.isoformat(), "content": f"[p{part_index}] {text}"}],
                "page": page, "limit": limit, "detail": detail, "hasNextPage": False, "hasPrevPage": False,
                "tokens": used, "truncated": cut}
    rendered, tokens, truncated = _render(msgs, detail, counter)
    return {"messages": rendered, "page": page, "limit": limit, "detail": detail, "hasNextPage": has_next,
            "hasPrevPage": has_prev, "tokens": tokens, "truncated": truncated,
            "cursor": msgs[0].id if msgs else cursor}


def _window(storage: Storage, resource_id: str, thread_id: str | None, cursor: str | None, page: int, limit: int,
            anchor: str) -> tuple[list[Message], bool, bool]:
    if cursor is not None:
        anchor_msg = storage.get_message(cursor)
        if anchor_msg is None or anchor_msg.resource_id != resource_id:
            raise InputError(f"cursor: message {cursor!r} not found for this resource; use an id from a group range")
        before = storage.list_messages(resource_id, thread_id, cursor=cursor, direction="backward",
                                       limit=limit * max(1, -page) + 1 if page < 0 else 1)
        after = storage.list_messages(resource_id, thread_id, cursor=cursor,
                                      limit=limit * max(1, page) + 1 if page > 0 else 1)
        if page > 0:
            seq = [anchor_msg, *after]
            start = (page - 1) * limit
            return seq[start:start + limit], start > 0 or bool(before), len(seq) > start + limit
        k = -page
        hi = len(before) - (k - 1) * limit
        chosen = before[max(0, hi - limit):hi] if hi > 0 else []
        return chosen, len(before) > k * limit, True
    if anchor == "start":
        seq = storage.list_messages(resource_id, thread_id, limit=limit * abs(page) + 1)
        start = (abs(page) - 1) * limit
        return seq[start:start + limit], start > 0, len(seq) > start + limit
    seq = storage.list_messages(resource_id, thread_id, limit=limit * abs(page) + 1, direction="backward")
    k = abs(page)
    end = len(seq) - (k - 1) * limit
    return seq[max(0, end - limit): max(0, end)], len(seq) > k * limit, k > 1


def _render(msgs: Sequence[Message], detail: str, counter: TokenCounter) -> tuple[list[dict[str, Any]], int, bool]:
    plans: list[tuple[Message, list[tuple[str, str, int, int]]]] = []  # (kind, text, full tokens, budget)
    for m in msgs:
        items = []
        for kind, text in _parts(m):
            full = len(counter.encode(text))
            if detail == "high":
                budget = HIGH_PART
            else:
                budget = LOW_TEXT if kind == "text" else LOW_TOOL if kind.startswith("tool") else LOW_OTHER
            items.append((kind, text, full, budget))
        plans.append((m, items))
    if detail == "low":  # spend what is left of the result budget re-expanding parts, user text first
        left = RESULT_BUDGET - sum(min(full, b) for _, items in plans for _, _, full, b in items)
        for want_user in (True, False):
            for m, items in plans:
                for i, (kind, text, full, b) in enumerate(items):
                    is_user_text = kind == "text" and m.role == "user"
                    if left <= 0 or is_user_text != want_user or full <= b:
                        continue
                    cap = EXPAND_USER_TEXT if is_user_text else EXPAND_OTHER
                    extra = min(left, max(0, min(full, cap) - b))
                    items[i] = (kind, text, full, b + extra)
                    left -= extra
    out, total, truncated = [], 0, False
    for m, items in plans:
        lines = []
        for i, (_kind, text, _full, budget) in enumerate(items):
            hint = f'[truncated — call recall cursor="{m.id}" partIndex={i} detail="high"]'
            shown, used, cut = _cut(text, budget, counter, hint)
            truncated |= cut
            total += used
            lines.append(f"[p{i}] {shown}")
        out.append({"id": m.id, "role": m.role, "threadId": m.thread_id, "createdAt": m.created_at.isoformat(),
                    "content": "\n".join(lines)})
    return out, total, truncated
