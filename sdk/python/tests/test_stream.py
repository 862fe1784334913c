"""A streamed run resumed after the test cuts the connection (a TCP proxy
of the test's between the SDK and the real server)."""

from __future__ import annotations

import os
import threading
import time
from typing import Optional

import pytest

import crucible
from tcpproxy import Proxy, event_end

pytestmark = pytest.mark.server

PROGRAM = "import time\nfor i in range(8):\n    print('line', i, flush=True)\n    time.sleep(0.15)\n"


def _upstream(client: crucible.Client):
    host, _, port = client.base_url.split("//", 1)[1].partition(":")
    return host, int(port.split("/")[0])


def _first_events(proxy: Proxy):
    gets = proxy.requests("GET", "/events")
    return gets[0] if gets else None


def test_stream_resumed_after_cut(client: crucible.Client) -> None:
    def cut(conn, relayed: bytes) -> Optional[int]:
        # Cut the first events connection just after its second output event.
        return event_end(relayed, b"stdout", 2) if conn is _first_events(proxy) else None

    proxy = Proxy(_upstream(client), cut=cut)
    try:
        c = crucible.Client(proxy.url, os.environ["CRUCIBLE_API_KEY"])
        events = list(c.stream_run(PROGRAM))
    finally:
        proxy.close()
    assert isinstance(events[0], crucible.RunStarted)
    assert isinstance(events[-1], crucible.RunFinished)
    out = b"".join(e.data for e in events if isinstance(e, crucible.Output))
    expected = "".join(f"line {i}\n" for i in range(8)).encode()
    assert out == expected  # once, in order
    assert events[-1].result.stdout_bytes == expected and events[-1].result.ok
    gets = proxy.requests("GET", "/events")
    assert len(gets) == 2, [g.target for g in gets]
    # Resumed after the second output event: "line 0\n" and "line 1\n" came, 14 bytes (ids are 1 + bytes).
    assert [g.header("Last-Event-ID") for g in gets] == [None, "15"]


def test_stream_resumed_after_the_end_fills_the_gap(client: crucible.Client) -> None:
    # Output on both streams; the resumption is held until the run ended, so
    # the server answers the result alone: the SDK passes on the missing
    # output from it, each byte once.
    program = ("import sys, time\nfor i in range(6):\n    print('out', i, flush=True)\n"
               "    print('err', i, file=sys.stderr, flush=True)\n    time.sleep(0.1)\n")
    ended = threading.Event()

    def cut(conn, relayed: bytes) -> Optional[int]:
        # Cut the first events connection just after its first output event
        # (of either stream, 6 bytes: id 7). Resumed past the run event after
        # the end, the server has the record only, which does not keep how the
        # streams were interleaved: it answers the result alone.
        if conn is not _first_events(proxy):
            return None
        ends = [e for e in (event_end(relayed, b"stdout", 1), event_end(relayed, b"stderr", 1)) if e is not None]
        return min(ends) if ends else None

    def hold(conn) -> bool:
        if conn.target.endswith("/events") and conn is not _first_events(proxy):
            ended.wait(20)
            time.sleep(0.3)  # the server drops the run's live feed just after its result
        return True

    proxy = Proxy(_upstream(client), cut=cut, before_upstream=hold)
    try:
        c = crucible.Client(proxy.url, os.environ["CRUCIBLE_API_KEY"])
        it = c.stream_run(program)
        started = next(it)
        assert isinstance(started, crucible.RunStarted)

        def wait_end() -> None:
            for ev in client.follow_run(started.id):
                pass
            ended.set()

        t = threading.Thread(target=wait_end)
        t.start()
        events = list(it)
        t.join()
    finally:
        proxy.close()
    res = events[-1].result
    out = b"".join(e.data for e in events if isinstance(e, crucible.Output) and e.stream == "stdout")
    err = b"".join(e.data for e in events if isinstance(e, crucible.Output) and e.stream == "stderr")
    assert out == res.stdout_bytes == b"".join(b"out %d\n" % i for i in range(6))
    assert err == res.stderr_bytes == b"".join(b"err %d\n" % i for i in range(6))
    gets = proxy.requests("GET", "/events")
    # Resumed past the run event (id 1): after "out 0\n" or "err 0\n", id 7.
    assert [g.header("Last-Event-ID") for g in gets] == [None, "7"]
