"""Session updates made by synchronous callbacks (a tier tried, an agent's tool call), sent
in order by one task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


class Outbox:
    """Updates put from any callback on the event loop's thread, sent in order by one task
    (``send``) until ``flush``."""

    def __init__(self, send: Callable[[Any], Awaitable[None]]) -> None:
        self._updates: asyncio.Queue[Any] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send_all(send))

    def put(self, update: Any) -> None:
        """Send ``update`` after those put before it."""
        self._updates.put_nowait(update)

    async def flush(self) -> None:
        """Wait until every update is sent."""
        self._updates.put_nowait(None)
        await self._sender

    def cancel(self) -> None:
        """Stop sending (the prompt was cancelled)."""
        self._sender.cancel()

    async def _send_all(self, send: Callable[[Any], Awaitable[None]]) -> None:
        while (update := await self._updates.get()) is not None:
            await send(update)
