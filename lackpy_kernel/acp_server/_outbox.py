"""Session updates made by synchronous callbacks (a tier tried, a program streaming, an
agent's tool call), sent in order by one task."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any


class Outbox:
    """Updates put from any callback on the event loop's thread, sent in order by one task
    (``send``) until ``flush``. An update put with a ``key`` is a passing state of one
    thing (a program as a model streams it): it replaces the one before it when that one
    has the same key and is not sent yet (a client slower than the model gets the latest
    text, not every piece), and goes out through ``send_passing`` (default ``send``)."""

    def __init__(self, send: Callable[[Any], Awaitable[None]], *,
                 send_passing: Callable[[Any], Awaitable[None]] | None = None) -> None:
        self._updates: deque[tuple[str | None, Any]] = deque()
        self._more = asyncio.Event()
        self._closing = False
        self._sender = asyncio.ensure_future(self._send_all(send, send_passing or send))

    def put(self, update: Any, *, key: str | None = None) -> None:
        """Send ``update`` after those put before it (see ``key`` above)."""
        if key is not None and self._updates and self._updates[-1][0] == key:
            self._updates[-1] = (key, update)
        else:
            self._updates.append((key, update))
        self._more.set()

    async def flush(self) -> None:
        """Wait until every update is sent."""
        self._closing = True
        self._more.set()
        await self._sender

    def cancel(self) -> None:
        """Stop sending (the prompt was cancelled)."""
        self._sender.cancel()

    async def _send_all(self, send: Callable[[Any], Awaitable[None]],
                        send_passing: Callable[[Any], Awaitable[None]]) -> None:
        while True:
            while self._updates:
                key, update = self._updates.popleft()
                await (send if key is None else send_passing)(update)
            if self._closing:
                return
            self._more.clear()
            await self._more.wait()
