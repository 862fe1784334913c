"""Error decoding (no Crucible)."""

from __future__ import annotations

import json

import pytest

import crucible
from crucible.errors import error_from_event, error_from_response, parse_retry_after
from localserver import LocalServer, reply


@pytest.mark.parametrize("status,code,cls", [
    (400, "invalid_request", crucible.ValidationError),
    (413, "payload_too_large", crucible.ValidationError),
    (422, "unsuitable_image", crucible.ValidationError),
    (401, "unauthorized", crucible.AuthenticationError),
    (403, "withheld", crucible.PermissionDeniedError),
    (404, "not_found", crucible.NotFoundError),
    (409, "conflict", crucible.ConflictError),
    (410, "session_closed", crucible.SessionClosedError),
    (429, "too_many_requests", crucible.RateLimitError),
    (501, "not_configured", crucible.ServerError),
    (405, "method_not_allowed", crucible.APIError),
])
def test_error_classes(status: int, code: str, cls: type) -> None:
    body = {"error": {"code": code, "message": "msg", "field": "f", "rule": "r"}}
    e = error_from_response(status, json.dumps(body).encode(), "1")
    assert type(e) is cls and isinstance(e, crucible.APIError) and isinstance(e, crucible.CrucibleError)
    assert (e.status, e.code, e.message, e.field, e.rule, e.retry_after) == (status, code, "msg", "f", "r", 1.0)
    assert e.body == body and e.hint
    assert str(e) == f"crucible: {status} {code}: msg (field f)"


def test_error_not_json() -> None:
    e = error_from_response(502, b"<html>" + b"x" * 1000, None, "Bad Gateway")
    assert type(e) is crucible.ServerError and e.code == "" and e.message.endswith("…") and len(e.message) == 513
    assert error_from_response(500, b"", None, "Internal").message == "Internal"


def test_error_event() -> None:
    e = error_from_event(b'{"code":"internal","message":"boom"}')
    assert type(e) is crucible.ServerError and e.status == 500 and e.message == "boom"
    e = error_from_event(b'{"code":"session_closed","message":"gone"}')
    assert type(e) is crucible.SessionClosedError and e.status == 410


def test_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_error_raised_by_client() -> None:
    srv = LocalServer(lambda r, h: reply(h, 400, {"error": {"code": "invalid_request", "message": "bad",
                                                            "field": "limits.memory_bytes", "rule": "too small"}}))
    try:
        with pytest.raises(crucible.ValidationError) as ei:
            crucible.Client(srv.url, "k").run("x")
        assert ei.value.field == "limits.memory_bytes" and ei.value.rule == "too small"
        assert len(srv.requests) == 1
    finally:
        srv.close()
