"""The asyncio clients: :class:`HotKV` (a :class:`redis.asyncio.Redis`) and
:class:`HotKVCluster` (a :class:`redis.asyncio.cluster.RedisCluster`), with the rate-limit
commands as coroutines."""

from __future__ import annotations

from typing import Any, Dict, Optional

import redis.asyncio
import redis.asyncio.client
import redis.asyncio.cluster

from ._commands import RESPONSE_CALLBACKS, AsyncCommands, HotKVCommands, command_keys, slot_of
from .cluster import merge_lists

__all__ = ["HotKV", "Pipeline", "HotKVCluster", "ClusterPipeline"]


class Pipeline(HotKVCommands, redis.asyncio.client.Pipeline):  # type: ignore[misc]
    """An asyncio pipeline that also queues the rate-limit commands."""


# The ignore: redis-py's own base classes disagree about command_info's signature.
class HotKV(AsyncCommands, redis.asyncio.Redis):  # type: ignore[misc]
    """A :class:`redis.asyncio.Redis` client with HotKV's rate-limiting commands; each returns
    an awaitable of its typed result. Same constructor as redis-py."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.response_callbacks.update(RESPONSE_CALLBACKS)

    def pipeline(self, transaction: bool = True, shard_hint: Optional[str] = None) -> Pipeline:
        """A pipeline that also has the rate-limit commands."""
        pipe = super().pipeline(transaction, shard_hint)
        pipe.__class__ = Pipeline  # methods only; see hotkv.client.HotKV.pipeline
        return pipe  # type: ignore[return-value]


class ClusterPipeline(HotKVCommands, redis.asyncio.cluster.ClusterPipeline):  # type: ignore[misc]
    """An asyncio cluster pipeline that also queues the rate-limit commands (routed by the
    cluster client it came from)."""


class HotKVCluster(AsyncCommands, redis.asyncio.cluster.RedisCluster):  # type: ignore[misc]
    """A :class:`redis.asyncio.cluster.RedisCluster` with HotKV's rate-limiting commands,
    routed as :class:`hotkv.cluster.HotKVCluster` routes them."""

    COMMAND_FLAGS: Dict[str, Any] = {
        **redis.asyncio.cluster.RedisCluster.COMMAND_FLAGS,
        "RATELIMIT.LIST": redis.asyncio.cluster.RedisCluster.PRIMARIES,
    }
    RESULT_CALLBACKS: Dict[str, Any] = {
        **redis.asyncio.cluster.RedisCluster.RESULT_CALLBACKS,
        "RATELIMIT.LIST": merge_lists,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The nodes share this dict (redis-py passes it to every ClusterNode), so the typed
        # results are built on whichever node answers.
        self.response_callbacks.update(RESPONSE_CALLBACKS)

    async def _determine_slot(self, command: str, *args: Any) -> int:
        # Known key positions: no COMMAND round trip, and RATELIMIT.* route by limiter name.
        keys = command_keys((command, *args))
        if keys is None:
            return await super()._determine_slot(command, *args)
        return slot_of(self, command, keys)

    def pipeline(self, transaction: Optional[Any] = None, shard_hint: Optional[Any] = None) -> ClusterPipeline:
        """A cluster pipeline that also has the rate-limit commands."""
        pipe = super().pipeline(transaction, shard_hint)
        pipe.__class__ = ClusterPipeline
        return pipe  # type: ignore[return-value]

