"""The synchronous cluster client: :class:`HotKVCluster`, a :class:`redis.cluster.RedisCluster`
with the rate-limit commands routed by their keys."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import redis.cluster

from ._commands import RESPONSE_CALLBACKS, HotKVCommands, SyncCommands, command_keys, slot_of

__all__ = ["HotKVCluster", "ClusterPipeline", "merge_lists"]


def merge_lists(command: Any, res: Dict[Any, List[str]], **kwargs: Any) -> List[str]:
    """Result callback for RATELIMIT.LIST on every primary: limiters are node-local, so the
    cluster-wide list is the union of the nodes' lists, sorted bytewise as each node sorts."""
    names = {n for node_names in res.values() for n in node_names}
    return sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape"))


class _Routing:
    """Slot computation for the HotKV commands, shared by the cluster client and its
    pipeline: the key positions are known (``KEY_POSITIONS``), so routing needs no COMMAND
    round trip and RATELIMIT.* route by the limiter name, as the server defines them."""

    def determine_slot(self, *args: Any) -> int:
        keys = command_keys(args)
        if keys is None:
            return super().determine_slot(*args)  # type: ignore[misc, no-any-return]
        return slot_of(self, str(args[0]), keys)


_FLAGS = {"RATELIMIT.LIST": redis.cluster.RedisCluster.PRIMARIES}


class ClusterPipeline(_Routing, HotKVCommands, redis.cluster.ClusterPipeline):
    """A cluster pipeline that also queues the rate-limit commands."""

    COMMAND_FLAGS: Dict[str, Any] = {**redis.cluster.ClusterPipeline.COMMAND_FLAGS, **_FLAGS}


class HotKVCluster(_Routing, SyncCommands, redis.cluster.RedisCluster):
    """A :class:`redis.cluster.RedisCluster` with HotKV's rate-limiting commands.

    GCRA.* and CL.THROTTLE go to the node of their key, RATELIMIT.* to the node of the limiter
    name (hash tags apply); GCRA.RESET's keys must share a slot. RATELIMIT.LIST asks every
    primary and merges the names.
    """

    COMMAND_FLAGS: Dict[str, Any] = {**redis.cluster.RedisCluster.COMMAND_FLAGS, **_FLAGS}
    RESULT_CALLBACKS: Dict[str, Any] = {
        **redis.cluster.RedisCluster.RESULT_CALLBACKS,
        "RATELIMIT.LIST": merge_lists,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Applied to each node's reply (the nodes' own clients are plain redis.Redis).
        self.cluster_response_callbacks.update(RESPONSE_CALLBACKS)  # type: ignore[no-untyped-call]

    def pipeline(self, transaction: Optional[Any] = None, shard_hint: Optional[Any] = None) -> ClusterPipeline:
        """A cluster pipeline that also has the rate-limit commands."""
        pipe = super().pipeline(transaction, shard_hint)  # type: ignore[no-untyped-call]
        pipe.__class__ = ClusterPipeline
        # The pipeline copied redis-py's class-level flags; give it ours.
        pipe.command_flags.update(_FLAGS)
        return pipe  # type: ignore[no-any-return]
