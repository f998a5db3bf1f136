"""The model gateway: litellm-backed `ChatModel`s per role, response cache, limits, retries, usage and cost.

In-process providers (the offline engine, `bench.offline`) are litellm custom providers that the application
registers with `register_provider` before it builds a `Gateway`; the gateway imports none of them. Importing
this package does not import litellm (slow); the first model call does, through
`bench.gateway.setup.ensure_litellm`.
"""

from bench.gateway.config import CachePolicy, GatewayConfig, RoleModel, provider_of
from bench.gateway.errors import GatewayError
from bench.gateway.gateway import Gateway, GatewayChatModel
from bench.gateway.providers import CustomProvider, register_provider
from bench.gateway.usage import estimate_cost, price_map_version

__all__ = [
    "CachePolicy",
    "CustomProvider",
    "Gateway",
    "GatewayChatModel",
    "GatewayConfig",
    "GatewayError",
    "RoleModel",
    "estimate_cost",
    "price_map_version",
    "provider_of",
    "register_provider",
]
