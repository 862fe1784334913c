"""The tool for models (issue 28 item 3): the whole OpenAI function-calling
loop, with a local server speaking the chat-completions wire format (no
model runs here) and the real Crucible server running the code."""

from __future__ import annotations

import base64
import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List

import pytest

import crucible
import crucible.tool

pytestmark = pytest.mark.server

CALLS = [
    "import matplotlib.pyplot as plt\nsquares = [i * i for i in range(5)]\nplt.plot(squares)\nplt.show()\n"
    "print(sum(squares))",
    "print(max(squares))",  # a variable of the first call
]


class FakeOpenAI(BaseHTTPRequestHandler):
    """POST /v1/chat/completions, scripted: a tool call per entry of CALLS,
    then a final answer quoting the last tool result."""

    requests: List[Dict[str, Any]] = []

    def log_message(self, *a: Any) -> None:
        pass

    def do_POST(self) -> None:
        assert self.path == "/v1/chat/completions"
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOpenAI.requests.append(req)
        n = sum(1 for m in req["messages"] if m["role"] == "assistant")
        if n < len(CALLS):
            name = req["tools"][0]["function"]["name"]
            msg = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{n}", "type": "function",
                "function": {"name": name, "arguments": json.dumps({"code": CALLS[n]})}}]}
            finish = "tool_calls"
        else:
            last_tool = [m for m in req["messages"] if m["role"] == "tool"][-1]
            msg = {"role": "assistant", "content": "The largest square is " + last_tool["content"][0]["text"]}
            finish = "stop"
        body = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req["model"],
                           "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def chat(url: str, body: Dict[str, Any]) -> Dict[str, Any]:
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
    with urllib.request.urlopen(req) as resp:
        return json.loads(resp.read())


def test_openai_tool_loop(client: crucible.Client) -> None:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    FakeOpenAI.requests = []
    try:
        with client.as_openai_tool() as tool:
            messages: List[Dict[str, Any]] = [{"role": "user", "content": "Sum and max of the first 5 squares?"}]
            while True:
                resp = chat(url, {"model": "gpt-test", "messages": messages, "tools": [tool.definition]})
                msg = resp["choices"][0]["message"]
                messages.append(msg)
                if not msg.get("tool_calls"):
                    break
                for call in msg["tool_calls"]:
                    messages.extend(tool.messages(call))
            assert msg["content"] == "The largest square is 16"
            # What the model was sent: the tool's definition, then its results.
            first = FakeOpenAI.requests[0]
            assert first["tools"] == [tool.definition]
            fn = first["tools"][0]["function"]
            assert first["tools"][0]["type"] == "function" and fn["name"] == "run_python"
            assert fn["parameters"]["required"] == ["code"] and fn["parameters"]["properties"]["code"]["type"] == "string"
            last = FakeOpenAI.requests[-1]["messages"]
            tools = [m for m in last if m["role"] == "tool"]
            assert [m["tool_call_id"] for m in tools] == ["call_0", "call_1"]
            assert tools[0]["content"] == [{"type": "text", "text": "30"}]
            assert tools[1]["content"] == [{"type": "text", "text": "16"}]
            images = [p for m in last if m["role"] == "user" for p in m["content"] if isinstance(p, dict)
                      and p.get("type") == "image_url"]
            assert len(images) == 1
            assert images[0]["image_url"]["url"].startswith("data:image/png;base64,")
            png = base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1])
            assert png.startswith(b"\x89PNG\r\n\x1a\n")
            # The parts form, the text form and dict arguments share the session.
            parts = tool.call({"code": "squares.append(25)\nlen(squares)"})
            assert parts == [{"type": "text", "text": "6"}]
            assert tool.call_text('{"code": "1/0"}').startswith("ZeroDivisionError: division by zero")
            assert tool.function["parameters"] == fn["parameters"]
            with pytest.raises(ValueError):
                tool.call('{"program": "print(1)"}')
            # A session the server closed is replaced, and the model told so.
            old = tool._session
            assert old is not None
            client.attach_session(old.id).close()
            text = tool.call_text({"code": "print('again')"})
            assert text == crucible.tool.REOPENED + "\nagain"
            assert tool._session is not None and tool._session.id != old.id
            sid = tool._session.id
        with pytest.raises(crucible.SessionClosedError):
            client.attach_session(sid).exec("1")
    finally:
        srv.shutdown()
