"""Suite-wide set-up: offline litellm and Hugging Face, and the shared fixtures of tests/helpers/fixtures.py."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

pytest_plugins = ["tests.helpers.fixtures"]
