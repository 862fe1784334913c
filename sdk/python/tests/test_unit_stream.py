"""Server-Sent Events and stream resumption against a local server (no
Crucible), as client/stream.go does them."""

from __future__ import annotations

import io
import json
from typing import List

import pytest

import crucible
from crucible._stream import MAX_RESUMES, read_sse
from localserver import RESULT, LocalServer, reply


def sse(h, text: str, status: int = 200) -> None:
    """Answer an event stream and close the connection after ``text``."""
    h.send_response(status)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Connection", "close")
    h.end_headers()
    h.wfile.write(text.encode())
    h.wfile.flush()
    h.close_connection = True


def ev(i, name, data) -> str:
    return f"id: {i}\nevent: {name}\ndata: {json.dumps(data)}\n\n"


def serve(*answers):
    """A server answering GET .../events with answers[n] on the n-th request
    (a string of events, or an int status)."""
    n = {"i": 0}

    def handle(r, h):
        if r.method == "POST":
            return reply(h, 202, {"id": "r1", "status": "queued"})
        a = answers[min(n["i"], len(answers) - 1)]
        n["i"] += 1
        if isinstance(a, int):
            return reply(h, a)
        sse(h, a)
    return LocalServer(handle)


def run_events(url: str) -> "tuple[list, List[float]]":
    c = crucible.Client(url, "k", timeout=5)
    sleeps: List[float] = []
    c._t.sleep = sleeps.append
    return list(c.stream_run("print(1)")), sleeps


def outputs(events) -> List[tuple]:
    return [(e.stream, e.data) for e in events if isinstance(e, crucible.Output)]


def test_read_sse() -> None:
    body = io.BytesIO(b"retry: 1500\r\n: keep-alive\r\n\r\nid: 7\nevent: x\ndata: a\ndata: b\n\ndata: plain\n\n"
                      b"id: bad\x00\nevent: y\ndata:\n\n")
    got = list(read_sse(body))
    assert got == [("x", b"a\nb", "7", 1.5), ("message", b"plain", "7", 1.5), ("y", b"", "7", 1.5)]


def test_resumed_with_last_event_id() -> None:
    result = dict(RESULT, stdout="a\nb\n")
    srv = serve("retry: 10\n\n" + ev(1, "run", {"id": "r1"}) + ev(3, "stdout", "a\n"),
                ev(5, "stdout", "b\n") + ev(6, "result", result))
    try:
        events, sleeps = run_events(srv.url)
    finally:
        srv.close()
    gets = [r for r in srv.requests if r.method == "GET"]
    assert [g.path for g in gets] == ["/v1/runs/r1/events"] * 2
    assert "last-event-id" not in gets[0].headers and gets[1].headers["last-event-id"] == "3"
    assert outputs(events) == [("stdout", b"a\n"), ("stdout", b"b\n")]
    assert isinstance(events[0], crucible.RunStarted) and isinstance(events[-1], crucible.RunFinished)
    assert sleeps == []  # the first resumption is at once


def test_gap_filled_from_the_result() -> None:
    # Resumed after the run ended with output on both streams, the server
    # sends the result alone: the output not yet passed on comes from it.
    result = dict(RESULT, stdout="o1\no2\n", stderr="e1\n")
    srv = serve(ev(1, "run", {"id": "r1"}) + ev(4, "stdout", "o1\n"), ev(11, "result", result))
    try:
        events, _ = run_events(srv.url)
    finally:
        srv.close()
    assert outputs(events) == [("stdout", b"o1\n"), ("stdout", b"o2\n"), ("stderr", b"e1\n")]


def test_no_gap_no_fill() -> None:
    result = dict(RESULT, stdout="o1\n")
    srv = serve(ev(1, "run", {"id": "r1"}) + ev(4, "stdout", "o1\n"), ev(5, "result", result))
    try:
        events, _ = run_events(srv.url)
    finally:
        srv.close()
    assert outputs(events) == [("stdout", b"o1\n")]


def test_gives_up_after_resumes_without_progress() -> None:
    srv = serve(ev(1, "run", {"id": "r1"}), "retry: 20\n\n")
    try:
        with pytest.raises(crucible.TransportError) as ei:
            run_events(srv.url)
    finally:
        srv.close()
    gets = [r for r in srv.requests if r.method == "GET"]
    # The first connection, then MAX_RESUMES resumptions without an event.
    assert len(gets) == 1 + MAX_RESUMES and "without a result" in str(ei.value)


def test_error_event_not_resumed() -> None:
    srv = serve(ev(1, "run", {"id": "r1"}) + 'event: error\ndata: {"code":"internal","message":"boom"}\n\n')
    try:
        with pytest.raises(crucible.ServerError) as ei:
            run_events(srv.url)
    finally:
        srv.close()
    assert ei.value.message == "boom" and len([r for r in srv.requests if r.method == "GET"]) == 1


def test_204_after_last_event() -> None:
    srv = serve(ev(1, "run", {"id": "r1"}), 204)
    try:
        with pytest.raises(crucible.TransportError) as ei:
            run_events(srv.url)
    finally:
        srv.close()
    assert "no events after 1" in str(ei.value)


def test_api_error_not_resumed() -> None:
    srv = serve(404)
    try:
        with pytest.raises(crucible.NotFoundError):
            run_events(srv.url)
    finally:
        srv.close()
    assert len([r for r in srv.requests if r.method == "GET"]) == 1
