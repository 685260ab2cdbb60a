"""The rate-limiting commands as a redis-py command mixin, shared by every HotKV client class.

Like redis-py's own command classes, each method builds the command and returns
``self.execute_command(...)``: a sync client returns the reply, an asyncio client an awaitable,
a pipeline (also inside ``MULTI``/``EXEC``) queues the command and returns itself. The typed
results are built by response callbacks (:data:`RESPONSE_CALLBACKS`) that each client class
registers, so they come out of ``pipe.execute()`` too.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

from redis.exceptions import RedisClusterException
from redis.typing import KeyT

from ._results import (
    GCRALimitAllResult,
    GCRALimitSpec,
    GCRAResult,
    RateLimitResult,
    RateLimitStats,
    ThrottleResult,
    parse_gcra,
    parse_gcra_all,
    parse_int,
    parse_bool,
    parse_names,
    parse_ok,
    parse_ratelimit,
    parse_stats,
    parse_throttle,
)

T = TypeVar("T")

#: What a command method returns: the result for a sync client, an awaitable of it for an
#: asyncio client (and the pipeline itself while queuing, as in redis-py).
Reply = Union[T, Awaitable[T]]

#: One limit of GCRA.LIMITALL: a :class:`GCRALimitSpec` or a ``(key, period_ms, burst)`` tuple.
LimitSpec = Union[GCRALimitSpec, Tuple[KeyT, int, int]]

#: A rate as RATELIMIT.CREATE's REFILL/DRAIN take it: units per second.
Rate = Union[int, float, Decimal, str]

#: Response callbacks by command name; every client class installs them.
RESPONSE_CALLBACKS: Dict[str, Callable[..., Any]] = {
    "GCRA.LIMIT": parse_gcra,
    "GCRA.PEEK": parse_gcra,
    "GCRA.RESET": parse_int,
    "GCRA.LIMITALL": parse_gcra_all,
    "GCRA.REFUND": parse_gcra,
    "CL.THROTTLE": parse_throttle,
    "RATELIMIT.CREATE": parse_ok,
    "RATELIMIT.UPDATE": parse_ok,
    "RATELIMIT.CHECK": parse_ratelimit,
    "RATELIMIT.PEEK": parse_ratelimit,
    "RATELIMIT.RELEASE": parse_bool,
    "RATELIMIT.RESET": parse_int,
    "RATELIMIT.STATS": parse_stats,
    "RATELIMIT.DROP": parse_ok,
    "RATELIMIT.LIST": parse_names,
}

#: Where each command's keys are, as (first, last, step) over the arguments after the name,
#: ``last`` -1 meaning "to the end" (the server's COMMAND INFO key specs). RATELIMIT.* route by
#: the limiter name, their only key; the per-limiter key is not a keyspace key. Cluster
#: clients use this table instead of asking the server with COMMAND, which also works before
#: redis-py has loaded the command metadata. GCRA.LIMITALL is not listed: its keys follow a
#: count (every third argument after ``numlimits``), which :func:`command_keys` reads itself.
KEY_POSITIONS: Dict[str, Tuple[int, int, int]] = {
    "GCRA.LIMIT": (1, 1, 1),
    "GCRA.PEEK": (1, 1, 1),
    "GCRA.REFUND": (1, 1, 1),
    "GCRA.RESET": (1, -1, 1),
    "CL.THROTTLE": (1, 1, 1),
    "RATELIMIT.CREATE": (1, 1, 1),
    "RATELIMIT.UPDATE": (1, 1, 1),
    "RATELIMIT.CHECK": (1, 1, 1),
    "RATELIMIT.PEEK": (1, 1, 1),
    "RATELIMIT.RELEASE": (1, 1, 1),
    "RATELIMIT.RESET": (1, 1, 1),
    "RATELIMIT.STATS": (1, 1, 1),
    "RATELIMIT.DROP": (1, 1, 1),
}


def command_keys(args: Tuple[Any, ...]) -> Optional[List[Any]]:
    """The keys of a HotKV rate-limit command line (name first), or None when the command is
    not one of them (the caller then asks redis-py's own parser)."""
    if not args or not isinstance(args[0], (str, bytes)):
        return None
    name = args[0].decode() if isinstance(args[0], bytes) else args[0]
    pos = KEY_POSITIONS.get(name.upper())
    if pos is None and name.upper() == "GCRA.LIMITALL":
        return _limitall_keys(args)
    if pos is None:
        return None
    first, last, step = pos
    end = len(args) if last < 0 else last + 1
    return list(args[first:end:step])


def _limitall_keys(args: Tuple[Any, ...]) -> List[Any]:
    # GCRA.LIMITALL's keys follow a count (a "keynum" key spec: numlimits at index 1, a key
    # every third argument), which KEY_POSITIONS' fixed ranges cannot express. A malformed
    # numlimits yields no keys, so the cluster client raises instead of guessing a node.
    try:
        n = int(args[1])
    except (IndexError, TypeError, ValueError):
        return []
    if n < 1:
        return []
    return list(args[2 : 2 + 3 * n : 3])


def slot_of(client: Any, command: str, keys: List[Any]) -> int:
    """The one slot of a command's keys (hash tags apply), or redis-py's cross-slot error."""
    if not keys:
        raise RedisClusterException(f"{command} needs at least one key")
    slots = {client.keyslot(k) for k in keys}
    if len(slots) != 1:
        raise RedisClusterException(f"{command} - all keys must map to the same key slot")
    return int(slots.pop())


def format_rate(rate: Rate) -> str:
    """Writes a rate in the server's syntax: plain decimal digits, no exponent. A float is
    written as its shortest repr (``0.5``, ``2.5``) expanded to plain digits (``1e-08`` becomes
    ``0.00000001``); a str is sent as it is. Invalid values reach the server, which answers
    ``ERR invalid rate: must be a positive number``."""
    if isinstance(rate, str):
        return rate
    if isinstance(rate, bool):
        raise TypeError("rate must be a number, not bool")
    if isinstance(rate, int):
        return str(rate)
    if isinstance(rate, float):
        if rate != rate or rate in (float("inf"), float("-inf")):
            return repr(rate)
        return format(Decimal(repr(rate)), "f")
    return format(rate, "f")


class HotKVCommands:
    """HotKV's rate-limiting commands (the specification's GCRA.*, CL.THROTTLE and
    RATELIMIT.*). Mixed into :class:`hotkv.HotKV`, :class:`hotkv.asyncio.HotKV`, the cluster
    clients and their pipelines.

    Times follow the wire: milliseconds for GCRA and RATELIMIT, seconds for CL.THROTTLE.
    Arguments are not validated here: the server checks them and its exact error text surfaces
    as :class:`redis.ResponseError`.
    """

    # Provided by the redis-py class this is mixed into.
    execute_command: Callable[..., Any]

    def gcra_limit(self, key: KeyT, period_ms: int, burst: int, count: int = 1) -> Reply[GCRAResult]:
        """GCRA.LIMIT: allows or denies a request of ``count`` units under a limit of
        ``burst`` units per ``period_ms`` with smooth refill, and records it if allowed, in
        one atomic step. A denied request changes nothing.

        State lives in ``key``, an ordinary string key; a key holding anything but an integer
        string is refused with WRONGTYPE, so use a dedicated prefix such as ``rl:``."""
        return self.execute_command("GCRA.LIMIT", key, period_ms, burst, count)  # type: ignore[no-any-return]

    def gcra_peek(self, key: KeyT, period_ms: int, burst: int, count: int = 1) -> Reply[GCRAResult]:
        """GCRA.PEEK: what :meth:`gcra_limit` with the same arguments would reply now,
        including the units it would use, recording nothing. Read-only (replicas may serve
        it)."""
        return self.execute_command("GCRA.PEEK", key, period_ms, burst, count)  # type: ignore[no-any-return]

    def gcra_limit_all(self, limits: Sequence[LimitSpec], count: int = 1) -> Reply[GCRALimitAllResult]:
        """GCRA.LIMITALL: the request of ``count`` units is admitted only if every limit allows
        it, and is then recorded in every key as :meth:`gcra_limit` would; if any limit denies,
        nothing is recorded. Two :meth:`gcra_limit` calls cannot do this: the first spends its
        unit even when the second denies.

        ``limits`` holds :class:`GCRALimitSpec` values or ``(key, period_ms, burst)`` tuples.
        The server accepts 1 to 256 limits; a key listed twice is charged twice. In a cluster
        all keys must hash to one slot (use a hash tag such as ``{user42}``)."""
        args: List[Any] = ["GCRA.LIMITALL", len(limits)]
        for spec in limits:
            if isinstance(spec, GCRALimitSpec):
                args += [spec.key, spec.period_ms, spec.burst]
            else:
                key, period_ms, burst = spec
                args += [key, period_ms, burst]
        args += ["COUNT", count]
        return self.execute_command(*args)  # type: ignore[no-any-return]

    def gcra_refund(self, key: KeyT, period_ms: int, burst: int, count: int = 1) -> Reply[GCRAResult]:
        """GCRA.REFUND: gives ``count`` units back to a GCRA key, for "charge only on success"
        flows (:meth:`gcra_limit` before the work, :meth:`gcra_refund` when the work should not
        have counted). The refund never goes beyond a full burst; an absent or full key is left
        alone, and a key that becomes full is deleted. The reply has ``denied`` False;
        ``remaining`` and ``reset_after_ms`` describe the key after the refund. Use the period
        and burst of the limit."""
        return self.execute_command("GCRA.REFUND", key, period_ms, burst, count)  # type: ignore[no-any-return]

    def gcra_reset(self, *keys: KeyT) -> Reply[int]:
        """GCRA.RESET: deletes GCRA (and CL.THROTTLE) state and returns how many of the keys
        existed; a key listed twice counts once. If any existing key is not GCRA state the
        server replies WRONGTYPE and deletes nothing. In a cluster all keys must share a slot
        (use hash tags)."""
        return self.execute_command("GCRA.RESET", *keys)  # type: ignore[no-any-return]

    def cl_throttle(
        self, key: KeyT, max_burst: int, count_per_period: int, period_s: int, quantity: int = 1
    ) -> Reply[ThrottleResult]:
        """CL.THROTTLE, the redis-cell compatible form: ``count_per_period`` units per
        ``period_s`` seconds, bursts of ``max_burst + 1``. ``quantity`` 0 only reports the
        state. It shares its state format with GCRA.LIMIT."""
        return self.execute_command(  # type: ignore[no-any-return]
            "CL.THROTTLE", key, max_burst, count_per_period, period_s, quantity
        )

    def ratelimit_create(
        self,
        name: KeyT,
        limit: int,
        window_ms: int,
        algo: Optional[str] = None,
        refill: Optional[Rate] = None,
        drain: Optional[Rate] = None,
        shadow: bool = False,
    ) -> Reply[bool]:
        """RATELIMIT.CREATE: creates a named limiter; True on ``OK``.

        ``algo`` is ``"sliding_window"`` (the server's default), ``"token_bucket"``,
        ``"leaky_bucket"`` or ``"concurrency"``; ``refill`` (token bucket) and ``drain``
        (leaky bucket) are units per second (default ``limit`` per ``window_ms``). A
        ``"concurrency"`` limiter bounds the units **in flight** per key rather than a rate:
        an allowed :meth:`ratelimit_check` acquires a lease
        (:attr:`RateLimitResult.lease_id`) that holds its units until
        :meth:`ratelimit_release`, or until ``window_ms`` after it was acquired (so a crashed
        client's slot frees itself: choose a window above the longest the work may take). Its
        limit is at most 100000. ``shadow=True`` sends the SHADOW
        flag: every check is allowed while the decision is still computed, recorded and
        counted as an enforced limiter would, so a limit can be measured in production before
        it is enforced (:meth:`ratelimit_update` with ``shadow=False`` turns it off). A shadow
        denial is an allowed result with ``retry_after_ms`` other than 0, which an
        application can log.

        An existing name fails with ``ERR limiter already exists or limit reached``, even with
        identical settings; to change a limiter in place, keeping its state and totals, use
        :meth:`ratelimit_update`."""
        args: List[Any] = ["RATELIMIT.CREATE", name, limit, window_ms]
        if algo is not None:
            args += ["ALGO", algo]
        if refill is not None:
            args += ["REFILL", format_rate(refill)]
        if drain is not None:
            args += ["DRAIN", format_rate(drain)]
        if shadow:
            args.append("SHADOW")
        return self.execute_command(*args)  # type: ignore[no-any-return]

    def ratelimit_update(
        self,
        name: KeyT,
        limit: Optional[int] = None,
        window_ms: Optional[int] = None,
        refill: Optional[Rate] = None,
        drain: Optional[Rate] = None,
        shadow: Optional[bool] = None,
    ) -> Reply[bool]:
        """RATELIMIT.UPDATE: changes an existing limiter in place; True on ``OK``.

        Only the arguments given (not None) are sent: ``LIMIT``, ``WINDOW`` (ms), ``REFILL``
        (token bucket) or ``DRAIN`` (leaky bucket), ``SHADOW ON|OFF``; the others keep their
        value, and at least one is needed (``ERR syntax error`` otherwise). The limiter keeps
        every key's state and its totals: a sliding window keeps its log (a key above a
        lowered limit waits until enough units age out), a bucket keeps each key's units in
        use, clamped to the new limit. A limiter on the default rate stays on it, recomputed
        from the new limit and window. The algorithm cannot change (drop and create). An
        unknown limiter is ``ERR limiter not found``.

        The server's ``AT ms`` option is not offered: it is the conversion instant the
        server writes to its journal, not something an application sets (as in the Go
        client)."""
        args: List[Any] = ["RATELIMIT.UPDATE", name]
        if limit is not None:
            args += ["LIMIT", limit]
        if window_ms is not None:
            args += ["WINDOW", window_ms]
        if refill is not None:
            args += ["REFILL", format_rate(refill)]
        if drain is not None:
            args += ["DRAIN", format_rate(drain)]
        if shadow is not None:
            args += ["SHADOW", "ON" if shadow else "OFF"]
        return self.execute_command(*args)  # type: ignore[no-any-return]

    def ratelimit_check(self, name: KeyT, key: KeyT, cost: int = 1) -> Reply[RateLimitResult]:
        """RATELIMIT.CHECK: checks a request of ``cost`` units for ``key`` against the named
        limiter and counts it if allowed. An unknown limiter is not an error: the reply is all
        zeros (:attr:`RateLimitResult.unknown_limiter`)."""
        return self.execute_command("RATELIMIT.CHECK", name, key, "COST", cost)  # type: ignore[no-any-return]

    def ratelimit_peek(self, name: KeyT, key: KeyT) -> Reply[RateLimitResult]:
        """RATELIMIT.PEEK: answers for a hypothetical cost of 1 and counts nothing; unlike
        GCRA.PEEK it subtracts nothing (``remaining`` is what is left now). It never
        acquires a lease (``lease_id`` 0)."""
        return self.execute_command("RATELIMIT.PEEK", name, key)  # type: ignore[no-any-return]

    def ratelimit_release(self, name: KeyT, key: KeyT, lease_id: int) -> Reply[bool]:
        """RATELIMIT.RELEASE: gives back a lease a ``concurrency`` limiter's check acquired
        (:attr:`RateLimitResult.lease_id`), freeing its units at once. True if the key held
        that live lease and it is now released; False if it was released already, had
        expired, was never issued or is another key's. Releasing is idempotent, so retrying
        is safe: release in a ``finally`` right after an allowed check.

        Errors (:class:`redis.ResponseError`): a lease id that is not 1 .. 2**63-1 is
        ``invalid lease: must be a positive integer``, an unknown limiter ``limiter not
        found``, another algorithm's ``limiter is not a concurrency limiter``."""
        return self.execute_command("RATELIMIT.RELEASE", name, key, lease_id)  # type: ignore[no-any-return]

    def ratelimit_reset(self, name: KeyT, key: KeyT) -> Reply[int]:
        """RATELIMIT.RESET: forgets one key's state; 1 if it had live state, else 0. Totals
        are kept. Unknown limiter: ``ERR limiter not found``."""
        return self.execute_command("RATELIMIT.RESET", name, key)  # type: ignore[no-any-return]

    def ratelimit_stats(self, name: KeyT) -> Reply[RateLimitStats]:
        """RATELIMIT.STATS: the limiter's settings, its keys with live state, its allowed
        and denied totals (in units), its shadow mode and the units it let through in shadow
        mode."""
        return self.execute_command("RATELIMIT.STATS", name)  # type: ignore[no-any-return]

    def ratelimit_drop(self, name: KeyT) -> Reply[bool]:
        """RATELIMIT.DROP: deletes the limiter with its state and totals; True on ``OK``."""
        return self.execute_command("RATELIMIT.DROP", name)  # type: ignore[no-any-return]

    def ratelimit_list(self) -> Reply[List[str]]:
        """RATELIMIT.LIST: the limiter names, sorted bytewise. Limiters are node-local; the
        cluster clients ask every primary and merge the lists."""
        return self.execute_command("RATELIMIT.LIST")  # type: ignore[no-any-return]


class SyncCommands(HotKVCommands):
    """The rate-limit commands as the synchronous clients (HotKV, HotKVCluster) type them: the
    result itself, where the mixin's methods say "a result or an awaitable of it". The stubs
    exist for type checkers only; at run time this class adds nothing to HotKVCommands."""

    if TYPE_CHECKING:

        def gcra_limit(self, key: KeyT, period_ms: int, burst: int, count: int = 1) -> GCRAResult: ...
        def gcra_peek(self, key: KeyT, period_ms: int, burst: int, count: int = 1) -> GCRAResult: ...
        def gcra_limit_all(self, limits: Sequence[LimitSpec], count: int = 1) -> GCRALimitAllResult: ...
        def gcra_refund(self, key: KeyT, period_ms: int, burst: int, count: int = 1) -> GCRAResult: ...
        def gcra_reset(self, *keys: KeyT) -> int: ...
        def cl_throttle(
            self, key: KeyT, max_burst: int, count_per_period: int, period_s: int, quantity: int = 1
        ) -> ThrottleResult: ...
        def ratelimit_create(
            self,
            name: KeyT,
            limit: int,
            window_ms: int,
            algo: Optional[str] = None,
            refill: Optional[Rate] = None,
            drain: Optional[Rate] = None,
            shadow: bool = False,
        ) -> bool: ...
        def ratelimit_update(
            self,
            name: KeyT,
            limit: Optional[int] = None,
            window_ms: Optional[int] = None,
            refill: Optional[Rate] = None,
            drain: Optional[Rate] = None,
            shadow: Optional[bool] = None,
        ) -> bool: ...
        def ratelimit_check(self, name: KeyT, key: KeyT, cost: int = 1) -> RateLimitResult: ...
        def ratelimit_peek(self, name: KeyT, key: KeyT) -> RateLimitResult: ...
        def ratelimit_release(self, name: KeyT, key: KeyT, lease_id: int) -> bool: ...
        def ratelimit_reset(self, name: KeyT, key: KeyT) -> int: ...
        def ratelimit_stats(self, name: KeyT) -> RateLimitStats: ...
        def ratelimit_drop(self, name: KeyT) -> bool: ...
        def ratelimit_list(self) -> List[str]: ...


class AsyncCommands(HotKVCommands):
    """The rate-limit commands as the asyncio clients type them: awaitables of the results
    (see SyncCommands; for type checkers only)."""

    if TYPE_CHECKING:

        def gcra_limit(
            self, key: KeyT, period_ms: int, burst: int, count: int = 1
        ) -> Awaitable[GCRAResult]: ...
        def gcra_peek(
            self, key: KeyT, period_ms: int, burst: int, count: int = 1
        ) -> Awaitable[GCRAResult]: ...
        def gcra_limit_all(
            self, limits: Sequence[LimitSpec], count: int = 1
        ) -> Awaitable[GCRALimitAllResult]: ...
        def gcra_refund(
            self, key: KeyT, period_ms: int, burst: int, count: int = 1
        ) -> Awaitable[GCRAResult]: ...
        def gcra_reset(self, *keys: KeyT) -> Awaitable[int]: ...
        def cl_throttle(
            self, key: KeyT, max_burst: int, count_per_period: int, period_s: int, quantity: int = 1
        ) -> Awaitable[ThrottleResult]: ...
        def ratelimit_create(
            self,
            name: KeyT,
            limit: int,
            window_ms: int,
            algo: Optional[str] = None,
            refill: Optional[Rate] = None,
            drain: Optional[Rate] = None,
            shadow: bool = False,
        ) -> Awaitable[bool]: ...
        def ratelimit_update(
            self,
            name: KeyT,
            limit: Optional[int] = None,
            window_ms: Optional[int] = None,
            refill: Optional[Rate] = None,
            drain: Optional[Rate] = None,
            shadow: Optional[bool] = None,
        ) -> Awaitable[bool]: ...
        def ratelimit_check(self, name: KeyT, key: KeyT, cost: int = 1) -> Awaitable[RateLimitResult]: ...
        def ratelimit_peek(self, name: KeyT, key: KeyT) -> Awaitable[RateLimitResult]: ...
        def ratelimit_release(self, name: KeyT, key: KeyT, lease_id: int) -> Awaitable[bool]: ...
        def ratelimit_reset(self, name: KeyT, key: KeyT) -> Awaitable[int]: ...
        def ratelimit_stats(self, name: KeyT) -> Awaitable[RateLimitStats]: ...
        def ratelimit_drop(self, name: KeyT) -> Awaitable[bool]: ...
        def ratelimit_list(self) -> Awaitable[List[str]]: ...
