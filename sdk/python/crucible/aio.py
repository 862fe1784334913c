"""An asyncio client: the same client, each blocking call run in a worker
thread (:func:`asyncio.to_thread`), streams as async iterators.

>>> async with AsyncClient() as client:
...     res = await client.run("print(1)")
...     async with await client.session() as s:
...         await s.exec("x = 1")

Handles returned by calls (sessions, analyses, agent runs, their ``files``)
are wrapped the same way; plain values (results, records) are returned as
they are.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, AsyncIterator, Iterator, Optional

from .agents import AgentRunHandle
from .analyses import Analysis
from .client import DEFAULT_RETRIES, DEFAULT_TIMEOUT, Client
from .sessions import Session, SessionFiles
from .tool import CrucibleTool

__all__ = ["AsyncClient", "AsyncProxy"]

_HANDLES = (Session, SessionFiles, Analysis, AgentRunHandle, CrucibleTool)
_DONE = object()


async def _aiter(it: Iterator[Any]) -> AsyncIterator[Any]:
    """Iterate a blocking iterator from a worker thread."""
    while True:
        item = await asyncio.to_thread(_next, it)
        if item is _DONE:
            return
        yield _wrap(item)


def _next(it: Iterator[Any]) -> Any:
    return next(it, _DONE)


def _wrap(v: Any) -> Any:
    if isinstance(v, _HANDLES):
        return AsyncProxy(v)
    if isinstance(v, Iterator):
        return _aiter(v)
    return v


class AsyncProxy:
    """Wraps an SDK object: its methods become coroutines run in a worker
    thread (those returning iterators return async iterators at once), its
    attributes read as they are; ``async with`` closes it."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if isinstance(attr, _HANDLES):
            return AsyncProxy(attr)
        if not callable(attr):
            return attr
        if name in ("events", "ask_stream", "stream_run", "follow_run", "exec_stream"):
            @functools.wraps(attr)
            def stream(*a: Any, **kw: Any) -> AsyncIterator[Any]:
                return _aiter(attr(*a, **kw))
            return stream

        @functools.wraps(attr)
        async def call(*a: Any, **kw: Any) -> Any:
            return _wrap(await asyncio.to_thread(attr, *a, **kw))
        return call

    async def __aenter__(self) -> "AsyncProxy":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.to_thread(self._target.close)


class AsyncClient(AsyncProxy):
    """:class:`~crucible.Client` for asyncio (same arguments, same methods,
    awaited)."""

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None, *,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES) -> None:
        super().__init__(Client(base_url, api_key, timeout=timeout, retries=retries))
