"""Each method directly, in pipelines and in MULTI/EXEC transactions, errors, reply parsing,
and the cluster clients' routing."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import redis
import redis.asyncio.cluster
import redis.cluster
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

import hotkv
import hotkv.asyncio
import hotkv.cluster
from hotkv import GCRAResult, RateLimitResult, RateLimitStats, ReplyError, ThrottleResult
from hotkv._commands import command_keys, format_rate
from hotkv._results import parse_gcra, parse_names, parse_ok, parse_stats
from conftest import Server, one_node_slots, reset_server
from helpers import WRONGTYPE, async_client, bare, empty_async, freeze


def test_every_method(client: hotkv.HotKV) -> None:
    freeze(client)
    assert client.gcra_limit("rl:k", 60000, 10) == GCRAResult(False, 10, 9, -1, 6000)
    assert client.gcra_peek("rl:k", 60000, 10, 2) == GCRAResult(False, 10, 7, -1, 18000)
    assert client.gcra_limit("rl:k", 60000, 10, count=11).too_large
    assert client.gcra_reset("rl:k", "rl:none", "rl:k") == 1
    r = client.cl_throttle("rl:t", 4, 1, 1)
    assert r == ThrottleResult(False, 5, 4, -1, 1) and r.allowed and r.reset_after == timedelta(seconds=1)
    assert client.cl_throttle("rl:t", 4, 1, 1, quantity=0) == ThrottleResult(False, 5, 4, -1, 1)
    assert client.ratelimit_create("api", 100, 60000) is True
    assert client.ratelimit_create("up", 20, 4000, "token_bucket", 5) is True
    assert client.ratelimit_create("lb", 3, 1000, algo="leaky_bucket", drain=2.5) is True
    assert client.ratelimit_check("api", "u") == RateLimitResult(True, 99, 0, 100, 0)
    assert client.ratelimit_check("api", "u", cost=5) == RateLimitResult(True, 94, 0, 100, 1)
    assert client.ratelimit_peek("api", "u") == RateLimitResult(True, 94, 0, 100, 6)
    assert client.ratelimit_stats("api") == RateLimitStats("api", "sliding_window", 100, 60000, 1, 6, 0)
    st = client.ratelimit_stats("up")
    assert (st.algo, st.refill_per_sec, st.drain_per_sec, st.rate) == ("token_bucket", 5.0, None, 5.0)
    assert client.ratelimit_stats("lb").drain_per_sec == 2.5
    assert client.ratelimit_list() == ["api", "lb", "up"]
    assert client.ratelimit_reset("api", "u") == 1
    assert client.ratelimit_reset("api", "u") == 0
    assert client.ratelimit_drop("api") is True
    unknown = client.ratelimit_check("api", "u")
    assert unknown == RateLimitResult(False, 0, 0, 0, 0) and unknown.unknown_limiter


def test_result_helpers() -> None:
    allowed = GCRAResult(False, 10, 9, -1, 6000)
    assert allowed.allowed and not allowed.too_large and allowed.retry_after == timedelta(0)
    denied = GCRAResult(True, 10, 0, 6000, 60000)
    assert denied.retry_after == timedelta(seconds=6) and denied.reset_after == timedelta(minutes=1)
    never = GCRAResult(True, 10, 0, -1, 0)
    assert never.too_large and never.retry_after < timedelta(0)
    assert ThrottleResult(True, 1, 0, -1, 0).retry_after == timedelta(seconds=-1)
    assert RateLimitResult(False, 0, -1, 5, 5).too_large
    assert RateLimitResult(False, 0, 250, 5, 5).retry_after == timedelta(milliseconds=250)
    with pytest.raises(Exception):
        allowed.denied = True  # type: ignore[misc]  # frozen


def test_decode_responses(server: Server) -> None:
    """With decode_responses the strings arrive as str; the results are the same."""
    for proto in (2, 3):
        c = hotkv.HotKV(host=server.host, port=server.port, protocol=proto, decode_responses=True)
        reset_server(c)
        c.ratelimit_create("x", 10, 1000, algo="TOKEN_BUCKET", refill="2.5")
        assert c.ratelimit_stats("x") == RateLimitStats("x", "token_bucket", 10, 1000, 0, 0, 0, 2.5)
        assert c.ratelimit_list() == ["x"]
        c.close()


def test_from_url(server: Server) -> None:
    c = hotkv.HotKV.from_url(f"redis://{server.host}:{server.port}/0")
    reset_server(c)
    assert isinstance(c, hotkv.HotKV)
    assert c.gcra_limit("k", 1000, 1).allowed


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi"])
def test_pipeline(client: hotkv.HotKV, transaction: bool) -> None:
    freeze(client)
    client.ratelimit_create("api", 2, 1000)
    with client.pipeline(transaction=transaction) as pipe:
        assert isinstance(pipe, hotkv.Pipeline)
        ret = pipe.gcra_limit("rl:{u}:s", 1000, 1).gcra_limit("rl:{u}:s", 1000, 1)
        assert ret is pipe  # queuing returns the pipeline, as redis-py's commands do
        pipe.gcra_peek("rl:{u}:s", 1000, 1)
        pipe.cl_throttle("rl:{u}:t", 0, 1, 10)
        pipe.ratelimit_check("api", "u", cost=2).ratelimit_peek("api", "u").ratelimit_stats("api")
        pipe.ratelimit_list().set("plain", "v").get("plain").gcra_reset("rl:{u}:s", "rl:{u}:t")
        out = pipe.execute()
    assert out == [
        GCRAResult(False, 1, 0, -1, 1000),
        GCRAResult(True, 1, 0, 1000, 1000),  # one time sample inside MULTI, same ms anyway
        GCRAResult(True, 1, 0, 1000, 1000),
        ThrottleResult(False, 1, 0, -1, 10),
        RateLimitResult(True, 0, 0, 2, 0),
        RateLimitResult(False, 0, 1000, 2, 2),
        RateLimitStats("api", "sliding_window", 2, 1000, 1, 2, 0),
        ["api"],
        True,
        b"v",
        2,
    ]


def test_transaction_shares_one_time_sample(client: hotkv.HotKV) -> None:
    """V28 with the wall clock running: both calls of one MULTI see the same time."""
    client.execute_command("DEBUG", "CLOCK", "RESET")
    with client.pipeline() as pipe:
        pipe.gcra_limit("k", 1000, 1).gcra_limit("k", 1000, 1)
        first, second = pipe.execute()
    assert first == GCRAResult(False, 1, 0, -1, 1000)
    assert second == GCRAResult(True, 1, 0, 1000, 1000)


def test_transaction_with_watch(client: hotkv.HotKV) -> None:
    """redis-py's transaction() helper (WATCH, MULTI, EXEC with retries) with the typed
    commands."""
    freeze(client)

    def body(pipe: Any) -> None:
        pipe.multi()
        pipe.gcra_limit("rl:w", 60000, 10)

    out = client.transaction(body, "rl:w")
    assert out == [GCRAResult(False, 10, 9, -1, 6000)]


def test_pipeline_errors_stay_per_command(client: hotkv.HotKV) -> None:
    client.rpush("l", "a")
    pipe = client.pipeline(transaction=False)
    pipe.gcra_limit("l", 60000, 10).gcra_limit("ok", 60000, 10).ratelimit_stats("nolimiter")
    out = pipe.execute(raise_on_error=False)
    assert isinstance(out[0], redis.ResponseError) and str(out[0]) == WRONGTYPE
    assert isinstance(out[1], GCRAResult)
    assert isinstance(out[2], redis.ResponseError) and str(out[2]) == "limiter not found"
    # Raised from execute(), redis-py prefixes the command's position and arguments.
    with pytest.raises(redis.ResponseError) as info:
        client.pipeline(transaction=False).gcra_limit("l", 60000, 10).execute()
    assert str(info.value).endswith("(GCRA.LIMIT l 60000 10 1) of pipeline caused error: " + WRONGTYPE)


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda c: c.gcra_limit("k", 0, 10), "ERR invalid period: must be a positive integer (milliseconds)"),
        (lambda c: c.gcra_peek("k", 1000, 0), "ERR invalid burst: must be a positive integer"),
        (lambda c: c.gcra_limit("k", 1000, 1, 0), "ERR invalid count: must be a positive integer"),
        (lambda c: c.gcra_reset(), "ERR wrong number of arguments for 'gcra.reset' command"),
        (lambda c: c.cl_throttle("k", 1, 0, 1), "ERR zero rates are not supported"),
        (lambda c: c.cl_throttle("k", -1, 1, 1), "ERR value is not an integer or out of range"),
        (lambda c: c.gcra_limit("l", 60000, 10), WRONGTYPE),
        (lambda c: c.ratelimit_create("", 1, 1000), "ERR invalid name: must be 1 to 512 bytes"),
        (lambda c: c.ratelimit_create("x", 0, 1000), "ERR invalid limit: must be a positive integer"),
        (lambda c: c.ratelimit_create("x", 1, 0), "ERR invalid window: must be a positive integer (milliseconds)"),
        (lambda c: c.ratelimit_create("x", 1, 1000, algo="fixed_window"), "ERR syntax error"),
        (lambda c: c.ratelimit_create("x", 1, 1000, refill=5), "ERR syntax error"),
        (lambda c: c.ratelimit_create("x", 1, 1000, "token_bucket", refill=-1.0), "ERR invalid rate: must be a positive number"),
        (lambda c: c.ratelimit_create("x", 1, 1000, "token_bucket", refill=float("inf")), "ERR invalid rate: must be a positive number"),
        (lambda c: c.ratelimit_create("api", 1, 1000), "ERR limiter already exists or limit reached"),
        (lambda c: c.ratelimit_check("api", "k", cost=0), "ERR invalid cost: must be a positive integer"),
        (lambda c: c.ratelimit_reset("nolimiter", "k"), "ERR limiter not found"),
        (lambda c: c.ratelimit_stats("nolimiter"), "ERR limiter not found"),
        (lambda c: c.ratelimit_drop("nolimiter"), "ERR limiter not found"),
    ],
)
def test_errors(client: hotkv.HotKV, call: Any, text: str) -> None:
    """Server errors surface as redis.ResponseError with the server's text; redis-py removes
    the leading "ERR " code from every error it raises (WRONGTYPE keeps its code)."""
    client.rpush("l", "a")
    client.ratelimit_create("api", 1, 1000)
    with pytest.raises(redis.ResponseError) as info:
        call(client)
    assert type(info.value) is redis.ResponseError
    expected = text[4:] if text.startswith("ERR ") else text
    assert str(info.value) == expected


def test_format_rate() -> None:
    assert format_rate(5) == "5"
    assert format_rate(0.5) == "0.5"
    assert format_rate(2.5) == "2.5"
    assert format_rate(1e-08) == "0.00000001"
    assert format_rate(1e20) == "100000000000000000000"
    assert format_rate(Decimal("0.000000010")) == "0.000000010"
    assert format_rate("1e3") == "1e3"  # sent as given; the server rejects it
    with pytest.raises(TypeError):
        format_rate(True)


def test_parsers_reject_malformed_replies() -> None:
    with pytest.raises(ReplyError):
        parse_gcra([0, 1, 2])
    with pytest.raises(ReplyError):
        parse_gcra([0, 1, 2, 3, b"4"])
    with pytest.raises(ReplyError):
        parse_ok(b"QUEUED")
    with pytest.raises(ReplyError):
        parse_names(b"x")
    with pytest.raises(ReplyError):
        parse_stats([b"name", b"x"])  # required fields missing
    with pytest.raises(ReplyError):
        parse_stats([b"name", b"x", b"algo"])  # odd length
    full = [b"name", b"a", b"algo", b"token_bucket", b"limit", 3, b"window_ms", 1000,
            b"unique_keys", 0, b"total_allowed", 4, b"total_denied", 2, b"refill_per_sec",
            b"333.3333333333333", b"future_field", 1]
    assert parse_stats(full).refill_per_sec == 333.3333333333333
    assert parse_stats(dict(zip(full[::2], full[1::2]))) == parse_stats(full)
    assert parse_names([b"\xff", b"a"]) == ["\udcff", "a"]


async def test_async_client_and_pipeline(server: Server) -> None:
    for proto in (2, 3):
        async with async_client(server, proto) as c:
            await empty_async(c)
            await freeze(c)
            assert await c.gcra_limit("k", 60000, 10) == GCRAResult(False, 10, 9, -1, 6000)
            assert await c.ratelimit_create("api", 10, 1000, algo="token_bucket", refill=0.5)
            async with c.pipeline(transaction=True) as pipe:
                assert isinstance(pipe, hotkv.asyncio.Pipeline)
                pipe.gcra_limit("k", 60000, 10).ratelimit_check("api", "u", cost=3).ratelimit_stats("api")
                pipe.cl_throttle("t", 0, 1, 10).gcra_reset("k").ratelimit_list()
                out = await pipe.execute()
            assert out == [
                GCRAResult(False, 10, 8, -1, 12000),
                RateLimitResult(True, 7, 0, 10, 0),
                RateLimitStats("api", "token_bucket", 10, 1000, 1, 3, 0, 0.5),
                ThrottleResult(False, 1, 0, -1, 10),
                1,
                ["api"],
            ]
            with pytest.raises(redis.ResponseError, match="^limiter not found$"):
                await c.ratelimit_drop("nolimiter")


# Cluster. HotKV has no cluster mode yet, so the cluster clients are tested without a cluster:
# their slot computation for every command (against known CRC16 slots and hash tags), the
# node selection flags, the merged RATELIMIT.LIST, and their pipelines' classes.


def test_known_slots() -> None:
    # CRC16/XMODEM check value and the cluster specification's examples.
    assert key_slot(b"123456789") == 0x31C3
    assert key_slot(b"foo") == 12182
    assert key_slot(b"{user1000}.following") == key_slot(b"{user1000}.followers") == key_slot(b"user1000")


@pytest.mark.parametrize(
    "args, keys",
    [
        (("GCRA.LIMIT", "rl:{u}:s", 1000, 1, 1), ["rl:{u}:s"]),
        (("gcra.peek", "k", 1000, 1, 1), ["k"]),
        (("GCRA.RESET", "a", "b", "c"), ["a", "b", "c"]),
        (("CL.THROTTLE", "k", 1, 1, 1, 1), ["k"]),
        (("RATELIMIT.CREATE", "api", 1, 1000, "ALGO", "token_bucket"), ["api"]),
        (("RATELIMIT.CHECK", "api", "user:42", "COST", 1), ["api"]),
        (("RATELIMIT.PEEK", "api", "user:42"), ["api"]),
        (("RATELIMIT.RESET", "api", "user:42"), ["api"]),
        (("RATELIMIT.STATS", "api"), ["api"]),
        (("RATELIMIT.DROP", "api"), ["api"]),
        (("GET", "k"), None),
        (("RATELIMIT.LIST",), None),
    ],
)
def test_command_keys(args: Any, keys: Any) -> None:
    assert command_keys(args) == keys


@pytest.mark.parametrize("cls", [hotkv.cluster.HotKVCluster, hotkv.cluster.ClusterPipeline])
def test_sync_cluster_routing(cls: Any) -> None:
    c = bare(cls)
    assert c.determine_slot("GCRA.LIMIT", "foo", 1000, 1, 1) == 12182
    assert c.determine_slot("CL.THROTTLE", "rl:{foo}:x", 1, 1, 1, 1) == 12182
    # The per-limiter key never routes: the limiter name does.
    assert c.determine_slot("RATELIMIT.CHECK", "foo", "user:42", "COST", 1) == 12182
    assert c.determine_slot("RATELIMIT.CHECK", "{foo}api", "anything") == 12182
    assert c.determine_slot("GCRA.RESET", "rl:{u}:a", "rl:{u}:b") == key_slot(b"u")
    with pytest.raises(RedisClusterException, match="same key slot"):
        c.determine_slot("GCRA.RESET", "a", "b")
    assert c.command_flags["RATELIMIT.LIST"] == redis.cluster.RedisCluster.PRIMARIES


async def test_async_cluster_routing() -> None:
    c = bare(hotkv.asyncio.HotKVCluster)
    assert await c._determine_slot("GCRA.LIMIT", "foo", 1000, 1, 1) == 12182
    assert await c._determine_slot("RATELIMIT.STATS", "{foo}x") == 12182
    with pytest.raises(RedisClusterException):
        await c._determine_slot("GCRA.RESET", "a", "b")
    assert c.command_flags["RATELIMIT.LIST"] == redis.asyncio.cluster.RedisCluster.PRIMARIES


def test_cluster_list_merge() -> None:
    merge = hotkv.cluster.HotKVCluster.RESULT_CALLBACKS["RATELIMIT.LIST"]
    assert merge("RATELIMIT.LIST", {"n1": ["b", "a"], "n2": ["B", "a"]}) == ["B", "a", "b"]
    assert hotkv.asyncio.HotKVCluster.RESULT_CALLBACKS["RATELIMIT.LIST"] is merge


def test_cluster_classes() -> None:
    assert issubclass(hotkv.cluster.HotKVCluster, redis.cluster.RedisCluster)
    assert issubclass(hotkv.cluster.ClusterPipeline, redis.cluster.ClusterPipeline)
    assert issubclass(hotkv.asyncio.HotKVCluster, redis.asyncio.cluster.RedisCluster)
    assert issubclass(hotkv.asyncio.HotKV, redis.asyncio.Redis)
    assert issubclass(hotkv.HotKV, redis.Redis)


# The cluster clients end to end: the single test server stands in for a cluster that owns
# every slot (conftest.py's one_node_slots answers CLUSTER SLOTS), so every method runs through
# redis-py's real cluster machinery: routing, per-node response callbacks, result merging and
# cluster pipelines.


def test_cluster_client(one_node_cluster: hotkv.cluster.HotKVCluster) -> None:
    freeze(one_node_cluster.get_default_node().redis_connection)
    assert one_node_cluster.gcra_limit("rl:{u}:s", 60000, 10) == GCRAResult(False, 10, 9, -1, 6000)
    assert one_node_cluster.gcra_peek("rl:{u}:s", 60000, 10).remaining == 8
    assert one_node_cluster.cl_throttle("rl:{u}:t", 0, 1, 10) == ThrottleResult(False, 1, 0, -1, 10)
    assert one_node_cluster.gcra_reset("rl:{u}:s", "rl:{u}:t") == 2
    with pytest.raises(RedisClusterException):
        one_node_cluster.gcra_reset("a", "b")
    assert one_node_cluster.ratelimit_create("api", 3, 1000, algo="token_bucket") is True
    assert one_node_cluster.ratelimit_check("api", "user:42", cost=2) == RateLimitResult(True, 1, 0, 3, 0)
    assert one_node_cluster.ratelimit_peek("api", "user:42") == RateLimitResult(True, 1, 0, 3, 2)
    assert one_node_cluster.ratelimit_stats("api").refill_per_sec == 3.0
    assert one_node_cluster.ratelimit_list() == ["api"]  # asked on every primary (here: one), merged
    assert one_node_cluster.ratelimit_reset("api", "user:42") == 1
    with one_node_cluster.pipeline() as pipe:
        assert isinstance(pipe, hotkv.cluster.ClusterPipeline)
        pipe.gcra_limit("k", 1000, 1).gcra_limit("k", 1000, 1).ratelimit_check("api", "u").ratelimit_list()
        out = pipe.execute()
    assert out == [GCRAResult(False, 1, 0, -1, 1000), GCRAResult(True, 1, 0, 1000, 1000),
                   RateLimitResult(True, 2, 0, 3, 0), ["api"]]
    assert one_node_cluster.ratelimit_drop("api") is True
    with pytest.raises(redis.ResponseError, match="^limiter not found$"):
        one_node_cluster.ratelimit_drop("api")


async def test_async_cluster_client(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    orig = redis.asyncio.cluster.ClusterNode.execute_command

    async def execute(self: Any, *args: Any, **kw: Any) -> Any:
        if args and str(args[0]).upper() == "CLUSTER SLOTS":
            return one_node_slots(server)
        return await orig(self, *args, **kw)

    monkeypatch.setattr(redis.asyncio.cluster.ClusterNode, "execute_command", execute)
    reset_server(hotkv.HotKV(host=server.host, port=server.port))
    freeze(hotkv.HotKV(host=server.host, port=server.port))
    c = hotkv.asyncio.HotKVCluster(host=server.host, port=server.port, protocol=3)
    try:
        assert await c.gcra_limit("rl:{u}:s", 60000, 10) == GCRAResult(False, 10, 9, -1, 6000)
        assert await c.ratelimit_create("api", 3, 1000) is True
        assert await c.ratelimit_check("api", "u") == RateLimitResult(True, 2, 0, 3, 0)
        assert await c.ratelimit_stats("api") == RateLimitStats("api", "sliding_window", 3, 1000, 1, 1, 0)
        assert await c.ratelimit_list() == ["api"]
        pipe = c.pipeline()
        assert isinstance(pipe, hotkv.asyncio.ClusterPipeline)
        pipe.gcra_limit("rl:{u}:s", 60000, 10).ratelimit_peek("api", "u").gcra_reset("rl:{u}:s")
        assert await pipe.execute() == [GCRAResult(False, 10, 8, -1, 12000), RateLimitResult(True, 2, 0, 3, 1), 1]
    finally:
        await c.aclose()
        hotkv.HotKV(host=server.host, port=server.port).execute_command("DEBUG", "CLOCK", "RESET")
