"""answer.prompt=mastra: the Actor system text of Mastra's LongMemEval runner, read from run.ts at run time.

The file here is a stand-in run.ts in the project's own words with the upstream structure (`const agentInstructions
= \\`...\\`;`); its sha256 is pinned for the test in place of the real one. The real text never enters the repository."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bench.benchmarks.longmemeval import mastra_runner as mr
from bench.errors import ConfigError

OWN = "Stand-in instructions, first sentence. \nSecond stand-in sentence about the record."
STAND_IN = f"""import {{ Agent }} from '@mastra/core/agent';
    const agentInstructions = `{OWN}`;
    const agent = new Agent({{ instructions: [{{ role: 'system', content: agentInstructions }}] }});
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(mr, "INSTRUCTIONS_SHA256", hashlib.sha256(OWN.encode()).hexdigest())
    mr.runner_actor.cache_clear()
    path = tmp_path / "run.ts"
    path.write_text(STAND_IN)
    yield path
    mr.runner_actor.cache_clear()


def test_instructions_read_checked_and_cached(stand_in: Path) -> None:
    got = mr.runner_actor(str(stand_in))
    assert got.system_text == OWN and str(stand_in) in got.source
    mr.runner_actor.cache_clear()
    assert mr.runner_actor(None).system_text == OWN  # the checked file was cached


def test_wrong_sha256_or_no_file_is_one_line(stand_in: Path, tmp_path: Path) -> None:
    stand_in.write_text(STAND_IN.replace("first", "1st"))
    with pytest.raises(ConfigError, match="not the pinned") as err:
        mr.runner_actor(str(stand_in))
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="mastra_runner_file") as err:
        mr.runner_actor(None)  # nothing cached, no pinned commit to download
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="has 0 `const agentInstructions"):
        mr.runner_instructions("const x = 1;", "x.ts")


def test_stored_actor_request_has_the_runners_layout(stand_in: Path, tmp_path: Path) -> None:
    """An offline run with answer.prompt=mastra: the stored question-time Actor request opens with the runner's
    system text (no cache-busting system message after it), then OM's context, and ends with the question as the
    runner's DateInjector writes it."""
    from bench.runner.app import run_job
    from bench.store import Results
    from tests.helpers.runner import compose_cfg

    run_job(compose_cfg(tmp_path / "out", "dataset.limit=1", "run_strategies=[om]", "run.checkpoints=false",
                        "answer.prompt=mastra", f"answer.mastra_runner_file={stand_in}"))
    with Results(tmp_path / "out" / "bench.duckdb") as res:
        s = res.samples().iloc[0]
        calls = res.question_calls(s.run_key, s.question_id)
        texts = res.call_texts(s.run_key, s.question_id)
    idx = next(int(c.call_idx) for c in calls.itertuples() if c.role == "actor" and c.phase == "answer")
    msgs = texts[idx][0]
    assert msgs is not None
    assert msgs[0] == {"role": "system", "content": OWN}
    assert not any(str(m["content"]).lstrip().startswith("cache:") for m in msgs)
    assert msgs[-1]["role"] == "user"
    assert msgs[-1]["content"].startswith("Current Date: ") and "\nQuestion: " in msgs[-1]["content"]
