"""Concurrency limiters (``algo="concurrency"``): the vectors C1-C8 of docs/ratelimit.md
("Concurrency limits: in-flight requests") through the typed API (``ratelimit_create``,
``RateLimitResult.lease_id``, ``ratelimit_release``) in every client mode: sync and asyncio,
RESP2 and RESP3, a pipeline and MULTI/EXEC, and the cluster client on a one-node slot map.
Then many threads acquiring and releasing on one key (never more in flight than the limit),
and the ASGI and Django middlewares giving a request's lease back when it is done.

The steps use the shared runner (helpers.py); each block starts from an empty server
and sets the clock with DEBUG CLOCK SET, so lease ids are deterministic:
``id(t) = (t0 + t) * 1000000``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List, MutableMapping, Tuple

import pytest

import hotkv
import hotkv.asyncio
from hotkv import RateLimitResult, RateLimitStats
from hotkv._results import ReplyError, parse_ratelimit
from hotkv.middleware import Limit
from hotkv.middleware.asgi import RateLimitMiddleware
from conftest import Server, reset_server
from helpers import E_NOTFOUND, E_SYNTAX, T0, Block, block_tests, freeze, r

E_BIG = "invalid limit: must be at most 100000 for ALGO concurrency"
E_LEASE = "invalid lease: must be a positive integer"
E_NOTCONC = "limiter is not a concurrency limiter"
E_ARITY = "wrong number of arguments for 'ratelimit.release' command"
CONC = {"algo": "concurrency"}


def lid(t: int) -> int:
    """The first lease id issued at t0 + t ms."""
    return (T0 + t) * 1_000_000


BLOCKS: List[Block] = [
    ("C1-C3", [
        ("flush",), ("at", 0),
        ("create", "c", 3, 1000, CONC),
        ("check", "c", "u", 1, r(1, 2, 0, 3, 0, lid(0))),
        ("check", "c", "u", 1, r(1, 1, 0, 3, 1, lid(0) + 1)),
        ("at", 100),
        ("check", "c", "u", 1, r(1, 0, 0, 3, 2, lid(100))),
        ("at", 200),
        ("check", "c", "u", 1, r(0, 0, 800, 3, 3, 0)),
        ("peek", "c", "u", r(0, 0, 800, 3, 3)),
        # C2
        ("release", "c", "u", lid(0) + 1, True),
        ("release", "c", "u", lid(0) + 1, False),
        ("peek", "c", "u", r(1, 1, 0, 3, 2)),
        ("check", "c", "u", 1, r(1, 0, 0, 3, 2, lid(200))),
        ("at", 300),
        ("release", "c", "v", lid(0), False),  # another key's
        ("release", "c", "u", 42, False),  # never issued
        # C3: the t0 lease expires at exactly t0+1000.
        ("at", 999),
        ("check", "c", "u", 1, r(0, 0, 1, 3, 3, 0)),
        ("at", 1000),
        ("check", "c", "u", 1, r(1, 0, 0, 3, 2, lid(1000))),
        ("release", "c", "u", lid(0), False),  # expired
        ("stats", "c", {"algo": "concurrency", "limit": 3, "window_ms": 1000, "unique_keys": 1,
                        "total_allowed": 5, "total_denied": 2, "refill_per_sec": None,
                        "drain_per_sec": None}),
        ("at", 2200),
        ("stats", "c", {"unique_keys": 0, "total_allowed": 5, "total_denied": 2}),
    ]),
    ("C4-C5", [
        ("flush",), ("at", 0),
        ("create", "d", 10, 1000, CONC),
        ("check", "d", "u", 4, r(1, 6, 0, 10, 0, lid(0))),
        ("at", 200),
        ("check", "d", "u", 4, r(1, 2, 0, 10, 4, lid(200))),
        ("at", 400),
        ("check", "d", "u", 4, r(0, 2, 600, 10, 8, 0)),
        ("check", "d", "u", 11, r(0, 2, -1, 10, 8, 0)),
        ("release", "d", "u", lid(0), True),
        ("check", "d", "u", 4, r(1, 2, 0, 10, 4, lid(400))),
        ("peek", "d", "u", r(1, 2, 0, 10, 8)),
        # C5: RESET drops every lease; ids never repeat.
        ("reset", "d", "u", 1),
        ("reset", "d", "u", 0),
        ("peek", "d", "u", r(1, 10, 0, 10, 0)),
        ("check", "d", "u", 1, r(1, 9, 0, 10, 0, lid(400) + 1)),
        ("stats", "d", {"total_allowed": 13, "total_denied": 15}),
    ]),
    ("C6", [
        ("flush",), ("at", 0),
        ("create", "s", 1, 1000, {"algo": "concurrency", "shadow": True}),
        ("check", "s", "u", 1, r(1, 0, 0, 1, 0, lid(0))),
        ("check", "s", "u", 1, r(1, 0, 1000, 1, 1, 0)),  # shadow-denied: let through, no lease
        ("peek", "s", "u", r(1, 0, 1000, 1, 1)),
        ("release", "s", "u", lid(0), True),
        ("check", "s", "u", 1, r(1, 0, 0, 1, 0, lid(0) + 1)),
        ("stats", "s", {"algo": "concurrency", "shadow": True, "total_allowed": 2, "total_denied": 1,
                        "total_shadow_denied": 1}),
    ]),
    ("C7", [
        ("flush",), ("at", 0),
        ("create", "w", 3, 10000, CONC),
        ("check", "w", "u", 3, r(1, 0, 0, 3, 0, lid(0))),
        ("at", 5000),
        ("check", "w", "u", 1, r(0, 0, 5000, 3, 3, 0)),
        ("update", "w", {"window_ms": 2000}),
        ("check", "w", "u", 1, r(1, 2, 0, 3, 0, lid(5000))),  # the t0 lease is out of a 2 s window
        ("update", "w", {"limit": 1}),
        ("check", "w", "u", 1, r(0, 0, 2000, 1, 1, 0)),
        ("err", "update", ("w", {"limit": 100001}), E_BIG),
        ("err", "update", ("w", {"refill": 5}), E_SYNTAX),
        ("err", "raw", ["RATELIMIT.UPDATE", "w", "DRAIN", 5, "LIMIT", 100001], E_SYNTAX),
        ("err", "update", ("w", {"limit": 100001, "drain": 5}), E_SYNTAX),
        ("stats", "w", {"limit": 1, "window_ms": 2000}),
    ]),
    ("C8", [
        ("flush",), ("at", 0),
        ("err", "create", ("x", 100001, 1000, CONC), E_BIG),
        ("err", "create", ("x", 100001, 1000, {"algo": "concurrency", "drain": 5}), E_SYNTAX),
        ("err", "create", ("x", 100001, 1000, {"algo": "concurrency", "refill": 5}), E_SYNTAX),
        ("create", "x", 100000, 1000, {"algo": "CONCURRENCY"}),
        ("err", "raw", ["RATELIMIT.RELEASE", "x", "u"], E_ARITY),
        ("err", "raw", ["RATELIMIT.RELEASE", "x", "u", 1, 2], E_ARITY),
        ("err", "release", ("x", "u", 0), E_LEASE),
        ("err", "release", ("x", "u", -1), E_LEASE),
        ("err", "raw", ["RATELIMIT.RELEASE", "x", "u", "abc"], E_LEASE),
        ("err", "release", ("x", "u", 2**63), E_LEASE),
        ("err", "raw", ["RATELIMIT.RELEASE", "nolimiter", "u", "abc"], E_LEASE),  # arguments first
        ("err", "release", ("nolimiter", "u", 1), E_NOTFOUND),
        ("create", "api", 10, 1000, {}),
        ("err", "release", ("api", "u", 1), E_NOTCONC),
        # Other algorithms and an unknown limiter reply five fields: lease_id 0.
        ("check", "api", "u", 1, r(1, 9, 0, 10, 0)),
        ("check", "nolimiter", "u", 1, r(0, 0, 0, 0, 0)),
        ("release", "x", "u", 1, False),
        ("release", "x", "u", 2**63 - 1, False),
        ("stats", "x", {"algo": "concurrency", "limit": 100000}),
    ]),
]


# The sync, asyncio and cluster runs of every block.
test_sync, test_async, test_cluster = block_tests(BLOCKS)


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
def test_pipeline(client: hotkv.HotKV, transaction: bool) -> None:
    """C1's start and C2's releases queued in one pipeline (or MULTI/EXEC): the lease ids and
    the releases' booleans come out of execute() in order."""
    freeze(client)
    with client.pipeline(transaction=transaction) as pipe:
        pipe.ratelimit_create("c", 3, 1000, algo="concurrency")
        for _ in range(4):
            pipe.ratelimit_check("c", "u")
        ret = pipe.ratelimit_release("c", "u", lid(0) + 1)
        assert ret is pipe
        pipe.ratelimit_release("c", "u", lid(0) + 1).ratelimit_peek("c", "u").ratelimit_stats("c")
        out = pipe.execute()
    assert out == [
        True,
        r(1, 2, 0, 3, 0, lid(0)), r(1, 1, 0, 3, 1, lid(0) + 1), r(1, 0, 0, 3, 2, lid(0) + 2),
        r(0, 0, 1000, 3, 3, 0),
        True, False,
        r(1, 1, 0, 3, 2),
        RateLimitStats("c", "concurrency", 3, 1000, 1, 3, 1),
    ]


def test_parser_five_or_six_fields() -> None:
    """Five integers (other algorithms, PEEK, an unknown limiter) give lease_id 0; six carry
    it exactly, above 2**53; anything else is a ReplyError."""
    assert parse_ratelimit([1, 9, 0, 10, 0]) == RateLimitResult(True, 9, 0, 10, 0, 0)
    big = 1700000000000000001
    assert parse_ratelimit([1, 2, 0, 3, 0, big]).lease_id == big
    for bad in ([1, 2, 0, 3, 0, big, 7], [1, 2, 0, 3], [1, 2, 0, 3, 0, b"x"]):
        with pytest.raises(ReplyError):
            parse_ratelimit(bad)


def test_concurrent_workers(client: hotkv.HotKV) -> None:
    """20 threads acquire and release leases on one key of a limit-3 limiter (real clock):
    the test never observes more than 3 holders at once, every lease it got is released
    (RELEASE replies True), and nothing is left in flight."""
    client.ratelimit_create("jobs", 3, 60000, algo="concurrency")
    lock = threading.Lock()
    state = {"in_flight": 0, "max": 0, "acquired": 0, "denied": 0}
    errors: List[BaseException] = []
    ids: List[int] = []

    def worker() -> None:
        try:
            for _ in range(15):
                res = client.ratelimit_check("jobs", "tenant")
                if not res.allowed:
                    assert res.lease_id == 0 and res.current >= 3
                    with lock:
                        state["denied"] += 1
                    time.sleep(0.001)
                    continue
                with lock:
                    state["in_flight"] += 1
                    state["acquired"] += 1
                    state["max"] = max(state["max"], state["in_flight"])
                    ids.append(res.lease_id)
                time.sleep(0.002)
                # Leave before releasing: the test's count never lags the server's.
                with lock:
                    state["in_flight"] -= 1
                assert client.ratelimit_release("jobs", "tenant", res.lease_id) is True
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert 1 <= state["max"] <= 3, state
    assert state["acquired"] > 0 and state["acquired"] + state["denied"] == 300
    assert len(set(ids)) == len(ids), "a lease id was issued twice"
    assert client.ratelimit_peek("jobs", "tenant").current == 0
    st = client.ratelimit_stats("jobs")
    assert (st.total_allowed, st.total_denied, st.unique_keys) == (state["acquired"], state["denied"], 0)


async def test_concurrent_workers_async(server: Server) -> None:
    """The same with the asyncio client: 20 tasks on a limit of 3."""
    c = hotkv.asyncio.HotKV(host=server.host, port=server.port, protocol=3)
    try:
        await c.ratelimit_create("ajobs", 3, 60000, algo="concurrency")
        in_flight, peak, acquired = 0, 0, 0

        async def worker() -> None:
            nonlocal in_flight, peak, acquired
            for _ in range(10):
                res = await c.ratelimit_check("ajobs", "k")
                if not res.allowed:
                    await asyncio.sleep(0.001)
                    continue
                in_flight += 1
                acquired += 1
                peak = max(peak, in_flight)
                await asyncio.sleep(0.002)
                in_flight -= 1
                assert await c.ratelimit_release("ajobs", "k", res.lease_id) is True

        await asyncio.gather(*(worker() for _ in range(20)))
        assert 1 <= peak <= 3 and acquired > 0
        assert (await c.ratelimit_peek("ajobs", "k")).current == 0
    finally:
        await c.ratelimit_drop("ajobs")
        await c.aclose()


# The ASGI middleware, driven directly (two requests in flight at once on one event loop).

Scope = MutableMapping[str, Any]


async def _request(mw: Any, peer: str = "192.0.2.1") -> Tuple[int, Dict[str, str], bytes]:
    scope: Scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "client": (peer, 1234)}
    sent: List[Any] = []

    async def receive() -> Dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await mw(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {bytes(k).decode(): bytes(v).decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, body


async def test_asgi_releases_lease(server: Server) -> None:
    """A slow request holds the only slot (a second one is refused with the limiter's
    headers); the lease is released when the application returns, and also when it raises."""
    sync = hotkv.HotKV(host=server.host, port=server.port)
    reset_server(sync)
    freeze(sync)
    sync.ratelimit_create("inflight", 1, 60000, algo="concurrency")
    entered, leave = asyncio.Event(), asyncio.Event()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("path") == "/boom":
            raise RuntimeError("handler failed")
        entered.set()
        await leave.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    c = hotkv.asyncio.HotKV(host=server.host, port=server.port)
    mw = RateLimitMiddleware(app, client=c, limits=[Limit.limiter("inflight")])
    try:
        slow = asyncio.ensure_future(_request(mw))
        await entered.wait()
        assert sync.ratelimit_peek("inflight", "192.0.2.1").current == 1
        status, headers, _ = await _request(mw)
        assert status == 429
        assert headers["ratelimit"] == '"inflight";r=0;t=60' and headers["retry-after"] == "60"
        leave.set()
        status, headers, body = await slow
        assert (status, body) == (200, b"ok") and headers["ratelimit"] == '"inflight";r=0'
        assert sync.ratelimit_peek("inflight", "192.0.2.1").current == 0

        # An application that raises: the lease is released all the same.
        async def boom(scope: Scope, receive: Any, send: Any) -> None:
            assert sync.ratelimit_peek("inflight", "192.0.2.1").current == 1
            raise RuntimeError("handler failed")

        mw2 = RateLimitMiddleware(boom, client=c, limits=[Limit.limiter("inflight")])
        with pytest.raises(RuntimeError):
            await _request(mw2)
        assert sync.ratelimit_peek("inflight", "192.0.2.1").current == 0

        # A GCRA limit that refuses: the concurrency limiter keeps nothing.
        entered.clear()
        mw3 = RateLimitMiddleware(app, client=c, limits=[Limit.gcra("burst", 60000, 1), Limit.limiter("inflight")])
        leave.set()
        assert (await _request(mw3))[0] == 200
        assert (await _request(mw3))[0] == 429
        assert sync.ratelimit_peek("inflight", "192.0.2.1").current == 0
        st = sync.ratelimit_stats("inflight")
        assert (st.total_allowed, st.total_denied) == (3, 1)
    finally:
        await c.aclose()
        sync.execute_command("DEBUG", "CLOCK", "RESET")
        sync.close()


def test_django_releases_lease(server: Server) -> None:
    """The Django middleware releases the lease when the view returns, and when it raises."""
    pytest.importorskip("django")
    import test_middleware_django as dj  # configures Django settings once
    from django.http import HttpRequest, HttpResponse
    from django.test import RequestFactory, override_settings
    from hotkv.middleware.django import RateLimitMiddleware as DjangoMiddleware

    sync = hotkv.HotKV(host=server.host, port=server.port)
    reset_server(sync)
    sync.ratelimit_create("inflight", 1, 60000, algo="concurrency")
    seen: List[int] = []

    def view(request: HttpRequest) -> HttpResponse:
        seen.append(sync.ratelimit_peek("inflight", "127.0.0.1").current)
        if request.path == "/boom":
            raise RuntimeError("view failed")
        return HttpResponse("ok")

    conf = {"url": dj.url(server), "limits": [Limit.limiter("inflight")]}
    with override_settings(HOTKV_RATELIMIT=conf):
        mw = DjangoMiddleware(view)
        rf = RequestFactory()
        for _ in range(3):
            resp = mw(rf.get("/"))
            assert resp.status_code == 200 and resp["RateLimit"] == '"inflight";r=0'
        with pytest.raises(RuntimeError):
            mw(rf.get("/boom"))
    assert seen == [1, 1, 1, 1]  # the lease was held while the view ran
    assert sync.ratelimit_peek("inflight", "127.0.0.1").current == 0
    assert sync.ratelimit_stats("inflight").total_allowed == 4
    sync.close()
