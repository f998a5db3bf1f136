"""Fakes and shared helpers of the test suite (one package; the fixtures in `fixtures` are registered for every
test by tests/conftest.py):

- `fakeserver`: a local fake OpenAI-compatible HTTP server with fault injection (also used by
  scripts/bench_gateway.py); `gateway`: gateway configs pointed at it.
- `strategies`: hand-made instance views, a strategy context, `ScriptedModel`, LongMemEval_S loaded once.
- `runner`: the real Hydra config composed for a temporary results folder; `ombench` in a subprocess.
- `results_db`: a small but complete results database (for the report and the notebook).
- `words`: a one-token-per-word tokenizer and prompt builders for hand-computed cache expectations.
- `official`: a stand-in for LongMemEval's evaluate_qa.py (same structure, our placeholder wording) and a
  checkout holding it, for `judge.source=official`.
- `postgres`: a throwaway local PostgreSQL server; `store_writer`: the writer process the SIGKILL test kills.

om_core's own test doubles (scripted Observer and Reflector) are public API: `om_core.testing`.
"""
