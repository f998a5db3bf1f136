from bench.cli import main
from bench.benchmarks.longmemeval.loader import load_dataset
from bench.perf import measure, perf_config
from bench.strategies import STRATEGY_NAMES


def test_measure_replays_every_strategy_and_profile_and_reports_a_ratio():
    ds = load_dataset("synthetic:n_per_type=1,haystack_tokens=1500")
    report = measure(ds.instances[:2], profiles=("openai", "anthropic"), cpu_profile=5)
    assert set(report.strategies) == {*STRATEGY_NAMES, "om_m11"}  # experiment=perf: every strategy, OM in both profiles
    for _name, st in report.strategies.items():
        assert st.questions == 2 and st.prompts > 2 and st.prompt_tokens > 0 and not st.failed
        assert set(st.cached) == {"openai", "anthropic"}
    assert report.strategies["full_context"].prompts == report.strategies["rag"].prompts
    assert report.baseline_s > 0 and report.ratio > 0 and report.peak_rss_bytes >= report.rss_after_load_bytes > 0
    text = report.render()
    assert "ratio:" in text and "where the time goes" in text and "strategies" in text
    # one row per strategy, profiled on its own: its profiled seconds and the shares of its components
    table = text.split("where each strategy's time goes", 1)[1].split("\n\n", 1)[0].splitlines()
    head, rows = table[1].split(), {r.split()[0]: r.split() for r in table[2:]}
    assert head[:3] == ["strategy", "profiled", "s"] and "tokenizer" in head and "simulators" in head
    assert set(rows) == set(report.strategies)
    for row in rows.values():  # shares of 11 columns, each rounded to 1%; a tiny strategy may profile as 0.00 s
        assert float(row[1]) >= 0 and all(c.endswith("%") for c in row[2:])
        assert float(row[1]) == 0 or 89 <= sum(int(c.rstrip("%")) for c in row[2:]) <= 111


def test_perf_config_is_the_run_config_with_overrides():
    cfg = perf_config()
    assert cfg.experiment_name == "perf" and cfg.cachesim.profiles == ["openai", "anthropic", "vllm"]
    assert cfg.answer.system_prompt  # the run's system prompt, not an empty one
    cfg = perf_config(["experiment=quick", "strategies.om.params.message_tokens=1234"])
    assert cfg.experiment_name == "quick" and cfg.strategies["om"].params["message_tokens"] == 1234


def test_cli_rejects_unknown_names(capsys):
    assert main(["perf", "--data", "synthetic:n_per_type=1", "--strategies", "full_context,memgpt"]) == 2
    assert "--strategies: unknown memgpt" in capsys.readouterr().err
    assert main(["perf", "--data", "synthetic:n_per_type=1", "--profiles", "azure"]) == 2
    assert main(["perf", "--data", "synthetic:n_per_type=1", "no.such.key=1"]) == 2
    assert "config override" in capsys.readouterr().err


def test_report_prints_the_economics_and_the_growth_against_full_context():
    ds = load_dataset("synthetic:n_per_type=1,haystack_tokens=1500")
    report = measure(ds.instances[:2], strategies=("full_context", "om", "rag"), profiles=("openai", "vllm"),
                     scaling=(0.5, 1, 2))
    assert report.questions == 6  # each question at three sizes
    fc, om = report.strategies["full_context"], report.strategies["om"]
    assert len(fc.per_question) == 6 and all(t > 0 and s > 0 for t, s in fc.per_question)
    assert om.question_tokens < fc.question_tokens  # OM answers from observations, not the whole history
    for st in report.strategies.values():
        assert set(st.prefill_all) == {"openai", "vllm"}
        assert 0 < st.prefill_all["openai"] <= st.tokens_all and st.cached_all["openai"] <= st.tokens_all
    text = report.render()
    assert "economics (vs full_context" in text
    fc_row = next(ln for ln in text.splitlines() if ln.startswith("full_context") and "100.0%" in ln)
    assert fc_row.count("100.0%") == 3  # question tokens and both profiles' prefill against itself
    assert "scaling (each of 2 question(s) replayed at 0.5x, 1x, 2x" in text
    assert "exponent of seconds ~ tokens^b" in text and "full_context" in text.split("exponent of")[-1]


def test_cli_rejects_bad_scaling_factors(capsys):
    assert main(["perf", "--data", "synthetic:n_per_type=1", "--scaling", "1,x"]) == 2
    assert "--scaling" in capsys.readouterr().err
    assert main(["perf", "--data", "synthetic:n_per_type=1", "--scaling", "0,1"]) == 2


def test_the_cpu_clock_leaves_out_time_the_process_spends_waiting(monkeypatch):
    """`--clock cpu` times with the process's CPU seconds: a replay that waits 0.3 s per question (as on cores
    other jobs hold) counts the wait on the wall clock only; an unknown clock is a one-line error."""
    import asyncio

    import pytest

    import bench.perf as perf
    from bench.errors import ConfigError

    real = perf.replay_one

    async def waiting(*args, **kw):
        await asyncio.sleep(0.3)
        return await real(*args, **kw)

    monkeypatch.setattr(perf, "replay_one", waiting)
    ds = load_dataset("synthetic:2")
    wall = measure(ds.instances[:1], strategies=("oracle",), profiles=("openai",))
    cpu = measure(ds.instances[:1], strategies=("oracle",), profiles=("openai",), clock="cpu")
    assert wall.strategies["oracle"].seconds >= 0.3 > cpu.strategies["oracle"].seconds
    assert "clock: CPU seconds" in cpu.render() and "clock:" not in wall.render()
    assert perf._now is perf.time.perf_counter  # restored after the measurement
    with pytest.raises(ConfigError, match="clock 'gpu'"):
        measure(ds.instances[:1], strategies=("oracle",), clock="gpu")
