"""Session updates made by synchronous callbacks (a tier tried, a program streaming, an
agent's tool call), sent in order by one task."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any


class Outbox:
    """Updates put from any callback on the event loop's thread, sent in order by one task
    (``send``) until ``flush``. An update put with a ``key`` replaces the one before it
    when that one has the same key and is not sent yet (a newer state of the same thing:
    a client slower than a model's stream gets its latest text, not every piece)."""

    def __init__(self, send: Callable[[Any], Awaitable[None]]) -> None:
        self._updates: deque[tuple[str | None, Any]] = deque()
        self._more = asyncio.Event()
        self._closing = False
        self._sender = asyncio.ensure_future(self._send_all(send))

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

    async def _send_all(self, send: Callable[[Any], Awaitable[None]]) -> None:
        while True:
            while self._updates:
                await send(self._updates.popleft()[1])
            if self._closing:
                return
            self._more.clear()
            await self._more.wait()
