"""Shared test set-up: offline litellm, and the real LongMemEval folder when LONGMEMEVAL_DATA_DIR names one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    d = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not d or not Path(d).is_dir():
        pytest.skip("real LongMemEval data not available: set LONGMEMEVAL_DATA_DIR to the folder with the .json.xz files")
    return Path(d)
