"""Agent runs: the server's code agent solving a task, optionally waiting
for a person to approve each program."""

from __future__ import annotations

import json
import urllib.parse
from typing import TYPE_CHECKING, Iterator, Optional

from ._stream import follow
from .events import AgentEvent, AgentFinished, AgentRun, Decision, agent_event

if TYPE_CHECKING:
    from .client import Client

__all__ = ["AgentRunHandle", "follow_agent_events"]


def follow_agent_events(client: "Client", path: str) -> Iterator[AgentEvent]:
    """Follow the agent events at ``path`` (resumed after a dropped
    connection) until the result, yielding them typed."""
    for ev in follow(client._t, "GET", path, resumable=True):
        yield agent_event(ev.name, ev.data)


class AgentRunHandle:
    """A started agent run. Iterate :meth:`events` to follow it (an
    :class:`~crucible.events.ApprovalRequested` event is the moment to
    :meth:`approve` or :meth:`deny`), or call :meth:`wait`."""

    def __init__(self, client: "Client", run: AgentRun, path: Optional[str] = None) -> None:
        self._client = client
        #: The run as the server answered when it started.
        self.run = run
        #: The agent run's ID.
        self.id = run.id
        self._path = path or "/v1/agent-runs/" + urllib.parse.quote(run.id, safe="")
        self._final: Optional[AgentRun] = None

    def events(self) -> Iterator[AgentEvent]:
        """Follow the run until it ends, yielding its events as they come: the
        run, steps, code, output, executions, approvals and decisions, and
        last :class:`~crucible.events.AgentFinished` with the run as it ended.
        A dropped connection is resumed with Last-Event-ID."""
        for ev in follow_agent_events(self._client, self._path + "/events"):
            if isinstance(ev, AgentFinished):
                self._final = ev.run
            yield ev

    def approve(self, approval_id: str, reason: str = "") -> Decision:
        """Approve the program waiting under ``approval_id``: it runs."""
        return self._decide(approval_id, True, reason)

    def deny(self, approval_id: str, reason: str = "") -> Decision:
        """Refuse the program waiting under ``approval_id``: the run ends "denied"."""
        return self._decide(approval_id, False, reason)

    def _decide(self, approval_id: str, approve: bool, reason: str) -> Decision:
        body = {"approve": approve}
        if reason:
            body["reason"] = reason  # type: ignore[assignment]
        doc = self._client._t.request("POST", self._path + "/approvals/" + urllib.parse.quote(approval_id, safe=""),
                                      body=json.dumps(body).encode(), content_type="application/json").json()
        return Decision.from_json(doc)

    def get(self) -> AgentRun:
        """The run as it is now (with its trace once it ended)."""
        return AgentRun.from_json(self._client._t.request("GET", self._path).json())

    def wait(self) -> AgentRun:
        """Follow the run to its end and return it as it ended, with its
        answer and trace. A run waiting for approval waits until someone
        decides (or the approval times out)."""
        if self._final is None:
            for _ in self.events():
                pass
        assert self._final is not None
        return self._final

    def cancel(self) -> AgentRun:
        """Stop the run; returns it as it ended."""
        return AgentRun.from_json(self._client._t.request("DELETE", self._path).json())

    def __repr__(self) -> str:
        return f"AgentRunHandle({self.id!r})"
