"""redis-py's RedisCluster (and hotkv.HotKVCluster) against a 3-node HotKV Raft group.

The group answers the Redis Cluster protocol as one shard whose master is the Raft leader
(docs/replication.md): the clients find the leader through CLUSTER SLOTS and -MOVED, read from
followers with READONLY, and keep working when the leader is SIGKILLed (a write succeeds
against the new leader within a bounded time). This is the redis-py part of issue 12's client
matrix; go-redis and redis-cli -c run in tests/chaos/cluster_clients_test.go.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
import redis
from redis.cluster import ClusterNode, LoadBalancingStrategy, RedisCluster

from conftest import _binary, _free_port  # the server helpers the other tests use
from helpers import as_str, wait_for
from hotkv.cluster import HotKVCluster

# The product's failover target is 2 s at default settings; this bound leaves room for a
# loaded 2-core machine. The measured time is printed (pytest -s shows it).
FAILOVER_BOUND = 30.0


class RaftNode:
    """One hotkv-server process of the group, with its own data dir and ports."""

    def __init__(self, node_id: str, bootstrap: bool) -> None:
        self.id = node_id
        self.dir = tempfile.mkdtemp(prefix=f"hotkv-py-raft-{node_id}-")
        self.port = _free_port()
        self.raft_port = _free_port()
        self.proc: "subprocess.Popen[bytes] | None" = None
        self.start(bootstrap)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, bootstrap: bool = False) -> None:
        args = [_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
                "--raft-port", str(self.raft_port), "--raft-node-id", self.id]
        if bootstrap:
            args += ["--raft-bootstrap", "yes"]
        log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        wait_for(f"{self.id} to answer PING", 30, self._pings)

    def _pings(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.id} exited: {self.log()}")
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def client(self) -> "redis.Redis[bytes]":
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=1)

    def status(self) -> Dict[str, str]:
        try:
            with self.client() as c:
                v: List[Any] = c.execute_command("RAFT", "STATUS")
        except redis.RedisError:
            return {}
        return {as_str(v[i]): as_str(v[i + 1]) for i in range(0, len(v) - 1, 2)}

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def log(self) -> str:
        try:
            return Path(self.dir, "server.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_leader(nodes: List[RaftNode]) -> RaftNode:
    found: List[RaftNode] = []

    def check() -> bool:
        found.clear()
        leaders = [n for n in nodes if n.status().get("role") == "leader"]
        if len(leaders) != 1:
            return False
        if any(n.status().get("leader_client_addr") != leaders[0].addr for n in nodes if n is not leaders[0]):
            return False
        found.append(leaders[0])
        return True

    wait_for("a serving leader every node knows", 60, check)
    return found[0]


def wait_topology(nodes: List[RaftNode], leader: RaftNode, members: int) -> None:
    """Every node in nodes answers CLUSTER SLOTS with the leader as master, members in all."""

    def check() -> bool:
        for n in nodes:
            try:
                with n.client() as c:
                    slots = c.execute_command("CLUSTER", "SLOTS")
            except redis.RedisError:
                return False
            if len(slots) != 1 or len(slots[0]) != 2 + members or int(slots[0][2][1]) != leader.port:
                return False
        return True

    wait_for("every node to describe the one-shard cluster", 60, check)


@pytest.fixture
def group() -> Iterator[List[RaftNode]]:
    nodes: List[RaftNode] = []
    try:
        for i in range(1, 4):
            nodes.append(RaftNode(f"n{i}", bootstrap=i == 1))
        wait_leader(nodes[:1])
        with nodes[0].client() as c:
            for n in nodes[1:]:
                c.execute_command("RAFT", "ADD", n.id, f"127.0.0.1:{n.raft_port}")
        wait_topology(nodes, wait_leader(nodes), 3)
        yield nodes
    except BaseException:
        for n in nodes:
            print(f"---- log of {n.id} ----\n{n.log()}")
        raise
    finally:
        for n in nodes:
            n.close()


def test_cluster_clients_follow_a_failover(group: List[RaftNode]) -> None:
    nodes = group
    leader = wait_leader(nodes)
    seeds = [ClusterNode("127.0.0.1", n.port) for n in nodes]
    common: Dict[str, Any] = {"socket_timeout": 2, "socket_connect_timeout": 1}
    clients: Dict[str, Any] = {
        "RedisCluster": RedisCluster(startup_nodes=seeds, **common),
        "RedisCluster-replicas": RedisCluster(
            startup_nodes=seeds, load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS, **common),
        "HotKVCluster": HotKVCluster(startup_nodes=seeds, **common),
    }
    try:
        # The topology the clients loaded: one master (the leader) holding every slot.
        rc = clients["RedisCluster"]
        assert rc.get_primaries()[0].port == leader.port
        assert sorted(n.port for n in rc.get_replicas()) == sorted(n.port for n in nodes if n is not leader)
        assert rc.keyslot("foo") == 12182

        written: Dict[str, str] = {}
        for name, c in clients.items():
            for i in range(10):
                key = f"{name}:before:{i}"
                assert c.set(key, str(i)) is True
                written[key] = str(i)
        for name, c in clients.items():
            for key, want in written.items():
                if key.startswith(name + ":"):
                    # A read on a follower may lag the write by a commit round.
                    wait_for(f"{name} to read {key}", 30, lambda: _get(c, key) == want)

        # A READONLY connection to a follower reads there; a write is redirected.
        follower = next(n for n in nodes if n is not leader)
        with follower.client() as fc:
            assert fc.execute_command("READONLY") in (b"OK", True)
            wait_for("the follower to serve a read", 30, lambda: fc.get("RedisCluster:before:9") == b"9")
            with pytest.raises(redis.exceptions.MovedError) as moved:
                fc.set("foo", "x")
            assert (moved.value.slot_id, moved.value.port) == (12182, leader.port)

        # The rate-limit commands route by key through HotKVCluster.
        hc = clients["HotKVCluster"]
        assert hc.gcra_limit("rl:{py}", 60000, 10).remaining == 9

        killed_at = time.monotonic()
        leader.kill()
        for name, c in clients.items():
            key = f"{name}:after"
            last: Exception | None = None
            while time.monotonic() - killed_at < FAILOVER_BOUND:
                try:
                    if c.set(key, "1"):
                        break
                except (redis.RedisError, redis.exceptions.RedisClusterException, OSError) as exc:  # election, refused connection
                    last = exc
                time.sleep(0.05)
            else:
                raise AssertionError(f"{name}: no write within {FAILOVER_BOUND}s of the leader's SIGKILL: {last!r}")
            written[key] = "1"
            print(f"{name}: first write {time.monotonic() - killed_at:.3f}s after the SIGKILL")

        up = [n for n in nodes if n is not leader]
        new_leader = wait_leader(up)
        assert new_leader is not leader
        for name, c in clients.items():
            for key, want in written.items():
                if key.startswith(name + ":"):
                    wait_for(f"{name} to read {key} after the failover", 30, lambda: _get(c, key) == want)
        # The budget spent before the failover is still spent after it.
        assert hc.gcra_limit("rl:{py}", 60000, 10).remaining == 8
    finally:
        for c in clients.values():
            c.close()


def _get(c: Any, key: str) -> "str | None":
    try:
        v = c.get(key)
    except (redis.RedisError, redis.exceptions.RedisClusterException, OSError):
        return None
    return None if v is None else as_str(v)
