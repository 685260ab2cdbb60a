"""ASGI rate-limiting middleware (Starlette, FastAPI, or any ASGI application).

::

    import hotkv.asyncio
    from hotkv.middleware import Limit
    from hotkv.middleware.asgi import RateLimitMiddleware, by_header

    client = hotkv.asyncio.HotKV(host="localhost", port=6379)
    app.add_middleware(
        RateLimitMiddleware,
        client=client,
        limits=[Limit.gcra("per-second", 1000, 5), Limit.limiter("hourly")],
    )

Key and cost functions receive the ASGI connection scope (a dict): :func:`by_ip` (the
default) and :func:`by_header` build key functions. The decision is put in the scope's state
(``request.state.ratelimit`` in Starlette) for the application. The leases of concurrency
limiters are released when the application returns (or raises).
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Dict, List, MutableMapping, Optional, Sequence, Union

import redis

from .._results import ReplyError
from . import Decision, Engine, Limit, Options, UnknownLimiterError, client_ip

__all__ = ["RateLimitMiddleware", "by_ip", "by_header", "Scope"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The exceptions that mean "the server could not be asked".
SERVER_ERRORS = (redis.RedisError, UnknownLimiterError, ReplyError, OSError)


def _header_values(scope: Scope, name: str) -> List[str]:
    want = name.lower().encode("latin-1")
    return [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == want]


def by_ip(*trusted: str) -> Callable[[Scope], str]:
    """Keys requests by client IP: the peer address (``scope["client"]``), or with trusted
    proxy networks (``"10.0.0.0/8"``) the right-most untrusted X-Forwarded-For address (see
    :func:`hotkv.middleware.client_ip`)."""

    def key(scope: Scope) -> str:
        peer = scope.get("client") or ("", 0)
        return client_ip(str(peer[0]), _header_values(scope, "x-forwarded-for"), trusted)

    return key


def by_header(name: str) -> Callable[[Scope], str]:
    """Keys requests by a request header's value, such as an API key. Requests without it
    share the empty key's budget."""

    def key(scope: Scope) -> str:
        values = _header_values(scope, name)
        return values[0] if values else ""

    return key


async def _plain(send: Send, status: int, headers: List[Any], body: str) -> None:
    data = body.encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": headers + [(b"content-type", b"text/plain; charset=utf-8"),
                              (b"content-length", str(len(data)).encode())],
    })
    await send({"type": "http.response.body", "body": data})


class RateLimitMiddleware:
    """Rate-limits HTTP requests with HotKV; see :mod:`hotkv.middleware` for how limits
    combine and which headers are sent.

    :param app: the ASGI application.
    :param client: a :class:`hotkv.asyncio.HotKV` (or the asyncio cluster client).
    :param limits: the limits; all must allow a request.
    :param key: the request's identity (default :func:`by_ip`).
    :param cost: units per request (default 1; 0 or less exempts the request).
    :param fail_open: let requests through, without headers, when the server cannot be
        asked; the default answers 503.
    :param legacy_headers: add X-RateLimit-Limit/-Remaining/-Reset.
    :param denied_response: ``(scope, decision) -> ASGI app`` answering refusals (the
        rate-limit headers are added to its response); default 429 with a text body.
    :param error_response: ``(scope, error) -> ASGI app`` for fail-closed errors; default 503.
    :param on_error: observes every server error.
    :param policy_ttl: seconds a named limiter's settings are cached.
    """

    def __init__(
        self,
        app: ASGIApp,
        client: Any,
        limits: Sequence[Limit[Scope]],
        key: Optional[Callable[[Scope], str]] = None,
        cost: Optional[Callable[[Scope], int]] = None,
        fail_open: bool = False,
        legacy_headers: bool = False,
        denied_response: Optional[Callable[[Scope, Decision], ASGIApp]] = None,
        error_response: Optional[Callable[[Scope, Exception], ASGIApp]] = None,
        on_error: Optional[Callable[[Scope, Exception], None]] = None,
        policy_ttl: float = 60.0,
    ) -> None:
        if client is None:
            raise ValueError("hotkv.middleware: no client")
        self.app = app
        self.client = client
        self.options: Options[Scope] = Options(
            limits=list(limits), key=key, cost=cost, fail_open=fail_open,
            legacy_headers=legacy_headers, on_error=on_error, policy_ttl=policy_ttl,
        )
        self.engine = Engine(self.options, by_ip())
        self.denied_response = denied_response
        self.error_response = error_response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cost = self.engine.cost(scope)
        if cost <= 0:
            await self.app(scope, receive, send)
            return
        try:
            decision = await self.engine.decide_async(self.client, scope, cost)
        except SERVER_ERRORS as exc:
            if self.options.on_error is not None:
                self.options.on_error(scope, exc)
            if self.options.fail_open:
                await self.app(scope, receive, send)
            elif self.error_response is not None:
                await self.error_response(scope, exc)(scope, receive, send)
            else:
                await _plain(send, 503, [], "rate limiter unavailable\n")
            return
        scope.setdefault("state", {})["ratelimit"] = decision
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1"))
                   for k, v in decision.headers(self.options.legacy_headers)]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {h[0] for h in headers}
                existing = [h for h in message.get("headers", []) if bytes(h[0]).lower() not in names]
                message = dict(message)
                message["headers"] = existing + headers
            await send(message)

        try:
            if decision.allowed:
                await self.app(scope, receive, send_with_headers)
            elif self.denied_response is not None:
                await self.denied_response(scope, decision)(scope, receive, send_with_headers)
            else:
                await _plain(send, 429, headers, decision.message)
        finally:
            if decision.leases:
                # Concurrency leases are given back when the application is done, also when
                # it raised or was cancelled: shielded, so that a cancellation (the client
                # went away) does not cancel the release itself.
                await asyncio.shield(self.engine.release_async(self.client, scope, decision.leases))
