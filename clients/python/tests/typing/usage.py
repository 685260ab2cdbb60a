"""Type-checked (mypy --strict, from test.sh), never run: what users' code sees. Each
assignment fails the check if a method's declared type is wrong."""

from __future__ import annotations

from typing import List, Tuple

import hotkv
import hotkv.asyncio
import hotkv.cluster
from hotkv import GCRALimitAllResult, GCRALimitSpec, GCRAResult, RateLimitResult, RateLimitStats, ThrottleResult


def sync(client: hotkv.HotKV) -> None:
    g: GCRAResult = client.gcra_limit("k", 60000, 10)
    p: GCRAResult = client.gcra_peek("k", 60000, 10, 2)
    n: int = client.gcra_reset("k", "j")
    la: GCRALimitAllResult = client.gcra_limit_all([GCRALimitSpec("{u}s", 1000, 5), ("{u}d", 86400000, 100)])
    rf: GCRAResult = client.gcra_refund("k", 60000, 10)
    print(la.limits[0].remaining, la.retry_after, rf)
    t: ThrottleResult = client.cl_throttle("k", 4, 1, 1)
    ok: bool = client.ratelimit_create("api", 100, 60000, algo="token_bucket", refill=0.5)
    c: RateLimitResult = client.ratelimit_check("api", "user:42", cost=1)
    s: RateLimitStats = client.ratelimit_stats("api")
    up: bool = client.ratelimit_update("api", limit=200, window_ms=1000, shadow=False)
    sh: bool = client.ratelimit_create("shadowed", 10, 1000, shadow=True)
    shadow_info: Tuple[bool, int] = (s.shadow, s.total_shadow_denied)
    print(up, sh, shadow_info)
    lease: int = client.ratelimit_check("jobs", "tenant").lease_id
    released: bool = client.ratelimit_release("jobs", "tenant", lease)
    print(released)
    names: List[str] = client.ratelimit_list()
    from_url: hotkv.HotKV = hotkv.HotKV.from_url("redis://localhost:6379")
    wait: float = g.retry_after.total_seconds() + t.reset_after.total_seconds()
    print(p, n, ok, c.unknown_limiter, s.rate, names, from_url, wait)


async def asynchronous(client: hotkv.asyncio.HotKV) -> None:
    g: GCRAResult = await client.gcra_limit("k", 60000, 10)
    c: RateLimitResult = await client.ratelimit_check("api", "user:42")
    la: GCRALimitAllResult = await client.gcra_limit_all([("{u}s", 1000, 5)], count=2)
    rf: GCRAResult = await client.gcra_refund("k", 60000, 10, 2)
    up: bool = await client.ratelimit_update("api", refill="2.5", shadow=True)
    print(up)
    freed: bool = await client.ratelimit_release("jobs", "tenant", c.lease_id)
    print(la, rf, freed)
    names: List[str] = await client.ratelimit_list()
    print(g, c, names)


def cluster(client: hotkv.cluster.HotKVCluster) -> None:
    g: GCRAResult = client.gcra_limit("rl:{u}:s", 1000, 5)
    la: GCRALimitAllResult = client.gcra_limit_all([GCRALimitSpec("rl:{u}:s", 1000, 5)])
    print(g, la)
