"""Data analyses: datasets loaded into a session, questions answered by the
server's analyst agent with text, tables (plain rows) and charts (PNG)."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional

from .agents import AgentRunHandle
from .errors import SessionClosedError
from .events import AgentEvent, AgentRun, AnswerEvent
from .sessions import escape_path
from .types import Artifact

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Analysis", "Answer", "Table", "Chart", "QuestionHandle"]


@dataclass
class Table:
    """A DataFrame an answer's code showed: its first rows as plain values."""

    columns: List[str]
    #: The first rows, each a list of JSON values (number, string, bool, None).
    rows: List[List[Any]]
    name: str = ""
    total_rows: int = 0
    total_columns: int = 0
    html: str = ""

    def records(self) -> List[Dict[str, Any]]:
        """The rows as dicts keyed by column."""
        return [dict(zip(self.columns, r)) for r in self.rows]


@dataclass
class Chart(Artifact):
    """A figure an answer's code left open, with its title; ``read()`` gives the PNG."""

    title: str = ""
    axes: List[Dict[str, str]] = field(default_factory=list)


@dataclass
class Answer:
    """The answer to a question of an analysis."""

    #: The question's number in the analysis (1, 2, ...).
    n: int
    #: answered, unverified, or how the question failed.
    status: str
    text: str
    #: The code that ran for the answer.
    code: str = ""
    output: str = ""
    tables: List[Table] = field(default_factory=list)
    charts: List[Chart] = field(default_factory=list)
    files: List[Artifact] = field(default_factory=list)
    reason: str = ""
    #: The agent run that answered, with its trace.
    run: Optional[AgentRun] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def chart_pngs(self) -> List[bytes]:
        """The charts' PNG bytes (downloaded on first use)."""
        return [c.read() for c in self.charts]


class Analysis:
    """An analysis on the server (created by :meth:`Client.analyze`); a
    context manager that deletes it on exit."""

    def __init__(self, client: "Client", doc: Mapping[str, Any]) -> None:
        self._client = client
        #: The analysis's ID.
        self.id: str = doc.get("id", "")
        #: The session holding the datasets.
        self.session_id: str = doc.get("session_id", "")
        #: The datasets' file names.
        self.datasets: List[str] = list(doc.get("datasets") or [])
        #: The profile of the datasets, as JSON.
        self.profile: Dict[str, Any] = doc.get("profile") or {}
        #: The profile as text (what the model reads).
        self.profile_text: str = doc.get("profile_text", "") or ""
        self._path = "/v1/analyses/" + urllib.parse.quote(self.id, safe="")

    def start(self, question: str, *, approve: bool = False, **budgets: Any) -> "QuestionHandle":
        """Ask ``question`` and return at once a handle on the agent run that
        answers it (its ``events()`` include an :class:`~crucible.events.AnswerEvent`;
        approve its programs as for :meth:`Client.agent_run`). Budgets:
        max_retries, max_tokens, max_exec_ms, cell_timeout_ms, max_artifact_bytes."""
        body: Dict[str, Any] = {"question": question, **{k: v for k, v in budgets.items() if v is not None}}
        if approve:
            body["approve"] = True
        doc = self._client._t.request("POST", self._path + "/questions", body=json.dumps(body).encode(),
                                      content_type="application/json").json()
        return QuestionHandle(self, doc.get("n", 0), AgentRun.from_json(doc.get("run") or {}))

    def ask_stream(self, question: str, **kw: Any) -> Iterator[AgentEvent]:
        """Ask ``question``, yielding the events of its answering as they come
        (steps, code, output, the answer event, the result)."""
        return self.start(question, **kw).events()

    def ask(self, question: str, **kw: Any) -> Answer:
        """Ask ``question``, follow it to its end and return the answer."""
        return self.start(question, **kw).answer()

    def question(self, n: int) -> Answer:
        """Question ``n`` with its answer."""
        return self._answer(self._question(n))

    def _question(self, n: int) -> Dict[str, Any]:
        doc = self._client._t.request("GET", f"{self._path}/questions/{n}").json()
        return doc if isinstance(doc, dict) else {}

    def file(self, name: str, question: Optional[int] = None) -> bytes:
        """A chart or file of an answer by its name: of ``question``, or of
        the latest answer that has one so called."""
        q = {"question": str(question)} if question else None
        return self._client._t.request("GET", self._path + "/files/" + escape_path(name), query=q).body

    def _answer(self, q: Mapping[str, Any]) -> Answer:
        n = q.get("n", 0)
        a = q.get("answer") or {}
        fetch = lambda name: self.file(name, n)  # noqa: E731
        charts = []
        for c in a.get("charts") or []:
            base = Artifact.from_json(c, fetch)
            charts.append(Chart(name=base.name, mime=base.mime, size=base.size, sha256=base.sha256,
                                withheld=base.withheld, raw=base.raw, _content=base._content, _fetch=base._fetch,
                                title=c.get("title", "") or "", axes=list(c.get("axes") or [])))
        tables = [Table(columns=list(t.get("columns") or []), rows=[list(r) for r in t.get("rows") or []],
                        name=t.get("name", "") or "", total_rows=t.get("total_rows", 0),
                        total_columns=t.get("total_columns", 0), html=t.get("html", "") or "")
                  for t in a.get("tables") or []]
        return Answer(n=n, status=a.get("status", "") or (q.get("run") or {}).get("status", ""),
                      text=a.get("text", "") or "", code=a.get("code", "") or "", output=a.get("output", "") or "",
                      tables=tables, charts=charts, files=[Artifact.from_json(f, fetch) for f in a.get("files") or []],
                      reason=a.get("reason", "") or "", run=AgentRun.from_json(q["run"]) if q.get("run") else None,
                      raw=dict(q))

    def close(self) -> None:
        """Delete the analysis: a question being answered is cancelled, its session closed."""
        try:
            self._client._t.request("DELETE", self._path)
        except SessionClosedError:
            pass

    def __enter__(self) -> "Analysis":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Analysis({self.id!r}, datasets={self.datasets!r})"


class QuestionHandle(AgentRunHandle):
    """A question being answered (:meth:`Analysis.start`): an agent run whose
    events, approvals and end are followed as :class:`AgentRunHandle`'s;
    :meth:`answer` waits for its answer. A question is cancelled by closing
    its analysis."""

    def __init__(self, analysis: Analysis, n: int, run: AgentRun) -> None:
        super().__init__(analysis._client, run, path=f"{analysis._path}/questions/{n}")
        self._analysis = analysis
        self._answer_doc: Optional[Dict[str, Any]] = None
        #: The question's number in the analysis.
        self.n = n

    def events(self) -> Iterator[AgentEvent]:
        """Follow the question until it ends, as :meth:`AgentRunHandle.events`,
        with an :class:`~crucible.events.AnswerEvent` before the result."""
        for ev in super().events():
            if isinstance(ev, AnswerEvent):
                self._answer_doc = ev.question
            yield ev

    def get(self) -> AgentRun:
        """The question's agent run as it is now."""
        return AgentRun.from_json(self._analysis._question(self.n).get("run") or {})

    def answer(self) -> Answer:
        """Follow the question to its end and return its answer, with the run
        as it ended (its trace)."""
        final = self.wait()
        doc = self._answer_doc or self._analysis._question(self.n)  # resumed after the answer event
        out = self._analysis._answer(doc)
        out.run = final
        return out

    def cancel(self) -> AgentRun:
        """Not offered for a question: close the analysis to cancel it."""
        raise NotImplementedError("crucible: a question is cancelled by closing its analysis (Analysis.close)")
