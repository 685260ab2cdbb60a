"""hotkv:// as a storage of the limits package, through limits' own strategies, against the
real server (wall clock)."""

from __future__ import annotations

import time
from typing import Iterator

import pytest
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import (
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)

import hotkv
from hotkv.limits_storage import HotKVStorage
from conftest import Server, reset_server


@pytest.fixture(params=[True, False], ids=["native", "sortedset"])
def storage(request: pytest.FixtureRequest, server: Server) -> Iterator[HotKVStorage]:
    reset_server(hotkv.HotKV(host=server.host, port=server.port))
    flag = "" if request.param else "?native_moving_window=false"
    s = storage_from_string(f"hotkv://{server.host}:{server.port}{flag}")
    assert isinstance(s, HotKVStorage) and s.native_moving_window is request.param
    yield s


def test_import_hotkv_registers_the_scheme(server: Server) -> None:
    """The one-line switch: after a plain "import hotkv", limits resolves hotkv:// URIs (a
    fresh interpreter, so no test import has registered it before)."""
    import subprocess
    import sys

    code = (
        "import hotkv\n"
        "from limits.storage import storage_from_string\n"
        f"s = storage_from_string('hotkv://{server.host}:{server.port}')\n"
        "assert type(s).__name__ == 'HotKVStorage' and s.check()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_scheme_options(server: Server) -> None:
    s = storage_from_string(f"hotkv://{server.host}:{server.port}/0", key_prefix="app", socket_timeout=2)
    assert isinstance(s, HotKVStorage) and s.check() and s.key_prefix == "app"
    assert isinstance(s.storage, hotkv.HotKV)
    bad = storage_from_string("hotkv://127.0.0.1:1", socket_connect_timeout=0.2)
    assert bad.check() is False


def test_fixed_window(storage: HotKVStorage) -> None:
    limiter = FixedWindowRateLimiter(storage)
    item = parse("3/minute")
    assert [limiter.hit(item, "u") for _ in range(4)] == [True, True, True, False]
    assert limiter.hit(item, "other")
    assert not limiter.test(item, "u")
    stats = limiter.get_window_stats(item, "u")
    assert stats.remaining == 0 and time.time() + 58 < stats.reset_time <= time.time() + 60.1
    # The window started with the first hit: its TTL was set once, not on every hit.
    assert 59_000 < storage.storage.pttl(storage.prefixed_key(item.key_for("u"))) <= 60_000
    limiter.clear(item, "u")
    assert limiter.hit(item, "u", cost=3) and not limiter.hit(item, "u")


def test_moving_window(storage: HotKVStorage) -> None:
    limiter = MovingWindowRateLimiter(storage)
    item = parse("3/second")
    start = time.time()
    assert limiter.hit(item, "u", cost=2) and limiter.hit(item, "u")
    assert not limiter.hit(item, "u") and not limiter.test(item, "u")
    assert not limiter.hit(item, "u", cost=4)  # more than the limit: never
    stats = limiter.get_window_stats(item, "u")
    assert stats.remaining == 0
    # Full window: the reset is when the first entries leave, about a second after they came.
    assert start + 0.9 < stats.reset_time <= time.time() + 1.01
    if storage.native_moving_window:
        assert storage.storage.ratelimit_list() == ["LIMITS:mw:3:1"]
    time.sleep(1.05)
    assert limiter.test(item, "u") and limiter.get_window_stats(item, "u").remaining == 3
    assert limiter.hit(item, "u")
    assert limiter.get_window_stats(item, "u").remaining == 2
    limiter.clear(item, "u")
    assert limiter.get_window_stats(item, "u").remaining == 3
    assert storage.reset() >= 1
    assert storage.storage.ratelimit_list() == []
    assert storage.storage.keys("LIMITS:*") == []


def test_sliding_window_counter(storage: HotKVStorage) -> None:
    limiter = SlidingWindowCounterRateLimiter(storage)
    item = parse("5/day")  # clock-aligned windows: a day keeps the test away from a boundary
    assert all(limiter.hit(item, "u") for _ in range(5))
    assert not limiter.hit(item, "u") and not limiter.test(item, "u")
    stats = limiter.get_window_stats(item, "u")
    assert stats.remaining == 0
    assert limiter.hit(item, "v", cost=5) and not limiter.hit(item, "v")
    assert not limiter.hit(item, "w", cost=6)
    limiter.clear(item, "u")
    assert limiter.get_window_stats(item, "u").remaining == 5
    assert limiter.hit(item, "u")


def test_sliding_window_weighs_previous_window(storage: HotKVStorage) -> None:
    """A count in the previous window weighs by the part of it still inside the sliding
    window: the same arithmetic as limits' Redis storage."""
    expiry = 86400
    now = time.time()
    prev_k, cur_k, left = storage._window_keys("k", expiry, now)
    storage.storage.set(prev_k, 10, ex=2 * expiry)
    prev, prev_left, cur, cur_left = storage.get_sliding_window("k", expiry)
    assert (prev, cur) == (10, 0) and abs(prev_left - left) < 1 and abs(cur_left - left - expiry) < 1
    weighted = int(10 * left / expiry)
    room = 10 - weighted
    assert all(storage.acquire_sliding_window_entry("k", 10, expiry) for _ in range(room))
    assert not storage.acquire_sliding_window_entry("k", 10, expiry)


def test_errors_wrap(server: Server) -> None:
    from limits.errors import StorageError

    s = storage_from_string("hotkv://127.0.0.1:1", wrap_exceptions=True, socket_connect_timeout=0.2)
    with pytest.raises(StorageError):
        FixedWindowRateLimiter(s).hit(parse("1/second"), "u")


# The asyncio storage (async+hotkv://) through limits.aio's strategies.


@pytest.mark.parametrize("native", [True, False], ids=["native", "sortedset"])
async def test_async_storage(server: Server, native: bool) -> None:
    from limits.aio import strategies as aio

    from hotkv.limits_storage import AsyncHotKVStorage

    reset_server(hotkv.HotKV(host=server.host, port=server.port))
    flag = "" if native else "?native_moving_window=false"
    s = storage_from_string(f"async+hotkv://{server.host}:{server.port}{flag}")
    assert isinstance(s, AsyncHotKVStorage) and s.native_moving_window is native
    assert await s.check()

    fixed = aio.FixedWindowRateLimiter(s)
    item = parse("2/minute")
    assert [await fixed.hit(item, "u") for _ in range(3)] == [True, True, False]
    assert (await fixed.get_window_stats(item, "u")).remaining == 0
    await fixed.clear(item, "u")
    assert await fixed.hit(item, "u")

    moving = aio.MovingWindowRateLimiter(s)
    item = parse("3/second")
    assert await moving.hit(item, "m", cost=3) and not await moving.hit(item, "m")
    stats = await moving.get_window_stats(item, "m")
    assert stats.remaining == 0 and stats.reset_time <= time.time() + 1.01
    await moving.clear(item, "m")
    assert await moving.test(item, "m") and await moving.hit(item, "m")

    sliding = aio.SlidingWindowCounterRateLimiter(s)
    item = parse("4/day")
    assert all([await sliding.hit(item, "w") for _ in range(4)]) and not await sliding.hit(item, "w")
    assert (await sliding.get_window_stats(item, "w")).remaining == 0
    await sliding.clear(item, "w")
    assert await sliding.hit(item, "w", cost=4)

    # The sync and the async storage share their state layout.
    sync = storage_from_string(f"hotkv://{server.host}:{server.port}{flag}")
    assert MovingWindowRateLimiter(sync).get_window_stats(parse("3/second"), "m").remaining == 2
    assert FixedWindowRateLimiter(sync).get_window_stats(parse("2/minute"), "u").remaining == 1
    assert await s.reset() >= 3
    assert sync.storage.keys("LIMITS:*") == []
