"""The product documentation's Python snippets, verbatim, against the test server.

They are read at test time from clients/testdata/product-docs/rate-limiting-guide.txt, the
repository's copy of the published guide (clients/go checks that the copy equals
../shared/product-docs/rate-limiting-guide.txt wherever that is beside the repository), so the
snippets are tested in every clone. The only change made to the
text: the first snippet connects to ``host="localhost", port=6379``, which is replaced by the
test server's address (it listens on a free port chosen at start-up so that test runs never
collide with a real server). Everything else runs exactly as written, in one namespace and in
page order (the second snippet uses the ``client`` the first one created).
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

import hotkv
from conftest import Server, reset_server

DOCS = Path(__file__).resolve().parents[2] / "testdata" / "product-docs"
GUIDE = DOCS / "rate-limiting-guide.txt"


def python_snippets(path: Path) -> List[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def localize(snippet: str, server: Server) -> str:
    out = snippet.replace('host="localhost", port=6379', f'host="{server.host}", port={server.port}')
    return out


@pytest.fixture
def fresh(server: Server) -> hotkv.HotKV:
    c = hotkv.HotKV(host=server.host, port=server.port)
    reset_server(c)
    return c


def test_guide_snippets(server: Server, fresh: hotkv.HotKV) -> None:
    snippets = python_snippets(GUIDE)
    assert len(snippets) == 2, "the guide has a GCRA and a RATELIMIT Python snippet"
    assert 'host="localhost", port=6379' in snippets[0]
    ns: Dict[str, Any] = {}
    outputs = []
    for s in snippets:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(localize(s, server), str(GUIDE), "exec"), ns)
        outputs.append(buf.getvalue())
    # Fresh server: the first call is allowed with 9 left; the check passes, printing nothing.
    assert outputs == ["9 requests left\n", ""]
    assert isinstance(ns["client"], hotkv.HotKV)
    assert ns["check"].allowed and ns["check"].remaining == 99
    assert ns["result"].remaining == 9


def test_guide_snippets_denied_paths(server: Server, fresh: hotkv.HotKV) -> None:
    """The snippets' other branches: after ten calls the GCRA snippet prints the wait, and
    with the limiter used up the check snippet prints its retry time."""
    snippets = python_snippets(GUIDE)
    for _ in range(10):
        fresh.gcra_limit("api:user:42", 60000, 10)
    # Freeze the clock so no unit refills between the calls above and the snippet.
    fresh.execute_command("DEBUG", "CLOCK", "SET", fresh.execute_command("DEBUG", "CLOCK", "GET"))
    ns: Dict[str, Any] = {}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(localize(snippets[0], server), str(GUIDE), "exec"), ns)
    assert re.fullmatch(r"slow down, retry in \d+ ms\n", buf.getvalue()), buf.getvalue()
    # The snippet's first line creates "api"; a used-up limiter cannot be created, so its
    # "retry" branch runs the snippet's remaining lines (verbatim) against a limiter used up
    # beforehand.
    fresh.ratelimit_create("api", 100, 60000)
    fresh.ratelimit_check("api", "user:42", cost=100)
    check_part = snippets[1].split("\n", 2)[2]
    assert check_part.startswith("check = client.ratelimit_check")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(check_part, str(GUIDE), "exec"), ns)
    assert re.fullmatch(r"retry in \d+ ms\n", buf.getvalue()), buf.getvalue()
