"""Django rate-limiting middleware.

Configure it in settings and add it to ``MIDDLEWARE``::

    from hotkv.middleware import Limit

    HOTKV_RATELIMIT = {
        "url": "redis://localhost:6379/0",   # or "client": a hotkv.HotKV instance
        "limits": [Limit.gcra("per-second", 1000, 5), Limit.limiter("hourly")],
        # optional: "key", "cost", "fail_open", "legacy_headers", "denied_response",
        # "error_response", "on_error", "policy_ttl"
    }
    MIDDLEWARE = [..., "hotkv.middleware.django.RateLimitMiddleware", ...]

Key and cost functions receive the :class:`django.http.HttpRequest`; :func:`by_ip` (the
default, ``REMOTE_ADDR``) and :func:`by_header` build key functions. The decision is
``request.ratelimit``. A subclass may set ``settings_name`` to read another setting (for
several differently configured middlewares). The leases of concurrency limiters are released
when the view returns (or raises).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from django.conf import settings  # type: ignore[import-untyped]
from django.core.exceptions import ImproperlyConfigured  # type: ignore[import-untyped]
from django.http import HttpRequest, HttpResponse  # type: ignore[import-untyped]

from ..client import HotKV
from . import Decision, Engine, Options, client_ip
from .asgi import SERVER_ERRORS

__all__ = ["RateLimitMiddleware", "by_ip", "by_header"]


def by_ip(*trusted: str) -> Callable[[HttpRequest], str]:
    """Keys requests by client IP: ``REMOTE_ADDR``, or with trusted proxy networks the
    right-most untrusted X-Forwarded-For address (see
    :func:`hotkv.middleware.client_ip`)."""

    def key(request: HttpRequest) -> str:
        fwd = request.META.get("HTTP_X_FORWARDED_FOR")
        return client_ip(str(request.META.get("REMOTE_ADDR", "")), [fwd] if fwd else [], trusted)

    return key


def by_header(name: str) -> Callable[[HttpRequest], str]:
    """Keys requests by a request header's value (an API key, say)."""

    def key(request: HttpRequest) -> str:
        return str(request.headers.get(name, ""))

    return key


class RateLimitMiddleware:
    """Rate-limits requests with HotKV (sync middleware; Django adapts it under ASGI). See
    :mod:`hotkv.middleware` for how limits combine and which headers are sent."""

    settings_name = "HOTKV_RATELIMIT"

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        conf: Dict[str, Any] = dict(getattr(settings, self.settings_name, None) or {})
        if not conf:
            raise ImproperlyConfigured(f"{self.settings_name} is not set")
        client = conf.pop("client", None)
        url = conf.pop("url", None)
        if client is None:
            if url is None:
                raise ImproperlyConfigured(f"{self.settings_name} needs a 'client' or a 'url'")
            client = HotKV.from_url(url)
        self.client = client
        self.denied_response: Optional[Callable[[HttpRequest, Decision], HttpResponse]] = conf.pop("denied_response", None)
        self.error_response: Optional[Callable[[HttpRequest, Exception], HttpResponse]] = conf.pop("error_response", None)
        try:
            self.options: Options[HttpRequest] = Options(**conf)
            self.engine = Engine(self.options, by_ip())
        except (TypeError, ValueError) as exc:
            raise ImproperlyConfigured(f"{self.settings_name}: {exc}") from exc

    def __call__(self, request: HttpRequest) -> HttpResponse:
        cost = self.engine.cost(request)
        if cost <= 0:
            return self.get_response(request)
        try:
            decision = self.engine.decide_sync(self.client, request, cost)
        except SERVER_ERRORS as exc:
            if self.options.on_error is not None:
                self.options.on_error(request, exc)
            if self.options.fail_open:
                return self.get_response(request)
            if self.error_response is not None:
                return self.error_response(request, exc)
            return HttpResponse("rate limiter unavailable\n", status=503, content_type="text/plain; charset=utf-8")
        request.ratelimit = decision
        try:
            if decision.allowed:
                response = self.get_response(request)
            elif self.denied_response is not None:
                response = self.denied_response(request, decision)
            else:
                response = HttpResponse(decision.message, status=429, content_type="text/plain; charset=utf-8")
        finally:
            # Concurrency leases are given back when the view returns, also when it raised.
            # A streaming response is still being sent then: its body is not counted in flight.
            self.engine.release_sync(self.client, request, decision.leases)
        for name, value in decision.headers(self.options.legacy_headers):
            response[name] = value
        return response
