"""The ASGI middleware in a real Starlette application (Starlette's TestClient over httpx)
against the real server, with the server clock frozen so headers are exact."""

from __future__ import annotations

from typing import Any, Iterator, List

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import hotkv
import hotkv.asyncio
from hotkv.middleware import Limit
from hotkv.middleware.asgi import RateLimitMiddleware, by_header, by_ip
from conftest import Server


def make_app(server: Server, protocol: int = 2, port: int = 0, **kw: Any) -> TestClient:
    async def home(request: Request) -> PlainTextResponse:
        d = getattr(request.state, "ratelimit", None)  # absent when failing open
        return PlainTextResponse(f"ok {d.allowed if d else None}", headers={"RateLimit": "app-value", "X-App": "1"})

    app = Starlette(routes=[Route("/", home)])
    client = hotkv.asyncio.HotKV(host=server.host, port=port or server.port, protocol=protocol,
                                 socket_connect_timeout=0.5)
    app.add_middleware(RateLimitMiddleware, client=client, **kw)
    return TestClient(app)


@pytest.mark.parametrize("protocol", [2, 3])
def test_gcra_headers(server: Server, sync: hotkv.HotKV, protocol: int) -> None:
    """The specification's example (V1 then V4b): the same headers as the Go middleware."""
    with make_app(server, protocol, limits=[Limit.gcra("api", 60000, 10)]) as tc:
        r = tc.get("/")
        assert r.status_code == 200 and r.text == "ok True"
        assert r.headers["RateLimit-Policy"] == '"api";q=10;w=60'
        assert r.headers["RateLimit"] == '"api";r=9;t=6'  # replaces the app's own field
        assert r.headers["X-App"] == "1" and "Retry-After" not in r.headers
        for _ in range(9):
            assert tc.get("/").status_code == 200
        r = tc.get("/")
        assert r.status_code == 429 and r.text == "rate limit exceeded\n"
        assert r.headers["Retry-After"] == "6"
        assert r.headers["RateLimit-Policy"] == '"api";q=10;w=60'
        assert r.headers["RateLimit"] == '"api";r=0;t=6'
    # Keyed by the peer address (Starlette's TestClient uses "testclient").
    assert sync.exists("rl:api:testclient") == 1


def test_named_limiter_and_legacy(server: Server, sync: hotkv.HotKV) -> None:
    sync.ratelimit_create("api", 2, 60000)
    sync.ratelimit_create("tb", 20, 4000, algo="token_bucket", refill=5)
    limits = [Limit.limiter("api"), Limit.limiter("tb")]
    with make_app(server, limits=limits, legacy_headers=True, key=by_header("X-API-Key")) as tc:
        r = tc.get("/", headers={"X-API-Key": "k1"})
        assert r.status_code == 200
        assert r.headers["RateLimit-Policy"] == '"api";q=2;w=60, "tb";q=20;w=4'
        assert r.headers["RateLimit"] == '"api";r=1, "tb";r=19'
        assert (r.headers["X-RateLimit-Limit"], r.headers["X-RateLimit-Remaining"]) == ("2", "1")
        assert "X-RateLimit-Reset" not in r.headers
        assert tc.get("/", headers={"X-API-Key": "k1"}).status_code == 200
        r = tc.get("/", headers={"X-API-Key": "k1"})
        assert r.status_code == 429 and r.headers["Retry-After"] == "60"
        # Nothing was counted on "tb" for the refused request: it has what it had left.
        assert r.headers["RateLimit"] == '"api";r=0;t=60, "tb";r=18'
        assert r.headers["X-RateLimit-Reset"] == "60"
        assert tc.get("/", headers={"X-API-Key": "k2"}).status_code == 200
    assert sync.ratelimit_stats("api").total_denied == 1
    assert sync.ratelimit_stats("tb").total_allowed == 3


def test_too_large_and_exempt(server: Server, sync: hotkv.HotKV) -> None:
    def cost(scope: Any) -> int:
        return 0 if scope["path"] == "/health" else int(dict(scope["headers"]).get(b"x-cost", b"1"))

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("up")

    with make_app(server, limits=[Limit.gcra("api", 60000, 10)], cost=cost) as tc:
        r = tc.get("/", headers={"X-Cost": "11"})
        assert r.status_code == 429 and r.text == "request exceeds the rate limit\n"
        assert "Retry-After" not in r.headers
        assert r.headers["RateLimit"] == '"api";r=0;t=0'
        r = tc.get("/health")
        assert r.status_code == 404 and "RateLimit" not in r.headers  # exempt: unchecked


def test_fail_open_and_closed(server: Server) -> None:
    errors: List[Exception] = []
    limits = [Limit.gcra("api", 1000, 1)]
    port = 1  # nothing listens there
    with make_app(server, port=port, limits=limits, on_error=lambda s, e: errors.append(e)) as tc:
        r = tc.get("/")
        assert r.status_code == 503 and r.text == "rate limiter unavailable\n"
    with make_app(server, port=port, limits=limits, fail_open=True) as tc:
        r = tc.get("/")
        assert r.status_code == 200 and "RateLimit-Policy" not in r.headers
    assert len(errors) == 1


def test_unknown_limiter_is_an_error(server: Server, sync: hotkv.HotKV) -> None:
    with make_app(server, limits=[Limit.limiter("missing")]) as tc:
        assert tc.get("/").status_code == 503
    with make_app(server, limits=[Limit.limiter("missing")], fail_open=True) as tc:
        assert tc.get("/").status_code == 200


def test_custom_denied_response(server: Server, sync: hotkv.HotKV) -> None:
    def denied(scope: Any, decision: Any) -> Any:
        return JSONResponse({"retry_after": decision.retry_after}, status_code=429)

    with make_app(server, limits=[Limit.gcra("api", 60000, 1)], denied_response=denied) as tc:
        tc.get("/")
        r = tc.get("/")
        assert r.status_code == 429 and r.json() == {"retry_after": 60}
        assert r.headers["Retry-After"] == "60" and r.headers["RateLimit"] == '"api";r=0;t=60'


def test_configuration_errors() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        pass

    client = hotkv.asyncio.HotKV()  # never connects: configuration is checked first
    with pytest.raises(ValueError, match="no limits"):
        RateLimitMiddleware(app, client, limits=[])
    with pytest.raises(ValueError, match="duplicate"):
        RateLimitMiddleware(app, client, limits=[Limit.gcra("a", 1000, 1), Limit.limiter("a")])
    with pytest.raises(ValueError, match="period"):
        RateLimitMiddleware(app, client, limits=[Limit.gcra("a", 0, 1)])
    with pytest.raises(ValueError, match="printable"):
        RateLimitMiddleware(app, client, limits=[Limit.gcra("\u00e9", 1000, 1)])
    with pytest.raises(ValueError, match="no client"):
        RateLimitMiddleware(app, None, limits=[Limit.gcra("a", 1000, 1)])


def test_by_ip_trusted_proxies() -> None:
    key = by_ip("10.0.0.0/8")
    scope = {"client": ("10.1.2.3", 5), "headers": [(b"x-forwarded-for", b"1.1.1.1, 2.2.2.2, 10.9.9.9")]}
    assert key(scope) == "2.2.2.2"
    assert by_ip()(scope) == "10.1.2.3"  # no trusted proxies: the header is ignored
    assert key({"client": ("::ffff:8.8.8.8", 1), "headers": []}) == "8.8.8.8"
    assert key({"client": ("10.0.0.1", 1), "headers": [(b"x-forwarded-for", b"10.0.0.2")]}) == "10.0.0.2"
