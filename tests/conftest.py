"""Suite-wide set-up: offline litellm and Hugging Face, and the shared fixtures of tests/helpers/fixtures.py."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# the official judge script is never fetched from the internet by a test: downloads go to a closed local port
# (tests that download serve a fixture themselves), and the cache is the test session's own folder
os.environ["OMBENCH_LONGMEMEVAL_BASE_URL"] = "http://127.0.0.1:9"
os.environ["OMBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="ombench-test-cache-")
# the Hugging Face caches too: a LongMemEval file in the user's hub cache would change what the loader finds
_hf_cache = tempfile.mkdtemp(prefix="ombench-test-hf-")
os.environ["HF_HUB_CACHE"] = os.path.join(_hf_cache, "hub")
os.environ["HF_DATASETS_CACHE"] = os.path.join(_hf_cache, "datasets")

pytest_plugins = ["tests.helpers.fixtures"]
