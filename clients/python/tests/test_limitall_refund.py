"""GCRA.LIMITALL and GCRA.REFUND: the vectors of docs/ratelimit.md (LA1-LA8, RF1-RF7) through
the typed API (``gcra_limit_all``, ``gcra_refund``) in every client mode: sync and asyncio,
RESP2 and RESP3, a MULTI/EXEC pipeline, and the cluster client on a one-node slot map.

The vectors are written here as data so that the sync and the asyncio runners replay the same
steps. Keys carry one hash tag so that the cluster client may send a LIMITALL's keys together;
the spec's ``u``, ``o``, ``a``, ``b``, ``k`` become ``{v}u`` ... Each block starts from an empty
database and sets the clock with DEBUG CLOCK SET, as the spec's table says.
"""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest
from redis.exceptions import RedisClusterException

import hotkv
import hotkv.asyncio
import hotkv.cluster
from hotkv import GCRALimitAllResult, GCRALimitSpec, GCRAResult
from hotkv._commands import command_keys
from hotkv._results import ReplyError, parse_gcra_all
from helpers import E_SYNTAX, WRONGTYPE, Block, bare, block_tests, freeze

MAX = 2**63 - 1
# redis-py drops the leading "ERR " of every error it raises.
E_NUMLIMITS = "invalid numlimits: must be an integer from 1 to 256"
E_BURST = "invalid burst: must be a positive integer"
E_PERIOD = "invalid period: must be a positive integer (milliseconds)"
E_COUNT = "invalid count: must be a positive integer"


def arity(cmd: str) -> str:
    return f"wrong number of arguments for '{cmd}' command"


U = ("{v}u", 60000, 10)
O = ("{v}o", 1000, 2)


def la(denied: int, retry: int, *limits: Tuple[int, int, int, int, int]) -> GCRALimitAllResult:
    return GCRALimitAllResult(denied != 0, retry, tuple(GCRAResult(l[0] != 0, *l[1:]) for l in limits))


def g(d: int, lim: int, rem: int, retry: int, reset: int) -> GCRAResult:
    return GCRAResult(d != 0, lim, rem, retry, reset)


# The steps' forms are in helpers.py; here: ("all", limits, count, want), ("limit"|"refund",
# key, period, burst, count, want), ("raw", argv, want) and ("err", kind, args, text).
LIMITALL: List[Block] = [
    ("LA1-LA3c", [
        ("flush",), ("at", 0),
        ("all", [U, O], 1, la(0, -1, (0, 10, 9, -1, 6000), (0, 2, 1, -1, 500))),
        ("all", [U, O], 1, la(0, -1, (0, 10, 8, -1, 12000), (0, 2, 0, -1, 1000))),
        ("all", [U, O], 1, la(1, 500, (0, 10, 7, -1, 18000), (1, 2, 0, 500, 1000))),
        ("raw", ["GET", "{v}u"], b"1700000012000000000"),
        ("at", 499),
        ("all", [U, O], 1, la(1, 1, (0, 10, 7, -1, 17501), (1, 2, 0, 1, 501))),
        ("at", 500),
        ("all", [U, O], 1, la(0, -1, (0, 10, 7, -1, 17500), (0, 2, 0, -1, 1000))),
        ("raw", ["GET", "{v}u"], b"1700000018000000000"),
    ]),
    ("LA4", [
        ("flush",), ("at", 0),
        ("all", [U, O], 3, la(1, -1, (0, 10, 7, -1, 18000), (1, 2, 0, -1, 0))),
        ("raw", ["EXISTS", "{v}u", "{v}o"], 0),
    ]),
    ("LA5-LA5c", [
        ("flush",), ("at", 0),
        ("limit", "{v}a", 1000, 1, 1, g(0, 1, 0, -1, 1000)),
        ("limit", "{v}b", 3000, 1, 1, g(0, 1, 0, -1, 3000)),
        ("all", [("{v}a", 1000, 1), ("{v}b", 3000, 1)], 1, la(1, 3000, (1, 1, 0, 1000, 1000), (1, 1, 0, 3000, 3000))),
        ("at", 3000),
        ("all", [("{v}a", 1000, 1), ("{v}b", 3000, 1)], 1, la(0, -1, (0, 1, 0, -1, 1000), (0, 1, 0, -1, 3000))),
    ]),
    ("LA6-LA6b", [
        ("flush",), ("at", 0),
        ("all", [("{v}k", 60000, 10)] * 2, 5, la(0, -1, (0, 10, 5, -1, 30000), (0, 10, 0, -1, 60000))),
        ("raw", ["GET", "{v}k"], b"1700000060000000000"),
        ("at", 6000),
        ("all", [("{v}k", 60000, 10)] * 2, 1, la(1, 6000, (0, 10, 0, -1, 60000), (1, 10, 0, 6000, 60000))),
        ("raw", ["GET", "{v}k"], b"1700000060000000000"),
    ]),
    ("LA7", [
        ("flush",), ("at", 0),
        ("all", [("{v}k", 60000, 10)], 1, la(0, -1, (0, 10, 9, -1, 6000))),
        ("raw", ["PTTL", "{v}k"], 6000),
    ]),
    ("LA8", [
        ("flush",), ("at", 0),
        # numlimits the typed API can send: 257 limits; no limit at all is an arity error
        # ("GCRA.LIMITALL 0 COUNT 1" has three arguments).
        ("err", "all", ([("{v}k", 60000, 10)] * 257, 1), E_NUMLIMITS),
        ("err", "all", ([], 1), arity("gcra.limitall")),
        # The other numlimits spellings and the shapes the typed API cannot produce, raw.
        *[("err", "raw", ["GCRA.LIMITALL", n, "{v}k", 60000, 10], E_NUMLIMITS) for n in ("0", "257", "-1", "x", "01")],
        ("err", "raw", ["GCRA.LIMITALL", 2, "{v}k", 60000, 10], E_SYNTAX),
        ("err", "raw", ["GCRA.LIMITALL", 1, "{v}k", 60000, 10, "COUNT"], E_SYNTAX),
        ("err", "all", ([("{v}k", 60000, 0), ("{v}j", 0, 10)], 1), E_BURST),
        # Validation errors the typed API can reach, and WRONGTYPE with nothing recorded.
        ("err", "all", ([("{v}k", 0, 10)], 1), E_PERIOD),
        ("err", "all", ([("{v}k", 60000, 10)], 0), E_COUNT),
        ("raw", ["SET", "{v}s", "hello"], True),  # redis-py reads OK as True
        ("err", "all", ([("{v}k", 60000, 10), ("{v}s", 60000, 10)], 1), WRONGTYPE),
        ("raw", ["EXISTS", "{v}k"], 0),
    ]),
]

REFUND: List[Block] = [
    ("RF1-RF3", [
        ("flush",), ("at", 0),
        ("limit", "{v}k", 60000, 10, 3, g(0, 10, 7, -1, 18000)),
        ("refund", "{v}k", 60000, 10, 1, g(0, 10, 8, -1, 12000)),
        ("raw", ["PTTL", "{v}k"], 12000),
        ("refund", "{v}k", 60000, 10, 5, g(0, 10, 10, -1, 0)),
        ("raw", ["EXISTS", "{v}k"], 0),
        ("refund", "{v}k", 60000, 10, 1, g(0, 10, 10, -1, 0)),
        ("raw", ["EXISTS", "{v}k"], 0),
    ]),
    ("RF4", [
        ("flush",), ("at", 0),
        ("raw", ["SET", "{v}n", "123"], True),  # redis-py reads OK as True
        ("refund", "{v}n", 60000, 10, 1, g(0, 10, 10, -1, 0)),
        ("raw", ["GET", "{v}n"], b"123"),
        ("raw", ["PTTL", "{v}n"], -1),
    ]),
    ("RF5", [
        ("flush",), ("at", 0),
        ("limit", "{v}k", 1000, 3, 1, g(0, 3, 2, -1, 334)),
        ("limit", "{v}k", 1000, 3, 1, g(0, 3, 1, -1, 667)),
        ("at", 100),
        ("refund", "{v}k", 1000, 3, 1, g(0, 3, 2, -1, 234)),
        ("raw", ["GET", "{v}k"], b"1700000000333333333"),
    ]),
    ("RF6", [
        ("flush",), ("at", 0),
        ("raw", ["SET", "{v}big", str(MAX)], True),  # redis-py reads OK as True
        ("refund", "{v}big", 60000, 10, 1, g(0, 10, 0, -1, 7523372030855)),
        ("refund", "{v}big", 60000, 10, MAX, g(0, 10, 10, -1, 0)),
        ("raw", ["EXISTS", "{v}big"], 0),
    ]),
    ("RF7", [
        ("flush",), ("at", 0),
        ("err", "raw", ["GCRA.REFUND", "{v}k", 60000], arity("gcra.refund")),
        ("err", "refund", ("{v}k", 0, 10, 1), E_PERIOD),
        ("err", "refund", ("{v}k", 60000, 0, 1), E_BURST),
        ("err", "refund", ("{v}k", 60000, 10, 0), E_COUNT),
        ("raw", ["SET", "{v}s", "hello"], True),  # redis-py reads OK as True
        ("err", "refund", ("{v}s", 60000, 10, 1), WRONGTYPE),
        ("raw", ["GET", "{v}s"], b"hello"),
    ]),
]

BLOCKS = LIMITALL + REFUND


# The sync, asyncio and cluster runs of every block.
test_sync, test_async, test_cluster = block_tests(BLOCKS)


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
def test_pipeline(client: hotkv.HotKV, transaction: bool) -> None:
    """LA1-LA3 and RF1 queued in one pipeline (or MULTI/EXEC): the typed results come out of
    execute() in order, with GCRALimitSpec values and tuples mixed."""
    freeze(client)
    specs = [GCRALimitSpec(*U), O]
    with client.pipeline(transaction=transaction) as pipe:
        ret = pipe.gcra_limit_all(specs).gcra_limit_all(specs).gcra_limit_all(specs)
        assert ret is pipe
        pipe.gcra_limit("{v}r", 60000, 10, 3).gcra_refund("{v}r", 60000, 10)
        out = pipe.execute()
    assert out == [
        la(0, -1, (0, 10, 9, -1, 6000), (0, 2, 1, -1, 500)),
        la(0, -1, (0, 10, 8, -1, 12000), (0, 2, 0, -1, 1000)),
        la(1, 500, (0, 10, 7, -1, 18000), (1, 2, 0, 500, 1000)),
        g(0, 10, 7, -1, 18000),
        g(0, 10, 8, -1, 12000),
    ]


def test_result_helpers() -> None:
    admitted = la(0, -1, (0, 10, 9, -1, 6000))
    assert admitted.allowed and not admitted.too_large and admitted.retry_after.total_seconds() == 0
    denied = la(1, 500, (0, 10, 7, -1, 18000), (1, 2, 0, 500, 1000))
    assert not denied.allowed and not denied.too_large and denied.retry_after.total_seconds() == 0.5
    never = la(1, -1, (0, 10, 7, -1, 18000), (1, 2, 0, -1, 0))
    assert never.too_large and never.retry_after.total_seconds() < 0
    assert never.limits[1].too_large


def test_parser_rejects_malformed_replies() -> None:
    assert parse_gcra_all([0, -1, [0, 10, 9, -1, 6000]]) == la(0, -1, (0, 10, 9, -1, 6000))
    for bad in ([], [0, -1], [0, -1, [0, 10, 9, -1]], [b"0", -1, [0, 10, 9, -1, 6000]],
                [0, True, [0, 10, 9, -1, 6000]], b"OK", [0, -1, 5]):
        with pytest.raises(ReplyError):
            parse_gcra_all(bad)


def test_command_keys() -> None:
    assert command_keys(("GCRA.LIMITALL", 2, "{u}a", 1000, 1, "{u}b", 60000, 10, "COUNT", 1)) == ["{u}a", "{u}b"]
    assert command_keys(("gcra.limitall", 1, "k", 1000, 1)) == ["k"]
    assert command_keys(("GCRA.LIMITALL", "x", "k", 1000, 1)) == []
    assert command_keys(("GCRA.LIMITALL",)) == []
    assert command_keys(("GCRA.REFUND", "k", 1000, 1, 1)) == ["k"]


@pytest.mark.parametrize("cls", [hotkv.cluster.HotKVCluster, hotkv.cluster.ClusterPipeline])
def test_cluster_routing(cls: Any) -> None:
    c = bare(cls)
    # "foo" hashes to slot 12182 (the cluster specification's example).
    assert c.determine_slot("GCRA.LIMITALL", 2, "{foo}a", 1000, 1, "{foo}b", 1, 1, "COUNT", 1) == 12182
    assert c.determine_slot("GCRA.REFUND", "foo", 1000, 1, 1) == 12182
    with pytest.raises(RedisClusterException):
        c.determine_slot("GCRA.LIMITALL", 2, "a", 1000, 1, "b", 1000, 1, "COUNT", 1)
    with pytest.raises(RedisClusterException):
        c.determine_slot("GCRA.LIMITALL", 0, "COUNT", 1)


async def test_async_cluster_routing() -> None:
    c = bare(hotkv.asyncio.HotKVCluster)
    assert await c._determine_slot("GCRA.LIMITALL", 2, "{foo}a", 1000, 1, "{foo}b", 1, 1, "COUNT", 1) == 12182
    assert await c._determine_slot("GCRA.REFUND", "foo", 1000, 1, 1) == 12182
    with pytest.raises(RedisClusterException):
        await c._determine_slot("GCRA.LIMITALL", 2, "a", 1000, 1, "b", 1000, 1, "COUNT", 1)

