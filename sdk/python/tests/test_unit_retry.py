"""The retry policy against a local server (no Crucible): idempotent
requests are retried, a POST only when nothing was sent."""

from __future__ import annotations

import socket
from typing import List

import pytest

import crucible
from crucible import _http
from localserver import RESULT, LocalServer, hang_up, reply


def client(url: str, retries: int = 2) -> "tuple[crucible.Client, List[float]]":
    c = crucible.Client(url, "k", retries=retries, timeout=5)
    sleeps: List[float] = []
    c._t.sleep = sleeps.append
    return c, sleeps


def script(*steps):
    """A handler answering the n-th request as steps[n] says (the last again)."""
    n = {"i": 0}

    def handle(r, h):
        step = steps[min(n["i"], len(steps) - 1)]
        n["i"] += 1
        step(h)
    return handle


ok = lambda h: reply(h, 200, RESULT)  # noqa: E731
busy = lambda h: reply(h, 503, {"error": {"code": "unavailable", "message": "x"}}, {"Retry-After": "0"})  # noqa: E731
full = lambda h: reply(h, 429, {"error": {"code": "too_many_requests", "message": "x"}}, {"Retry-After": "1"})  # noqa: E731


@pytest.fixture
def srv():
    servers = []

    def make(*steps, port=0):
        s = LocalServer(script(*steps), port)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.close()


def test_get_retried_on_503_and_429(srv) -> None:
    s = srv(busy, full, ok)
    c, sleeps = client(s.url)
    assert c.get_run("r1").id == "r1"
    assert len(s.requests) == 3 and sleeps == [0.0, 1.0]


def test_get_gives_up_after_retries(srv) -> None:
    s = srv(busy)
    c, sleeps = client(s.url, retries=2)
    with pytest.raises(crucible.ServerError) as ei:
        c.get_run("r1")
    assert ei.value.status == 503 and len(s.requests) == 3 and len(sleeps) == 2


def test_long_retry_after_not_waited(srv) -> None:
    s = srv(lambda h: reply(h, 429, {"error": {"code": "too_many_requests", "message": "x"}}, {"Retry-After": "3600"}))
    c, sleeps = client(s.url)
    with pytest.raises(crucible.RateLimitError) as ei:
        c.get_run("r1")
    assert ei.value.retry_after == 3600 and len(s.requests) == 1 and sleeps == []


@pytest.mark.parametrize("answer", [busy, full])
def test_post_not_retried_on_status(srv, answer) -> None:
    s = srv(answer, ok)
    c, sleeps = client(s.url)
    with pytest.raises(crucible.APIError):
        c.run("print(1)")
    assert len(s.requests) == 1 and sleeps == []


def test_post_not_resent_after_hang_up(srv) -> None:
    s = srv(hang_up, ok)
    c, sleeps = client(s.url, retries=5)
    with pytest.raises(crucible.TransportError) as ei:
        c.run("print(1)")
    assert ei.value.sent and ei.value.method == "POST" and "not retried" in str(ei.value)
    assert len(s.requests) == 1 and sleeps == []


def test_get_retried_after_hang_up(srv) -> None:
    s = srv(hang_up, ok)
    c, sleeps = client(s.url)
    assert c.get_run("r1").stdout == "hi\n"
    assert len(s.requests) == 2 and sleeps == [_http.BASE_BACKOFF]


def free_port() -> int:
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def test_post_retried_when_connection_refused(srv) -> None:
    port = free_port()
    c, sleeps = client(f"http://127.0.0.1:{port}")
    started = []

    def start_server(seconds: float) -> None:  # the server comes up while the client waits
        sleeps.append(seconds)
        if not started:
            started.append(srv(ok, port=port))
    c._t.sleep = start_server
    assert c.run("print(1)").id == "r1"
    assert sleeps == [_http.BASE_BACKOFF] and len(started[0].requests) == 1


def test_connection_refused_gives_up() -> None:
    c, sleeps = client(f"http://127.0.0.1:{free_port()}", retries=3)
    with pytest.raises(crucible.TransportError) as ei:
        c.run("print(1)")
    assert not ei.value.sent and isinstance(ei.value.cause, ConnectionRefusedError)
    assert sleeps == [0.25, 0.5, 1.0]


def test_stale_keep_alive_connection_not_used_for_post(srv) -> None:
    # The server answers, keeps the connection open as HTTP/1.1 says, then
    # closes it while idle: the next POST must go on a new connection, not
    # fail as sent.
    def ok_then_close(h):
        reply(h, 200, RESULT)
        h.close_connection = True
    s = srv(ok_then_close)
    c, sleeps = client(s.url, retries=0)
    c.get_run("r1")
    import time
    time.sleep(0.2)  # the server's close reaches the client
    assert c.run("print(1)").id == "r1"
    assert len(s.requests) == 2 and sleeps == []


def slow(h) -> None:
    import time
    time.sleep(1.0)
    reply(h, 200, RESULT)


def test_read_timeout_get_retried(srv) -> None:
    s = srv(slow, ok)
    c = crucible.Client(s.url, "k", retries=1, timeout=0.3)
    c._t.sleep = lambda _s: None
    assert c.get_run("r1").id == "r1" and len(s.requests) == 2


def test_read_timeout_post_not_retried(srv) -> None:
    s = srv(slow, ok)
    c = crucible.Client(s.url, "k", retries=3, timeout=0.3)
    c._t.sleep = lambda _s: None
    with pytest.raises(crucible.TransportError) as ei:
        c.run("print(1)")  # the wall time it waits on top of the timeout is the run's: none given
    assert ei.value.sent and "timed out" in str(ei.value) and len(s.requests) == 1
