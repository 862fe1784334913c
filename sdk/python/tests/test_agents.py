"""Agent runs with approvals, against the real server and its scripted model."""

from __future__ import annotations

import pytest

import crucible

pytestmark = pytest.mark.server

TASK = "Compute 6*7. [[code]]print(6*7)[[/code]] [[answer]]42[[/answer]]"


def test_agent_run_approved(client: crucible.Client) -> None:
    r = client.agent_run(TASK, approve=True)
    assert r.id.startswith("agt_") and r.run.status == "running"
    approvals = []
    events = []
    for ev in r.events():
        events.append(ev)
        if isinstance(ev, crucible.ApprovalRequested):
            approvals.append(ev)
            assert ev.id and ev.code == "print(6*7)"
            d = r.approve(ev.id, "looks safe")
            assert d.approved and d.id == ev.id
    assert len(approvals) == 1
    kinds = [e.kind for e in events]
    assert kinds[0] == "agent_run" and "approval_decision" in kinds and "execution" in kinds
    assert b"".join(e.data for e in events if isinstance(e, crucible.Output)) == b"42\n"
    final = r.wait()
    assert final.status == "answered" and final.answer == "42"
    assert final.ended
    executed = [s for s in final.steps if s.get("kind") == "execute"]
    assert len(executed) == 1 and executed[0]["code"] == "print(6*7)"


def test_agent_run_denied(client: crucible.Client) -> None:
    r = client.agent_run(TASK, approve=True)
    for ev in r.events():
        if isinstance(ev, crucible.ApprovalRequested):
            r.deny(ev.id, "not today")
            with pytest.raises(crucible.ConflictError):
                r.approve(ev.id)  # decided already
    final = r.wait()
    assert final.status == "denied" and not final.answer
    assert r.get().status == "denied"
