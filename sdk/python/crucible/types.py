"""The typed answers of the API: runs and their results, artifacts, metrics,
sessions' files, images, agent runs and their events, analyses' answers.

Each type keeps the JSON it was decoded from in ``raw``, so fields of later
server versions stay reachable.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

__all__ = [
    "Limits", "ExecError", "Metrics", "Artifact", "Display", "RunResult", "RunRecord",
    "RunList", "FileInfo", "Image", "ImageList", "SessionInfo",
    "decode_data", "encode_data",
]


def decode_data(v: Any) -> bytes:
    """Decode the API's Data: a JSON string (UTF-8 text), ``{"base64": ...}``
    (bytes that are not UTF-8) or null."""
    if v is None:
        return b""
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, dict) and isinstance(v.get("base64"), str):
        return base64.b64decode(v["base64"])
    raise ValueError('expected a string or {"base64": "..."}')


def encode_data(v: Union[bytes, bytearray, str]) -> Any:
    """Encode bytes or text as the API's Data: a string when UTF-8, else
    ``{"base64": ...}``."""
    if isinstance(v, str):
        return v
    b = bytes(v)
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode("ascii")}


@dataclass
class Limits:
    """A run's or a session's resource limits; a field left None takes the
    server's default. Sizes are in bytes, times in milliseconds."""

    wall_time_ms: Optional[int] = None
    cpu_time_ms: Optional[int] = None
    memory_bytes: Optional[int] = None
    processes: Optional[int] = None
    output_bytes: Optional[int] = None
    disk_bytes: Optional[int] = None
    file_size_bytes: Optional[int] = None
    open_files: Optional[int] = None
    artifact_bytes: Optional[int] = None

    def to_json(self) -> Dict[str, int]:
        """The JSON object of the limits that are set."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, Any]]) -> "Limits":
        """Decode the API's limits object (unknown fields are ignored)."""
        d = d or {}
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class ExecError:
    """The error a failed program raised, as the server parsed it."""

    type: str
    message: str
    line: int = 0
    column: int = 0
    traceback: str = ""
    #: A suggestion for fixing it (for example, a module the image lacks), or "".
    hint: str = ""

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, Any]]) -> Optional["ExecError"]:
        """Decode the API's error object; None for None."""
        if not d:
            return None
        return cls(type=d.get("type", ""), message=d.get("message", ""), line=d.get("line", 0) or 0,
                   column=d.get("column", 0) or 0, traceback=d.get("traceback", "") or "",
                   hint=d.get("hint", "") or "")


@dataclass
class Metrics:
    """What a run cost: wall and CPU time, peak memory, time queued and time to start."""

    wall_ms: float = 0.0
    cpu_ms: float = 0.0
    peak_memory_bytes: int = 0
    queue_ms: float = 0.0
    start_ms: float = 0.0

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, Any]]) -> "Metrics":
        """Decode the API's metrics object."""
        d = d or {}
        return cls(wall_ms=d.get("wall_ms", 0.0), cpu_ms=d.get("cpu_ms", 0.0),
                   peak_memory_bytes=d.get("peak_memory_bytes", 0), queue_ms=d.get("queue_ms", 0.0),
                   start_ms=d.get("start_ms", 0.0))


@dataclass
class Artifact:
    """A file a run left in its working directory (or a chart an answer made).
    Its bytes come on demand: :meth:`read`."""

    name: str
    mime: str = ""
    size: int = 0
    sha256: str = ""
    #: Why the server withheld the content (it holds a secret and is not text), or "".
    withheld: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)
    _content: Optional[bytes] = field(default=None, repr=False)
    _fetch: Optional[Callable[[], bytes]] = field(default=None, repr=False, compare=False)

    @property
    def is_png(self) -> bool:
        """Whether the artifact is a PNG image (a chart)."""
        return self.mime.split(";")[0].strip() == "image/png"

    def read(self) -> bytes:
        """The artifact's bytes: those that came with the answer, else
        downloaded from the server (and kept)."""
        if self._content is None:
            fetch = self._fetch
            if fetch is None:
                raise ValueError(f"crucible: the content of artifact {self.name!r} is not available")
            self._content = fetch()
        return self._content

    @classmethod
    def from_json(cls, d: Mapping[str, Any], fetch: Optional[Callable[[str], bytes]] = None) -> "Artifact":
        """Decode the API's artifact object; ``fetch(name)`` downloads its bytes."""
        content = None
        if d.get("content") is not None and not d.get("content_omitted"):
            content = decode_data(d["content"])
        name = d.get("name", "")
        return cls(name=name, mime=d.get("mime", ""), size=d.get("size", 0), sha256=d.get("sha256", ""),
                   withheld=d.get("withheld", "") or "", raw=dict(d), _content=content,
                   _fetch=_bind(fetch, name))


def _bind(fetch: Optional[Callable[[str], bytes]], name: str) -> Optional[Callable[[], bytes]]:
    """``fetch`` of ``name``, as a function of nothing; None for None."""
    if fetch is None:
        return None
    return functools.partial(fetch, name)


@dataclass
class Display:
    """A rich output of a session cell (``display(...)``): its media type, its
    data (PNG bytes for image/png) and a text form."""

    mime: str
    data: bytes = b""
    text: str = ""
    omitted: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Display":
        """Decode the API's display object."""
        return cls(mime=d.get("mime", ""), data=decode_data(d.get("data")), text=d.get("text", "") or "",
                   omitted=d.get("omitted", "") or "")


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


@dataclass
class RunResult:
    """The result of a run or of a session cell: how it ended, its output,
    error, artifacts and metrics. A program that failed is a result with a
    ``status`` other than ``"ok"``, not an exception."""

    #: The ID of the run's record (GET /v1/runs/{id}).
    id: str
    #: ok, error, timeout, cpu_limit, memory_limit, output_limit, killed, blocked or internal.
    status: str
    exit_code: int
    stdout_bytes: bytes
    stderr_bytes: bytes
    error: Optional[ExecError]
    artifacts: List[Artifact]
    metrics: Metrics
    language: str = ""
    image: str = ""
    cache_hit: bool = False
    #: Why the run ended so, for a status other than ok and error.
    reason: str = ""
    signal: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    #: The repr of a session cell's last expression, or "".
    value: str = ""
    displays: List[Display] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def stdout(self) -> str:
        """The standard output as text (invalid UTF-8 replaced)."""
        return _text(self.stdout_bytes)

    @property
    def stderr(self) -> str:
        """The standard error as text (invalid UTF-8 replaced)."""
        return _text(self.stderr_bytes)

    @property
    def ok(self) -> bool:
        """Whether the program ran to the end and exited 0."""
        return self.status == "ok"

    @property
    def charts(self) -> List[bytes]:
        """The PNG images the run made: its PNG artifacts (figures saved, or
        left open in a session) and PNG displays, as bytes."""
        out = [a.read() for a in self.artifacts if a.is_png and not a.withheld]
        out += [d.data for d in self.displays if d.mime == "image/png" and d.data]
        return out

    def artifact(self, name: str) -> Artifact:
        """The artifact called ``name``; KeyError if there is none."""
        for a in self.artifacts:
            if a.name == name:
                return a
        raise KeyError(name)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], fetch: Optional[Callable[[str, str], bytes]] = None) -> "RunResult":
        """Decode the API's RunResponse (or a session cell's Result);
        ``fetch(run_id, name)`` downloads an artifact."""
        rid = d.get("id", "") or ""
        f = (lambda name: fetch(rid, name)) if fetch and rid else None
        return cls(
            id=rid, status=d.get("status", ""), exit_code=d.get("exit_code", 0),
            stdout_bytes=decode_data(d.get("stdout")), stderr_bytes=decode_data(d.get("stderr")),
            error=ExecError.from_json(d.get("error")),
            artifacts=[Artifact.from_json(a, f) for a in d.get("artifacts") or []],
            metrics=Metrics.from_json(d.get("metrics")), language=d.get("language", "") or "",
            image=d.get("image", "") or "", cache_hit=bool(d.get("cache_hit")),
            reason=d.get("reason", "") or "", signal=d.get("signal", "") or "",
            stdout_truncated=bool(d.get("stdout_truncated")), stderr_truncated=bool(d.get("stderr_truncated")),
            value=d.get("value", "") or "", displays=[Display.from_json(x) for x in d.get("displays") or []],
            limits=Limits.from_json(d.get("limits")), raw=dict(d))


@dataclass
class RunRecord(RunResult):
    """A run's stored record (GET /v1/runs/{id}): its result plus the code,
    tenant, times, links to a session or an agent run, and in cluster mode
    the node that executed it. Artifacts come
    without content: :meth:`Artifact.read` downloads them."""

    code: str = ""
    tenant: str = ""
    session_id: str = ""
    agent_run: str = ""
    node: str = ""
    created_at: str = ""
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    redactions: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any], fetch: Optional[Callable[[str, str], bytes]] = None) -> "RunRecord":
        """Decode the API's Run."""
        base = RunResult.from_json(d, fetch)
        kw = {f.name: getattr(base, f.name) for f in dataclasses.fields(RunResult)}
        return cls(**kw, code=d.get("code", "") or "", tenant=d.get("tenant", "") or "",
                   session_id=d.get("session_id", "") or "", agent_run=d.get("agent_run", "") or "",
                   node=d.get("node", "") or "", created_at=d.get("created_at", "") or "", started_at=d.get("started_at"),
                   finished_at=d.get("finished_at"), redactions=d.get("redactions", 0) or 0)


@dataclass
class RunList:
    """One page of run records, newest first; ``next`` continues the listing
    (``list_runs(cursor=page.next)``), "" after the last page."""

    runs: List[RunRecord]
    next: str = ""


@dataclass
class FileInfo:
    """A file or directory of a session's working directory."""

    name: str
    size: int = 0
    dir: bool = False
    mod_time: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "FileInfo":
        """Decode the API's FileInfo."""
        return cls(name=d.get("name", ""), size=d.get("size", 0), dir=bool(d.get("dir")),
                   mod_time=d.get("mod_time", "") or "")


@dataclass
class Image:
    """An image the server offers."""

    name: str
    digest: str = ""


@dataclass
class ImageList:
    """The images the server offers: ``default`` for runs, ``session_default``
    for sessions and analyses."""

    default: str
    session_default: str
    images: List[Image]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ImageList":
        """Decode the API's ImageList."""
        return cls(default=d.get("default", ""), session_default=d.get("session_default", "") or "",
                   images=[Image(name=i.get("name", ""), digest=i.get("digest", "") or "")
                           for i in d.get("images") or []])


@dataclass
class SessionInfo:
    """An open session: its image, limits and how much it was used."""

    id: str
    language: str = ""
    image: str = ""
    cells: int = 0
    restarts: int = 0
    limits: Limits = field(default_factory=Limits)
    created_at: str = ""
    last_used_at: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "SessionInfo":
        """Decode the API's SessionInfo."""
        return cls(id=d.get("id", ""), language=d.get("language", ""), image=d.get("image", ""),
                   cells=d.get("cells", 0), restarts=d.get("restarts", 0), limits=Limits.from_json(d.get("limits")),
                   created_at=d.get("created_at", ""), last_used_at=d.get("last_used_at", ""), raw=dict(d))
