"""redis-py's RedisCluster against a SHARDED HotKV cluster: 3 shards x 3 nodes, each shard a
Raft group, the slot map in the meta Raft group (docs/cluster.md, scripts/cluster-demo.sh).

One cluster serves the module (startup ~10 s). test_sharded_workload drives the client's
cluster API over all three shards (SET/GET, hash-tagged MSET/MGET, CROSSSLOT, GCRA.LIMIT
bursts); test_sharded_failover SIGKILLs one shard's Raft leader while the workload runs and
checks the client keeps working within a bound and that no GCRA admission is granted twice;
test_sharded_slot_moves_under_load moves slots 0-3000 from s1 to s2 and back (CLUSTERX
MIGRATE) under a SET/GET/GCRA.LIMIT workload on keys in that range.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest
import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

import hotkv.cluster
from conftest import _binary  # the server binary the other tests use
from helpers import as_str, wait_for

SHARDS = 3
NODES = 3
# Slots spread evenly, as cluster-demo.sh assigns them: shard s owns SLOT_RANGES[s-1].
SLOT_RANGES = [((s - 1) * 16384 // SHARDS, s * 16384 // SHARDS - 1) for s in range(1, SHARDS + 1)]
# How long the client may take to get through a leader's SIGKILL (election ~1 s, slot map
# update ~1 s; the rest is room for a loaded 2-core machine).
FAILOVER_BOUND = 20.0
HOUR_MS = 3_600_000


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_base() -> int:
    """A BASE in 20000-40000 whose client (BASE+i), Raft (BASE+100+i) and meta (BASE+10100+i)
    ports are all free; random so that concurrent runs rarely collide."""
    import random

    total = SHARDS * NODES
    for _ in range(200):
        base = random.randrange(20000, 40000, 10)
        ports = [base + off + i for off in (0, 100, 10100) for i in range(1, total + 1)]
        if all(_port_free(p) for p in ports):
            return base
    raise RuntimeError("no free port range for the cluster")


class Node:
    """One hotkv-server of the cluster: n<i> of shard s<(i-1)/NODES+1>, ports as the demo."""

    def __init__(self, base: int, i: int, root: str) -> None:
        self.i = i
        self.id = f"n{i}"
        self.shard = (i - 1) // NODES + 1
        self.port = base + i
        self.raft_port = base + 100 + i
        self.dir = os.path.join(root, self.id)
        os.makedirs(self.dir)
        args = [_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
                "--raft-port", str(self.raft_port), "--raft-node-id", self.id,
                "--cluster-enabled", "yes", "--cluster-shard-id", f"s{self.shard}"]
        if (i - 1) % NODES == 0:
            args += ["--raft-bootstrap", "yes"]
        if i == 1:
            args += ["--cluster-meta-bootstrap", "yes"]
        self.log_file = open(os.path.join(self.dir, "hotkv.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log_file, stderr=subprocess.STDOUT)

    def client(self) -> "redis.Redis[bytes]":
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=1)

    def cmd(self, *args: Any) -> Any:
        with self.client() as c:
            return c.execute_command(*args)

    def answers(self, args: Tuple[Any, ...], want: str) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.id} exited: {self.log()}")
        try:
            reply = self.cmd(*args)
        except redis.RedisError:
            return False
        if isinstance(reply, list):
            return want in [as_str(x) for x in reply]
        return want in as_str(reply).replace("\r", "").split("\n")

    def up(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.id} exited: {self.log()}")
        try:
            self.cmd("PING")
        except redis.RedisError:
            return False
        return True

    def role(self) -> str:
        try:
            v = self.cmd("RAFT", "STATUS")
        except redis.RedisError:
            return ""
        st = {as_str(v[k]): as_str(v[k + 1]) for k in range(0, len(v) - 1, 2)}
        return st.get("role", "")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def log(self) -> str:
        try:
            return Path(self.dir, "hotkv.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""


class Cluster:
    """SHARDS x NODES nodes formed like scripts/cluster-demo.sh does it."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="hotkv-py-sharded-")
        self.base = _free_base()
        self.nodes: List[Node] = []
        for i in range(1, SHARDS * NODES + 1):
            self.nodes.append(Node(self.base, i, self.root))
        # Every node must accept connections before the others send it RAFT ADD or it sends
        # CLUSTERX JOIN: on a busy machine a process takes a while to listen.
        for n in self.nodes:
            wait_for(f"{n.id} to accept connections", 30, n.up)
        firsts = [self.nodes[(s - 1) * NODES] for s in range(1, SHARDS + 1)]
        for first in firsts:
            wait_for(f"{first.id} to lead its shard", 30, lambda: first.answers(("RAFT", "STATUS"), "leader"))
            for n in self.nodes[first.i:first.i + NODES - 1]:
                first.cmd("RAFT", "ADD", n.id, f"127.0.0.1:{n.raft_port}")
        n1 = self.nodes[0]
        wait_for("n1 to lead the meta group", 30, lambda: n1.answers(("CLUSTERX", "STATUS"), "leader"))
        # The first node of each shard joins before the second ones (the meta group's voters).
        for k in range(NODES):
            for s in range(SHARDS):
                n = self.nodes[s * NODES + k]
                if n is not n1:
                    n.cmd("CLUSTERX", "JOIN", "127.0.0.1", str(n1.port))
        for s, (lo, hi) in enumerate(SLOT_RANGES, start=1):
            n1.cmd("CLUSTERX", "ASSIGN", f"s{s}", str(lo), str(hi))
        for n in self.nodes:
            wait_for(f"{n.id} to report cluster_state:ok", 30, lambda: n.answers(("CLUSTER", "INFO"), "cluster_state:ok"))

    def leader_of(self, shard: int) -> Node:
        found: List[Node] = []

        def check() -> bool:
            found[:] = [n for n in self.nodes if n.shard == shard and n.proc.poll() is None and n.role() == "leader"]
            return len(found) == 1

        wait_for(f"one leader in shard s{shard}", 30, check)
        return found[0]

    def close(self, failed: bool) -> None:
        for n in self.nodes:
            if failed:
                print(f"---- log of {n.id} (shard s{n.shard}, port {n.port}) ----\n{n.log()}")
            n.kill()
            n.log_file.close()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c: Optional[Cluster] = None
    failed = True
    try:
        c = Cluster()
        yield c
        failed = False
    finally:
        if c is not None:
            c.close(failed)


def _client(c: Cluster) -> RedisCluster:
    # Fast topology refresh: reinitialize_steps=1 reloads CLUSTER SLOTS on every -MOVED (the
    # default 5 patches only the one slot and waits for five redirects), so after a failover
    # the whole shard's slots point at the new leader at once. retry=Retry(...) replaces the
    # deprecated cluster_error_retry_attempts: redis-py reloads the topology and retries the
    # command on ConnectionError/TimeoutError/ClusterDownError/SlotNotCoveredError (it retries
    # -TRYAGAIN itself, up to 16 times with 50 ms pauses); 10 retries cover an election.
    # Short socket timeouts so that a killed node is given up on quickly.
    return RedisCluster(
        startup_nodes=[ClusterNode("127.0.0.1", n.port) for n in c.nodes],
        reinitialize_steps=1,
        retry=Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries=10),
        socket_timeout=2,
        socket_connect_timeout=1,
    )


def _shard_of_slot(slot: int) -> int:
    return next(s for s, (lo, hi) in enumerate(SLOT_RANGES, start=1) if lo <= slot <= hi)


def _keys_per_shard(rc: RedisCluster, prefix: str, per_shard: int) -> Dict[int, List[str]]:
    out: Dict[int, List[str]] = {s: [] for s in range(1, SHARDS + 1)}
    i = 0
    while any(len(v) < per_shard for v in out.values()):
        k = f"{prefix}:{i}"
        s = _shard_of_slot(rc.keyslot(k))
        if len(out[s]) < per_shard:
            out[s].append(k)
        i += 1
    return out


def test_sharded_workload(cluster: Cluster) -> None:
    rc = _client(cluster)
    try:
        # The client loaded three primaries, each with the slot range its shard was given.
        # (On a loaded machine CLUSTER SLOTS may still lack a follower just after every node
        # said cluster_state:ok: reload it until all six are there.)
        def all_replicas() -> bool:
            if len(rc.get_replicas()) == SHARDS * (NODES - 1):
                return True
            rc.nodes_manager.initialize()
            return False

        wait_for("CLUSTER SLOTS to list every follower", 10, all_replicas)
        primaries = rc.get_primaries()
        assert len(primaries) == SHARDS and len(rc.get_replicas()) == SHARDS * (NODES - 1)
        ports = {n.port: n for n in cluster.nodes}
        for p in primaries:
            shard = ports[p.port].shard
            lo, hi = SLOT_RANGES[shard - 1]
            assert rc.nodes_manager.slots_cache[lo][0].name == p.name
            assert rc.nodes_manager.slots_cache[hi][0].name == p.name

        # SET/GET on many keys, spread over every shard.
        keys = [f"key:{i}" for i in range(600)]
        per_shard = {s: 0 for s in range(1, SHARDS + 1)}
        for k in keys:
            per_shard[_shard_of_slot(rc.keyslot(k))] += 1
            assert rc.set(k, f"v-{k}") is True
        assert all(n > 150 for n in per_shard.values()), per_shard
        for k in keys:
            assert rc.get(k) == f"v-{k}".encode()

        # Multi-key commands within one hash tag run on the tag's shard.
        assert rc.mset({"{user:1}:a": "1", "{user:1}:b": "2"}) is True
        assert rc.mget("{user:1}:a", "{user:1}:b", "{user:1}:none") == [b"1", b"2", None]
        assert rc.delete("{user:1}:a", "{user:1}:b") == 2

        # Across slots redis-py refuses before sending anything...
        a, b = "key:0", next(k for k in keys if _shard_of_slot(rc.keyslot(k)) != _shard_of_slot(rc.keyslot("key:0")))
        with pytest.raises(redis.exceptions.RedisClusterException, match="MSET - all keys must map to the same key slot"):
            rc.mset({a: "x", b: "y"})
        with pytest.raises(redis.exceptions.RedisClusterException, match="MGET - all keys must map to the same key slot"):
            rc.mget(a, b)
        # ...and the server refuses it too, when sent straight to the owner of the first key.
        owner = rc.get_node_from_key(a)
        with pytest.raises(redis.exceptions.ClusterCrossSlotError, match="Keys in request don't hash to the same slot"):
            owner.redis_connection.execute_command("MSET", a, "x", b, "y")
        assert rc.get(a) == f"v-{a}".encode() and rc.get(b) == f"v-{b}".encode()

        # GCRA.LIMIT with a burst on keys in all three shards: exactly `burst` admissions.
        burst = 7
        for shard, gkeys in _keys_per_shard(rc, "gcra:w", 3).items():
            for k in gkeys:
                replies = [rc.execute_command("GCRA.LIMIT", k, HOUR_MS, burst) for _ in range(burst + 5)]
                # [denied, limit, remaining, retry_after_ms, reset_after_ms]
                assert [r[0] for r in replies] == [0] * burst + [1] * 5, (shard, k, replies)
                assert [r[2] for r in replies[:burst]] == list(range(burst - 1, -1, -1))
                assert all(r[1] == burst and r[3] > 0 for r in replies[burst:])
                # The key lives on its shard's leader: a plain client there sees it.
                with ports[rc.get_node_from_key(k).port].client() as direct:
                    assert direct.exists(k) == 1

        # GCRA.LIMITALL through HotKVCluster, routed by its keys: two limits under one hash tag
        # in each shard, all or nothing (the tighter limit of 2 stops the third request, which
        # records nothing), and GCRA.REFUND giving a unit back on the same shard.
        hk = hotkv.cluster.HotKVCluster(
            startup_nodes=[ClusterNode("127.0.0.1", n.port) for n in cluster.nodes], socket_timeout=2
        )
        try:
            for shard, tkeys in _keys_per_shard(rc, "lall", 1).items():
                tag = "{" + tkeys[0] + "}"
                wide, tight = (tag + ":h", HOUR_MS, 10), (tag + ":m", 60000, 2)
                assert hk.gcra_limit_all([wide, tight]).allowed
                second = hk.gcra_limit_all([wide, tight])
                assert second.allowed and second.limits[0].remaining == 8
                third = hk.gcra_limit_all([wide, tight])
                assert third.denied and third.retry_after_ms > 0, (shard, third)
                assert third.limits[0].remaining == 7  # what the wide limit would have left
                assert hk.gcra_refund(tight[0], 60000, 2).remaining == 1
                assert hk.gcra_limit_all([wide, tight]).allowed
                with ports[rc.get_node_from_key(tag).port].client() as direct:
                    assert direct.exists(wide[0], tight[0]) == 2
            with pytest.raises(redis.exceptions.RedisClusterException, match="all keys must map to the same key slot"):
                hk.gcra_limit_all([(a, 1000, 1), (b, 1000, 1)])
        finally:
            hk.close()
    finally:
        rc.close()


RETRYABLE = (redis.RedisError, redis.exceptions.RedisClusterException, OSError)


def _bounded(what: str, fn: Callable[[], Any], errors: List[str]) -> Any:
    """fn() retried (beyond the client's own retries) until FAILOVER_BOUND; each error is kept."""
    start = time.monotonic()
    while True:
        try:
            return fn()
        except RETRYABLE as exc:
            errors.append(f"{what}: {exc!r}")
            if time.monotonic() - start > FAILOVER_BOUND:
                raise AssertionError(f"{what}: the client did not recover within {FAILOVER_BOUND}s: {exc!r}")
            time.sleep(0.05)


def test_sharded_failover(cluster: Cluster) -> None:
    rc = _client(cluster)
    burst = 40
    victim_shard = 2
    try:
        gkeys = _keys_per_shard(rc, "gcra:f", 3)
        skeys = _keys_per_shard(rc, "kv:f", 1)
        allowed: Dict[str, int] = {k: 0 for ks in gkeys.values() for k in ks}
        unknown: Dict[str, int] = {k: 0 for k in allowed}  # calls whose reply was lost
        errors: List[str] = []
        killed: List[Node] = []
        killed_at: List[float] = []

        def kill_leader() -> None:
            # The leader now (a loaded machine can move leadership before the kill).
            victim = cluster.leader_of(victim_shard)
            victim.kill()  # returns once the process is gone
            killed.append(victim)
            killed_at.append(time.monotonic())

        timer = threading.Timer(1.0, kill_leader)
        timer.start()

        def gcra(k: str) -> None:
            try:
                r = rc.execute_command("GCRA.LIMIT", k, HOUR_MS, burst)
            except RETRYABLE as exc:
                # The kill may have eaten the reply: admitted or not, it is not counted.
                unknown[k] += 1
                errors.append(f"GCRA.LIMIT {k}: {exc!r}")
                return
            assert r[1] == burst
            if r[0] == 0:
                allowed[k] += 1
            assert allowed[k] <= burst, (k, allowed[k])

        # The workload: every iteration writes and reads a key in each shard and spends one
        # unit of each GCRA key; it runs until 3 s after the victim shard serves again.
        it = 0
        recovered_at: Optional[float] = None
        first_write_after_kill: Optional[float] = None
        while recovered_at is None or time.monotonic() - recovered_at < 3:
            for shard in range(1, SHARDS + 1):
                k = f"{{{skeys[shard][0]}}}:{it}"  # the tag keeps it on the shard
                assert _shard_of_slot(rc.keyslot(k)) == shard, k
                t0 = time.monotonic()
                _bounded(f"SET {k}", lambda: rc.set(k, str(it)), errors)
                assert _bounded(f"GET {k}", lambda: rc.get(k), errors) == str(it).encode()
                if killed_at and shard == victim_shard and t0 > killed_at[0] and first_write_after_kill is None:
                    first_write_after_kill = time.monotonic() - killed_at[0]
                for g in gkeys[shard]:
                    gcra(g)
            if killed_at and recovered_at is None and first_write_after_kill is not None:
                recovered_at = time.monotonic()
            assert not killed_at or time.monotonic() - killed_at[0] < FAILOVER_BOUND + 10, "workload stuck"
            it += 1
            time.sleep(0.01)
        timer.join()
        assert killed, "the leader was never killed"
        victim = killed[0]
        new_leader = cluster.leader_of(victim_shard)
        assert new_leader is not victim
        print(f"victim {victim.id}: new leader {new_leader.id}; first write to its shard "
              f"{first_write_after_kill:.3f}s after the SIGKILL; {it} iterations; {len(errors)} errors: {errors[:5]}")

        # Every key written before, during and after the failover reads back.
        for shard in range(1, SHARDS + 1):
            for j in range(it):
                k = f"{{{skeys[shard][0]}}}:{j}"
                assert _bounded(f"GET {k}", lambda: rc.get(k), errors) == str(j).encode(), k

        # After the failover: spend the rest of each budget; once `burst` admissions are
        # counted the next call must be denied, and a denial must come no later than that.
        for shard, ks in gkeys.items():
            for k in ks:
                while True:
                    r = _bounded(f"GCRA.LIMIT {k}", lambda: rc.execute_command("GCRA.LIMIT", k, HOUR_MS, burst), errors)
                    if r[0] == 1:
                        break
                    allowed[k] += 1
                    assert allowed[k] <= burst, f"{k}: more than {burst} admissions counted"
                if shard != victim_shard:
                    # Nothing was lost on a shard that kept its leader.
                    assert allowed[k] == burst, (k, allowed[k], unknown[k])
                elif allowed[k] < burst:
                    # Admissions whose reply the kill took (or that redis-py retried on -TRYAGAIN).
                    print(f"{k}: {burst - allowed[k]} admissions without a reply ({unknown[k]} calls failed)")
                again = rc.execute_command("GCRA.LIMIT", k, HOUR_MS, burst)
                assert again[0] == 1 and again[2] == 0, (k, again)
    finally:
        rc.close()


# The slot range moved under load: every key of the test hashes into it, s1 owns it at first.
MOVE_LO, MOVE_HI = 0, 3000
NEVER_REFILLS_MS = 10**9  # a GCRA period no test outlives: nothing refills
MOVE_RETRY_BOUND = 10.0  # how long one call may meet -TRYAGAIN/-MOVED (a move takes ms)


def _status(n: Node) -> Dict[str, str]:
    v = n.cmd("CLUSTERX", "STATUS")
    return {as_str(v[k]): as_str(v[k + 1]) for k in range(0, len(v) - 1, 2)}


def _owner_port(n: Node, slot: int) -> int:
    """The master port that node n's CLUSTER SLOTS names for slot (0 when none)."""
    for entry in n.cmd("CLUSTER", "SLOTS"):
        if int(entry[0]) <= slot <= int(entry[1]):
            return int(entry[2][1])
    return 0


def _move(cluster: Cluster, target: int, log: List[str]) -> None:
    """CLUSTERX MIGRATE MOVE_LO MOVE_HI s<target>, sent to a node of neither shard, then waits
    until the meta epoch is bumped, no migration runs and every live node's CLUSTER SLOTS
    names the target's leader for both ends of the range. (test_sharded_failover, run
    before, leaves one node of s2 dead.)"""
    live = [n for n in cluster.nodes if n.proc.poll() is None]
    other = next(n for n in live if n.shard == 3)
    epoch = int(_status(other)["epoch"])
    t0 = time.monotonic()
    assert as_str(other.cmd("CLUSTERX", "MIGRATE", MOVE_LO, MOVE_HI, f"s{target}")) == "OK"
    leader = cluster.leader_of(target)

    def done() -> bool:
        try:
            if int(_status(other)["epoch"]) <= epoch:
                return False
            if any(_status(n)["migrations"] != "0" for n in live):
                return False
            return all(_owner_port(n, s) == leader.port for n in live for s in (MOVE_LO, MOVE_HI))
        except redis.RedisError:
            return False

    wait_for(f"slots {MOVE_LO}-{MOVE_HI} to move to s{target}", 20, done)
    source = cluster.leader_of(3 - target)  # s1 <-> s2
    log.append(f"to s{target} in {time.monotonic() - t0:.3f}s ({_status(source)['last_move']})")


def test_sharded_slot_moves_under_load(cluster: Cluster) -> None:
    """A workload on keys in slots 0-3000 (s1's) while CLUSTERX MIGRATE moves the range to s2
    and back. redis-py handles -MOVED itself once the meta group gave the range away (with
    reinitialize_steps=1 it reloads CLUSTER SLOTS on the first one) and retries -TRYAGAIN
    while the source fences the range, but only within its request TTL (RedisClusterRequestTTL
    16: 8 tries at once, then 8 more 50 ms apart, ~0.4 s), which a loaded machine outlasts:
    it then raises ClusterError("TTL exhausted."). Every try of that call got -TRYAGAIN or
    -MOVED, so nothing ran: the test's loop retries exactly that error (GCRA.LIMIT included),
    within MOVE_RETRY_BOUND, and counts how often; any other error fails the test."""
    rc = _client(cluster)
    exhausted: List[str] = []

    def call(what: str, fn: Callable[[], Any]) -> Any:
        start = time.monotonic()
        while True:
            try:
                return fn()
            except redis.exceptions.ClusterError as exc:
                if str(exc) != "TTL exhausted." or time.monotonic() - start > MOVE_RETRY_BOUND:
                    raise
                exhausted.append(what)
                time.sleep(0.05)

    try:
        in_range: List[str] = []
        i = 0
        while len(in_range) < 44:
            k = f"mv:{i}"
            if MOVE_LO <= rc.keyslot(k) <= MOVE_HI:
                in_range.append(k)
            i += 1
        skeys, gkeys = in_range[:40], in_range[40:]
        assert {_shard_of_slot(rc.keyslot(k)) for k in in_range} == {1}
        last: Dict[str, str] = {}
        # One unit of each GCRA key per iteration: the smaller bursts are spent before or
        # during the moves (their denials must survive them), the largest after them.
        bursts = dict(zip(gkeys, (4, 10, 20, 200)))
        allowed: Dict[str, int] = {k: 0 for k in gkeys}
        denied_from: Dict[str, int] = {}  # per GCRA key: the iteration of its first denial

        stop = threading.Event()
        moved: List[str] = []
        failure: List[BaseException] = []
        iterations = [0]

        def mover() -> None:
            try:
                time.sleep(0.5)  # the workload runs on s1 first
                _move(cluster, 2, moved)
                # A few iterations on s2: the keys (and the limiters' state) are there now.
                seen = iterations[0]
                wait_for("the workload to run on s2", 20, lambda: iterations[0] >= seen + 3)
                s2 = cluster.leader_of(2)
                with s2.client() as direct:
                    # (one key a call: the keys are in different slots of the range)
                    assert [k for k in skeys + gkeys if direct.exists(k) != 1] == []
                time.sleep(0.5)
                _move(cluster, 1, moved)
                time.sleep(0.5)  # and on s1 again
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                failure.append(exc)
            finally:
                stop.set()

        t = threading.Thread(target=mover)
        t.start()
        it = 0
        try:
            while not stop.is_set():
                for k in skeys:
                    v = f"{k}={it}"
                    assert call(f"SET {k}", lambda: rc.set(k, v)) is True
                    last[k] = v
                    assert call(f"GET {k}", lambda: rc.get(k)) == v.encode(), k
                for k in gkeys:
                    burst = bursts[k]
                    r = call(f"GCRA.LIMIT {k}", lambda: rc.execute_command("GCRA.LIMIT", k, NEVER_REFILLS_MS, burst))
                    assert r[1] == burst, (k, r)
                    if r[0] == 0:
                        assert k not in denied_from, f"{k}: admitted again after a denial at iteration {denied_from.get(k)}"
                        allowed[k] += 1
                        assert r[2] == burst - allowed[k], (k, r, allowed[k])
                    else:
                        denied_from.setdefault(k, it)
                        assert allowed[k] == burst and r[2] == 0, (k, r, allowed[k])
                it += 1
                iterations[0] = it
        finally:
            stop.set()
            t.join()
        if failure:
            raise failure[0]
        assert len(moved) == 2, moved
        print(f"{it} iterations; moves: {moved}; GCRA admissions {allowed}, denied from iteration {denied_from}; "
              f"{len(exhausted)} calls retried after TTL exhausted: {exhausted[:5]}")

        # Every key reads back the last value written.
        assert {k: rc.get(k) for k in skeys} == {k: v.encode() for k, v in last.items()}
        # Each GCRA key gave exactly `burst` admissions, then denials only.
        for k in gkeys:
            burst = bursts[k]
            while allowed[k] < burst:
                r = rc.execute_command("GCRA.LIMIT", k, NEVER_REFILLS_MS, burst)
                assert r[0] == 0, (k, r, allowed[k])
                allowed[k] += 1
            again = rc.execute_command("GCRA.LIMIT", k, NEVER_REFILLS_MS, burst)
            assert again[0] == 1 and again[2] == 0, (k, again)
        # The client's own slot map routes the range to s1's leader again.
        s1 = cluster.leader_of(1)
        for slot in (MOVE_LO, MOVE_HI, *(rc.keyslot(k) for k in in_range)):
            assert rc.nodes_manager.slots_cache[slot][0].port == s1.port, slot
        assert rc.get_node_from_key(skeys[0]).port == s1.port
    finally:
        rc.close()
