"""The HTTP transport: connections, authentication, timeouts and the retry
policy. Private: use :class:`crucible.Client`.

The retry policy never repeats a request that may have been carried out:

* GET, HEAD, PUT and DELETE (idempotent) are retried after a connection
  failure and after a 429, 502, 503 or 504 answer, waiting the server's
  Retry-After (bounded) or an exponential backoff.
* POST (and every other method) is retried only when the connection failed
  before any byte of the request was sent (connection refused, a name that
  does not resolve, a connect timeout). Once the request was sent, a failure
  is raised as :class:`~crucible.errors.TransportError` with ``sent=True``,
  and no answer status makes it be sent again.
"""

from __future__ import annotations

import http.client
import json
import select
import ssl
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Mapping, Optional, Union

from .errors import APIError, TransportError, error_from_response

#: Methods that may be sent twice without changing what they do.
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: Answer statuses after which an idempotent request is retried.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: The longest wait between two attempts, whatever Retry-After says; a longer
#: Retry-After is not waited for: the error is raised.
MAX_RETRY_WAIT = 30.0
#: The first backoff; it doubles with each attempt.
BASE_BACKOFF = 0.25
#: Idle connections kept for reuse.
MAX_IDLE = 8

Body = Union[bytes, None]


class Response:
    """A 2xx answer whose body was read whole."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body decoded as JSON (None when empty)."""
        if not self.body:
            return None
        return json.loads(self.body.decode("utf-8"))


class _NotSent(Exception):
    """A failure before any byte of the request was sent."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class Transport:
    """Sends the API's requests to one server, reusing connections; safe for
    use from several threads."""

    def __init__(self, base_url: str, api_key: Optional[str], timeout: Optional[float],
                 retries: int, user_agent: str) -> None:
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https"):
            raise ValueError(f"crucible: base_url {base_url!r} must start with http:// or https://")
        if not u.hostname:
            raise ValueError(f"crucible: base_url {base_url!r} has no host")
        if u.query or u.fragment or u.username or u.password:
            raise ValueError(f"crucible: base_url {base_url!r} must not have user info, a query or a fragment")
        if retries < 0:
            raise ValueError("crucible: retries must be at least 0")
        self.base_url = urllib.parse.urlunsplit((u.scheme, u.netloc, u.path.rstrip("/"), "", ""))
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port or (443 if u.scheme == "https" else 80)
        self._prefix = u.path.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self._ua = user_agent
        self._idle: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        #: Sleeps between attempts; tests may replace it.
        self.sleep = time.sleep

    # -- connections ---------------------------------------------------------

    def _new_conn(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _get_conn(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        """A connected connection, an idle one if there is one the server did
        not close. A failure to connect raises _NotSent: nothing was sent."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                break
            if _dropped(conn):  # the server closed it while idle: never send on it
                conn.close()
                continue
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            return conn
        conn = self._new_conn(timeout)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise _NotSent(e) from e
        return conn

    def _put_conn(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    # -- requests ------------------------------------------------------------

    def url_path(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        """The request target of API path ``path`` with ``query``."""
        target = self._prefix + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                target += "?" + urllib.parse.urlencode(q)
        return target

    def headers(self, extra: Optional[Mapping[str, str]] = None,
                content_type: Optional[str] = None) -> Dict[str, str]:
        """The header fields of a request: authentication (Bearer, as the Go
        SDK sends it), the user agent and ``extra``."""
        h = {"User-Agent": self._ua, "Accept-Encoding": "identity"}
        if self._api_key:
            h["Authorization"] = "Bearer " + self._api_key
        if content_type:
            h["Content-Type"] = content_type
        if extra:
            h.update(extra)
        return h

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                body: Body = None, content_type: Optional[str] = None,
                headers: Optional[Mapping[str, str]] = None,
                timeout: Union[float, None, bool] = False) -> Response:
        """Send a request and read its answer whole; a non-2xx answer raises
        its APIError. ``timeout`` False means the client's."""
        resp = self._send(method, path, query, body, content_type, headers, timeout, stream=False)
        assert isinstance(resp, Response)
        return resp

    def open_stream(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                    body: Body = None, content_type: Optional[str] = None,
                    headers: Optional[Mapping[str, str]] = None,
                    timeout: Union[float, None, bool] = False) -> http.client.HTTPResponse:
        """Send a request and return its 2xx answer unread, on a connection of
        its own (closed with the answer)."""
        resp = self._send(method, path, query, body, content_type, headers, timeout, stream=True)
        assert isinstance(resp, http.client.HTTPResponse)
        return resp

    def _send(self, method: str, path: str, query: Optional[Mapping[str, Any]], body: Body,
              content_type: Optional[str], headers: Optional[Mapping[str, str]],
              timeout: Union[float, None, bool], stream: bool) -> Union[Response, http.client.HTTPResponse]:
        to = self.timeout if timeout is False else timeout
        target = self.url_path(path, query)
        hdrs = self.headers(headers, content_type)
        idempotent = method in IDEMPOTENT
        attempt = 0
        while True:
            try:
                return self._attempt(method, target, body, hdrs, to, stream)
            except _NotSent as e:
                err: BaseException = e.cause
                sent = False
                wait = None
            except _Sent as e:
                err, sent, wait = e.cause, True, None
                if not idempotent:
                    raise TransportError(f"crucible: {method} {path}: {err} (the request was sent: "
                                         f"not retried, since it may have been carried out)",
                                         method=method, path=path, sent=True, cause=err) from err
            except APIError as e:
                if not idempotent or e.status not in RETRY_STATUSES or attempt >= self.retries:
                    raise
                wait = e.retry_after
                if wait is not None and wait > MAX_RETRY_WAIT:
                    raise
                err, sent = e, True
            if attempt >= self.retries:
                raise TransportError(f"crucible: {method} {path}: {err}", method=method, path=path,
                                     sent=sent, cause=err) from err
            self.sleep(wait if wait is not None else min(MAX_RETRY_WAIT, BASE_BACKOFF * (2 ** attempt)))
            attempt += 1

    def _attempt(self, method: str, target: str, body: Body, hdrs: Dict[str, str],
                 timeout: Optional[float], stream: bool) -> Union[Response, http.client.HTTPResponse]:
        conn = self._get_conn(timeout)
        try:
            conn.request(method, target, body=body, headers=hdrs)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise _Sent(e) from e
        if not 200 <= resp.status <= 299:
            try:
                data = resp.read(64 << 10)
            except (OSError, http.client.HTTPException):
                data = b""
            conn.close()
            raise error_from_response(resp.status, data, resp.getheader("Retry-After"), resp.reason)
        if stream:
            return _owned(resp, conn)
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise _Sent(e) from e
        if resp.will_close:
            conn.close()
        else:
            self._put_conn(conn)
        return Response(resp.status, resp.msg, data)


class _Sent(Exception):
    """A failure after the request was (perhaps partly) sent."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _owned(resp: http.client.HTTPResponse, conn: http.client.HTTPConnection) -> http.client.HTTPResponse:
    """Make closing a streamed answer close its connection too."""
    orig = resp.close

    def close() -> None:
        orig()
        conn.close()

    setattr(resp, "close", close)
    return resp


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """Whether an idle connection was closed by the server (or has unread
    data, which would confuse the next answer): it is then readable."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        r, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(r)

