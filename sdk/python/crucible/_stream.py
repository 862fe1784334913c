"""Server-Sent Events: reading them, and resuming a dropped stream with
Last-Event-ID exactly as the Go SDK does (client/stream.go). Private."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ._http import Transport
from .errors import TransportError, error_from_event
from .types import decode_data

#: The longest event accepted (the server's are output chunks of at most
#: 64 KiB before encoding, and results).
MAX_EVENT_BYTES = 256 << 20
#: Reconnections of a resumable stream in a row that bring no event; one
#: that brings an event starts the count afresh.
MAX_RESUMES = 3
#: Seconds before a second or later reconnection in a row when the server
#: sent no ``retry:`` (the first is at once).
DEFAULT_RETRY = 1.0
#: The read timeout of a stream when the client has none shorter: the
#: server sends a keep-alive comment every 15 seconds.
STREAM_READ_TIMEOUT = 60.0


@dataclass
class Event:
    """One event of a stream: its name, its id (the server's position, "" for
    none) and its data: the bytes of an output chunk for ``stdout`` and
    ``stderr``, the decoded JSON for the others."""

    name: str
    id: str
    data: Any


class _Dropped(Exception):
    """A connection that failed, or a stream that ended before its result."""

    def __init__(self, err: BaseException) -> None:
        super().__init__(str(err))
        self.err = err


class _State:
    """What a stream's reader knows across its connections."""

    def __init__(self) -> None:
        self.last_id = ""
        self.retry = DEFAULT_RETRY
        self.received = 0
        self.resumed = False
        self.passed = [0, 0]  # output bytes passed on: stdout, stderr


def read_sse(resp: Any) -> Iterator[Tuple[str, bytes, Optional[str], Optional[float]]]:
    """Yield each event of ``resp`` as (name, data, the last event ID or None,
    the last retry in seconds or None): the ID and the retry outlive the
    event that brought them, as in the SSE standard. Comments (keep-alives)
    are skipped."""
    name = ""
    data: Optional[List[bytes]] = None
    ev_id: Optional[str] = None
    retry: Optional[float] = None
    size = 0
    while True:
        line = resp.readline(MAX_EVENT_BYTES + 1)
        if not line:
            return
        size += len(line)
        if size > MAX_EVENT_BYTES:
            raise ValueError("crucible: an event of the stream is over 256 MiB")
        line = line.rstrip(b"\r\n") if line.endswith(b"\n") else line
        if not line:
            if name or data is not None:
                yield (name or "message", b"\n".join(data or []), ev_id, retry)
            name, data, size = "", None, 0
            continue
        fld, sep, value = line.partition(b":")
        if not sep:
            value = b""
        elif value.startswith(b" "):
            value = value[1:]
        if fld == b"":
            continue  # a comment: a heartbeat
        if fld == b"event":
            name = value.decode("utf-8", "replace").strip()
        elif fld == b"data":
            data = (data or []) + [value]
        elif fld == b"id" and b"\0" not in value:
            ev_id = value.decode("utf-8", "replace")
        elif fld == b"retry" and value.isdigit():
            retry = int(value) / 1000.0


def follow(transport: Transport, method: str, path: str, *, resumable: bool,
           query: Optional[Mapping[str, Any]] = None, body: Optional[bytes] = None,
           content_type: Optional[str] = None, run_result: bool = False,
           timeout: Optional[float] = None) -> Iterator[Event]:
    """Send a request whose answer is an event stream and yield its events
    until the ``result`` event (yielded last).

    When ``resumable``, a connection that fails or ends before the result is
    sent again with Last-Event-ID after the last event received, at once,
    then after the server's ``retry:``, at most MAX_RESUMES times in a row
    without a new event. With ``run_result`` (a run's events), output is
    passed on once: when the server resumes with the result alone (a run
    that ended, whose record does not keep how stdout and stderr were
    interleaved), the output not yet passed on is yielded from the result.
    An ``error`` event raises its APIError.
    """
    st = _State()
    failures = 0
    while True:
        if failures > 1:
            transport.sleep(st.retry)
        headers: Dict[str, str] = {"Accept": "text/event-stream"}
        if st.last_id:
            headers["Last-Event-ID"] = st.last_id
        before = st.received
        try:
            yield from _read_once(transport, method, path, query, body, content_type, headers, st,
                                  run_result, timeout)
            return
        except _Dropped as d:
            no_id = st.last_id == "" and st.received > 0
            if not resumable or no_id or (failures >= MAX_RESUMES and st.received == before):
                err = d.err
                if isinstance(err, TransportError):
                    raise err
                raise TransportError(f"crucible: {method} {path}: {err}", method=method, path=path,
                                     sent=True, cause=err) from err
            if st.received > before:
                failures = 0
            st.resumed = True
        failures += 1


def _read_once(transport: Transport, method: str, path: str, query: Optional[Mapping[str, Any]],
               body: Optional[bytes], content_type: Optional[str], headers: Dict[str, str],
               st: _State, run_result: bool, timeout: Optional[float]) -> Iterator[Event]:
    to = STREAM_READ_TIMEOUT if timeout is None else timeout
    try:
        resp = transport.open_stream(method, path, query=query, body=body, content_type=content_type,
                                     headers=headers, timeout=to)
    except TransportError as e:
        raise _Dropped(e) from e
    try:
        if resp.status == 204:  # nothing after st.last_id
            raise TransportError(f"crucible: {method} {path}: the server has no events after "
                                 f"{st.last_id}, and the result was not received", method=method, path=path)
        try:
            for name, data, ev_id, retry in read_sse(resp):
                prev = st.last_id
                if ev_id is not None:
                    st.last_id = ev_id
                st.received += 1
                if retry is not None and retry > 0:
                    st.retry = retry
                if name in ("stdout", "stderr"):
                    chunk = decode_data(json.loads(data))
                    if chunk:
                        st.passed[0 if name == "stdout" else 1] += len(chunk)
                        yield Event(name, st.last_id, chunk)
                    continue
                if name == "error":
                    raise error_from_event(data)
                doc = json.loads(data) if data else None
                if name == "result":
                    if run_result and isinstance(doc, dict):
                        yield from _fill_gap(st, prev, doc)
                    yield Event(name, st.last_id, doc)
                    return
                yield Event(name, st.last_id, doc)
        except (OSError, http.client.HTTPException) as e:
            raise _Dropped(e) from e
        raise _Dropped(TransportError(f"crucible: {method} {path}: the stream ended without a result",
                                      method=method, path=path, sent=True))
    finally:
        resp.close()


def _fill_gap(st: _State, prev: str, result: Mapping[str, Any]) -> Iterator[Event]:
    """Yield the output the result has that the events did not bring: after a
    resumption, when the result's id says output came between it and
    ``prev``, the id of the event before it (ids are 1 + the output bytes so
    far)."""
    if not st.resumed:
        return
    try:
        before, end = int(prev), int(st.last_id)
    except ValueError:
        return
    if end <= before + 1:
        return
    for i, name in enumerate(("stdout", "stderr")):
        out = decode_data(result.get(name))
        n = st.passed[i]
        if n < len(out):
            st.passed[i] = len(out)
            yield Event(name, st.last_id, out[n:])

