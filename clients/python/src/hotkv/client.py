"""The synchronous client: :class:`HotKV`, a :class:`redis.Redis` with the rate-limit commands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import redis
import redis.client

from ._commands import RESPONSE_CALLBACKS, HotKVCommands, SyncCommands

__all__ = ["HotKV", "Pipeline"]


class Pipeline(HotKVCommands, redis.client.Pipeline):
    """A redis-py pipeline (``transaction=True``: ``MULTI``/``EXEC``) that also queues the
    rate-limit commands; :meth:`execute` returns their typed results in order."""


class HotKV(SyncCommands, redis.Redis):
    """A :class:`redis.Redis` client with HotKV's rate-limiting commands.

    Everything redis-py offers (connection pools, TLS, retries, ``from_url``, RESP3 with
    ``protocol=3``, pipelines, transactions) works unchanged; the constructor takes the same
    arguments. The rate-limit methods return typed, frozen results.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.response_callbacks.update(RESPONSE_CALLBACKS)  # type: ignore[no-untyped-call]

    def pipeline(self, transaction: bool = True, shard_hint: Optional[str] = None) -> Pipeline:
        """A pipeline that also has the rate-limit commands (see :class:`Pipeline`)."""
        pipe = super().pipeline(transaction, shard_hint)
        # redis-py builds its own Pipeline class; the mixin adds methods only (no state), so
        # re-classing the object is enough and stays independent of the constructor's
        # signature, which differs between redis-py versions.
        pipe.__class__ = Pipeline
        return pipe  # type: ignore[return-value]

    if TYPE_CHECKING:  # from_url builds this class, not redis.Redis

        @classmethod
        def from_url(cls, url: str, **kwargs: Any) -> "HotKV": ...
