"""Streamed model answers: a stall (no chunk for ``stream_idle_timeout`` seconds) is an error."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import TypeVar

from lackpy_kernel.errors import StreamStallError

T = TypeVar("T")

log = logging.getLogger("lackpy_kernel.infer")


async def iter_with_idle_timeout(
    stream: AsyncIterable[T], idle_timeout: float | None, *, what: str = "stream"
) -> AsyncIterator[T]:
    """The chunks of ``stream``; :class:`StreamStallError` when one takes longer than ``idle_timeout``.

    The wait for the first chunk counts as a gap too. The underlying
    iterator is closed when this one ends, stalls or is closed.
    """
    iterator = aiter(stream)
    try:
        while True:
            try:
                async with asyncio.timeout(idle_timeout) as scope:
                    item = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if scope.expired():
                    raise StreamStallError(
                        f"{what} stalled: no data for {idle_timeout:g} s (stream_idle_timeout); the server "
                        "stopped sending mid-answer",
                        gap=idle_timeout,
                    ) from None
                raise
            yield item
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception:  # closing a broken stream must not hide why it broke
                log.debug("closing %s failed", what, exc_info=True)


async def collect_text(
    chunks: AsyncIterable[T], text_of: Callable[[T], str], idle_timeout: float | None, *,
    what: str = "stream", on_text: Callable[[str], None] | None = None,
) -> str:
    """The text of a streamed answer: ``text_of`` each chunk, joined; ``on_text`` sees the text so far.

    The idle timeout applies between chunks of any kind (see :func:`iter_with_idle_timeout`).
    """
    text = ""
    async for chunk in iter_with_idle_timeout(chunks, idle_timeout, what=what):
        piece = text_of(chunk)
        if piece:
            text += piece
            if on_text is not None:
                on_text(text)
    return text
