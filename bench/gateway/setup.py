"""One-time litellm setup: offline price map, no tokenizer downloads, quiet logs, the registered custom providers.

litellm's import is slow (seconds) and reaches for the network unless told otherwise, so nothing in
`bench.gateway` imports it at module level; everything that needs it calls `ensure_litellm()`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any
from unittest.mock import patch

from bench.gateway.providers import LITELLM_LOCK, install_provider, loaded_litellm, mark_loaded, registered_providers


def ensure_litellm() -> ModuleType:
    """Import and configure litellm once per process; returns the module."""
    done = loaded_litellm()
    if done is not None:
        return done
    with LITELLM_LOCK:
        done = loaded_litellm()
        if done is not None:
            return done
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_LOG", "ERROR")
        # every retry is the gateway's (counted in calls.retries): litellm's OpenAI embedding path turns the
        # max_retries=0 we pass into its DEFAULT_MAX_RETRIES (`max_retries or DEFAULT_MAX_RETRIES`), so that
        # default is 0 too: read from the environment by modules that import it, from the module at call time
        os.environ["DEFAULT_MAX_RETRIES"] = "0"
        import litellm
        import litellm.constants

        if not os.environ.get("TIKTOKEN_CACHE_DIR"):  # tiktoken reads litellm's bundled BPE files, never the web
            bundled = os.path.join(os.path.dirname(litellm.__file__), "litellm_core_utils", "tokenizers")
            if os.path.isdir(bundled):
                os.environ["TIKTOKEN_CACHE_DIR"] = bundled

        litellm.DEFAULT_MAX_RETRIES = 0  # type: ignore[misc]
        litellm.constants.DEFAULT_MAX_RETRIES = 0  # type: ignore[misc]
        litellm.num_retries = 0
        litellm.disable_hf_tokenizer_download = True
        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.set_verbose = False
        # their INFO/WARNING lines ("Retrying request to ...", cost-map notes) would reach the console and the run
        # log past the progress display; the gateway reports what matters (errors, retries) itself
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx", "httpcore", "openai",
                     "openai._base_client"):
            logging.getLogger(name).setLevel(logging.ERROR)

        for provider in registered_providers():
            install_provider(litellm, provider)
        mark_loaded(litellm)
        return litellm


def keys_litellm_finds(litellm: ModuleType, model: str, env: Mapping[str, str]) -> dict[str, Any]:
    """litellm.validate_environment(model) as if the environment were `env` with its blank variables left out: a
    variable set but empty (`OPENAI_API_KEY=`) counts as absent (litellm only checks that it is present). litellm
    reads the process environment, so `env` stands in for it for the duration of the call. Returns litellm's dict
    (`keys_in_environment`, `missing_keys`)."""
    usable = {k: v for k, v in env.items() if str(v).strip()}
    with patch.dict(os.environ, usable, clear=True):
        return dict(litellm.validate_environment(model=model))
