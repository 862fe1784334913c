"""Request encoding and answer decoding, against a local server (no Crucible)."""

from __future__ import annotations

import base64
import json

import pytest

import crucible
from crucible.client import multipart
from crucible.types import decode_data, encode_data
from localserver import RESULT, LocalServer, reply


@pytest.fixture
def local():
    srv = LocalServer(lambda r, h: reply(h, 200, RESULT))
    yield srv
    srv.close()


def test_run_request_encoding(local: LocalServer) -> None:
    c = crucible.Client(local.url + "/prefix/", "crk_secret")
    res = c.run("print(1)", "js", image="host", files={"a.txt": "text", "b.bin": b"\xff\x00", "c.bin": b"ok"},
                stdin=b"\xfe", limits=crucible.Limits(memory_bytes=64 << 20, wall_time_ms=1000),
                policy="warn", network=["example.org"], env={"A": "1"}, cache=True)
    r = local.requests[0]
    assert r.method == "POST" and r.path == "/prefix/v1/runs?cache=1"
    assert r.headers["authorization"] == "Bearer crk_secret"
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {
        "language": "js", "code": "print(1)", "image": "host",
        "files": [{"name": "a.txt", "content": "text"},
                  {"name": "b.bin", "content": {"base64": base64.b64encode(b"\xff\x00").decode()}},
                  {"name": "c.bin", "content": "ok"}],
        "stdin": {"base64": "/g=="}, "limits": {"wall_time_ms": 1000, "memory_bytes": 64 << 20},
        "policy": "warn", "network": {"allow": ["example.org"]}, "env": {"A": "1"}}
    assert res.stdout == "hi\n" and res.metrics.wall_ms == 1.5 and res.id == "r1"


def test_minimal_run_and_no_key(local: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRUCIBLE_API_KEY", raising=False)
    monkeypatch.setenv("CRUCIBLE_URL", local.url)
    crucible.Client().run("x", network="none", limits={"cpu_time_ms": 5})
    r = local.requests[0]
    assert "authorization" not in r.headers
    assert r.json() == {"language": "python", "code": "x", "network": "none", "limits": {"cpu_time_ms": 5}}


def test_bad_base_url() -> None:
    for url in ("ftp://x", "http://", "http://h/?q=1", "http://u:p@h"):
        with pytest.raises(ValueError):
            crucible.Client(url)


def test_data_round_trip() -> None:
    for b in (b"", b"plain", "é".encode(), b"\x80\x81", bytes(range(256))):
        assert decode_data(json.loads(json.dumps(encode_data(b)))) == b
    assert decode_data(None) == b""
    with pytest.raises(ValueError):
        decode_data({"nope": 1})


def test_result_decoding() -> None:
    doc = dict(RESULT, stdout={"base64": base64.b64encode(b"\xff").decode()}, status="error",
               error={"type": "E", "message": "m", "line": 2, "hint": "do x"},
               artifacts=[{"name": "p.png", "mime": "image/png", "size": 3, "sha256": "s", "content": {"base64": "AQID"}},
                          {"name": "big.txt", "mime": "text/plain", "size": 9, "sha256": "t", "content_omitted": True}],
               displays=[{"mime": "image/png", "data": {"base64": "BAU="}, "text": "<Figure>"}])
    fetched = []
    res = crucible.RunResult.from_json(doc, lambda rid, name: fetched.append((rid, name)) or b"fetched")
    assert res.stdout_bytes == b"\xff" and res.stdout == "\ufffd"
    assert res.error and res.error.hint == "do x" and res.error.line == 2
    assert res.charts == [b"\x01\x02\x03", b"\x04\x05"]
    assert res.artifact("big.txt").read() == b"fetched" and fetched == [("r1", "big.txt")]
    assert not res.ok


def test_multipart() -> None:
    body, ctype = multipart([("image", "datascience")], [("datasets", 'a"b.csv', b"x,y\n1,2\n")])
    boundary = ctype.split("boundary=", 1)[1]
    assert ctype.startswith("multipart/form-data; boundary=")
    assert body.startswith(f"--{boundary}\r\n".encode()) and body.endswith(f"--{boundary}--\r\n".encode())
    assert b'name="datasets"; filename="a\\"b.csv"\r\nContent-Type: text/csv\r\n\r\nx,y\n1,2\n\r\n' in body
    assert b'name="image"\r\n\r\ndatascience\r\n' in body
