"""Exceptions of the Crucible SDK.

Every request the server refuses raises an :class:`APIError` (or one of its
subclasses, chosen by the HTTP status) carrying the API's JSON error as the
server sent it: ``{"error": {"code", "message", "field", "rule"}}``. A request
that never got an answer raises a :class:`TransportError`. Both derive from
:class:`CrucibleError`.

A program that fails is *not* an error: ``client.run("1/0")`` returns a
:class:`~crucible.types.RunResult` whose ``status`` is ``"error"``.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any, Dict, Optional, Tuple, Type

__all__ = [
    "CrucibleError",
    "TransportError",
    "APIError",
    "ValidationError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "SessionClosedError",
    "RateLimitError",
    "ServerError",
    "HINTS",
]

#: What to do about each stable error code, from the API's docs/errors.md.
HINTS: Dict[str, str] = {
    "invalid_request": "Fix the named field as the rule says.",
    "unauthorized": "Send a valid API key (Authorization: Bearer crk_...); an operator makes keys with `crucible key create`.",
    "withheld": "The file holds a secret and is not text: keep the secret out of the file.",
    "forbidden": "Ask the operator for the permission, or drop the part refused.",
    "not_found": "Check the ID or path; records and ended sessions are kept for a limited time.",
    "method_not_allowed": "Use one of the methods the endpoint takes.",
    "request_timeout": "Send the body faster, or in smaller parts.",
    "conflict": "Read the resource's state (the message says which), then retry if it still makes sense.",
    "session_closed": "Open a new session (or analysis) and run the cells again.",
    "payload_too_large": "Send less: smaller or fewer files, or upload them one at a time to a session.",
    "unsupported_media_type": "Send the Content-Type the message names.",
    "unsuitable_image": "Name the image the message names (image=\"datascience\").",
    "too_many_requests": "Retry after Retry-After; close sessions you no longer use.",
    "internal": "Retry; if it persists, the server's log says why.",
    "not_configured": "Configure the server as the rule says (for a model: \"model\" in `crucible serve --config`).",
    "unavailable": "Retry after Retry-After, against a server that is up.",
}

# Bounds of what is kept of an error body that is not the API's JSON.
_MAX_CLIPPED = 512


class CrucibleError(Exception):
    """The base class of every exception this SDK raises."""


class TransportError(CrucibleError):
    """A request that got no HTTP answer: the connection was refused, reset or
    timed out, or a stream dropped and could not be resumed.

    ``sent`` says whether any byte of the request may have reached the server:
    when it is true, a non-idempotent request (a POST) may have been carried out.
    """

    def __init__(self, message: str, *, method: str = "", path: str = "", sent: bool = False,
                 cause: Optional[BaseException] = None) -> None:
        super().__init__(message)
        #: The HTTP method of the failed request.
        self.method = method
        #: The API path of the failed request.
        self.path = path
        #: Whether the request may have reached the server (bytes were sent).
        self.sent = sent
        #: The underlying exception, if any.
        self.cause = cause


class APIError(CrucibleError):
    """A request the server answered with a status other than 2xx.

    ``code``, ``message``, ``field`` and ``rule`` are the API's JSON error's; when
    the body was not that JSON (a proxy's error page), ``code`` is empty and
    ``message`` holds the start of the body.
    """

    def __init__(self, status: int, code: str = "", message: str = "", field: str = "",
                 rule: str = "", retry_after: Optional[float] = None,
                 body: Optional[Dict[str, Any]] = None) -> None:
        #: The HTTP status, such as 400 or 429.
        self.status = status
        #: The API's stable error code, such as ``"invalid_request"``.
        self.code = code
        #: The explanation, for a person.
        self.message = message
        #: The request field at fault, such as ``"limits.memory_bytes"``, or ``""``.
        self.field = field
        #: The rule ``field`` breaks, or ``""``.
        self.rule = rule
        #: Seconds the server asked to wait before retrying (Retry-After), or None.
        self.retry_after = retry_after
        #: The decoded JSON error body, ``{"error": {...}}``, or None.
        self.body = body
        super().__init__(str(self))

    @property
    def hint(self) -> str:
        """What to do about the error, from the API's documentation of its code."""
        return HINTS.get(self.code, "")

    def __str__(self) -> str:
        s = f"crucible: {self.status}"
        if self.code:
            s += " " + self.code
        s += ": " + self.message
        if self.field:
            s += f" (field {self.field})"
        return s

    def __reduce__(self) -> Tuple[Any, ...]:  # so that errors pickle (multiprocessing)
        return (type(self), (self.status, self.code, self.message, self.field, self.rule,
                             self.retry_after, self.body))


class ValidationError(APIError):
    """The request broke a rule (400 ``invalid_request``, 413, 415, or 422
    ``unsuitable_image``): ``field`` and ``rule`` say which and why; nothing ran."""


class AuthenticationError(APIError):
    """401: no API key was sent, or the key is invalid or revoked."""


class PermissionDeniedError(APIError):
    """403: the tenant may not do this (``forbidden``), or the file is ``withheld``."""


class NotFoundError(APIError):
    """404: no such run, session, analysis, agent run or file for this tenant
    (another tenant's IDs answer the same)."""


class ConflictError(APIError):
    """409: the request contradicts the state of what it names (an approval
    already decided, a question while another is answered)."""


class SessionClosedError(APIError):
    """410: the session (or the analysis's session) was closed or expired."""


class RateLimitError(APIError):
    """429: a queue or the tenant's share is full; ``retry_after`` says when to retry."""


class ServerError(APIError):
    """A status of 500 or more: the server failed (or is not configured, 501)."""


def _class_for(status: int) -> Type[APIError]:
    if status in (400, 413, 415, 422):
        return ValidationError
    return {401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
            409: ConflictError, 410: SessionClosedError, 429: RateLimitError}.get(
        status, ServerError if status >= 500 else APIError)


#: The HTTP status of each error code, for errors that come inside a stream.
_CODE_STATUS = {
    "invalid_request": 400, "unauthorized": 401, "not_found": 404, "method_not_allowed": 405,
    "request_timeout": 408, "payload_too_large": 413, "unsupported_media_type": 415,
    "session_closed": 410, "too_many_requests": 429, "unavailable": 503, "withheld": 403,
    "forbidden": 403, "conflict": 409, "not_configured": 501, "unsuitable_image": 422,
}


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Parse a Retry-After header, in seconds or as an HTTP date; None when
    absent or invalid."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def error_from_response(status: int, body: bytes, retry_after: Optional[str] = None,
                        reason: str = "") -> APIError:
    """Build the exception of a non-2xx answer from its status, body and
    Retry-After header."""
    ra = parse_retry_after(retry_after)
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict) and doc["error"].get("code"):
        e = doc["error"]
        return _class_for(status)(status, str(e.get("code", "")), str(e.get("message", "")),
                                  str(e.get("field", "") or ""), str(e.get("rule", "") or ""), ra, doc)
    text = body.decode("utf-8", "replace").strip()
    if len(text) > _MAX_CLIPPED:
        text = text[:_MAX_CLIPPED] + "…"
    return _class_for(status)(status, "", text or reason or f"HTTP {status}", retry_after=ra)


def error_from_event(data: bytes) -> APIError:
    """Build the exception of an ``event: error`` of a stream (the server
    failing after the stream had started)."""
    try:
        e = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        e = {}
    if not isinstance(e, dict):
        e = {}
    code = str(e.get("code", "") or "")
    status = _CODE_STATUS.get(code, 500)
    return _class_for(status)(status, code, str(e.get("message", "") or "the server failed during the stream"),
                              str(e.get("field", "") or ""), str(e.get("rule", "") or ""), None, {"error": e})
