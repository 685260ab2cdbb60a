"""Test helpers shared by several test files (plain functions; the fixtures are in conftest.py).

Most of it is the step runner of the vector tests written as Python data (RATELIMIT.UPDATE and
shadow mode, concurrency limits, GCRA.LIMITALL and GCRA.REFUND): those files keep only their
vectors and their special cases, and replay every block through the same runner in each client
mode (sync, asyncio, the cluster client), so a mode cannot check less than another. The shared
vectors of clients/testdata/vectors.json have their own JSON form and converter
(test_vectors.py) and take from here only the asyncio client's setup and the call-or-error
helpers. The rest: constants and helpers the other test files repeated (``freeze``, ``bare``
for the routing tests, ``wait_for`` for the multi-process cluster tests).
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Tuple

import pytest
import redis

import hotkv
import hotkv.asyncio
import hotkv.cluster
from hotkv import RateLimitResult, RateLimitStats
from hotkv._commands import command_keys

if TYPE_CHECKING:  # conftest imports this module: only the type, not a cycle at run time
    from conftest import Server

# The clock the vectors start at (DEBUG CLOCK SET), as in docs/ratelimit.md and vectors.json.
T0 = 1700000000000
# Error texts several files expect. redis-py drops the leading "ERR " of every error it raises
# (WRONGTYPE keeps its code).
E_SYNTAX = "syntax error"
E_NOTFOUND = "limiter not found"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"

# The two protocols every single-node test runs with (the ``client`` fixture has the same).
per_protocol = pytest.mark.parametrize("protocol", [2, 3], ids=["RESP2", "RESP3"])


def freeze(c: Any, at: int = T0) -> Any:
    """Stops the server clock at ``at`` (t0 by default), so replies are exact. Returns the
    reply, or the awaitable of an asyncio client."""
    return c.execute_command("DEBUG", "CLOCK", "SET", at)


def r(allowed: int, remaining: int, retry: int, limit: int, current: int, lease_id: int = 0) -> RateLimitResult:
    """A RATELIMIT.CHECK/PEEK result written as the docs' tables write it (allowed as 0/1)."""
    return RateLimitResult(allowed != 0, remaining, retry, limit, current, lease_id)


# Steps. A block is a name and a list of steps; a step is a tuple whose first item says what
# it does:
#   ("flush",)                      FLUSHALL (it drops the limiters too)
#   ("at", ms)                      DEBUG CLOCK SET t0+ms
#   ("create", name, limit, window_ms, kwargs) and ("update", name, kwargs): the reply is True
#   ("stats", name, {field: want})  the named fields of the RateLimitStats equal want
#   (op, *args, want)               any other op of CALLS: the reply equals want
#   ("err", op, args, text)         CALLS[op] with the tuple args (for "raw": args is the
#                                   command line) raises redis.ResponseError, exactly text
Step = Tuple[Any, ...]
Block = Tuple[str, List[Step]]

# Each op's typed call; it returns the reply (sync clients) or an awaitable (asyncio), so one
# table serves every runner.
CALLS: Dict[str, Callable[..., Any]] = {
    "create": lambda c, name, limit, window, kw: c.ratelimit_create(name, limit, window, **kw),
    "update": lambda c, name, kw: c.ratelimit_update(name, **kw),
    "check": lambda c, name, key, cost: c.ratelimit_check(name, key, cost=cost),
    "peek": lambda c, name, key: c.ratelimit_peek(name, key),
    "release": lambda c, name, key, lease_id: c.ratelimit_release(name, key, lease_id),
    "reset": lambda c, name, key: c.ratelimit_reset(name, key),
    "stats": lambda c, name: c.ratelimit_stats(name),
    "limit": lambda c, key, period, burst, count: c.gcra_limit(key, period, burst, count),
    "refund": lambda c, key, period, burst, count: c.gcra_refund(key, period, burst, count),
    "all": lambda c, limits, count: c.gcra_limit_all(limits, count=count),
    "raw": lambda c, argv: c.execute_command(*argv),
}
# The ops whose steps carry no expected reply: they must reply True (OK).
_OK_OPS = ("create", "update")


def per_block(blocks: List[Block]) -> pytest.MarkDecorator:
    """Parametrizes a test's ``block`` argument with the blocks, named by their names."""
    return pytest.mark.parametrize("block", blocks, ids=[name for name, _ in blocks])


def _admin(step: Step) -> Optional[List[Any]]:
    """The command line of a "flush" or "at" step; None for the other steps."""
    if step[0] == "flush":
        return ["FLUSHALL"]
    if step[0] == "at":
        return ["DEBUG", "CLOCK", "SET", T0 + step[1]]
    return None


def _start(c: Any, step: Step) -> Any:
    """Starts one step's command; returns its reply (sync) or an awaitable (asyncio)."""
    op = step[0]
    if op == "err":
        op, args = step[1], step[2]
        if op == "raw":
            args = (args,)
    elif op in _OK_OPS:
        args = step[1:]
    else:
        args = step[1:-1]
    return CALLS[op](c, *args)


def call_or_error(call: Callable[[], Any]) -> Tuple[Any, Optional[redis.ResponseError]]:
    """The reply of call(), or the server error it raised: the steps compare either."""
    try:
        return call(), None
    except redis.ResponseError as exc:
        return None, exc


async def call_or_error_async(call: Callable[[], Awaitable[Any]]) -> Tuple[Any, Optional[redis.ResponseError]]:
    """call_or_error for the asyncio clients: awaits what call() returns."""
    try:
        return await call(), None
    except redis.ResponseError as exc:
        return None, exc


def _check(name: str, i: int, step: Step, result: Any, error: Optional[redis.ResponseError]) -> None:
    # The step, cut short: LA8 sends 257 limits.
    where = f"{name} step {i} {step!r:.300}"
    if step[0] == "err":
        assert isinstance(error, redis.ResponseError), f"{where}: no error, got {result!r}"
        assert type(error) is redis.ResponseError and str(error) == step[3], f"{where}: {error}"
        return
    assert error is None, f"{where}: {error}"
    if step[0] in _OK_OPS:
        assert result is True, f"{where}: {result!r}"
    elif step[0] == "stats":
        assert isinstance(result, RateLimitStats), f"{where}: {result!r}"
        got = {k: getattr(result, k) for k in step[2]}
        assert got == step[2], f"{where}: {result!r}"
    else:
        assert result == step[-1], f"{where}: {result!r}"


def run_sync(c: Any, name: str, steps: List[Step]) -> None:
    """Replays a block's steps on a sync client (or anything with its methods)."""
    for i, step in enumerate(steps):
        admin = _admin(step)
        if admin is not None:
            c.execute_command(*admin)
            continue
        _check(name, i, step, *call_or_error(partial(_start, c, step)))


async def run_async(c: Any, name: str, steps: List[Step]) -> None:
    """Replays a block's steps on an asyncio client."""
    for i, step in enumerate(steps):
        admin = _admin(step)
        if admin is not None:
            await c.execute_command(*admin)
            continue
        _check(name, i, step, *await call_or_error_async(partial(_start, c, step)))


def block_tests(blocks: List[Block]) -> Tuple[Callable[..., None], Callable[..., Awaitable[None]], Callable[..., None]]:
    """The three tests every vector file runs its blocks with, parametrized by block: the sync
    client (RESP2 and RESP3, the ``client`` fixture), the asyncio client (RESP2 and RESP3) and
    the cluster client on a one-node slot map. A file binds them to its own test names::

        test_sync, test_async, test_cluster = block_tests(BLOCKS)
    """

    @per_block(blocks)
    def test_sync(client: hotkv.HotKV, block: Block) -> None:
        run_sync(client, *block)

    @per_protocol
    @per_block(blocks)
    async def test_async(server: "Server", protocol: int, block: Block) -> None:
        async with async_client(server, protocol) as c:
            await run_async(c, *block)

    @per_block(blocks)
    def test_cluster(one_node_cluster: hotkv.cluster.HotKVCluster, block: Block) -> None:
        run_cluster(one_node_cluster, *block)

    return test_sync, test_async, test_cluster


@asynccontextmanager
async def async_client(server: "Server", protocol: int) -> AsyncIterator[hotkv.asyncio.HotKV]:
    """An asyncio client of the test server; on the way out, also on failures, the server
    clock runs again (the next test's fixtures may not reset it) and the client is closed."""
    c = hotkv.asyncio.HotKV(host=server.host, port=server.port, protocol=protocol)
    try:
        yield c
    finally:
        await c.execute_command("DEBUG", "CLOCK", "RESET")
        await c.aclose()


async def empty_async(c: hotkv.asyncio.HotKV) -> None:
    """Empties the server for a test on an asyncio client: the keys and every limiter."""
    await c.flushall()
    for name in await c.ratelimit_list():
        await c.ratelimit_drop(name)


# The cluster client on a one-node slot map (conftest's one_node_cluster fixture).


class NodeAdmin:
    """Runs FLUSHALL and DEBUG CLOCK on the cluster's one node (the cluster client has no key
    to route them by), the rest on the cluster client."""

    def __init__(self, c: hotkv.cluster.HotKVCluster) -> None:
        self.c = c
        self.node = c.get_default_node().redis_connection

    def execute_command(self, *args: Any) -> Any:
        if str(args[0]).upper() in ("FLUSHALL", "DEBUG"):
            return self.node.execute_command(*args)
        return self.c.execute_command(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.c, name)


def _routable(step: Step) -> bool:
    """False for an error step whose command line has no key to route by (a bare
    RATELIMIT.UPDATE, a LIMITALL with no limit or a numlimits of 0, -1 or x): the cluster
    client refuses those itself, before the server could answer (the routing tests in
    test_commands.py and test_limitall_refund.py cover that), so only the single-node runners
    send them."""
    if step[0] != "err":
        return True
    op, args = step[1], step[2]
    if op == "all":
        return bool(args[0])
    if op == "raw":
        return bool(command_keys(tuple(args)))
    return True


def run_cluster(c: hotkv.cluster.HotKVCluster, name: str, steps: List[Step]) -> None:
    """Replays a block's routable steps through the cluster client."""
    run_sync(NodeAdmin(c), name, [s for s in steps if _routable(s)])


def bare(cls: Any) -> Any:
    """A cluster client object without connecting (RedisCluster's constructor needs a live
    cluster): the routing code only needs the encoder and the flags."""
    obj = object.__new__(cls)
    obj.encoder = redis.connection.Encoder("utf-8", "strict", False)
    obj.command_flags = cls.COMMAND_FLAGS.copy()
    return obj


# The multi-process cluster tests (test_cluster_failover.py, test_sharded_cluster.py).


def wait_for(what: str, timeout: float, check: Callable[[], bool]) -> None:
    """Polls check() until it is true; fails the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def as_str(v: Any) -> str:
    """A reply field as text (bytes without decode_responses)."""
    return v.decode() if isinstance(v, bytes) else str(v)
