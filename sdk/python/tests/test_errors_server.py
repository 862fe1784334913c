"""Errors of the real server: fields, a wrong key, tenants isolated, and a
POST never sent twice."""

from __future__ import annotations

import os
import time
import uuid
from typing import Optional

import pytest

import crucible
from tcpproxy import Proxy

pytestmark = pytest.mark.server


def _upstream(client: crucible.Client):
    host, _, port = client.base_url.split("//", 1)[1].partition(":")
    return host, int(port.split("/")[0])


def test_error_names_field(client: crucible.Client) -> None:
    with pytest.raises(crucible.ValidationError) as ei:
        client.run("print(1)", limits={"memory_bytes": 1})
    e = ei.value
    assert e.status == 400 and e.code == "invalid_request"
    assert e.field == "limits.memory_bytes"
    assert e.rule.startswith("must be between") and "got 1" in e.rule
    assert "limits.memory_bytes" in e.message and e.hint
    assert e.body == {"error": {"code": e.code, "message": e.message, "field": e.field, "rule": e.rule}}
    with pytest.raises(crucible.ValidationError) as ei:
        client.run("print(1)", files={"../escape": "x"})
    assert ei.value.field == "files[0].name"


def test_wrong_key(client: crucible.Client) -> None:
    bad = crucible.Client(api_key="crk_not_a_key")
    with pytest.raises(crucible.AuthenticationError) as ei:
        bad.run("print(1)")
    assert ei.value.status == 401 and ei.value.code == "unauthorized" and ei.value.field == "Authorization"


def test_tenants_isolated(client: crucible.Client, other_client: crucible.Client) -> None:
    res = client.run("open('secret.txt', 'w').write('a')")
    with pytest.raises(crucible.NotFoundError) as ei:
        other_client.get_run(res.id)
    assert ei.value.status == 404 and ei.value.code == "not_found"
    with pytest.raises(crucible.NotFoundError):
        other_client.artifact(res.id, "secret.txt")
    with client.session() as s:
        s.exec("token = 'team-a'")
        theirs = other_client.attach_session(s.id)
        with pytest.raises(crucible.NotFoundError):
            theirs.exec("print(token)")
        with pytest.raises(crucible.NotFoundError):
            theirs.files.list()
        assert s.id not in [x.id for x in other_client.list_sessions()]
        assert s.exec("token").value == "'team-a'"


def test_post_not_resent_after_sending(client: crucible.Client) -> None:
    # The proxy hands the POST to the server, which runs it, and cuts the
    # connection before the answer comes back: the SDK must not send it again.
    proxy = Proxy(_upstream(client), drop_answer=lambda c: c.method == "POST")
    try:
        c = crucible.Client(proxy.url, os.environ["CRUCIBLE_API_KEY"], retries=3)
        marker = uuid.uuid4().hex
        with pytest.raises(crucible.TransportError) as ei:
            c.run(f"print('{marker}')")
        assert ei.value.sent and ei.value.method == "POST"
        assert len(proxy.requests("POST", "/v1/runs")) == 1
        # The server did run it, once (its record may come a moment after its answer).
        deadline = time.monotonic() + 10
        runs: list = []
        while not runs and time.monotonic() < deadline:
            runs = [r for r in client.list_runs(limit=50).runs if marker in r.code]
            time.sleep(0.1)
        time.sleep(0.5)
        runs = [r for r in client.list_runs(limit=50).runs if marker in r.code]
        assert len(runs) == 1
        # An idempotent GET is retried when its connection is cut.
        cut_first = {"n": 0}

        def cut(conn, relayed: bytes) -> Optional[int]:
            if conn.method == "GET" and cut_first["n"] == 0:
                cut_first["n"] += 1
                return 0
            return None

        proxy.cut = cut
        proxy.drop_answer = None
        rec = c.get_run(runs[0].id)
        assert rec.stdout == marker + "\n"
        assert len(proxy.requests("GET", "/v1/runs/" + runs[0].id)) == 2
    finally:
        proxy.close()
