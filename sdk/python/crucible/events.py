"""The typed events of streams: a run's (:func:`Client.stream_run`) and an
agent run's or an analysis question's (:meth:`AgentRunHandle.events`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .types import Artifact, ExecError, RunResult

__all__ = [
    "RunStarted", "Output", "RunFinished", "RunEvent",
    "Approval", "Decision", "AgentRun", "AgentEvent", "AgentRunStarted", "Step", "CodeEvent",
    "Execution", "ApprovalRequested", "ApprovalDecided", "AnswerEvent", "AgentFinished", "UnknownEvent",
]


@dataclass
class RunStarted:
    """A run was accepted: its record's ID."""

    id: str
    kind: str = "run"


@dataclass
class Output:
    """A chunk of a program's output, redacted, as it was written."""

    #: "stdout" or "stderr".
    stream: str
    data: bytes
    kind: str = "output"

    @property
    def text(self) -> str:
        """The chunk as text (a multi-byte character split between chunks is
        replaced; join ``data`` for exact bytes)."""
        return self.data.decode("utf-8", "replace")


@dataclass
class RunFinished:
    """The run ended: its result (the same as :meth:`Client.run` returns)."""

    result: RunResult
    kind: str = "result"


#: An event of :meth:`Client.stream_run`.
RunEvent = Union[RunStarted, Output, RunFinished]


@dataclass
class Approval:
    """A program of an agent run waiting for a person's decision."""

    id: str
    attempt: int
    #: The program the agent wants to run.
    code: str
    requested_at: str = ""
    expires_at: str = ""

    @classmethod
    def from_json(cls, d: Optional[Mapping[str, Any]]) -> Optional["Approval"]:
        """Decode the API's AgentApproval; None for None."""
        if not d:
            return None
        return cls(id=d.get("id", ""), attempt=d.get("attempt", 0), code=d.get("code", ""),
                   requested_at=d.get("requested_at", "") or "", expires_at=d.get("expires_at", "") or "")


@dataclass
class Decision:
    """A decision on an approval."""

    id: str
    approved: bool
    reason: str = ""
    by: str = ""
    decided_at: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Decision":
        """Decode the API's AgentDecision."""
        return cls(id=d.get("id", ""), approved=bool(d.get("approved")), reason=d.get("reason", "") or "",
                   by=d.get("by", "") or "", decided_at=d.get("decided_at", "") or "")


@dataclass
class AgentRun:
    """An agent run: its status (running, awaiting_approval, then how it
    ended: answered, unverified, denied, cancelled, failed...), its answer
    and, once ended, its trace."""

    id: str
    status: str
    task: str = ""
    image: str = ""
    model: str = ""
    reason: str = ""
    answer: str = ""
    pending_approval: Optional[Approval] = None
    created_at: str = ""
    finished_at: Optional[str] = None
    #: The agent's trace (JSON) once the run ended, else None.
    trace: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ended(self) -> bool:
        """Whether the run ended."""
        return self.status not in ("running", "awaiting_approval")

    @property
    def steps(self) -> List[Dict[str, Any]]:
        """The trace's steps (model calls, executions, approvals...), oldest first."""
        return list((self.trace or {}).get("steps") or [])

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "AgentRun":
        """Decode the API's AgentRun."""
        return cls(id=d.get("id", ""), status=d.get("status", ""), task=d.get("task", "") or "",
                   image=d.get("image", "") or "", model=d.get("model", "") or "", reason=d.get("reason", "") or "",
                   answer=d.get("answer", "") or "", pending_approval=Approval.from_json(d.get("pending_approval")),
                   created_at=d.get("created_at", "") or "", finished_at=d.get("finished_at"),
                   trace=d.get("trace"), raw=dict(d))


@dataclass
class AgentRunStarted:
    """The first event: the agent run as it started."""

    run: AgentRun
    kind: str = "agent_run"


@dataclass
class Step:
    """A step of the agent: planning, a model call, a retry and why, verifying."""

    step: str
    attempt: int
    message: str
    kind: str = "step"


@dataclass
class CodeEvent:
    """A program the agent is about to run (or to submit for approval)."""

    attempt: int
    code: str
    kind: str = "code"


@dataclass
class Execution:
    """How a program of the agent ended."""

    attempt: int
    status: str
    exit_code: int
    reason: str = ""
    error: Optional[ExecError] = None
    artifacts: List[Artifact] = field(default_factory=list)
    kind: str = "execution"


@dataclass
class ApprovalRequested:
    """A program waits for approval: call ``approve(event.id)`` or
    ``deny(event.id, reason)`` on the run."""

    approval: Approval
    kind: str = "approval"

    @property
    def id(self) -> str:
        """The approval's ID."""
        return self.approval.id

    @property
    def code(self) -> str:
        """The program waiting for approval."""
        return self.approval.code


@dataclass
class ApprovalDecided:
    """An approval was decided."""

    decision: Decision
    kind: str = "approval_decision"


@dataclass
class AnswerEvent:
    """An analysis question was answered (its ``answer`` event); ``question``
    is the API's AnalysisQuestion JSON."""

    question: Dict[str, Any]
    kind: str = "answer"


@dataclass
class AgentFinished:
    """The last event: the run as it ended, with its trace."""

    run: AgentRun
    kind: str = "result"


@dataclass
class UnknownEvent:
    """An event of a later server version."""

    name: str
    data: Any
    kind: str = "unknown"


#: An event of an agent run or an analysis question (outputs are :class:`Output`).
AgentEvent = Union[AgentRunStarted, Step, CodeEvent, Output, Execution, ApprovalRequested,
                   ApprovalDecided, AnswerEvent, AgentFinished, UnknownEvent]


def agent_event(name: str, data: Any, fetch: Optional[Callable[[str], bytes]] = None) -> AgentEvent:
    """Decode one event of an agent run's stream (``name``, its data decoded:
    bytes for output, JSON otherwise)."""
    d: Mapping[str, Any] = data if isinstance(data, dict) else {}
    if name in ("stdout", "stderr"):
        return Output(name, data)
    if name == "agent_run":
        return AgentRunStarted(AgentRun.from_json(d))
    if name == "step":
        return Step(d.get("kind", ""), d.get("attempt", 0), d.get("message", ""))
    if name == "code":
        return CodeEvent(d.get("attempt", 0), d.get("code", ""))
    if name == "execution":
        return Execution(d.get("attempt", 0), d.get("status", ""), d.get("exit_code", 0), d.get("reason", "") or "",
                         ExecError.from_json(d.get("error")),
                         [Artifact.from_json(a, fetch) for a in d.get("artifacts") or []])
    if name == "approval":
        return ApprovalRequested(Approval.from_json(d) or Approval("", 0, ""))
    if name == "approval_decision":
        return ApprovalDecided(Decision.from_json(d))
    if name == "answer":
        return AnswerEvent(dict(d))
    if name == "result":
        return AgentFinished(AgentRun.from_json(d))
    return UnknownEvent(name, data)
