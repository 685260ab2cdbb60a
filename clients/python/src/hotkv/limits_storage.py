"""A storage for the ``limits`` package (and so for flask-limiter and slowapi) on HotKV.

Importing :mod:`hotkv` registers it for the URI schemes ``hotkv://``, ``hotkvs://`` (TLS)
and ``hotkv+unix://``, so switching an application is one line::

    import hotkv  # registers hotkv:// with limits
    limiter = Limiter(key_func=get_remote_address, storage_uri="hotkv://localhost:6379")

How each strategy is stored:

* **Moving window** uses HotKV's native sliding-window limiter (``RATELIMIT.*``): one limiter
  per (limit, window) pair, named ``<prefix>:mw:<limit>:<seconds>`` and created on first use,
  checked with ``RATELIMIT.CHECK`` (atomic, exact at millisecond resolution, bounded memory,
  no Lua). The limits key is the limiter's per-key key. RATELIMIT.* is an Enterprise feature
  of HotKV; pass ``native_moving_window=False`` (or ``?native_moving_window=false`` in the URI)
  to keep moving-window state in plain sorted sets instead.
* **Fixed window** is ``INCRBY`` plus ``EXPIRE ... NX`` in one ``MULTI``/``EXEC``: atomic
  without a script, the window starting at the first hit as in limits' Redis storage.
* **Sliding window counter** keeps two counters per key in windows aligned on the clock
  (``<key>/<window index>``, one hash tag so both share a cluster slot), updated with an
  optimistic ``WATCH``/``MULTI`` transaction.

``async+hotkv://`` (:class:`AsyncHotKVStorage`) is the asyncio twin for ``limits.aio``,
storing the same state in the same layout.

Everything lives under ``key_prefix`` (default ``LIMITS``), so :meth:`HotKVStorage.reset`
removes exactly this storage's state.
"""

from __future__ import annotations

import math
import time
import urllib.parse
from typing import Any, List, Optional, Tuple, Union, cast

import redis
import redis.asyncio
from limits.aio.storage import base as aio_base
from limits.storage.base import MovingWindowSupport, SlidingWindowCounterSupport, Storage

from ._results import RateLimitResult
from .asyncio import HotKV as AsyncHotKV
from .client import HotKV

__all__ = ["HotKVStorage", "AsyncHotKVStorage"]


def _redis_url(uri: str) -> Tuple[str, dict[str, str]]:
    """Maps a hotkv URI to the redis-py URL it stands for, and takes out this storage's own
    query options (redis-py would reject them)."""
    parsed = urllib.parse.urlsplit(uri)
    scheme = {"hotkv": "redis", "hotkvs": "rediss", "hotkv+unix": "unix"}[parsed.scheme]
    query = urllib.parse.parse_qsl(parsed.query, keep_blank_values=True)
    own = {k: v for k, v in query if k == "native_moving_window"}
    rest = urllib.parse.urlencode([(k, v) for k, v in query if k not in own])
    return urllib.parse.urlunsplit((scheme, parsed.netloc, parsed.path, rest, parsed.fragment)), own


def _n(v: Any) -> int:
    """An integer reply as int (redis-py types its replies as "maybe awaitable")."""
    return int(v or 0)


def _truthy(v: Union[str, bool, float]) -> bool:
    return v if isinstance(v, bool) else str(v).lower() not in ("0", "false", "no", "off")


class _Layout:
    """Key and limiter naming shared by the sync and the asyncio storage, so both read and
    write the same state."""

    key_prefix: str
    native_moving_window: bool

    def _setup(self, uri: str, key_prefix: str, native_moving_window: bool) -> str:
        url, own = _redis_url(uri)
        self.native_moving_window = _truthy(own.get("native_moving_window", native_moving_window))
        self.key_prefix = key_prefix
        return url

    def prefixed_key(self, key: str) -> str:
        """The keyspace key for a limits key: every key this storage writes starts with
        ``key_prefix:``, which is what lets :meth:`reset` find them."""
        return f"{self.key_prefix}:{key}"

    @staticmethod
    def _escape(pattern: str) -> str:
        return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in pattern)

    def _limiter(self, limit: int, expiry: int) -> str:
        return f"{self.key_prefix}:mw:{limit}:{expiry}"

    def _own(self, names: List[str]) -> List[str]:
        prefix = f"{self.key_prefix}:mw:"
        return [n for n in names if n.startswith(prefix)]

    @staticmethod
    def _window_start(now: float, expiry: int, result: RateLimitResult) -> Tuple[float, int]:
        if result.unknown_limiter or result.current == 0:
            return now, 0
        if not result.allowed and result.retry_after_ms > 0:
            return now + result.retry_after_ms / 1000 - expiry, result.current
        return now, result.current

    def _zset_key(self, key: str) -> str:
        return self.prefixed_key(f"mw:{key}")

    def _window_keys(self, key: str, expiry: int, now: float) -> Tuple[str, str, float]:
        """The previous and current window counters' keys (clock-aligned windows, one hash
        tag so they share a cluster slot) and the time left in the current window."""
        index = int(now // expiry)
        tagged = self.prefixed_key(f"sw:{{{key}}}")
        left = expiry - (now - index * expiry)
        return f"{tagged}/{index - 1}", f"{tagged}/{index}", left

    @staticmethod
    def _weighted(prev: Any, cur: Any, left: float, expiry: int) -> int:
        return math.floor(int(prev or 0) * left / expiry) + int(cur or 0)


class HotKVStorage(_Layout, Storage, MovingWindowSupport, SlidingWindowCounterSupport):
    """Rate-limit storage for :mod:`limits` backed by a HotKV server (see the module
    documentation for how each strategy is stored)."""

    STORAGE_SCHEME = ["hotkv", "hotkvs", "hotkv+unix"]
    PREFIX = "LIMITS"

    def __init__(
        self,
        uri: str,
        connection_pool: Optional[redis.ConnectionPool] = None,
        key_prefix: str = PREFIX,
        wrap_exceptions: bool = False,
        native_moving_window: bool = True,
        **options: Any,
    ) -> None:
        """
        :param uri: ``hotkv://[[user]:password@]host:port[/db]``, ``hotkvs://...`` for TLS or
         ``hotkv+unix:///path/to/socket``; the rest of the URI is read as redis-py's
         ``from_url`` reads a ``redis://`` URL.
        :param connection_pool: use this pool instead of one built from the URI.
        :param key_prefix: prefix of every key and limiter name this storage writes.
        :param native_moving_window: moving windows on RATELIMIT limiters (default) or on
         sorted sets.
        :param options: passed to :class:`hotkv.HotKV` (``socket_timeout``, ``protocol``...).
        """
        super().__init__(uri, wrap_exceptions=wrap_exceptions)
        url = self._setup(uri, key_prefix, native_moving_window)
        self.storage: HotKV
        if connection_pool is not None:
            self.storage = HotKV(connection_pool=connection_pool, **options)
        else:
            self.storage = HotKV.from_url(url, **options)

    @property
    def base_exceptions(self) -> Union[type[Exception], Tuple[type[Exception], ...]]:
        """redis-py's errors: what limits wraps in StorageError with wrap_exceptions."""
        return redis.RedisError

    # Fixed window.

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        """Adds ``amount`` to the window's counter and returns the new count; the window
        (the key's TTL) starts with the first hit."""
        with cast(Any, self.storage.pipeline(transaction=True)) as pipe:
            k = self.prefixed_key(key)
            pipe.incrby(k, amount)
            pipe.expire(k, max(1, math.ceil(expiry)), nx=True)
            count, _ = pipe.execute()
        return _n(count)

    def get(self, key: str) -> int:
        """The fixed window's current count (0 when the window has not started)."""
        return _n(self.storage.get(self.prefixed_key(key)) or 0)

    def get_expiry(self, key: str) -> float:
        """When the fixed window ends, as a Unix time (now when it has not started)."""
        pttl = _n(self.storage.pttl(self.prefixed_key(key)))
        return max(pttl, 0) / 1000 + time.time()

    def check(self) -> bool:
        """Health check: whether the server answers PING."""
        try:
            return bool(self.storage.ping())
        except redis.RedisError:
            return False

    def clear(self, key: str) -> None:
        """Forgets ``key`` in every strategy: the fixed-window counter, the moving window in
        each of this storage's limiters, and the sorted-set window."""
        self.storage.delete(self.prefixed_key(key), self._zset_key(key))
        names = self._own_limiters()
        if names:
            with cast(Any, self.storage.pipeline(transaction=False)) as pipe:
                for name in names:
                    pipe.ratelimit_reset(name, key)
                pipe.execute(raise_on_error=False)  # a limiter dropped meanwhile is fine

    def reset(self) -> Optional[int]:
        """Deletes every key under the prefix and drops this storage's limiters; returns the
        number of keys and limiters removed."""
        removed = 0
        batch: List[Any] = []
        for k in self.storage.scan_iter(match=self._escape(self.key_prefix) + ":*", count=1000):
            batch.append(k)
            if len(batch) == 1000:
                removed += _n(self.storage.delete(*batch))
                batch = []
        if batch:
            removed += _n(self.storage.delete(*batch))
        for name in self._own_limiters():
            try:
                self.storage.ratelimit_drop(name)
                removed += 1
            except redis.ResponseError:
                pass  # dropped by someone else meanwhile
        return removed

    def _own_limiters(self) -> List[str]:
        if not self.native_moving_window:
            return []
        try:
            names = self.storage.ratelimit_list()
        except redis.ResponseError:  # RATELIMIT.* not available on this server
            return []
        return self._own(names)

    # Moving window.

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        """Counts ``amount`` entries if the last ``expiry`` seconds hold at most
        ``limit - amount``; all or nothing."""
        if not self.native_moving_window:
            return self._zset_acquire(key, limit, expiry, amount)
        name = self._limiter(limit, expiry)
        result = self.storage.ratelimit_check(name, key, cost=amount)
        if result.unknown_limiter:
            self._create(name, limit, expiry)
            result = self.storage.ratelimit_check(name, key, cost=amount)
        return result.allowed

    def _create(self, name: str, limit: int, expiry: int) -> None:
        try:
            self.storage.ratelimit_create(name, limit, int(expiry * 1000))
        except redis.ResponseError as exc:
            # Created by a concurrent request meanwhile: that is the limiter we want (the name
            # encodes its settings). Anything else (max-limiters reached) is a real error.
            if "already exists" not in str(exc) or self.storage.ratelimit_peek(name, "").unknown_limiter:
                raise

    def get_moving_window(self, key: str, limit: int, expiry: int) -> Tuple[float, int]:
        """(start of the window, entries in it). The entry count is exact. The start is
        exact when the window is full (it is when the next entry frees, minus ``expiry``);
        when it is not full the native limiter does not report its oldest entry, and the
        start returned is now, so the reset time limits derives from it is an upper bound."""
        if not self.native_moving_window:
            return self._zset_window(key, expiry)
        now = time.time()
        return self._window_start(now, expiry, self.storage.ratelimit_peek(self._limiter(limit, expiry), key))

    # Moving window on sorted sets (for servers without RATELIMIT.*): members are unique
    # "<ms>:<n>" strings scored by their time, added under WATCH so the check and the add are
    # one step.

    def _zset_acquire(self, key: str, limit: int, expiry: int, amount: int) -> bool:
        if amount > limit:
            return False
        k = self._zset_key(key)
        with cast(Any, self.storage.pipeline(transaction=True)) as pipe:
            while True:
                try:
                    pipe.watch(k)
                    now_ms = int(time.time() * 1000)
                    pipe.zremrangebyscore(k, "-inf", now_ms - expiry * 1000)
                    if _n(pipe.zcard(k)) + amount > limit:
                        pipe.unwatch()
                        return False
                    seq = _n(pipe.incr(k + ":seq"))
                    pipe.multi()
                    pipe.zadd(k, {f"{now_ms}:{seq}:{i}": now_ms for i in range(amount)})
                    pipe.pexpire(k, expiry * 1000)
                    pipe.pexpire(k + ":seq", expiry * 1000)
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    def _zset_window(self, key: str, expiry: int) -> Tuple[float, int]:
        now = time.time()
        k = self._zset_key(key)
        entries: Any = self.storage.zrangebyscore(k, (now - expiry) * 1000, "+inf", withscores=True)
        if not entries:
            return now, 0
        return float(entries[0][1]) / 1000, len(entries)

    # Sliding window counter.

    def get_sliding_window(self, key: str, expiry: int) -> Tuple[int, float, int, float]:
        """(previous count, seconds until the previous window stops weighing, current count,
        seconds until the current window's count stops weighing)."""
        now = time.time()
        prev_k, cur_k, left = self._window_keys(key, expiry, now)
        prev, cur = cast(List[Any], self.storage.mget(prev_k, cur_k))
        return int(prev or 0), left, int(cur or 0), left + expiry

    def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        """Counts ``amount`` if the weighted count (the previous window's count scaled by the
        part of it still inside the sliding window, plus the current count) leaves room."""
        if amount > limit:
            return False
        with cast(Any, self.storage.pipeline(transaction=True)) as pipe:
            while True:
                now = time.time()
                prev_k, cur_k, left = self._window_keys(key, expiry, now)
                try:
                    pipe.watch(prev_k, cur_k)
                    prev, cur = pipe.mget(prev_k, cur_k)
                    if self._weighted(prev, cur, left, expiry) + amount > limit:
                        pipe.unwatch()
                        return False
                    pipe.multi()
                    pipe.incrby(cur_k, amount)
                    # Kept while it can still weigh as the next window's previous one.
                    pipe.pexpire(cur_k, int((left + expiry) * 1000) + 1)
                    pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    def clear_sliding_window(self, key: str, expiry: int) -> None:
        prev_k, cur_k, _ = self._window_keys(key, expiry, time.time())
        self.storage.delete(prev_k, cur_k)


class AsyncHotKVStorage(_Layout, aio_base.Storage, aio_base.MovingWindowSupport, aio_base.SlidingWindowCounterSupport):
    """The asyncio twin of :class:`HotKVStorage` for limits' ``limits.aio`` strategies
    (``async+hotkv://``, ``async+hotkvs://``, ``async+hotkv+unix://``), on
    :class:`hotkv.asyncio.HotKV`. It stores exactly what the sync storage stores."""

    STORAGE_SCHEME = ["async+hotkv", "async+hotkvs", "async+hotkv+unix"]
    PREFIX = "LIMITS"

    def __init__(
        self,
        uri: str,
        connection_pool: Optional[redis.asyncio.ConnectionPool] = None,
        key_prefix: str = PREFIX,
        wrap_exceptions: bool = False,
        native_moving_window: bool = True,
        **options: Any,
    ) -> None:
        """The parameters of :class:`HotKVStorage`; ``options`` go to
        :class:`hotkv.asyncio.HotKV`."""
        super().__init__(uri, wrap_exceptions=wrap_exceptions)
        url = self._setup(uri[len("async+"):], key_prefix, native_moving_window)
        self.storage: AsyncHotKV
        if connection_pool is not None:
            self.storage = AsyncHotKV(connection_pool=connection_pool, **options)
        else:
            self.storage = AsyncHotKV.from_url(url, **options)

    @property
    def base_exceptions(self) -> Union[type[Exception], Tuple[type[Exception], ...]]:
        """redis-py's errors: what limits wraps in StorageError with wrap_exceptions."""
        return redis.RedisError

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        async with cast(Any, self.storage.pipeline(transaction=True)) as pipe:
            k = self.prefixed_key(key)
            pipe.incrby(k, amount)
            pipe.expire(k, max(1, math.ceil(expiry)), nx=True)
            count, _ = await pipe.execute()
        return _n(count)

    async def get(self, key: str) -> int:
        return _n(await self.storage.get(self.prefixed_key(key)))

    async def get_expiry(self, key: str) -> float:
        pttl = _n(await self.storage.pttl(self.prefixed_key(key)))
        return max(pttl, 0) / 1000 + time.time()

    async def check(self) -> bool:
        try:
            return bool(await self.storage.ping())
        except redis.RedisError:
            return False

    async def clear(self, key: str) -> None:
        await self.storage.delete(self.prefixed_key(key), self._zset_key(key))
        names = await self._own_limiters()
        if names:
            async with cast(Any, self.storage.pipeline(transaction=False)) as pipe:
                for name in names:
                    pipe.ratelimit_reset(name, key)
                await pipe.execute(raise_on_error=False)

    async def reset(self) -> Optional[int]:
        removed = 0
        batch: List[Any] = []
        async for k in self.storage.scan_iter(match=self._escape(self.key_prefix) + ":*", count=1000):
            batch.append(k)
            if len(batch) == 1000:
                removed += _n(await self.storage.delete(*batch))
                batch = []
        if batch:
            removed += _n(await self.storage.delete(*batch))
        for name in await self._own_limiters():
            try:
                await self.storage.ratelimit_drop(name)
                removed += 1
            except redis.ResponseError:
                pass
        return removed

    async def _own_limiters(self) -> List[str]:
        if not self.native_moving_window:
            return []
        try:
            return self._own(await self.storage.ratelimit_list())
        except redis.ResponseError:
            return []

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if not self.native_moving_window:
            return await self._zset_acquire(key, limit, expiry, amount)
        name = self._limiter(limit, expiry)
        result = await self.storage.ratelimit_check(name, key, cost=amount)
        if result.unknown_limiter:
            try:
                await self.storage.ratelimit_create(name, limit, int(expiry * 1000))
            except redis.ResponseError as exc:
                if "already exists" not in str(exc) or (await self.storage.ratelimit_peek(name, "")).unknown_limiter:
                    raise
            result = await self.storage.ratelimit_check(name, key, cost=amount)
        return result.allowed

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> Tuple[float, int]:
        if not self.native_moving_window:
            return await self._zset_window(key, expiry)
        now = time.time()
        return self._window_start(now, expiry, await self.storage.ratelimit_peek(self._limiter(limit, expiry), key))

    async def _zset_acquire(self, key: str, limit: int, expiry: int, amount: int) -> bool:
        if amount > limit:
            return False
        k = self._zset_key(key)
        async with cast(Any, self.storage.pipeline(transaction=True)) as pipe:
            while True:
                try:
                    await pipe.watch(k)
                    now_ms = int(time.time() * 1000)
                    await pipe.zremrangebyscore(k, "-inf", now_ms - expiry * 1000)
                    if _n(await pipe.zcard(k)) + amount > limit:
                        await pipe.unwatch()
                        return False
                    seq = _n(await pipe.incr(k + ":seq"))
                    pipe.multi()
                    pipe.zadd(k, {f"{now_ms}:{seq}:{i}": now_ms for i in range(amount)})
                    pipe.pexpire(k, expiry * 1000)
                    pipe.pexpire(k + ":seq", expiry * 1000)
                    await pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    async def _zset_window(self, key: str, expiry: int) -> Tuple[float, int]:
        now = time.time()
        entries: Any = await self.storage.zrangebyscore(self._zset_key(key), (now - expiry) * 1000, "+inf", withscores=True)
        if not entries:
            return now, 0
        return float(entries[0][1]) / 1000, len(entries)

    async def get_sliding_window(self, key: str, expiry: int) -> Tuple[int, float, int, float]:
        now = time.time()
        prev_k, cur_k, left = self._window_keys(key, expiry, now)
        prev, cur = cast(List[Any], await self.storage.mget(prev_k, cur_k))
        return int(prev or 0), left, int(cur or 0), left + expiry

    async def acquire_sliding_window_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        async with cast(Any, self.storage.pipeline(transaction=True)) as pipe:
            while True:
                prev_k, cur_k, left = self._window_keys(key, expiry, time.time())
                try:
                    await pipe.watch(prev_k, cur_k)
                    prev, cur = await pipe.mget(prev_k, cur_k)
                    if self._weighted(prev, cur, left, expiry) + amount > limit:
                        await pipe.unwatch()
                        return False
                    pipe.multi()
                    pipe.incrby(cur_k, amount)
                    pipe.pexpire(cur_k, int((left + expiry) * 1000) + 1)
                    await pipe.execute()
                    return True
                except redis.WatchError:
                    continue

    async def clear_sliding_window(self, key: str, expiry: int) -> None:
        prev_k, cur_k, _ = self._window_keys(key, expiry, time.time())
        await self.storage.delete(prev_k, cur_k)
