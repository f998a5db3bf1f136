"""One-time litellm setup: offline price map, no tokenizer downloads, quiet logs, the offline provider.

litellm's import is slow (seconds) and reaches for the network unless told otherwise, so nothing in
`bench.gateway` imports it at module level; everything that needs it calls `ensure_litellm()`.
"""

from __future__ import annotations

import logging
import os
import threading
from types import ModuleType

_LOCK = threading.Lock()
_LITELLM: ModuleType | None = None


def ensure_litellm() -> ModuleType:
    """Import and configure litellm once per process; returns the module."""
    global _LITELLM
    if _LITELLM is not None:
        return _LITELLM
    with _LOCK:
        if _LITELLM is not None:
            return _LITELLM
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_LOG", "ERROR")
        import litellm

        if not os.environ.get("TIKTOKEN_CACHE_DIR"):  # tiktoken reads litellm's bundled BPE files, never the web
            bundled = os.path.join(os.path.dirname(litellm.__file__), "litellm_core_utils", "tokenizers")
            if os.path.isdir(bundled):
                os.environ["TIKTOKEN_CACHE_DIR"] = bundled

        litellm.disable_hf_tokenizer_download = True
        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.set_verbose = False
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
            logging.getLogger(name).setLevel(logging.ERROR)

        from bench.gateway.offline.provider import PROVIDER, OfflineLLM

        entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != PROVIDER]
        litellm.custom_provider_map = entries + [{"provider": PROVIDER, "custom_handler": OfflineLLM()}]
        from litellm.utils import custom_llm_setup

        custom_llm_setup()
        _LITELLM = litellm
        return litellm
