"""HotKV's Python client: redis-py with typed methods for HotKV's rate-limiting commands.

``hotkv.HotKV`` is a :class:`redis.Redis`, ``hotkv.asyncio.HotKV`` a
:class:`redis.asyncio.Redis` and ``hotkv.cluster.HotKVCluster`` a
:class:`redis.cluster.RedisCluster`, each with ``gcra_limit``, ``gcra_peek``, ``gcra_limit_all``, ``gcra_refund``, ``gcra_reset``,
``cl_throttle`` and ``ratelimit_*`` returning frozen dataclasses. ``hotkv.limits_storage``
is a storage for the ``limits`` package (``hotkv://`` URIs, for flask-limiter and slowapi),
``hotkv.middleware`` has ASGI and Django middleware.
"""

from __future__ import annotations

import importlib.util

from ._commands import KEY_POSITIONS, RESPONSE_CALLBACKS, HotKVCommands
from ._results import (
    GCRALimitAllResult,
    GCRALimitSpec,
    GCRAResult,
    RateLimitResult,
    RateLimitStats,
    ReplyError,
    ThrottleResult,
)
from .client import HotKV, Pipeline

__version__ = "0.1.0"

__all__ = [
    "HotKV",
    "HotKVCommands",
    "RESPONSE_CALLBACKS",
    "KEY_POSITIONS",
    "Pipeline",
    "GCRAResult",
    "GCRALimitSpec",
    "GCRALimitAllResult",
    "ThrottleResult",
    "RateLimitResult",
    "RateLimitStats",
    "ReplyError",
    "__version__",
]

# The limits package finds storages by URI scheme in a registry filled when a storage class is
# defined. Defining ours on "import hotkv" (when limits 5 or later is installed: the storage API
# it implements) is what makes storage_uri="hotkv://host:port" work in flask-limiter and slowapi
# after a plain "import hotkv". An older limits (Python 3.9 tops out at limits 4) is left alone
# rather than breaking the client's import.
def _limits_major() -> int:
    if importlib.util.find_spec("limits") is None:
        return 0
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("limits").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 0


if _limits_major() >= 5:
    from . import limits_storage as _limits_storage  # noqa: F401
