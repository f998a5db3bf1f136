from bench.cli import main
from bench.data.loader import load_dataset
from bench.perf import measure, perf_config
from bench.strategies import STRATEGY_NAMES


def test_measure_replays_every_strategy_and_profile_and_reports_a_ratio():
    ds = load_dataset("synthetic:n_per_type=1,haystack_tokens=1500")
    report = measure(ds.instances[:2], profiles=("openai", "anthropic"), cpu_profile=5)
    assert set(report.strategies) == set(STRATEGY_NAMES)  # experiment=perf runs every configured strategy
    for _name, st in report.strategies.items():
        assert st.questions == 2 and st.prompts > 2 and st.prompt_tokens > 0 and not st.failed
        assert set(st.cached) == {"openai", "anthropic"}
    assert report.strategies["full_context"].prompts == report.strategies["rag"].prompts
    assert report.baseline_s > 0 and report.ratio > 0 and report.peak_rss_bytes >= report.rss_after_load_bytes > 0
    text = report.render()
    assert "ratio:" in text and "where the time goes" in text and "strategies" in text


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
