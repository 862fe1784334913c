"""A TCP proxy the tests put between the SDK and a server, to cut
connections where they choose and to count the requests that pass."""

from __future__ import annotations

import socket
import threading
from typing import Callable, List, Optional, Tuple


class Conn:
    """One proxied connection: the request head the client sent."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        self.method = parts[0] if parts else ""
        self.target = parts[1] if len(parts) > 1 else ""

    def header(self, name: str) -> Optional[str]:
        """The value of the request's header field ``name``, or None."""
        for line in self.head.split(b"\r\n")[1:]:
            k, _, v = line.decode("latin-1").partition(":")
            if k.strip().lower() == name.lower():
                return v.strip()
        return None


#: A policy decides, for a connection and the answer bytes received so far
#: (including a new chunk), where to cut the connection: None to go on, or
#: the offset in those bytes up to which the client gets them before the cut.
CutPolicy = Callable[[Conn, bytes], Optional[int]]


def event_end(stream: bytes, name: bytes, n: int) -> Optional[int]:
    """The offset just past the n-th event called ``name`` in the SSE bytes
    ``stream`` (the blank line that ends it included), or None if it has not
    fully come."""
    at = 0
    for _ in range(n):
        i = stream.find(b"event: " + name + b"\n", at)
        if i < 0:
            return None
        at = i + 1
    end = stream.find(b"\n\n", at)
    return None if end < 0 else end + 2


class Proxy:
    """Relays connections to ``upstream`` (host, port), one request per
    connection (it asks for Connection: close), calling ``cut`` on each
    chunk of the answer; ``before_upstream(conn)`` may delay or refuse
    (return False: close without answering, after reading the request)."""

    def __init__(self, upstream: Tuple[str, int], cut: Optional[CutPolicy] = None,
                 before_upstream: Optional[Callable[[Conn], bool]] = None,
                 drop_answer: Optional[Callable[[Conn], bool]] = None) -> None:
        self.upstream = upstream
        self.cut = cut
        self.before_upstream = before_upstream
        self.drop_answer = drop_answer
        self.conns: List[Conn] = []
        self._lock = threading.Lock()
        self._ls = socket.socket()
        self._ls.bind(("127.0.0.1", 0))
        self._ls.listen(16)
        self.port = self._ls.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        """Stop accepting."""
        self._closed = True
        self._ls.close()

    def requests(self, method: str, contains: str = "") -> List[Conn]:
        """The requests seen of ``method`` whose target contains ``contains``."""
        with self._lock:
            return [c for c in self.conns if c.method == method and contains in c.target]

    def _accept(self) -> None:
        while not self._closed:
            try:
                s, _ = self._ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, cs: socket.socket) -> None:
        try:
            head, rest = _read_head(cs)
            if head is None:
                return
            head = _force_close(head)
            conn = Conn(head)
            body = _read_body(cs, head, rest)
            with self._lock:
                self.conns.append(conn)
            if self.before_upstream and not self.before_upstream(conn):
                return
            us = socket.create_connection(self.upstream)
            try:
                us.sendall(head + body)
                if self.drop_answer and self.drop_answer(conn):
                    us.recv(1)  # the server received it and answers: wait for its first byte
                    return
                relayed = b""
                while True:
                    chunk = us.recv(65536)
                    if not chunk:
                        return
                    sent = len(relayed)
                    relayed += chunk
                    at = self.cut(conn, relayed) if self.cut else None
                    if at is not None:
                        if at > sent:
                            cs.sendall(relayed[sent:at])
                        return
                    cs.sendall(chunk)
            finally:
                us.close()
        except OSError:
            pass
        finally:
            cs.close()


def _read_head(s: socket.socket) -> Tuple[Optional[bytes], bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return None, b""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _read_body(s: socket.socket, head: bytes, rest: bytes) -> bytes:
    n = int(Conn(head).header("Content-Length") or 0)
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return rest


def _force_close(head: bytes) -> bytes:
    lines = [l for l in head.split(b"\r\n") if l and not l.lower().startswith(b"connection:")]
    return b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n"
