"""`ombench run` on the three LongMemEval oracle questions of a recorded cassette, with every role served by the
local fake OpenAI-compatible server replaying the cassette's responses keyed by request (tests/helpers/
cassette.py says how requests are matched). The server plays llama.cpp: it lists the recorded model on
/v1/models and reports an 8,192-token context window and one slot on /props, as the recording server ran.

The configuration is the recorded one: strategies om and full_context, OM thresholds 1,500 / 2,000 tokens, Observer
and Reflector output caps of 1,024 tokens, every role `openai/<recorded model>` at the server's base URL; the
Actor's window is set to 6,000 tokens so that the reader prompt and its answer fit the server's window (the
preflight refuses the default 128,000). The
summary (accuracy, cost, memory diagnostics) is printed by `ombench run`; this script then prints how the
requests were matched. Replayed outputs of a real 0.5B model: never a score.

    LONGMEMEVAL_DATA_DIR=/work/shared/data .venv/bin/python scripts/cassette_run.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.cassette import Cassette  # noqa: E402
from tests.helpers.fakeserver import FakeOpenAIServer  # noqa: E402

CASSETTE = Path("/work/shared/cassettes/qwen05b-oracle3.jsonl")
QUESTIONS = ["gpt4_2655b836", "gpt4_2487a7cb", "gpt4_76048e76"]  # the questions the cassette's requests ask


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cassette", type=Path, default=CASSETTE)
    ap.add_argument("--out", type=Path, default=Path("results/cassette"))
    ap.add_argument("extra", nargs="*", help="more `ombench run` overrides")
    args = ap.parse_args()
    cassette = Cassette(args.cassette)
    served = cassette.served_model()
    props = {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}
    with FakeOpenAIServer(cassette, finish_reason=cassette.finish_reason, models=[{"id": served, "object": "model"}],
                          props=props) as server:
        model = f"openai/{served}"
        overrides = [
            "dataset=longmemeval_oracle", f"dataset.ids=[{','.join(QUESTIONS)}]", "run_strategies=[om,full_context]",
            "strategies.om.params.message_tokens=1500", "strategies.om.params.observation_tokens=2000",
            "+strategies.om.params.observation={max_output_tokens: 1024}",
            "+strategies.om.params.reflection={max_output_tokens: 1024}",
            *(f"model.{role}.model={model}" for role in ("actor", "observer", "reflector", "judge")),
            "model.actor_max_input_tokens=6000",  # the reader prompt fits the 8,192-token window with the answer
            f"gateway.api_base.openai={server.base_url}", f"output.dir={args.out}", "run.progress=off",
            *args.extra,
        ]
        env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "local-server-needs-no-key")}
        print("ombench run " + " ".join(overrides), flush=True)
        rc = subprocess.call([sys.executable, "-m", "bench.cli", "run", *overrides], cwd=ROOT, env=env)
    print("\nrequests served from the cassette (role: requests, matched exactly; the rest got the nearest "
          "recorded request of the same role):")
    for role, s in sorted(cassette.stats().items()):
        print(f"  {role:<10} {s['requests']:>3} requests, {s['exact']:>3} exact")
    return rc


if __name__ == "__main__":
    sys.exit(main())
