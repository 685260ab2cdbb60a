"""Rate-limiting middleware for web frameworks: the framework-independent core.

:mod:`hotkv.middleware.asgi` (Starlette, FastAPI, any ASGI app) and
:mod:`hotkv.middleware.django` wrap it. Each request is checked against one or several limits
(:meth:`Limit.gcra`, which needs no setup, and :meth:`Limit.limiter`, a named RATELIMIT limiter
created beforehand); it passes only if every limit allows it. A refusal is answered 429 with
``Retry-After``; every limited response carries the IETF ``RateLimit-Policy`` and
``RateLimit`` fields (draft-ietf-httpapi-ratelimit-headers) as section 12 of the HotKV
rate-limiting specification maps them, the same headers as the Go client's ``httplimit``.

Several limits: with one limit the middleware sends one atomic command. With several it first
asks every limit in one pipeline whether the request would pass, counting nothing
(``GCRA.PEEK`` with the cost, ``RATELIMIT.PEEK``); if any refuses, nothing is counted anywhere.
Named limiters that refuse are then asked with ``RATELIMIT.CHECK``, which, refusing, changes
nothing but records the refusal in their ``total_denied`` and gives the exact wait for the
request's cost. If all would pass, the request is counted on every limit in a second pipeline.
The steps are not one atomic operation: no limit ever admits more than it allows, but a request
that loses a race between the steps can be counted by the limits that allowed it while another
refuses it.

Concurrency limiters: a :meth:`Limit.limiter` created with ``algo="concurrency"`` bounds the
requests in flight rather than a rate. Its check acquires a lease (``lease_id``), which the
middleware releases (``RATELIMIT.RELEASE``) when the application has answered the request,
also when it raised, or at once when another limit refuses the request (after the refusal is
sent). A lease the middleware could not release (the server unreachable at that moment, the
process killed) frees itself when the limiter's window has passed since it was acquired, so
choose a window longer than the slowest request. Release errors go to ``on_error``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import (
    Any,
    Callable,
    Dict,
    Generator,
    Generic,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from .._results import GCRAResult, RateLimitResult, RateLimitStats

__all__ = [
    "Limit",
    "Options",
    "Decision",
    "Result",
    "UnknownLimiterError",
    "Lease",
    "client_ip",
    "Engine",
]

Req = TypeVar("Req")


class UnknownLimiterError(Exception):
    """A named limiter does not exist on the server. The server answers checks against it
    with all zeros, which would refuse every request; the middleware treats it as the
    configuration error it is, like an unreachable server (fail open or closed)."""


@dataclass(frozen=True)
class Limit(Generic[Req]):
    """One limit a request must pass. Build it with :meth:`gcra` or :meth:`limiter`; the
    ``with_*`` methods return modified copies."""

    kind: str
    """``"gcra"`` or ``"limiter"``."""
    policy: str
    """The policy name in the RateLimit headers."""
    limiter_name: str = ""
    """The RATELIMIT limiter's name (limiter limits)."""
    prefix: str = ""
    period_ms: int = 0
    burst: int = 0
    key: Optional[Callable[[Req], str]] = None

    @classmethod
    def gcra(cls, name: str, period_ms: int, burst: int) -> "Limit[Any]":
        """A limit of ``burst`` units per ``period_ms`` with smooth refill (GCRA.LIMIT). It
        needs nothing created on the server: its state lives in the key
        ``rl:<name>:<request key>`` (see :meth:`with_prefix`). ``name`` is also the policy
        name."""
        return Limit("gcra", name, prefix=f"rl:{name}:", period_ms=period_ms, burst=burst)

    @classmethod
    def limiter(cls, name: str) -> "Limit[Any]":
        """A named RATELIMIT limiter, created beforehand (``ratelimit_create``, at start-up).
        The limiter name is the policy name; its window for RateLimit-Policy's ``w`` is read
        with RATELIMIT.STATS and cached (``policy_ttl``)."""
        return Limit("limiter", name, limiter_name=name)

    def with_key(self, key: Callable[[Req], str]) -> "Limit[Req]":
        """This limit keyed by ``key`` instead of the middleware's key function (an API-key
        limit next to a per-IP one, say)."""
        return dataclasses.replace(self, key=key)

    def with_prefix(self, prefix: str) -> "Limit[Req]":
        """A GCRA limit whose state keys start with ``prefix``. Use a prefix no application
        key shares: an integer-valued key would be taken as limiter state."""
        return dataclasses.replace(self, prefix=prefix)

    def with_policy(self, name: str) -> "Limit[Req]":
        """This limit with another policy name in the headers."""
        return dataclasses.replace(self, policy=name)


@dataclass(frozen=True)
class Result:
    """One limit's part in a decision, in header units (seconds)."""

    policy: str
    allowed: bool
    too_large: bool
    """The cost exceeds this limit's capacity: no wait helps."""
    quota: int
    """The policy's ``q``: the GCRA burst or the limiter's limit."""
    window: int
    """The policy's ``w`` in seconds (>= 1); 0 when unknown (``w`` is then omitted)."""
    remaining: int
    """``r``: units left after this request when counted, before it when not."""
    reset: int
    """``t`` in seconds, or -1 when omitted (a named limiter that allows). Equals
    ``retry_after`` when this limit refuses."""
    retry_after: int
    """The wait in whole seconds, rounded up, when this limit refuses; 0 otherwise."""


@dataclass(frozen=True)
class Lease:
    """A concurrency lease a request's ``RATELIMIT.CHECK`` acquired, released when the
    request is done."""

    limiter: str
    """The concurrency limiter's name."""
    key: str
    """The request key the lease was acquired for."""
    lease_id: int
    """The id the check replied (exact: a Python int)."""


@dataclass(frozen=True)
class Decision:
    """The middleware's verdict on a request (also given to the application: the ASGI
    middleware puts it in ``request.state.ratelimit``, Django's in ``request.ratelimit``)."""

    allowed: bool
    retry_after: int
    """The Retry-After value: the longest wait among the refusing limits (whole seconds,
    rounded up); 0 when allowed, or when only too-large refusals remain (then no Retry-After
    is sent: waiting would not help)."""
    too_large: bool
    results: Tuple[Result, ...] = field(default_factory=tuple)
    leases: Tuple[Lease, ...] = field(default=(), repr=False, compare=False)
    """The concurrency leases the checks acquired (also on a refusal, when a named limiter
    admitted the request while another limit refused it). The middleware releases them when
    the request is done; the application need not."""

    def headers(self, legacy: bool = False) -> List[Tuple[str, str]]:
        """The response header fields for this decision (Retry-After only on a refusal)."""
        policy, state = [], []
        for r in self.results:
            name = _quote(r.policy)
            p = f"{name};q={r.quota}"
            if r.window > 0:
                p += f";w={r.window}"
            s = f"{name};r={r.remaining}"
            if r.reset >= 0:
                s += f";t={r.reset}"
            policy.append(p)
            state.append(s)
        out = [("RateLimit-Policy", ", ".join(policy)), ("RateLimit", ", ".join(state))]
        if legacy and self.results:
            pick = self.results[0]
            for r in self.results:
                if self.allowed:
                    if r.remaining < pick.remaining:
                        pick = r
                elif not r.allowed and (pick.allowed or r.retry_after > pick.retry_after):
                    pick = r
            out += [("X-RateLimit-Limit", str(pick.quota)), ("X-RateLimit-Remaining", str(pick.remaining))]
            if pick.reset >= 0:
                out.append(("X-RateLimit-Reset", str(pick.reset)))
        if not self.allowed and self.retry_after > 0:
            out.append(("Retry-After", str(self.retry_after)))
        return out

    @property
    def message(self) -> str:
        """The default refusal body: too large, or too many."""
        if self.retry_after == 0 and self.too_large:
            return "request exceeds the rate limit\n"
        return "rate limit exceeded\n"


def _quote(s: str) -> str:
    # A structured-field string (RFC 8941); names were checked to be printable ASCII.
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _printable(s: str) -> bool:
    return s != "" and all(0x20 <= ord(ch) <= 0x7E for ch in s)


def _ceil_sec(ms: int) -> int:
    return 0 if ms <= 0 else -(-ms // 1000)


def _ceil_div(limit: int, rate: float) -> int:
    """ceil(limit / rate) exactly: the rate is the server's shortest decimal for its double, so
    20 / 5 is exactly 4 and 10 / 2.5 exactly 4, where float division could round up."""
    r = Fraction(repr(rate))
    if r <= 0:
        return 0
    q = Fraction(limit) / r
    return -(-q.numerator // q.denominator)


def client_ip(peer: str, forwarded: Sequence[str], trusted: Sequence[Union[str, ipaddress.IPv4Network, ipaddress.IPv6Network]]) -> str:
    """The client address a request is limited under.

    With no trusted proxies: the peer address; ``X-Forwarded-For`` (``forwarded``, its
    header lines) is ignored, since any client can forge it. When the peer is one of the
    trusted networks (your load balancers), the right-most forwarded address that is not
    trusted: the address your own proxy saw, which a client cannot choose; the left-most if
    all are trusted. IPv4-mapped IPv6 addresses are written as IPv4, so one client does not get
    two budgets.
    """
    nets = [ipaddress.ip_network(t, strict=False) if isinstance(t, str) else t for t in trusted]

    def parse(a: str) -> Optional[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]:
        try:
            ip = ipaddress.ip_address(a.strip().strip("[]"))
        except ValueError:
            return None
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        return ip

    def is_trusted(ip: Union[ipaddress.IPv4Address, ipaddress.IPv6Address]) -> bool:
        return any(ip.version == n.version and ip in n for n in nets)

    p = parse(peer)
    if p is None:
        return peer
    if not nets or not is_trusted(p):
        return str(p)
    hops = [h.strip() for line in forwarded for h in line.split(",") if h.strip()]
    for i in range(len(hops) - 1, -1, -1):
        a = parse(hops[i])
        if a is None:
            # Written by a trusted proxy but not an address: use it as it is rather than skip
            # to entries a client could have forged.
            return hops[i]
        if not is_trusted(a) or i == 0:
            return str(a)
    return str(p)


@dataclass(frozen=True)
class Options(Generic[Req]):
    """Middleware settings. Only ``limits`` is required."""

    limits: Sequence[Limit[Req]]
    """Checked for every request; all must allow it. Policy names must be unique."""
    key: Optional[Callable[[Req], str]] = None
    """The request's identity for limits without their own key. Default: the client IP."""
    cost: Optional[Callable[[Req], int]] = None
    """Units a request uses (GCRA count, RATELIMIT COST); default 1. 0 or less exempts the
    request: it passes unchecked and gets no headers."""
    fail_open: bool = False
    """When the server cannot be asked (unreachable, timeouts, errors, unknown limiter):
    True lets requests through without headers; False (default) answers 503."""
    legacy_headers: bool = False
    """Adds X-RateLimit-Limit/-Remaining/-Reset with q, r and t of the deciding limit (the
    refusing one with the longest wait, else the one with the fewest units left)."""
    on_error: Optional[Callable[[Req, Exception], None]] = None
    """Observes every server error (logging, metrics), in both failure modes."""
    policy_ttl: float = 60.0
    """Seconds a named limiter's settings (for RateLimit-Policy's w) are cached."""


# A batch of commands for one pipeline: (limit index or -1, method name, args).
Batch = List[Tuple[int, str, Tuple[Any, ...]]]


@dataclass
class _Outcome:
    gcra: Optional[GCRAResult] = None
    rl: Optional[RateLimitResult] = None
    charged: bool = False


class Engine(Generic[Req]):
    """The decision logic, written once for the sync and the asyncio middleware: :meth:`flow`
    is a generator that yields batches of commands to run in one pipeline and receives their
    results (exceptions in place of failed commands when the batch tolerates errors)."""

    def __init__(self, options: Options[Req], default_key: Callable[[Req], str]) -> None:
        if not options.limits:
            raise ValueError("hotkv.middleware: no limits")
        seen = set()
        for lim in options.limits:
            if not _printable(lim.policy):
                raise ValueError(f"hotkv.middleware: policy name {lim.policy!r} must be non-empty printable ASCII")
            if lim.policy in seen:
                raise ValueError(f"hotkv.middleware: duplicate policy name {lim.policy!r}")
            seen.add(lim.policy)
            if lim.kind == "gcra" and (lim.period_ms < 1 or lim.burst < 1):
                raise ValueError(
                    f"hotkv.middleware: GCRA limit {lim.policy!r} needs a period of at least 1 ms and a burst of at least 1"
                )
        self.options = options
        self.key = options.key or default_key
        self._windows: Dict[str, Tuple[int, int, float]] = {}  # limiter -> (limit, w, read at)

    def cost(self, request: Req) -> int:
        return 1 if self.options.cost is None else int(self.options.cost(request))

    def keys(self, request: Req) -> List[str]:
        default: Optional[str] = None
        out = []
        for lim in self.options.limits:
            if lim.key is not None:
                out.append(lim.key(request))
                continue
            if default is None:
                default = self.key(request)
            out.append(default)
        return out

    def _batch(self, keys: List[str], cost: int, which: Callable[[int], bool], charge: bool) -> Batch:
        batch: Batch = []
        for i, lim in enumerate(self.options.limits):
            if not which(i):
                continue
            if lim.kind == "gcra":
                method = "gcra_limit" if charge else "gcra_peek"
                batch.append((i, method, (lim.prefix + keys[i], lim.period_ms, lim.burst, cost)))
            elif charge:
                batch.append((i, "ratelimit_check", (lim.limiter_name, keys[i], cost)))
            else:
                batch.append((i, "ratelimit_peek", (lim.limiter_name, keys[i])))
        return batch

    def _store(self, batch: Batch, results: List[Any], out: List[_Outcome], charge: bool) -> None:
        # Every successful reply is stored before the first error is raised, so that the
        # caller can give back the concurrency leases of the checks that did succeed.
        first: Optional[Exception] = None
        for (i, _, _), res in zip(batch, results):
            lim = self.options.limits[i]
            if isinstance(res, Exception):
                first = first or res
            elif isinstance(res, GCRAResult):
                out[i] = _Outcome(gcra=res, charged=charge)
            else:
                assert isinstance(res, RateLimitResult)
                if res.unknown_limiter:
                    first = first or UnknownLimiterError(
                        f"hotkv.middleware: limiter {lim.limiter_name!r} does not exist")
                    continue
                out[i] = _Outcome(rl=res, charged=charge)
        if first is not None:
            raise first

    def _charge(
        self, batch: Batch, keys: List[str], out: List[_Outcome]
    ) -> Generator[Tuple[Batch, bool], List[Any], None]:
        """Runs a batch of charging commands; when one fails, the leases the others acquired
        are released before the error propagates."""
        results = yield batch, True
        try:
            self._store(batch, results, out, charge=True)
        except Exception:
            leases = self._leases(keys, out)
            if leases:
                yield self.release_batch(leases), True
            raise

    def _leases(self, keys: List[str], out: List[_Outcome]) -> Tuple[Lease, ...]:
        return tuple(
            Lease(lim.limiter_name, keys[i], o.rl.lease_id)
            for i, (lim, o) in enumerate(zip(self.options.limits, out))
            if o.charged and o.rl is not None and o.rl.lease_id != 0
        )

    @staticmethod
    def release_batch(leases: Sequence[Lease]) -> Batch:
        """The RATELIMIT.RELEASE commands giving back leases, for one pipeline."""
        return [(-1, "ratelimit_release", (l.limiter, l.key, l.lease_id)) for l in leases]

    def _refuses(self, lim: Limit[Req], o: _Outcome, cost: int) -> bool:
        if lim.kind == "gcra":
            assert o.gcra is not None
            return o.gcra.denied
        assert o.rl is not None
        if o.charged:
            return not o.rl.allowed
        # A RATELIMIT.PEEK answers for cost 1; its remaining (limit - current) decides any
        # cost exactly, because a check passes precisely when cost <= limit - current.
        return cost > o.rl.remaining

    def flow(self, request: Req, cost: int) -> Generator[Tuple[Batch, bool], List[Any], Decision]:
        """Yields (batch, tolerate_errors) and receives the batch's results; returns the
        decision. Server errors propagate as exceptions (fail open or closed is the
        caller's)."""
        limits = self.options.limits
        keys = self.keys(request)
        out = [_Outcome() for _ in limits]
        if len(limits) > 1:
            batch = self._batch(keys, cost, lambda i: True, charge=False)
            self._store(batch, (yield batch, False), out, charge=False)
            if any(self._refuses(limits[i], out[i], cost) for i in range(len(limits))):
                # Ask refusing named limiters with CHECK: the exact wait for this cost, and
                # the refusal in their total_denied. (If units were freed meanwhile the CHECK
                # counts the request there: the race the module documentation describes.)
                batch = self._batch(
                    keys, cost,
                    lambda i: limits[i].kind == "limiter" and self._refuses(limits[i], out[i], cost),
                    charge=True,
                )
                if batch:
                    yield from self._charge(batch, keys, out)
                if any(self._refuses(limits[i], out[i], cost) for i in range(len(limits))):
                    return (yield from self._decision(out, cost, self._leases(keys, out)))
        batch = self._batch(keys, cost, lambda i: not out[i].charged, charge=True)
        if batch:
            yield from self._charge(batch, keys, out)
        return (yield from self._decision(out, cost, self._leases(keys, out)))

    def _decision(
        self, out: List[_Outcome], cost: int, leases: Tuple[Lease, ...]
    ) -> Generator[Tuple[Batch, bool], List[Any], Decision]:
        limits = self.options.limits
        # RateLimit-Policy's w of named limiters: cached, refreshed with RATELIMIT.STATS when
        # stale or when a reply shows another limit. A failed read is cached too (w omitted),
        # so a server refusing STATS costs one round trip per policy_ttl, not one per request.
        now = time.monotonic()
        stale: Batch = []
        for i, lim in enumerate(limits):
            rl = out[i].rl
            if lim.kind == "limiter" and rl is not None:
                cached = self._windows.get(lim.limiter_name)
                if cached is None or cached[0] != rl.limit or now - cached[2] >= self.options.policy_ttl:
                    if lim.limiter_name not in [s[2][0] for s in stale]:
                        stale.append((i, "ratelimit_stats", (lim.limiter_name,)))
        if stale:
            results = yield stale, True
            for (i, _, (name,)), st in zip(stale, results):
                w = 0
                if isinstance(st, RateLimitStats):
                    rate = st.rate
                    w = max(1, _ceil_div(st.limit, rate) if rate else _ceil_sec(st.window_ms))
                rl = out[i].rl
                assert rl is not None
                self._windows[name] = (rl.limit, w, now)

        results = []
        allowed, too_large, retry = True, False, 0
        for i, lim in enumerate(limits):
            o = out[i]
            ok = not self._refuses(lim, o, cost)
            big, wait = False, 0
            if lim.kind == "gcra":
                g = o.gcra
                assert g is not None
                quota, window, remaining = lim.burst, max(1, _ceil_sec(lim.period_ms)), g.remaining
                if ok and not o.charged:
                    remaining += cost  # a GCRA.PEEK reports the state as if counted; it was not
                reset = _ceil_sec(g.reset_after_ms)
                if g.denied:
                    if g.too_large:
                        big = True
                    else:
                        wait = _ceil_sec(g.retry_after_ms)
                        reset = wait
            else:
                rl = o.rl
                assert rl is not None
                quota, remaining, reset = rl.limit, rl.remaining, -1
                window = self._windows.get(lim.limiter_name, (0, 0, 0.0))[1]
                if not ok:
                    if cost > rl.limit:
                        big = True
                    else:
                        # Refusals of named limiters always come from a CHECK (a refusing peek
                        # is rechecked), so this is the exact wait for the cost.
                        wait = max(1, _ceil_sec(rl.retry_after_ms))
                        reset = wait
            if not ok:
                allowed = False
                too_large = too_large or big
                retry = max(retry, wait)
            results.append(Result(lim.policy, ok, big, quota, window, remaining, reset, wait))
        return Decision(allowed, 0 if allowed else retry, too_large, tuple(results), leases)

    # Drivers: run the flow's batches in pipelines.

    def decide_sync(self, client: Any, request: Req, cost: int) -> Decision:
        gen = self.flow(request, cost)
        try:
            batch, tolerate = next(gen)
            while True:
                batch, tolerate = gen.send(_run_sync(client, batch, tolerate))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def decide_async(self, client: Any, request: Req, cost: int) -> Decision:
        gen = self.flow(request, cost)
        try:
            batch, tolerate = next(gen)
            while True:
                batch, tolerate = gen.send(await _run_async(client, batch, tolerate))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


    def release_sync(self, client: Any, request: Req, leases: Sequence[Lease]) -> None:
        """Releases a request's leases in one pipeline; errors go to ``on_error``, never to
        the request (the response is already decided)."""
        if leases:
            try:
                results: List[Any] = _run_sync(client, self.release_batch(leases), True)
            except Exception as exc:  # the server unreachable: the leases expire by themselves
                results = [exc] * len(leases)
            self._release_errors(request, leases, results)

    async def release_async(self, client: Any, request: Req, leases: Sequence[Lease]) -> None:
        """:meth:`release_sync` for the asyncio clients."""
        if leases:
            try:
                results: List[Any] = await _run_async(client, self.release_batch(leases), True)
            except Exception as exc:
                results = [exc] * len(leases)
            self._release_errors(request, leases, results)

    def _release_errors(self, request: Req, leases: Sequence[Lease], results: List[Any]) -> None:
        if self.options.on_error is None:
            return
        for lease, res in zip(leases, results):
            if isinstance(res, Exception):
                self.options.on_error(request, res)


def _run_sync(client: Any, batch: Batch, tolerate: bool) -> List[Any]:
    with client.pipeline(transaction=False) as pipe:
        for _, method, args in batch:
            getattr(pipe, method)(*args)
        return list(pipe.execute(raise_on_error=not tolerate))


async def _run_async(client: Any, batch: Batch, tolerate: bool) -> List[Any]:
    async with client.pipeline(transaction=False) as pipe:
        for _, method, args in batch:
            getattr(pipe, method)(*args)
        return list(await pipe.execute(raise_on_error=not tolerate))
