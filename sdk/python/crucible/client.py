"""The Crucible client: runs, run records, images, sessions, analyses and
agent runs over Crucible's HTTP API."""

from __future__ import annotations

import json
import mimetypes
import os
import urllib.parse
import uuid
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from ._http import Transport
from ._stream import follow
from .agents import AgentRunHandle
from .analyses import Analysis
from .events import AgentRun, Output, RunEvent, RunFinished, RunStarted
from .sessions import Session, escape_path
from .types import ImageList, Limits, RunList, RunRecord, RunResult, SessionInfo, encode_data

if TYPE_CHECKING:
    from .tool import CrucibleTool

__all__ = ["Client", "DEFAULT_TIMEOUT", "DEFAULT_RETRIES"]

#: Seconds a request may wait for the server's next bytes (not the whole
#: request): runs and cells get their wall-time limit on top.
DEFAULT_TIMEOUT = 120.0
#: Retries of an idempotent request (GET, PUT, DELETE) after a connection
#: failure or a 429/502/503/504, and of any request whose connection failed
#: before it was sent.
DEFAULT_RETRIES = 2

FilesArg = Union[Mapping[str, Union[bytes, str]], Sequence[Mapping[str, Any]], None]
LimitsArg = Union[Limits, Mapping[str, int], None]


def _version() -> str:
    from . import __version__
    return __version__


class Client:
    """A client of one Crucible server.

    >>> from crucible import Client
    >>> client = Client()              # CRUCIBLE_URL and CRUCIBLE_API_KEY
    >>> print(client.run("print(6 * 7)").stdout)
    42

    ``base_url`` defaults to the environment's ``CRUCIBLE_URL`` (else
    ``http://127.0.0.1:8080``), ``api_key`` to ``CRUCIBLE_API_KEY``, sent as
    ``Authorization: Bearer <key>``. ``timeout`` is how long (seconds) to wait
    for the server's next bytes, None for ever. ``retries`` bounds the
    retries of the transport (see :mod:`crucible._http`: a request that may
    have been carried out is never sent again). A Client is safe to share
    between threads; :meth:`close` closes its idle connections.
    """

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES) -> None:
        base_url = base_url or os.environ.get("CRUCIBLE_URL") or "http://127.0.0.1:8080"
        if api_key is None:
            api_key = os.environ.get("CRUCIBLE_API_KEY") or None
        self._t = Transport(base_url, api_key, timeout, retries, f"crucible-python/{_version()}")
        #: The server's base URL, without a trailing slash.
        self.base_url = self._t.base_url

    def close(self) -> None:
        """Close the client's idle connections."""
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _long_timeout(self, wall_ms: Optional[int]) -> Optional[float]:
        """The read timeout of a request that waits for a program: the client's
        plus the program's wall time."""
        if self._t.timeout is None:
            return None
        return self._t.timeout + (wall_ms or 0) / 1000.0

    def _artifact(self, run_id: str, name: str) -> bytes:
        return self.artifact(run_id, name)

    # -- runs ------------------------------------------------------------------

    def run(self, code: str, language: str = "python", *, image: Optional[str] = None, files: FilesArg = None,
            stdin: Union[bytes, str, None] = None, limits: LimitsArg = None,
            policy: Union[str, Mapping[str, Any], None] = None,
            network: Union[str, Sequence[str], Mapping[str, Any], None] = None,
            env: Optional[Mapping[str, str]] = None, cache: bool = False) -> RunResult:
        """Run ``code`` in a fresh sandbox and return its result.

        ``files`` maps names (relative paths) to contents (bytes or text), or is
        a list of the API's file objects (``{"name", "content", "executable",
        "read_only"}``). ``limits`` is a :class:`~crucible.types.Limits` or a dict
        of the API's limit fields (``{"memory_bytes": ...}``). ``policy`` is a
        code-policy mode (``"warn"``, ``"block"``) or ``{"mode", "preset"}``.
        ``network`` is a list of destinations to allow (``["example.org"]``),
        ``"none"``, or ``{"allow", "max_connections", "max_bytes"}``.
        ``cache=True`` lets the server answer from its result cache.

        A program that fails returns a result (``status`` "error", "timeout",
        ...); a request the server refuses raises an APIError subclass, such
        as ValidationError naming the field.
        """
        body = _run_body(code, language, image, files, stdin, limits, policy, network, env)
        q = {"cache": "1"} if cache else None
        doc = self._t.request("POST", "/v1/runs", query=q, body=body, content_type="application/json",
                              timeout=self._long_timeout(_wall(limits))).json()
        return RunResult.from_json(doc, self._artifact)

    def run_async(self, code: str, language: str = "python", **kw: Any) -> str:
        """Queue a run (same arguments as :meth:`run`) and return its ID at once;
        follow it with :meth:`follow_run` or read it with :meth:`get_run`."""
        cache = kw.pop("cache", False)
        body = _run_body(code, language, kw.pop("image", None), kw.pop("files", None), kw.pop("stdin", None),
                         kw.pop("limits", None), kw.pop("policy", None), kw.pop("network", None), kw.pop("env", None))
        if kw:
            raise TypeError(f"run_async() got unexpected keyword arguments {sorted(kw)}")
        q = {"async": "1"}
        if cache:
            q["cache"] = "1"
        doc = self._t.request("POST", "/v1/runs", query=q, body=body, content_type="application/json").json()
        if not doc or not doc.get("id"):
            raise ValueError("crucible: POST /v1/runs?async=1: the answer has no run id")
        return str(doc["id"])

    def stream_run(self, code: str, language: str = "python", **kw: Any) -> Iterator[RunEvent]:
        """Run ``code`` (same arguments as :meth:`run`), yielding
        :class:`~crucible.events.RunStarted` with its ID, then
        :class:`~crucible.events.Output` chunks as the program writes them, then
        :class:`~crucible.events.RunFinished` with the result.

        The run is queued (``?async=1``) and followed (``GET
        /v1/runs/{id}/events``), so that it outlives a dropped connection: the
        stream is resumed with Last-Event-ID (at once, then after the server's
        ``retry:``, at most 3 times in a row without a new event), and each
        byte of output is yielded once, in order. The run is queued when the
        iteration starts (a refused request raises then).
        """
        run_id = self.run_async(code, language, **kw)
        yield RunStarted(run_id)
        yield from self._follow(run_id, skip_run=True)

    def follow_run(self, run_id: str) -> Iterator[RunEvent]:
        """Follow run ``run_id`` until it ends, as :meth:`stream_run` does: live
        for a queued or running run, replayed from the record for one that ended."""
        return self._follow(run_id, skip_run=False)

    def _follow(self, run_id: str, skip_run: bool) -> Iterator[RunEvent]:
        path = "/v1/runs/" + urllib.parse.quote(run_id, safe="") + "/events"
        for ev in follow(self._t, "GET", path, resumable=True, run_result=True):
            if ev.name in ("stdout", "stderr"):
                yield Output(ev.name, ev.data)
            elif ev.name == "run" and not skip_run:
                yield RunStarted(str((ev.data or {}).get("id", run_id)))
            elif ev.name == "result":
                yield RunFinished(RunResult.from_json(ev.data, self._artifact))

    def get_run(self, run_id: str) -> RunRecord:
        """The record of run ``run_id``; NotFoundError for an unknown ID (or
        another tenant's)."""
        doc = self._t.request("GET", "/v1/runs/" + urllib.parse.quote(run_id, safe="")).json()
        return RunRecord.from_json(doc, self._artifact)

    def list_runs(self, *, status: Optional[str] = None, language: Optional[str] = None,
                  session: Optional[str] = None, agent_run: Optional[str] = None, since: Optional[str] = None,
                  limit: Optional[int] = None, cursor: Optional[str] = None) -> RunList:
        """One page of the tenant's runs, newest first, filtered; pass
        ``cursor=page.next`` for the next page. ``since`` is RFC 3339."""
        q = {"status": status, "language": language, "session": session, "agent_run": agent_run,
             "since": since, "limit": limit, "cursor": cursor}
        doc = self._t.request("GET", "/v1/runs", query=q).json() or {}
        return RunList(runs=[RunRecord.from_json(r, self._artifact) for r in doc.get("runs") or []],
                       next=doc.get("next", "") or "")

    def artifact(self, run_id: str, name: str) -> bytes:
        """The bytes of the artifact ``name`` of run ``run_id``."""
        path = "/v1/runs/" + urllib.parse.quote(run_id, safe="") + "/artifacts/" + escape_path(name)
        return self._t.request("GET", path).body

    def images(self) -> ImageList:
        """The images the server offers, the default of runs first."""
        return ImageList.from_json(self._t.request("GET", "/v1/images").json())

    # -- sessions --------------------------------------------------------------

    def session(self, image: Optional[str] = None, *, language: str = "python", files: FilesArg = None,
                limits: LimitsArg = None, env: Optional[Mapping[str, str]] = None,
                policy: Union[str, Mapping[str, Any], None] = None) -> Session:
        """Open a session (a Python interpreter whose variables and files
        persist); use it as a context manager to close it on exit. The image
        defaults to the server's session default (``datascience`` when built)."""
        body: Dict[str, Any] = {"language": language}
        if image:
            body["image"] = image
        if files:
            body["files"] = _files(files)
        if limits:
            body["limits"] = _limits(limits)
        if env:
            body["env"] = dict(env)
        if policy:
            body["policy"] = policy
        doc = self._t.request("POST", "/v1/sessions", body=json.dumps(body).encode(),
                              content_type="application/json").json()
        return Session(self, doc["id"], (doc.get("limits") or {}).get("wall_time_ms"))

    def attach_session(self, session_id: str) -> Session:
        """A handle on an existing session of the tenant (no request is sent)."""
        return Session(self, session_id)

    def list_sessions(self) -> List[SessionInfo]:
        """The tenant's open sessions, newest first."""
        doc = self._t.request("GET", "/v1/sessions").json() or {}
        return [SessionInfo.from_json(s) for s in doc.get("sessions") or []]

    # -- analyses --------------------------------------------------------------

    def analyze(self, datasets: Union[Sequence[Union[str, "os.PathLike[str]"]], Mapping[str, Union[bytes, str]]], *,
                image: Optional[str] = None, limits: LimitsArg = None) -> Analysis:
        """Create a data analysis from files (paths) or ``{name: content}``,
        uploaded as multipart/form-data; returns once they are loaded and
        profiled. Ask it questions with :meth:`Analysis.ask`."""
        parts: List[Tuple[str, bytes]] = []
        if isinstance(datasets, Mapping):
            for name, content in datasets.items():
                parts.append((name, content.encode("utf-8") if isinstance(content, str) else bytes(content)))
        else:
            for p in datasets:
                with open(p, "rb") as f:
                    parts.append((os.path.basename(os.fspath(p)), f.read()))
        fields: List[Tuple[str, str]] = []
        if image:
            fields.append(("image", image))
        if limits:
            fields.append(("limits", json.dumps(_limits(limits))))
        body, ctype = multipart(fields, [("datasets", n, c) for n, c in parts])
        doc = self._t.request("POST", "/v1/analyses", body=body, content_type=ctype).json()
        return Analysis(self, doc)

    def get_analysis(self, analysis_id: str) -> Analysis:
        """The analysis ``analysis_id`` of the tenant."""
        return Analysis(self, self._t.request("GET", "/v1/analyses/" + urllib.parse.quote(analysis_id, safe="")).json())

    # -- agent runs ------------------------------------------------------------

    def agent_run(self, task: str, *, approve: bool = False, files: FilesArg = None, image: Optional[str] = None,
                  text_mode: bool = False, max_retries: Optional[int] = None, max_tokens: Optional[int] = None,
                  max_exec_ms: Optional[int] = None, cell_timeout_ms: Optional[int] = None,
                  max_artifact_bytes: Optional[int] = None, limits: LimitsArg = None) -> AgentRunHandle:
        """Start the server's code agent on ``task`` and return a handle at
        once. With ``approve=True`` each program waits for :meth:`AgentRunHandle.approve`."""
        body: Dict[str, Any] = {"task": task}
        if approve:
            body["approve"] = True
        if files:
            body["files"] = _files(files)
        if image:
            body["image"] = image
        if text_mode:
            body["text_mode"] = True
        for k, v in (("max_retries", max_retries), ("max_tokens", max_tokens), ("max_exec_ms", max_exec_ms),
                     ("cell_timeout_ms", cell_timeout_ms), ("max_artifact_bytes", max_artifact_bytes)):
            if v is not None:
                body[k] = v
        if limits:
            body["limits"] = _limits(limits)
        doc = self._t.request("POST", "/v1/agent-runs", body=json.dumps(body).encode(),
                              content_type="application/json").json()
        return AgentRunHandle(self, AgentRun.from_json(doc))

    def get_agent_run(self, run_id: str) -> AgentRunHandle:
        """A handle on agent run ``run_id``, as it is now."""
        doc = self._t.request("GET", "/v1/agent-runs/" + urllib.parse.quote(run_id, safe="")).json()
        return AgentRunHandle(self, AgentRun.from_json(doc))

    # -- tools for models ------------------------------------------------------

    def as_openai_tool(self, *, image: Optional[str] = None, name: str = "run_python",
                       description: Optional[str] = None) -> "CrucibleTool":
        """A tool for a model (OpenAI function calling or any framework taking a
        JSON schema): ``.definition`` for ``tools=[...]``, ``.call(arguments)``
        runs the code in a session the tool keeps (variables persist), and
        ``.close()`` ends that session."""
        from .tool import CrucibleTool
        return CrucibleTool(self, image=image, name=name, description=description)


def _wall(limits: LimitsArg) -> Optional[int]:
    if limits is None:
        return None
    return _limits(limits).get("wall_time_ms")


def _limits(limits: Union[Limits, Mapping[str, int]]) -> Dict[str, Any]:
    return limits.to_json() if isinstance(limits, Limits) else dict(limits)


def _files(files: Union[Mapping[str, Union[bytes, str]], Sequence[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    if isinstance(files, Mapping):
        return [{"name": n, "content": encode_data(c)} for n, c in files.items()]
    out = []
    for f in files:
        d = dict(f)
        if isinstance(d.get("content"), (bytes, bytearray)):
            d["content"] = encode_data(d["content"])
        out.append(d)
    return out


def _run_body(code: str, language: str, image: Optional[str], files: FilesArg, stdin: Union[bytes, str, None],
              limits: LimitsArg, policy: Any, network: Any, env: Optional[Mapping[str, str]]) -> bytes:
    """The JSON body of POST /v1/runs."""
    body: Dict[str, Any] = {"language": language, "code": code}
    if image:
        body["image"] = image
    if files:
        body["files"] = _files(files)
    if stdin is not None:
        body["stdin"] = encode_data(stdin)
    if limits:
        body["limits"] = _limits(limits)
    if policy:
        body["policy"] = policy
    if network is not None:
        if isinstance(network, str) or isinstance(network, Mapping):
            body["network"] = network if isinstance(network, str) else dict(network)
        else:
            body["network"] = {"allow": list(network)}
    if env:
        body["env"] = dict(env)
    return json.dumps(body).encode("utf-8")


def multipart(fields: Sequence[Tuple[str, str]], files: Sequence[Tuple[str, str, bytes]]) -> Tuple[bytes, str]:
    """Encode a multipart/form-data body of ``fields`` ((name, value)) and
    ``files`` ((field, filename, bytes)); returns the body and its Content-Type."""
    boundary = "crucible-" + uuid.uuid4().hex
    out = bytearray()
    for name, value in fields:
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{_q(name)}"\r\n\r\n'.encode()
        out += value.encode("utf-8") + b"\r\n"
    for fld, filename, content in files:
        ctype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        out += (f'--{boundary}\r\nContent-Disposition: form-data; name="{_q(fld)}"; filename="{_q(filename)}"\r\n'
                f"Content-Type: {ctype}\r\n\r\n").encode("utf-8")
        out += content + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), "multipart/form-data; boundary=" + boundary


def _q(s: str) -> str:
    """Quote a name for a Content-Disposition parameter (as Go's multipart does)."""
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "%0D").replace("\n", "%0A")
