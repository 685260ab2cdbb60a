"""The Django middleware through Django's test client with minimal settings, against the
real server (clock frozen so headers are exact)."""

from __future__ import annotations

from typing import Any, Iterator, List

import django
import pytest
from django.conf import settings

from hotkv.middleware import Limit

if not settings.configured:
    settings.configure(
        DEBUG=False,
        ALLOWED_HOSTS=["testserver"],
        ROOT_URLCONF=__name__,
        MIDDLEWARE=["hotkv.middleware.django.RateLimitMiddleware"],
        SECRET_KEY="test",
        HOTKV_RATELIMIT={},
    )
    django.setup()

from django.http import HttpRequest, HttpResponse, JsonResponse  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.urls import path  # noqa: E402

import hotkv  # noqa: E402
from hotkv.middleware.django import RateLimitMiddleware, by_header, by_ip  # noqa: E402
from conftest import Server  # noqa: E402


def view(request: HttpRequest) -> HttpResponse:
    d = getattr(request, "ratelimit", None)
    return HttpResponse(f"ok {d.allowed if d else None}")


urlpatterns = [path("", view), path("health", view)]


def url(server: Server) -> str:
    return f"redis://{server.host}:{server.port}/0"


def test_gcra_headers(server: Server, sync: hotkv.HotKV) -> None:
    with override_settings(HOTKV_RATELIMIT={"url": url(server), "limits": [Limit.gcra("api", 60000, 10)]}):
        c = Client()
        r = c.get("/")
        assert r.status_code == 200 and r.content == b"ok True"
        assert r["RateLimit-Policy"] == '"api";q=10;w=60'
        assert r["RateLimit"] == '"api";r=9;t=6'
        assert not r.has_header("Retry-After")
        for _ in range(9):
            c.get("/")
        r = c.get("/")
        assert r.status_code == 429 and r.content == b"rate limit exceeded\n"
        assert r["Retry-After"] == "6" and r["RateLimit"] == '"api";r=0;t=6'
    assert sync.exists("rl:api:127.0.0.1") == 1  # keyed by REMOTE_ADDR


def test_named_limiters_and_options(server: Server, sync: hotkv.HotKV) -> None:
    sync.ratelimit_create("api", 1, 60000)
    conf = {
        "client": hotkv.HotKV(host=server.host, port=server.port, protocol=3),
        "limits": [Limit.limiter("api"), Limit.gcra("burst", 1000, 5).with_prefix("app:rl:")],
        "key": by_header("X-API-Key"),
        "cost": lambda req: 0 if req.path == "/health" else 1,
        "legacy_headers": True,
        "denied_response": lambda req, d: JsonResponse({"wait": d.retry_after}, status=429),
    }
    with override_settings(HOTKV_RATELIMIT=conf):
        c = Client()
        r = c.get("/", HTTP_X_API_KEY="k")
        assert r.status_code == 200
        assert r["RateLimit-Policy"] == '"api";q=1;w=60, "burst";q=5;w=1'
        assert r["RateLimit"] == '"api";r=0, "burst";r=4;t=1'
        assert r["X-RateLimit-Remaining"] == "0"
        r = c.get("/", HTTP_X_API_KEY="k")
        assert r.status_code == 429 and r.json() == {"wait": 60}
        assert r["Retry-After"] == "60"
        assert r["RateLimit"] == '"api";r=0;t=60, "burst";r=4;t=1'
        assert c.get("/health", HTTP_X_API_KEY="k").status_code == 200  # exempt
        assert not c.get("/health").has_header("RateLimit")
    assert sync.get("app:rl:k") is not None


def test_fail_open_and_closed(server: Server) -> None:
    seen: List[Exception] = []
    down = "redis://127.0.0.1:1/0?socket_connect_timeout=0.5"
    limits = [Limit.gcra("api", 1000, 1)]
    with override_settings(HOTKV_RATELIMIT={"url": down, "limits": limits, "on_error": lambda r, e: seen.append(e)}):
        r = Client().get("/")
        assert r.status_code == 503 and r.content == b"rate limiter unavailable\n"
    with override_settings(HOTKV_RATELIMIT={"url": down, "limits": limits, "fail_open": True}):
        r = Client().get("/")
        assert r.status_code == 200 and r.content == b"ok None" and not r.has_header("RateLimit")
    assert len(seen) == 1


def test_improperly_configured(server: Server) -> None:
    from django.core.exceptions import ImproperlyConfigured

    for conf in [{}, {"limits": []}, {"url": url(server), "limits": []},
                 {"url": url(server), "limits": [Limit.gcra("a", 1000, 1)], "nope": 1}]:
        with override_settings(HOTKV_RATELIMIT=conf), pytest.raises(ImproperlyConfigured):
            RateLimitMiddleware(lambda r: HttpResponse())


def test_by_ip() -> None:
    req = HttpRequest()
    req.META = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "9.9.9.9, 10.0.0.5"}
    assert by_ip()(req) == "10.0.0.1"
    assert by_ip("10.0.0.0/8")(req) == "9.9.9.9"
