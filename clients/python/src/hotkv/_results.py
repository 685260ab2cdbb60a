"""Typed results of HotKV's rate-limiting commands and the reply parsers that build them.

The parsers are redis-py response callbacks: redis-py calls them with the raw reply of a
command, directly or when a pipeline or transaction executes, so a typed result comes back in
every execution mode. Replies are parsed in both RESP2 and RESP3 (``protocol=3``), with or
without ``decode_responses``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "GCRAResult",
    "GCRALimitSpec",
    "GCRALimitAllResult",
    "ThrottleResult",
    "RateLimitResult",
    "RateLimitStats",
    "ReplyError",
]


class ReplyError(ValueError):
    """A reply the client cannot parse into its typed result.

    Server errors are never wrapped in it: they surface as :class:`redis.ResponseError` with
    the server's exact text. This one means the server answered something the specification
    does not allow (for example a server without the command family behind a proxy).
    """


def _ms(ms: int, passed: bool) -> timedelta:
    # The wire's -1 means "no wait" for a passed request and "never" for a refused one; the
    # helpers give 0 for the first and a negative duration for the second, as the Go client.
    if ms < 0:
        return timedelta(0) if passed else timedelta(milliseconds=-1)
    return timedelta(milliseconds=ms)


@dataclass(frozen=True)
class GCRAResult:
    """The reply of GCRA.LIMIT and GCRA.PEEK: ``[denied, limit, remaining, retry_after_ms,
    reset_after_ms]``."""

    denied: bool
    """True when the request is refused. A refused request changed nothing."""
    limit: int
    """The burst the call was made with."""
    remaining: int
    """Units still available after this request (0 when denied)."""
    retry_after_ms: int
    """-1 when allowed; when denied, the ms until this same request would be allowed if
    nothing else happens (at least 1, rounded up), or -1 when count > burst (never)."""
    reset_after_ms: int
    """ms until a full burst is available again; equals the key's PTTL right after an allowed
    GCRA.LIMIT."""

    @property
    def allowed(self) -> bool:
        """``not denied``, for readability at call sites."""
        return not self.denied

    @property
    def too_large(self) -> bool:
        """A request that can never pass (count > burst): answer "too large", not "wait"."""
        return self.denied and self.retry_after_ms < 0

    @property
    def retry_after(self) -> timedelta:
        """0 when allowed, the wait when denied, negative (-1 ms) when it can never pass."""
        return _ms(self.retry_after_ms, not self.denied)

    @property
    def reset_after(self) -> timedelta:
        """The time until a full burst is available again."""
        return timedelta(milliseconds=self.reset_after_ms)


@dataclass(frozen=True)
class GCRALimitSpec:
    """One limit of :meth:`~hotkv.HotKVCommands.gcra_limit_all`: a key with its own period and
    burst, as GCRA.LIMIT takes them. A plain ``(key, period_ms, burst)`` tuple works too."""

    key: Any
    """The GCRA state key (str or bytes)."""
    period_ms: int
    """The limit's period in milliseconds."""
    burst: int
    """The units allowed per period."""


@dataclass(frozen=True)
class GCRALimitAllResult:
    """The reply of GCRA.LIMITALL: ``[denied, retry_after_ms, <GCRA.LIMIT reply of each
    limit>...]``."""

    denied: bool
    """True when at least one limit refused the request; then nothing was recorded anywhere."""
    retry_after_ms: int
    """-1 when admitted; when denied, the largest wait among the denying limits, or -1 when
    one of them can never allow the count (count > its burst)."""
    limits: Tuple[GCRAResult, ...]
    """Each limit's GCRA.LIMIT reply, in the order the limits were given. When the request
    was denied they say what each limit would have answered; none was recorded."""

    @property
    def allowed(self) -> bool:
        """``not denied``, for readability at call sites."""
        return not self.denied

    @property
    def too_large(self) -> bool:
        """A request that can never be admitted: its count exceeds a limit's burst."""
        return self.denied and self.retry_after_ms < 0

    @property
    def retry_after(self) -> timedelta:
        """0 when admitted, the wait when denied, negative (-1 ms) when it can never pass."""
        return _ms(self.retry_after_ms, not self.denied)


@dataclass(frozen=True)
class ThrottleResult:
    """The reply of CL.THROTTLE: ``[limited, limit, remaining, retry_after_s, reset_after_s]``,
    times in whole seconds rounded as the server's ``throttle-compat`` setting says."""

    limited: bool
    """True when the request is refused (nothing was written)."""
    limit: int
    """max_burst + 1."""
    remaining: int
    """Units available after this request; a refusal reports the true remaining, as
    redis-cell does (unlike GCRA.LIMIT)."""
    retry_after_s: int
    """-1 when allowed, or when quantity exceeds the limit (never); else the seconds to wait.
    In the default redis-cell mode a wait under 1 ms reads 0."""
    reset_after_s: int
    """Seconds until the limit is fully restored."""

    @property
    def allowed(self) -> bool:
        """``not limited``."""
        return not self.limited

    @property
    def too_large(self) -> bool:
        """A quantity above the limit, which can never pass."""
        return self.limited and self.retry_after_s < 0

    @property
    def retry_after(self) -> timedelta:
        """0 when allowed, the wait when refused, negative (-1 s) when it can never pass."""
        if self.retry_after_s < 0:
            return timedelta(seconds=-1) if self.limited else timedelta(0)
        return timedelta(seconds=self.retry_after_s)

    @property
    def reset_after(self) -> timedelta:
        """The time until the limit is fully restored."""
        return timedelta(seconds=self.reset_after_s)


@dataclass(frozen=True)
class RateLimitResult:
    """The reply of RATELIMIT.CHECK and RATELIMIT.PEEK: ``[allowed, remaining,
    retry_after_ms, limit, current]``, and a sixth field, ``lease_id``, for a CHECK on a
    ``concurrency`` limiter. Note the polarity: GCRA's first field is ``denied``."""

    allowed: bool
    """True when the request passes (CHECK counted it)."""
    remaining: int
    """limit - current - cost when allowed (PEEK: limit - current), max(0, limit - current)
    when denied."""
    retry_after_ms: int
    """0 when allowed; when denied, ms until a request of this cost would pass (>= 1), or -1
    when cost > limit (never)."""
    limit: int
    """The limiter's limit; 0 means the limiter does not exist (:attr:`unknown_limiter`)."""
    current: int
    """Units in use before this request."""
    lease_id: int = 0
    """The lease an allowed CHECK on a ``concurrency`` limiter acquired, to give back with
    :meth:`~hotkv.HotKVCommands.ratelimit_release` when the work is done; 0 when none was
    (denied, PEEK, or another algorithm, whose replies have five fields). An opaque 64-bit
    id (about 1.7e18); Python's int keeps it exact."""

    @property
    def unknown_limiter(self) -> bool:
        """The all-zero reply for a limiter that does not exist: not an error on the wire,
        but a configuration problem (``allowed`` is False)."""
        return self.limit == 0

    @property
    def too_large(self) -> bool:
        """A cost above the limit, which can never pass."""
        return not self.allowed and self.retry_after_ms < 0

    @property
    def retry_after(self) -> timedelta:
        """0 when allowed, the wait when denied, negative (-1 ms) when it can never pass."""
        return _ms(self.retry_after_ms, self.allowed)


@dataclass(frozen=True)
class RateLimitStats:
    """The reply of RATELIMIT.STATS (a flat array in RESP2, a map in RESP3)."""

    name: str
    """The limiter's name."""
    algo: str
    """``sliding_window``, ``token_bucket``, ``leaky_bucket`` or ``concurrency``."""
    limit: int
    """The limiter's limit."""
    window_ms: int
    """The window; for the bucket algorithms it only sets the default rate."""
    unique_keys: int
    """Keys with live state now; drops as state expires."""
    total_allowed: int
    """Units allowed since creation (saturating at 2**63-1)."""
    total_denied: int
    """Units denied since creation, including requests larger than the limit."""
    refill_per_sec: Optional[float] = None
    """The token_bucket rate; None for other algorithms."""
    drain_per_sec: Optional[float] = None
    """The leaky_bucket rate; None for other algorithms."""
    shadow: bool = False
    """Shadow mode: every check is allowed, decisions are still recorded and counted."""
    total_shadow_denied: int = 0
    """Units denied in shadow mode and let through anyway (they are in ``total_denied``
    too); kept when shadow mode is switched off. Servers without shadow mode send neither
    field: False and 0."""

    @property
    def rate(self) -> Optional[float]:
        """The bucket rate in units per second (refill or drain), None for a sliding window."""
        return self.refill_per_sec if self.refill_per_sec is not None else self.drain_per_sec

    @property
    def window(self) -> timedelta:
        """``window_ms`` as a timedelta."""
        return timedelta(milliseconds=self.window_ms)


def _text(v: Any) -> str:
    # Names are binary safe on the wire; surrogateescape keeps undecodable bytes round-trippable
    # (encode with "utf-8", "surrogateescape") instead of failing the whole reply.
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    if isinstance(v, str):
        return v
    raise ReplyError(f"hotkv: expected a string, got {v!r}")


def _ints(command: str, response: Any, sizes: Tuple[int, ...] = (5,)) -> List[int]:
    want = " or ".join(str(n) for n in sizes)
    if not isinstance(response, (list, tuple)) or len(response) not in sizes:
        raise ReplyError(f"hotkv: {command}: expected an array of {want} integers, got {response!r}")
    out = []
    for v in response:
        # bool is an int subclass; a real reply never holds one, so it is a parse error.
        if not isinstance(v, int) or isinstance(v, bool):
            raise ReplyError(
                f"hotkv: {command}: expected an array of {want} integers, got {response!r}"
            )
        out.append(v)
    return out


def _five(command: str, response: Any) -> Tuple[int, int, int, int, int]:
    out = _ints(command, response)
    return out[0], out[1], out[2], out[3], out[4]


def parse_gcra(response: Any, **options: Any) -> GCRAResult:
    """Response callback for GCRA.LIMIT and GCRA.PEEK."""
    d, lim, rem, retry, reset = _five("GCRA", response)
    return GCRAResult(d != 0, lim, rem, retry, reset)


def parse_gcra_all(response: Any, **options: Any) -> GCRALimitAllResult:
    """Response callback for GCRA.LIMITALL."""
    bad = ReplyError(
        f"hotkv: GCRA.LIMITALL: expected [denied, retry, 5-integer arrays...], got {response!r}"
    )
    if not isinstance(response, (list, tuple)) or len(response) < 3:
        raise bad
    denied, retry = response[0], response[1]
    for v in (denied, retry):
        if not isinstance(v, int) or isinstance(v, bool):
            raise bad
    limits = tuple(parse_gcra(r) for r in response[2:])
    return GCRALimitAllResult(denied != 0, retry, limits)


def parse_throttle(response: Any, **options: Any) -> ThrottleResult:
    """Response callback for CL.THROTTLE."""
    d, lim, rem, retry, reset = _five("CL.THROTTLE", response)
    return ThrottleResult(d != 0, lim, rem, retry, reset)


def parse_ratelimit(response: Any, **options: Any) -> RateLimitResult:
    """Response callback for RATELIMIT.CHECK and RATELIMIT.PEEK: five integers, or six from
    a concurrency limiter's CHECK (the lease id)."""
    n = _ints("RATELIMIT", response, (5, 6))
    return RateLimitResult(n[0] != 0, n[1], n[2], n[3], n[4], n[5] if len(n) == 6 else 0)


def parse_int(response: Any, **options: Any) -> int:
    """Response callback for the integer replies (GCRA.RESET, RATELIMIT.RESET)."""
    if not isinstance(response, int) or isinstance(response, bool):
        raise ReplyError(f"hotkv: expected an integer, got {response!r}")
    return response


def parse_bool(response: Any, **options: Any) -> bool:
    """Response callback for the 1/0 replies (RATELIMIT.RELEASE)."""
    return parse_int(response) != 0


def parse_ok(response: Any, **options: Any) -> bool:
    """Response callback for ``OK`` replies: True, like redis-py's own status commands."""
    if _text(response) != "OK":
        raise ReplyError(f"hotkv: expected OK, got {response!r}")
    return True


def parse_names(response: Any, **options: Any) -> List[str]:
    """Response callback for RATELIMIT.LIST."""
    if not isinstance(response, (list, tuple)):
        raise ReplyError(f"hotkv: RATELIMIT.LIST: expected an array, got {response!r}")
    return [_text(v) for v in response]


def _as_int(v: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise ReplyError(f"not an integer: {v!r}")


def _as_float(v: Any) -> float:
    # RESP3 sends the rate as a double; RESP2 as a bulk string holding the shortest decimal
    # that reads back as that double, so float() recovers the same value in both.
    if isinstance(v, float):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return float(_text(v))


def parse_stats(response: Any, **options: Any) -> RateLimitStats:
    """Response callback for RATELIMIT.STATS. Fields the client does not know are ignored, so
    a newer server can add some."""
    pairs: List[Tuple[Any, Any]]
    if isinstance(response, dict):
        pairs = list(response.items())
    elif isinstance(response, (list, tuple)) and len(response) % 2 == 0:
        pairs = [(response[i], response[i + 1]) for i in range(0, len(response), 2)]
    else:
        raise ReplyError(f"hotkv: RATELIMIT.STATS: unexpected reply {response!r}")
    fields: Dict[str, Any] = {}
    try:
        for k, v in pairs:
            name = _text(k)
            if name in ("name", "algo"):
                fields[name] = _text(v)
            elif name in ("limit", "window_ms", "unique_keys", "total_allowed", "total_denied",
                          "total_shadow_denied"):
                fields[name] = _as_int(v)
            elif name == "shadow":
                fields[name] = _as_int(v) != 0
            elif name in ("refill_per_sec", "drain_per_sec"):
                fields[name] = _as_float(v)
        return RateLimitStats(**fields)
    except (TypeError, ValueError) as exc:  # a missing field or a value of the wrong kind
        raise ReplyError(f"hotkv: RATELIMIT.STATS: unexpected reply {response!r}") from exc
