"""A ready tool for models: run Python in a Crucible session and get text
and images back, in the shapes of OpenAI function calling (and a plain JSON
schema for other frameworks)."""

from __future__ import annotations

import base64
import json
import threading
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Union

from .errors import SessionClosedError
from .sessions import Session
from .types import RunResult

if TYPE_CHECKING:
    from .client import Client

__all__ = ["CrucibleTool", "MAX_TEXT", "REOPENED"]

#: The most characters of output the tool hands back to the model.
MAX_TEXT = 20000

_DESCRIPTION = ("Run Python code in a sandboxed Jupyter-like session and return its output. Variables, "
                "imports and files persist between calls. Print what you need to see; figures left open "
                "(matplotlib) come back as PNG images.")


class CrucibleTool:
    """Crucible as a model's tool (:meth:`Client.as_openai_tool`).

    >>> tool = client.as_openai_tool()
    >>> resp = openai.chat.completions.create(model=..., messages=msgs, tools=[tool.definition])
    >>> msgs.append(tool.message(resp.choices[0].message.tool_calls[0]))

    The session is opened at the first call and kept, so variables persist
    across calls; :meth:`close` (or ``with``) ends it.
    """

    def __init__(self, client: "Client", *, image: Optional[str] = None, name: str = "run_python",
                 description: Optional[str] = None) -> None:
        self._client = client
        self._image = image
        self._session: Optional[Session] = None
        self._lock = threading.Lock()
        #: The function's name, as the model calls it.
        self.name = name
        #: What the model is told the tool does.
        self.description = description or _DESCRIPTION

    @property
    def parameters(self) -> Dict[str, Any]:
        """The JSON schema of the tool's arguments: ``{"code": string}``."""
        return {"type": "object",
                "properties": {"code": {"type": "string", "description": "The Python code to run."}},
                "required": ["code"], "additionalProperties": False}

    @property
    def definition(self) -> Dict[str, Any]:
        """The OpenAI chat-completions ``tools`` entry."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}

    @property
    def function(self) -> Dict[str, Any]:
        """The plain function form (name, description, JSON-schema
        parameters) that other frameworks take."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def run(self, code: str) -> RunResult:
        """Run ``code`` in the tool's session and return the cell's result."""
        return self._run(code)[0]

    def _run(self, code: str) -> "tuple[RunResult, bool]":
        """Run ``code``; a session the server closed (idle, or by another
        client) is replaced by a new one, and the second value says so."""
        with self._lock:
            if self._session is None:
                self._session = self._client.session(self._image)
            s = self._session
        try:
            return s.exec(code), False
        except SessionClosedError:
            with self._lock:
                if self._session is s:
                    self._session = self._client.session(self._image)
                s = self._session
            return s.exec(code), True

    def call(self, arguments: Union[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
        """Run a tool call's ``arguments`` (its JSON string, or the decoded
        dict) and return content parts: a ``text`` part (output, the value
        of the last expression, the error with its hint), then an
        ``image_url`` part per chart, as a data: URL of its PNG."""
        res, reopened = self._run(_code(arguments))
        parts: List[Dict[str, Any]] = [{"type": "text", "text": _text(res, reopened)}]
        for png in res.charts:
            url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            parts.append({"type": "image_url", "image_url": {"url": url}})
        return parts

    def call_text(self, arguments: Union[str, Mapping[str, Any]]) -> str:
        """As :meth:`call`, the text alone (charts are counted in it)."""
        res, reopened = self._run(_code(arguments))
        n = len(res.charts)
        return _text(res, reopened) + (f"\n[{n} chart(s) produced]" if n else "")

    def message(self, tool_call: Any) -> Dict[str, Any]:
        """The ``{"role": "tool", ...}`` message answering ``tool_call`` (a
        dict of the wire format, or the OpenAI SDK's object), its content the
        parts :meth:`call` makes, images included (for APIs that take images
        in tool results; OpenAI's chat completions take them in user
        messages only: use :meth:`messages` there)."""
        call_id, args = _tool_call(tool_call)
        return {"role": "tool", "tool_call_id": call_id, "content": self.call(args)}

    def messages(self, tool_call: Any) -> List[Dict[str, Any]]:
        """The messages answering ``tool_call`` for OpenAI chat completions:
        the ``tool`` message with the text, then, when the code made charts,
        a ``user`` message carrying them as ``image_url`` parts (the API
        accepts images there only)."""
        call_id, args = _tool_call(tool_call)
        parts = self.call(args)
        out: List[Dict[str, Any]] = [{"role": "tool", "tool_call_id": call_id, "content": [parts[0]]}]
        if len(parts) > 1:
            out.append({"role": "user", "content": [
                {"type": "text", "text": f"The charts of tool call {call_id}:"}] + parts[1:]})
        return out

    def close(self) -> None:
        """End the tool's session."""
        with self._lock:
            s, self._session = self._session, None
        if s is not None:
            s.close()

    def __enter__(self) -> "CrucibleTool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _tool_call(tool_call: Any) -> "tuple[str, Any]":
    """The id and arguments of a tool call: a wire-format dict or the OpenAI SDK's object."""
    if isinstance(tool_call, Mapping):
        return tool_call["id"], tool_call["function"]["arguments"]
    return tool_call.id, tool_call.function.arguments


def _code(arguments: Union[str, Mapping[str, Any]]) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    if not isinstance(args, Mapping) or not isinstance(args.get("code"), str):
        raise ValueError('crucible tool: the arguments must be a JSON object with a string "code"')
    return str(args["code"])


#: What the model is told when its session had ended and a new one ran its code.
REOPENED = "(The previous session had ended; this code ran in a new one: variables defined before are gone.)"


def _text(res: RunResult, reopened: bool = False) -> str:
    out = [REOPENED] if reopened else []
    if res.stdout:
        out.append(res.stdout.rstrip("\n"))
    if res.value:
        out.append(res.value)
    if res.stderr and not res.error:
        out.append("stderr:\n" + res.stderr.rstrip("\n"))
    if res.error:
        e = f"{res.error.type}: {res.error.message}"
        if res.error.hint:
            e += f"\nhint: {res.error.hint}"
        out.append(e)
    if res.status not in ("ok", "error"):
        out.append(f"status: {res.status}" + (f" ({res.reason})" if res.reason else ""))
    text = "\n".join(out) or "(no output)"
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"\n[... {len(text) - MAX_TEXT} more characters cut]"
    return text
