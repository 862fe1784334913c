"""Sessions: a live Python interpreter on the server whose variables and
files persist from one cell to the next."""

from __future__ import annotations

import json
import urllib.parse
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Union

from ._stream import follow
from .errors import SessionClosedError
from .events import Output, RunFinished
from .types import FileInfo, RunResult, SessionInfo

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Session", "SessionFiles", "escape_path"]


def escape_path(p: str) -> str:
    """Escape each slash-separated component of ``p`` for a URL path."""
    return "/".join(urllib.parse.quote(s, safe="") for s in p.split("/"))


class SessionFiles:
    """The files of a session's working directory (``session.files``)."""

    def __init__(self, session: "Session") -> None:
        self._s = session

    def write(self, path: str, data: Union[bytes, str]) -> None:
        """Create or replace the file ``path``, relative to the working
        directory (``"data/in.csv"``); text is written as UTF-8."""
        body = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self._s._client._t.request("PUT", self._s._file_path(path), body=body,
                                   content_type="application/octet-stream")

    def read(self, path: str) -> bytes:
        """The content of the file ``path``; NotFoundError if there is none."""
        return self._s._client._t.request("GET", self._s._file_path(path)).body

    def read_text(self, path: str) -> str:
        """The content of the file ``path`` as UTF-8 text."""
        return self.read(path).decode("utf-8")

    def list(self) -> List[FileInfo]:
        """The working directory's files and directories, recursively."""
        doc = self._s._client._t.request("GET", self._s._path + "/files").json() or {}
        return [FileInfo.from_json(f) for f in doc.get("files") or []]


class Session:
    """A session on the server. Create it with :meth:`Client.session`; use it
    as a context manager (closed on exit) or call :meth:`close`.

    >>> with client.session(image="datascience") as s:
    ...     s.exec("x = 6 * 7")
    ...     print(s.exec("print(x)").stdout)
    42
    """

    def __init__(self, client: "Client", session_id: str, wall_time_ms: Optional[int] = None) -> None:
        self._client = client
        # A cell may run for the session's wall-time limit: the read timeout
        # of exec waits that long on top of the client's.
        self._wall_ms = wall_time_ms
        #: The session's ID on the server.
        self.id = session_id
        self._path = "/v1/sessions/" + urllib.parse.quote(session_id, safe="")
        #: The session's files.
        self.files = SessionFiles(self)
        #: Whether :meth:`close` ended the session.
        self.closed = False

    def _file_path(self, name: str) -> str:
        return self._path + "/files/" + escape_path(name)

    def exec(self, code: str, *, timeout_ms: Optional[int] = None, context: Optional[str] = None,
             reset_context: bool = False) -> RunResult:
        """Run a cell and return its result: stdout, stderr, ``value`` (the repr
        of the last expression), ``displays``, ``charts`` (figures left open,
        as PNG bytes), ``error``. Code that fails is a result, not an exception."""
        doc = self._client._t.request("POST", self._path + "/exec",
                                      body=_cell(code, timeout_ms, context, reset_context),
                                      content_type="application/json",
                                      timeout=self._client._long_timeout(timeout_ms or self._wall_ms)).json()
        return RunResult.from_json(doc, self._client._artifact)

    def exec_stream(self, code: str, *, timeout_ms: Optional[int] = None, context: Optional[str] = None,
                    reset_context: bool = False) -> Iterator[Union[Output, RunFinished]]:
        """Run a cell, yielding its output as it comes, then its result. A
        cell's stream cannot be resumed: a dropped connection raises
        TransportError (the cell is interrupted)."""
        for ev in follow(self._client._t, "POST", self._path + "/exec", resumable=False, query={"stream": "1"},
                         body=_cell(code, timeout_ms, context, reset_context), content_type="application/json",
                         timeout=self._client._long_timeout(timeout_ms or self._wall_ms)):
            if ev.name in ("stdout", "stderr"):
                yield Output(ev.name, ev.data)
            elif ev.name == "result":
                yield RunFinished(RunResult.from_json(ev.data, self._client._artifact))

    def info(self) -> SessionInfo:
        """The session's image, limits, cells run and times."""
        return SessionInfo.from_json(self._client._t.request("GET", self._path).json())

    def close(self) -> None:
        """End the session and destroy its sandbox (DELETE). A session the
        server already closed (idle, or by another client) is not an error."""
        if self.closed:
            return
        try:
            self._client._t.request("DELETE", self._path)
        except SessionClosedError:
            pass
        self.closed = True

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Session({self.id!r})"


def _cell(code: str, timeout_ms: Optional[int], context: Optional[str], reset_context: bool) -> bytes:
    body: Dict[str, Any] = {"code": code}
    if timeout_ms:
        body["timeout_ms"] = timeout_ms
    if context:
        body["context"] = context
    if reset_context:
        body["reset_context"] = True
    return json.dumps(body).encode("utf-8")
