"""A local HTTP server for the unit tests: each request is recorded and
answered by the test's handler."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional


class Recorded:
    """A request the server received."""

    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method, self.path, self.headers, self.body = method, path, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


#: A handler answers a request: it gets the request and the raw handler
#: (to write anything, or to close the connection).
Handler = Callable[[Recorded, BaseHTTPRequestHandler], None]


class LocalServer:
    """Serves ``handler`` on a loopback port until closed."""

    def __init__(self, handler: Handler, port: int = 0) -> None:
        self.handler = handler
        self.requests: List[Recorded] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                outer.requests.append(rec)
                outer.handler(rec, self)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self.srv = ThreadingHTTPServer(("127.0.0.1", port), H)
        self.port = self.srv.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


def reply(h: BaseHTTPRequestHandler, status: int, body: Any = None, headers: Optional[Dict[str, str]] = None,
          raw: Optional[bytes] = None) -> None:
    """Answer with ``body`` as JSON (or ``raw`` bytes)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    if raw is None and body is not None:
        h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def hang_up(h: BaseHTTPRequestHandler) -> None:
    """Close the connection without answering (after reading the request)."""
    h.close_connection = True
    h.connection.shutdown(2)


RESULT = {"id": "r1", "cache_hit": False, "image": "host", "status": "ok", "exit_code": 0, "stdout": "hi\n",
          "stderr": "", "metrics": {"wall_ms": 1.5, "cpu_ms": 1.0, "peak_memory_bytes": 100, "queue_ms": 0,
                                    "start_ms": 0.1}, "language": "python", "code_hash": "x", "limits": {}}
