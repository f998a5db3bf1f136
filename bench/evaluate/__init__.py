"""Benchmark-neutral evaluation: the Actor's answer, the LLM judge (templates chosen by the benchmark), metrics.

Modules: answer (Actor call), judge (judge calls, parse rules, repeats), templates (a set of judge templates
and its hash), metrics (micro/macro/abstention, Wilson, paired tests, judge agreement). What a benchmark's
templates say and its official file formats live with it (bench.benchmarks)."""
