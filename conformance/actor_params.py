"""What the Actor's request carries: Mastra's LongMemEval runner vs the mastra_* presets, per actor model.

The runner (mastra-ai/mastra explorations/longmemeval run.ts) gives its Agent the router string `openai/<model>`
and calls `agent.generate(question, {modelSettings: {temperature: 0}})` with no max tokens. @mastra/core's model
router sends `openai/...` through its bundled @ai-sdk/openai (core 1.2.0: 2.0.69; core 1.68.0: 2.0.115) to the
Responses API. `conformance/actor_request.mjs` makes that call with the core installed for a conformance version;
om-bench makes its Actor call (bench.evaluate.answer through the gateway, i.e. litellm with drop_params) with the
preset's actor model, params, answer.temperature and answer.max_tokens. Both go to the conformance fake model.

Compared (one `Check` per actor model): the sampling parameters as sent: temperature (present or not, its value),
the output cap (Responses `max_output_tokens`; Chat Completions `max_tokens`/`max_completion_tokens`), reasoning
settings (Responses `reasoning`; Chat Completions `reasoning_effort`), top_p. Not compared, and listed in docs/om.md:
the API (Responses vs Chat Completions) and the system message's role (`developer` for a reasoning model).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conformance.compare import Check
from conformance.fake_model import FakeModel

HERE = Path(__file__).resolve().parent
PRESETS = {"openai/gpt-5-mini": "mastra_gpt5mini", "openai/gpt-4o": "mastra_gpt4o"}
SYSTEM, USER = "You answer from the record.", "Current Date: 2023/05/30 (Tue) 23:40\nQuestion: Where did I go?"


def sampling(body: dict[str, Any]) -> dict[str, Any]:
    """The sampling parameters of a Responses or Chat Completions body, under one set of names:
    temperature, top_p, max_output (the output cap), reasoning (the effort). Absent = not sent."""
    out: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        if key in body:
            out[key] = body[key]
    for key in ("max_output_tokens", "max_tokens", "max_completion_tokens"):
        if key in body:
            out["max_output"] = body[key]
    if "reasoning" in body:
        out["reasoning"] = (body["reasoning"] or {}).get("effort")
    if "reasoning_effort" in body:
        out["reasoning"] = body["reasoning_effort"]
    return out


def mastra_request(core_dir: Path, model: str, base_url: str) -> None:
    """The runner's Actor call through the @mastra/core installed in `core_dir`. Raises CalledProcessError."""
    env = dict(os.environ, OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-conformance-fake")
    subprocess.run(["node", str(HERE / "actor_request.mjs"), str(core_dir), model, SYSTEM, USER], env=env,
                   check=True, capture_output=True, text=True, timeout=180)


async def ombench_request(preset: str, base_url: str) -> None:
    """om-bench's Actor call for `preset` (composed as `ombench run experiment=<preset>` would be)."""
    from bench.conf import compose
    from bench.config import validate
    from bench.evaluate.answer import answer
    from bench.gateway import Gateway, GatewayConfig, RoleModel
    from bench.prompt import Prompt

    cfg = validate(compose([f"experiment={preset}"]))
    actor = cfg.model.actor
    gw = Gateway(GatewayConfig(roles={"actor": RoleModel(actor.model, dict(actor.params))}, cache_policy="off",
                               cache_path=None, api_base={"actor": base_url}, local_defaults=False, max_attempts=1))
    os.environ.setdefault("OPENAI_API_KEY", "sk-conformance-fake")
    prompt = Prompt()
    prompt.add("system", SYSTEM)
    prompt.add("user", USER)
    await answer(gw.model("actor"), prompt, max_tokens=cfg.answer.max_tokens, temperature=cfg.answer.temperature)


def actor_checks(fm: FakeModel, core_dirs: dict[str, Path]) -> list[Check]:
    """One Check per (core version, actor model): the runner's sampling parameters equal the preset's."""
    checks: list[Check] = []
    for model, preset in PRESETS.items():
        asyncio.run(ombench_request(preset, fm.base_url(f"ombench-{preset}")))
        ours = sampling(fm.requests[f"ombench-{preset}"][-1]["body"])
        for core, folder in core_dirs.items():
            client = f"runner-{core}-{preset}"
            mastra_request(folder, model, fm.base_url(client))
            rec = fm.requests[client][-1]
            theirs = sampling(rec["body"])
            roles = [m.get("role") for m in rec["body"].get("input", [])]
            detail = (f"{model} (@mastra/core {core}, {rec.get('api', 'chat')} API, roles {roles}): runner "
                      f"{json.dumps(theirs)}, {preset} {json.dumps(ours)}")
            checks.append(Check(f"actor params {model} core {core}", theirs == ours, detail))
    return checks
