"""RATELIMIT.UPDATE and shadow mode: the vectors of docs/ratelimit.md (U1-U6, S1-S4) through the
typed API (``ratelimit_update``, ``ratelimit_create(..., shadow=True)``, the ``shadow`` and
``total_shadow_denied`` fields of ``ratelimit_stats``) in every client mode: sync and asyncio,
RESP2 and RESP3, a MULTI/EXEC pipeline, and the cluster client on a one-node slot map.

The vectors are data so that every runner replays the same steps; each block starts from an
empty server (FLUSHALL drops limiters) and sets the clock with DEBUG CLOCK SET, as the docs'
tables say. Limiter names carry no hash tag: RATELIMIT.* route by the limiter name alone.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

import hotkv
from hotkv import RateLimitStats
from hotkv._commands import command_keys
from hotkv._results import parse_stats
from helpers import E_NOTFOUND, E_SYNTAX, Block, block_tests, freeze, r

E_LIMIT = "invalid limit: must be a positive integer"
E_RATE = "invalid rate: must be a positive number"
E_ALGO = "invalid option: ALGO cannot be changed (drop and create the limiter)"
E_ARITY = "wrong number of arguments for 'ratelimit.update' command"


# The steps' forms are in helpers.py.
UPDATE: List[Block] = [
    ("U1", [
        ("flush",), ("at", 0),
        ("create", "a", 5, 1000, {}),
        ("check", "a", "u", 4, r(1, 1, 0, 5, 0)),
        ("at", 100),
        ("update", "a", {"limit": 2}),
        ("check", "a", "u", 1, r(0, 0, 900, 2, 4)),
        ("peek", "a", "u", r(0, 0, 900, 2, 4)),
        ("at", 999),
        ("check", "a", "u", 1, r(0, 0, 1, 2, 4)),
        ("at", 1000),
        ("check", "a", "u", 1, r(1, 1, 0, 2, 0)),
        ("stats", "a", {"limit": 2, "window_ms": 1000, "total_allowed": 5, "total_denied": 2}),
    ]),
    ("U2", [
        ("flush",), ("at", 0),
        ("create", "w", 3, 10000, {}),
        ("check", "w", "u", 3, r(1, 0, 0, 3, 0)),
        ("at", 5000),
        ("check", "w", "u", 1, r(0, 0, 5000, 3, 3)),
        ("update", "w", {"window_ms": 2000}),
        ("check", "w", "u", 1, r(1, 2, 0, 3, 0)),
        ("update", "w", {"window_ms": 10000}),
        ("at", 14999),
        ("check", "w", "u", 1, r(1, 1, 0, 3, 1)),
    ]),
    ("U3", [
        ("flush",), ("at", 0),
        ("create", "z", 1, 1000, {}),
        ("check", "z", "u", 1, r(1, 0, 0, 1, 0)),
        ("at", 1500),
        ("update", "z", {"window_ms": 5000}),
        ("check", "z", "u", 1, r(1, 0, 0, 1, 0)),
    ]),
    ("U4", [
        ("flush",), ("at", 0),
        ("create", "tb", 10, 1000, {"algo": "token_bucket"}),
        ("check", "tb", "u", 6, r(1, 4, 0, 10, 0)),
        ("at", 100),
        ("peek", "tb", "u", r(1, 5, 0, 10, 5)),
        # U4a: default rate 20/s, ttl 500 -> 250 ms.
        ("update", "tb", {"limit": 20}),
        ("peek", "tb", "u", r(1, 15, 0, 20, 5)),
        # U4b: 5 units in use clamped to 3.
        ("update", "tb", {"limit": 3}),
        ("peek", "tb", "u", r(0, 0, 334, 3, 3)),
        # U4c: an explicit rate.
        ("update", "tb", {"refill": 1}),
        ("peek", "tb", "u", r(0, 0, 1000, 3, 3)),
        ("at", 1100),
        ("check", "tb", "u", 1, r(1, 0, 0, 3, 2)),
        # U4d: the explicit rate is kept across a WINDOW change.
        ("update", "tb", {"window_ms": 5000}),
        ("peek", "tb", "u", r(0, 0, 1000, 3, 3)),
        ("stats", "tb", {"window_ms": 5000, "refill_per_sec": 1.0, "limit": 3, "shadow": False,
                         "total_shadow_denied": 0}),
    ]),
    ("U5", [
        ("flush",), ("at", 0),
        ("create", "lb", 4, 1000, {"algo": "leaky_bucket"}),
        ("check", "lb", "u", 2, r(1, 2, 0, 4, 0)),
        ("check", "lb", "v", 1, r(1, 3, 0, 4, 0)),
        ("at", 250),
        ("update", "lb", {"drain": 2}),
        ("peek", "lb", "u", r(1, 3, 0, 4, 1)),
        ("peek", "lb", "v", r(1, 4, 0, 4, 0)),
        ("at", 749),
        ("peek", "lb", "u", r(1, 3, 0, 4, 1)),
        ("at", 750),
        ("peek", "lb", "u", r(1, 4, 0, 4, 0)),
        ("stats", "lb", {"drain_per_sec": 2.0, "refill_per_sec": None}),
    ]),
    ("U6", [
        ("flush",), ("at", 0),
        ("create", "api", 10, 1000, {}),
        ("err", "raw", ["RATELIMIT.UPDATE"], E_ARITY),
        ("err", "update", ("api", {}), E_SYNTAX),
        ("err", "update", ("nolimiter", {"limit": 5}), E_NOTFOUND),
        ("err", "update", ("nolimiter", {"limit": 0}), E_LIMIT),
        ("err", "raw", ["RATELIMIT.UPDATE", "api", "ALGO", "token_bucket"], E_ALGO),
        ("err", "raw", ["RATELIMIT.UPDATE", "api", "ALGO"], E_SYNTAX),
        ("err", "raw", ["RATELIMIT.UPDATE", "api", "SHADOW", "maybe"], E_SYNTAX),
        ("err", "update", ("api", {"refill": 5}), E_SYNTAX),
        ("err", "update", ("api", {"refill": "abc"}), E_RATE),
        ("err", "update", ("api", {"drain": 5}), E_SYNTAX),
        ("create", "tb", 10, 1000, {"algo": "token_bucket", "refill": 0.00000001}),
        ("err", "update", ("tb", {"limit": 11}), E_RATE),
        # Nothing changed by any failure.
        ("stats", "tb", {"limit": 10, "refill_per_sec": 0.00000001}),
        ("stats", "api", {"limit": 10, "window_ms": 1000, "shadow": False}),
    ]),
]

SHADOW: List[Block] = [
    ("S1-S3", [
        ("flush",), ("at", 0),
        ("create", "s", 2, 1000, {"shadow": True}),
        ("check", "s", "u", 1, r(1, 1, 0, 2, 0)),
        ("check", "s", "u", 1, r(1, 0, 0, 2, 1)),
        ("check", "s", "u", 1, r(1, 0, 1000, 2, 2)),
        ("check", "s", "u", 3, r(1, 0, -1, 2, 2)),
        ("peek", "s", "u", r(1, 0, 1000, 2, 2)),
        ("stats", "s", {"total_allowed": 2, "total_denied": 4, "shadow": True, "total_shadow_denied": 4}),
        # S2: enforced, the state is what shadow mode measured.
        ("update", "s", {"shadow": False}),
        ("check", "s", "u", 1, r(0, 0, 1000, 2, 2)),
        ("stats", "s", {"total_denied": 5, "shadow": False, "total_shadow_denied": 4}),
        ("at", 1000),
        ("check", "s", "u", 1, r(1, 1, 0, 2, 0)),
        # S3
        ("update", "s", {"shadow": True}),
        ("check", "s", "u", 2, r(1, 1, 1000, 2, 1)),
        ("stats", "s", {"total_denied": 7, "shadow": True, "total_shadow_denied": 6}),
    ]),
    ("S4", [
        ("flush",), ("at", 0),
        # The flag anywhere among the options, any case: raw, as the typed API sends it last.
        ("raw", ["RATELIMIT.CREATE", "sb", 1, 1000, "shadow", "ALGO", "token_bucket"], True),
        ("check", "sb", "u", 1, r(1, 0, 0, 1, 0)),
        ("check", "sb", "u", 1, r(1, 0, 1000, 1, 1)),
        ("create", "sb2", 1, 1000, {"algo": "token_bucket", "shadow": True}),
        ("check", "sb2", "u", 1, r(1, 0, 0, 1, 0)),
        ("check", "sb2", "u", 1, r(1, 0, 1000, 1, 1)),
        ("stats", "sb2", {"algo": "token_bucket", "shadow": True, "total_shadow_denied": 1}),
        ("err", "raw", ["RATELIMIT.CREATE", "x", 1, 1000, "SHADOW", "SHADOW"], E_SYNTAX),
        ("err", "raw", ["RATELIMIT.CREATE", "x", 1, 1000, "SHADOW", "1"], E_SYNTAX),
        # shadow=False sends no flag: an enforced limiter.
        ("create", "e", 1, 1000, {"shadow": False}),
        ("check", "e", "u", 1, r(1, 0, 0, 1, 0)),
        ("check", "e", "u", 1, r(0, 0, 1000, 1, 1)),
        ("stats", "e", {"shadow": False, "total_shadow_denied": 0, "total_denied": 1}),
    ]),
]

BLOCKS = UPDATE + SHADOW


# The sync, asyncio and cluster runs of every block.
test_sync, test_async, test_cluster = block_tests(BLOCKS)


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
def test_pipeline(client: hotkv.HotKV, transaction: bool) -> None:
    """S1 and S2 queued in one pipeline (or MULTI/EXEC): the typed results, the update's True
    and the stats with the shadow fields come out of execute() in order."""
    freeze(client)
    with client.pipeline(transaction=transaction) as pipe:
        ret = pipe.ratelimit_create("s", 2, 1000, shadow=True)
        assert ret is pipe
        for _ in range(3):
            pipe.ratelimit_check("s", "u")
        pipe.ratelimit_stats("s").ratelimit_update("s", shadow=False).ratelimit_check("s", "u")
        pipe.ratelimit_stats("s")
        out = pipe.execute()
    assert out == [
        True,
        r(1, 1, 0, 2, 0), r(1, 0, 0, 2, 1), r(1, 0, 1000, 2, 2),
        RateLimitStats("s", "sliding_window", 2, 1000, 1, 2, 1, shadow=True, total_shadow_denied=1),
        True,
        r(0, 0, 1000, 2, 2),
        RateLimitStats("s", "sliding_window", 2, 1000, 1, 2, 2, shadow=False, total_shadow_denied=1),
    ]


def test_update_sends_only_given_options(client: hotkv.HotKV, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command lines ratelimit_update and ratelimit_create build: only the given options,
    in a fixed order, SHADOW ON/OFF from a bool, rates in the server's plain-decimal syntax."""
    sent: List[Tuple[Any, ...]] = []
    monkeypatch.setattr(client, "execute_command", lambda *a, **kw: sent.append(a))
    client.ratelimit_update("n", limit=3)
    client.ratelimit_update("n", window_ms=5000, shadow=False)
    client.ratelimit_update("n", refill=0.5, shadow=True)
    client.ratelimit_update("n", drain=1e-08)
    client.ratelimit_update("n", limit=1, window_ms=2, refill="2.5", shadow=True)
    client.ratelimit_create("n", 1, 1000)
    client.ratelimit_create("n", 1, 1000, algo="token_bucket", shadow=True)
    assert sent == [
        ("RATELIMIT.UPDATE", "n", "LIMIT", 3),
        ("RATELIMIT.UPDATE", "n", "WINDOW", 5000, "SHADOW", "OFF"),
        ("RATELIMIT.UPDATE", "n", "REFILL", "0.5", "SHADOW", "ON"),
        ("RATELIMIT.UPDATE", "n", "DRAIN", "0.00000001"),
        ("RATELIMIT.UPDATE", "n", "LIMIT", 1, "WINDOW", 2, "REFILL", "2.5", "SHADOW", "ON"),
        ("RATELIMIT.CREATE", "n", 1, 1000),
        ("RATELIMIT.CREATE", "n", 1, 1000, "ALGO", "token_bucket", "SHADOW"),
    ]
    assert command_keys(("RATELIMIT.UPDATE", "n", "LIMIT", 3)) == ["n"]


BASE = [b"name", b"x", b"algo", b"sliding_window", b"limit", 2, b"window_ms", 1000,
        b"unique_keys", 1, b"total_allowed", 2, b"total_denied", 4]


def test_stats_parser_shadow_fields() -> None:
    """The two trailing fields in both reply shapes (RESP2 flat array, RESP3 map), and a
    server without them (before shadow mode): False and 0."""
    old = parse_stats(BASE)
    assert old == RateLimitStats("x", "sliding_window", 2, 1000, 1, 2, 4)
    assert old.shadow is False and old.total_shadow_denied == 0
    assert parse_stats(dict(zip(BASE[::2], BASE[1::2]))) == old
    new = BASE + [b"shadow", 1, b"total_shadow_denied", 4]
    want = RateLimitStats("x", "sliding_window", 2, 1000, 1, 2, 4, shadow=True, total_shadow_denied=4)
    assert parse_stats(new) == want
    resp3: Dict[Any, Any] = dict(zip(new[::2], new[1::2]))
    assert parse_stats(resp3) == want
    off = parse_stats(BASE + [b"shadow", 0, b"total_shadow_denied", 4])
    assert off.shadow is False and off.total_shadow_denied == 4
