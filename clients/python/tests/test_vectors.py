"""The shared vectors (clients/testdata/vectors.json) through the typed API, exactly as the Go
client's vectors_test.go runs them: sync and asyncio clients, RESP2 and RESP3.

Before each case: FLUSHALL, drop every limiter, apply the defaults and the case's config; before
each step: DEBUG CLOCK SET t0+at. The typed result is turned into the vectors' JSON form
(field names as in the file) and compared; errors compare the server's text.
"""

from __future__ import annotations

import json
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import redis

import hotkv
from hotkv import GCRAResult, RateLimitResult, RateLimitStats, ThrottleResult
from conftest import Server
from helpers import async_client, call_or_error, call_or_error_async, empty_async, per_protocol

# json's default int parsing is exact (Python ints are unbounded), so the values above 2**53
# (V13, V16, V23) are compared without loss.
VECTORS = json.loads((Path(__file__).resolve().parents[2] / "testdata" / "vectors.json").read_text())
CASES = VECTORS["cases"]
assert len(CASES) == 48 and sum(len(c["steps"]) for c in CASES) == 416


def rate(s: Optional[str]) -> Optional[Decimal]:
    # The vectors write rates as decimal strings; Decimal keeps them exact, and the client
    # writes a Decimal as plain digits.
    return None if s is None else Decimal(s)


def to_json(op: str, r: Any) -> Any:
    """The typed result in the vectors' expect form."""
    if isinstance(r, GCRAResult):
        return {"denied": r.denied, "limit": r.limit, "remaining": r.remaining,
                "retry_after_ms": r.retry_after_ms, "reset_after_ms": r.reset_after_ms}
    if isinstance(r, ThrottleResult):
        return {"limited": r.limited, "limit": r.limit, "remaining": r.remaining,
                "retry_after_s": r.retry_after_s, "reset_after_s": r.reset_after_s}
    if isinstance(r, RateLimitResult):
        return {"allowed": r.allowed, "remaining": r.remaining, "retry_after_ms": r.retry_after_ms,
                "limit": r.limit, "current": r.current}
    if isinstance(r, RateLimitStats):
        m: Dict[str, Any] = {"name": r.name, "algo": r.algo, "limit": r.limit, "window_ms": r.window_ms,
                             "unique_keys": r.unique_keys, "total_allowed": r.total_allowed,
                             "total_denied": r.total_denied}
        if r.refill_per_sec is not None:
            m["refill_per_sec"] = r.refill_per_sec
        if r.drain_per_sec is not None:
            m["drain_per_sec"] = r.drain_per_sec
        return m
    if op == "raw" and r is True:
        return "OK"  # redis-py's own callbacks turn status replies such as SET's OK into True
    if op in ("ratelimit_create", "ratelimit_drop"):
        assert r is True  # the typed API returns True for OK
        return "OK"
    if isinstance(r, bytes):
        return r.decode()
    if isinstance(r, list):
        return [x.decode() if isinstance(x, bytes) else x for x in r]
    return r


def error_matches(exc: redis.ResponseError, want: str) -> bool:
    """redis-py strips the ``ERR `` code from error messages (and only that code among the
    ones these commands use; ``WRONGTYPE ...`` keeps its code), so the server's exact text is
    ``"ERR " + str(exc)`` for those."""
    got = str(exc)
    return got == want or (want.startswith("ERR ") and got == want[4:])


def call(c: Any, step: Dict[str, Any]) -> Any:
    """The typed call for a step (sync client; the async test awaits the same calls)."""
    op, a = step["op"], step.get("args", {})
    if op == "gcra_limit":
        return c.gcra_limit(a["key"], a["period_ms"], a["burst"], a.get("count", 1))
    if op == "gcra_peek":
        return c.gcra_peek(a["key"], a["period_ms"], a["burst"], a.get("count", 1))
    if op == "gcra_reset":
        return c.gcra_reset(*a["keys"])
    if op == "cl_throttle":
        return c.cl_throttle(a["key"], a["max_burst"], a["count_per_period"], a["period_s"], a.get("quantity", 1))
    if op == "ratelimit_create":
        return c.ratelimit_create(a["name"], a["limit"], a["window_ms"], algo=a.get("algo"),
                                  refill=rate(a.get("refill")), drain=rate(a.get("drain")))
    if op == "ratelimit_check":
        return c.ratelimit_check(a["name"], a["key"], cost=a.get("cost", 1))
    if op == "ratelimit_peek":
        return c.ratelimit_peek(a["name"], a["key"])
    if op == "ratelimit_reset":
        return c.ratelimit_reset(a["name"], a["key"])
    if op == "ratelimit_stats":
        return c.ratelimit_stats(a["name"])
    if op == "ratelimit_drop":
        return c.ratelimit_drop(a["name"])
    if op == "ratelimit_list":
        return c.ratelimit_list()
    if op == "raw":
        return c.execute_command(*step["cmd"])
    raise AssertionError(f"unknown op {op}")


def check(i: int, step: Dict[str, Any], result: Any, error: Optional[redis.ResponseError]) -> None:
    where = f"step {i} ({step['op']} at t0+{step['at']})"
    if "error" in step:
        assert error is not None, f"{where}: want error {step['error']!r}, got {result!r}"
        assert error_matches(error, step["error"]), f"{where}: want error {step['error']!r}, got {error}"
        return
    assert error is None, f"{where}: {error}"
    assert to_json(step["op"], result) == step["expect"], where


def prepare(case: Dict[str, Any]) -> List[List[str]]:
    """The CONFIG SET lines to apply before a case."""
    cfg = dict(VECTORS["defaults"])
    cfg.update(case.get("config", {}))
    return [["CONFIG", "SET", k, v] for k, v in cfg.items()]


per_case = pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])


@per_case
def test_vectors_sync(client: hotkv.HotKV, case: Dict[str, Any]) -> None:
    for line in prepare(case):
        client.execute_command(*line)
    for i, step in enumerate(case["steps"]):
        client.execute_command("DEBUG", "CLOCK", "SET", VECTORS["t0"] + step["at"])
        check(i, step, *call_or_error(partial(call, client, step)))


@per_protocol
@per_case
async def test_vectors_async(server: Server, protocol: int, case: Dict[str, Any]) -> None:
    async with async_client(server, protocol) as c:
        await empty_async(c)
        for line in prepare(case):
            await c.execute_command(*line)
        for i, step in enumerate(case["steps"]):
            await c.execute_command("DEBUG", "CLOCK", "SET", VECTORS["t0"] + step["at"])
            check(i, step, *await call_or_error_async(partial(call, c, step)))
