"""Test setup: one real hotkv-server per test session.

The binary is HOTKV_SERVER_BIN, or bin/hotkv-server at the repository root (built with
``go build`` when missing). It listens on a free loopback port with persistence off and DEBUG
enabled, because the tests freeze its clock with DEBUG CLOCK SET to reproduce the
specification's vectors exactly. It is stopped when the session ends, also on failures.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

import hotkv

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
            self.stop()
        raise RuntimeError(f"hotkv-server did not start: {last}")

    def stop(self) -> None:
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
