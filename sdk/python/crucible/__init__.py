"""Crucible's Python SDK: run untrusted code in Crucible's sandboxes, keep
sessions, analyse data and drive agent runs over Crucible's HTTP API.

>>> from crucible import Client
>>> client = Client()   # CRUCIBLE_URL, CRUCIBLE_API_KEY
>>> print(client.run("print(6 * 7)").stdout)
42

Standard library only; Python 3.9 or later.
"""

from typing import Any

from .agents import AgentRunHandle
from .analyses import Analysis, Answer, Chart, QuestionHandle, Table
from .client import Client
from .errors import (APIError, AuthenticationError, ConflictError, CrucibleError, NotFoundError,
                     PermissionDeniedError, RateLimitError, ServerError, SessionClosedError, TransportError,
                     ValidationError)
from .events import (AgentEvent, AgentFinished, AgentRun, AgentRunStarted, AnswerEvent, Approval,
                     ApprovalDecided, ApprovalRequested, CodeEvent, Decision, Execution, Output, RunEvent,
                     RunFinished, RunStarted, Step, UnknownEvent)
from .sessions import Session, SessionFiles
from .tool import CrucibleTool
from .types import (Artifact, Display, ExecError, FileInfo, Image, ImageList, Limits, Metrics, RunList,
                    RunRecord, RunResult, SessionInfo)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:  # AsyncClient imports asyncio only when asked for
    if name == "AsyncClient":
        from .aio import AsyncClient
        return AsyncClient
    raise AttributeError(name)


__all__ = [
    "Client", "AsyncClient", "Session", "SessionFiles", "Analysis", "Answer", "Table", "Chart", "AgentRunHandle", "QuestionHandle",
    "CrucibleTool", "CrucibleError", "APIError", "TransportError", "ValidationError", "AuthenticationError",
    "PermissionDeniedError", "NotFoundError", "ConflictError", "SessionClosedError", "RateLimitError",
    "ServerError", "RunResult", "RunRecord", "RunList", "Artifact", "Display", "ExecError", "Metrics", "Limits",
    "FileInfo", "Image", "ImageList", "SessionInfo", "RunEvent", "RunStarted", "Output", "RunFinished",
    "AgentEvent", "AgentRun", "AgentRunStarted", "Step", "CodeEvent", "Execution", "Approval", "ApprovalRequested",
    "Decision", "ApprovalDecided", "AnswerEvent", "AgentFinished", "UnknownEvent", "__version__",
]
