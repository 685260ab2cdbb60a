"""Test setup: one real hotkv-server per test session.

The binary is HOTKV_SERVER_BIN, or bin/hotkv-server at the repository root (built with
``go build`` when missing). It listens on a free loopback port with persistence off and DEBUG
enabled, because the tests freeze its clock with DEBUG CLOCK SET to reproduce the
specification's vectors exactly. It is stopped when the session ends, also on failures.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import redis

import hotkv
import hotkv.cluster

# The shared helpers assert (the vector runner's checks): pytest explains their failures as it
# does a test module's only if it rewrites the module, which it must be told before the import.
pytest.register_assert_rewrite("helpers")
from helpers import freeze  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _binary() -> str:
    env = os.environ.get("HOTKV_SERVER_BIN")
    if env:
        return env
    path = ROOT / "bin" / "hotkv-server"
    if not path.exists():
        subprocess.run(["go", "build", "-o", str(path), "./cmd/hotkv-server"], cwd=ROOT, check=True)
    return str(path)


class Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="hotkv-py-test-")
        self.host = "127.0.0.1"
        self.proc: "subprocess.Popen[bytes] | None" = None
        last = ""
        # A port free a moment ago can be taken by a concurrent test run: retry on a new one.
        for _ in range(5):
            self.port = _free_port()
            log = open(os.path.join(self.dir, f"server-{self.port}.log"), "wb")
            self.proc = subprocess.Popen(
                [_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--enable-debug-command", "yes", "--dir", self.dir],
                stdout=log, stderr=subprocess.STDOUT,
            )
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if hotkv.HotKV(host=self.host, port=self.port, socket_timeout=1).ping():
                        return
                except Exception as exc:  # not listening yet
                    last = str(exc)
                time.sleep(0.05)
            self._kill()
        self.stop()
        raise RuntimeError(f"hotkv-server did not start: {last}")

    def stop(self) -> None:
        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = Server()
    try:
        yield s
    finally:
        s.stop()


def reset_server(c: "hotkv.HotKV") -> None:
    """Empties the server between tests: keys, limiters, configuration, real clock."""
    c.execute_command("DEBUG", "CLOCK", "RESET")
    c.flushall()
    for name in c.ratelimit_list():
        c.ratelimit_drop(name)
    c.config_set("throttle-compat", "redis-cell")
    c.config_set("ratelimit.max-limiters", "10000")
    c.config_set("ratelimit.sliding-window-max-entries", "1024")


@pytest.fixture(params=[2, 3], ids=["RESP2", "RESP3"])
def client(request: pytest.FixtureRequest, server: Server) -> Iterator[hotkv.HotKV]:
    c = hotkv.HotKV(host=server.host, port=server.port, protocol=request.param)
    reset_server(c)
    yield c
    c.close()


@pytest.fixture
def sync(server: Server) -> Iterator[hotkv.HotKV]:
    """A plain client of the emptied server with the clock frozen at t0: the middleware tests
    read through it what their requests left (keys, limiter stats)."""
    c = hotkv.HotKV(host=server.host, port=server.port)
    reset_server(c)
    freeze(c)
    yield c
    c.close()


def one_node_slots(server: Server) -> Any:
    """The CLUSTER SLOTS reply of a cluster whose one node, the test server, owns every slot."""
    return [[0, 16383, [server.host.encode(), server.port, b"node-1"]]]


@pytest.fixture
def one_node_cluster(server: Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[hotkv.cluster.HotKVCluster]:
    """The sync cluster client on a one-node slot map. HotKV's single server has no CLUSTER
    SLOTS, so the reply is supplied (as the Go client's tests do with go-redis's ClusterSlots
    option) and every call runs through redis-py's real cluster machinery: routing, per-node
    response callbacks, result merging and cluster pipelines."""
    orig = redis.Redis.execute_command

    def execute(self: Any, *args: Any, **kw: Any) -> Any:
        if args and str(args[0]).upper() == "CLUSTER SLOTS":
            return one_node_slots(server)
        return orig(self, *args, **kw)

    monkeypatch.setattr(redis.Redis, "execute_command", execute)
    reset_server(hotkv.HotKV(host=server.host, port=server.port))
    c = hotkv.cluster.HotKVCluster(host=server.host, port=server.port)
    yield c
    c.close()
    hotkv.HotKV(host=server.host, port=server.port).execute_command("DEBUG", "CLOCK", "RESET")
