"""The model tiers' retry and stream policy: retries, timeouts, Retry-After, stalled streams
and redaction.

The knobs and their meanings follow LazyBridge's ``LLMEngine``:

- ``max_retries`` (3): retries on transient errors (429, 5xx, connection
  errors, timeouts, stalled streams) with exponential backoff; 0 disables
  retrying (one attempt).
- ``retry_delay`` (1.0): the base of the backoff, in seconds; attempt ``n``
  waits ``retry_delay * 2 ** (n - 1)``, +/-10% jitter, capped at
  ``max_delay``. A ``Retry-After`` (or ``retry-after-ms``) header on the
  error replaces the backoff (capped the same way).
- ``request_timeout`` (120.0): the deadline of one request (a whole
  streamed completion included). None disables it and defers to the client
  library; 0 means the same (TOML has no null).
- ``stream_idle_timeout`` (90.0): the longest gap between two streamed
  chunks (the first one included) before :class:`StreamStallError`. None
  (or 0) disables stall detection, with a one-time ``UserWarning``.

``deadline`` (None) bounds all attempts and the waits between them together;
the policy never sleeps past it. :func:`iter_with_idle_timeout` applies
``stream_idle_timeout`` to a streamed answer.

Every message this module writes goes through :func:`redact` with the
secrets the caller names, so an API key never reaches an error or a log.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import re
import time
import warnings
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from lackpy_kernel.errors import ProviderError, ProviderTimeoutError, StreamStallError

T = TypeVar("T")

log = logging.getLogger("lackpy_kernel.infer")

REDACTED = "[REDACTED]"
# Anthropic keys look like sk-ant-api03-..., OpenAI's like sk-proj-... or sk-...: redact them even
# when nobody named them.
_KEY_PATTERN = re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}|sk-[A-Za-z0-9_\-]{20,}")

POLICY_KEYS = ("max_retries", "retry_delay", "request_timeout", "stream_idle_timeout", "deadline")

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


def redact(text: object, secrets: Iterable[str | None] = ()) -> str:
    """``text`` as a string with every secret, and anything shaped like an API key, replaced."""
    result = str(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        result = result.replace(secret, REDACTED)
    return _KEY_PATTERN.sub(REDACTED, result)


def redacting(on_text: Callable[[str], None] | None, secrets: Iterable[str | None]
              ) -> Callable[[str], None] | None:
    """``on_text`` seeing its text through :func:`redact` (None stays None)."""
    if on_text is None:
        return None
    named = tuple(secrets)
    return lambda text: on_text(redact(text, named))


def _check_number(name: str, value: Any, *, allow_none: bool) -> float | None:
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"{name} must be a number of seconds, not None")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of seconds, got {type(value).__name__} {value!r}")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return float(value)


@dataclass
class RetryPolicy:
    """How a model provider retries and times out (LazyBridge's knobs, see the module doc)."""

    max_retries: int = 3
    retry_delay: float = 1.0
    request_timeout: float | None = 120.0
    stream_idle_timeout: float | None = 90.0
    deadline: float | None = None
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise ValueError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0 (0 disables retries), got {self.max_retries!r}")
        self.retry_delay = _check_number("retry_delay", self.retry_delay, allow_none=False) or 0.0
        self.max_delay = _check_number("max_delay", self.max_delay, allow_none=False) or 0.0
        for name in ("request_timeout", "stream_idle_timeout", "deadline"):
            value = _check_number(name, getattr(self, name), allow_none=True)
            setattr(self, name, value or None)  # 0 disables, like None
        if self.stream_idle_timeout is None:
            warnings.warn(
                "stream_idle_timeout is disabled: a half-open model stream can then hang until "
                "request_timeout (or forever, when that is disabled too)",
                UserWarning,
                stacklevel=3,
            )

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RetryPolicy:
        """The policy from a provider's settings: reads only the knobs in ``POLICY_KEYS``.

        Missing knobs keep their defaults; a wrong type or a negative value
        raises ``ValueError`` naming the knob.
        """
        if not isinstance(settings, Mapping):
            raise ValueError(f"settings must be a mapping, got {type(settings).__name__}")
        return cls(**{key: settings[key] for key in POLICY_KEYS if key in settings})

    def backoff(self, attempt: int, error: BaseException | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        after = retry_after_seconds(error) if error is not None else None
        if after is not None:
            return min(after, self.max_delay)
        base: float = self.retry_delay * (2 ** max(attempt - 1, 0))
        return min(base * random.uniform(0.9, 1.1), self.max_delay)

    async def run(
        self,
        attempt: Callable[[], Awaitable[T]],
        is_transient: Callable[[BaseException], bool] | None = None,
        *,
        what: str = "request",
        describe: Callable[[BaseException], str] | None = None,
        secrets: Iterable[str | None] = (),
    ) -> T:
        """Await ``attempt()`` until it succeeds, retrying transient errors.

        Each attempt runs under ``request_timeout`` (and what is left of
        ``deadline``). Timeouts and stalled streams are always transient;
        other errors are transient when ``is_transient`` says so (default:
        :func:`default_is_transient`). The last error is raised as a
        :class:`ProviderError` (a :class:`StreamStallError` or
        :class:`ProviderTimeoutError` when that is what it was) whose message
        is ``what``, the attempts, and ``describe(error)`` — which should say
        what to do — all redacted with ``secrets``.
        """
        is_transient = is_transient or default_is_transient
        named = tuple(s for s in secrets if s)
        start = time.monotonic()
        deadline_at = None if self.deadline is None else start + self.deadline
        attempts = 0
        while True:
            attempts += 1
            timeout = self.request_timeout
            bound_by_deadline = False
            if deadline_at is not None:
                remaining = max(deadline_at - time.monotonic(), 0.0)
                if timeout is None or remaining < timeout:
                    timeout, bound_by_deadline = remaining, True
            try:
                async with asyncio.timeout(timeout) as scope:
                    return await attempt()
            except TimeoutError as exc:
                if not scope.expired():
                    error: BaseException = exc
                elif bound_by_deadline:
                    error = ProviderTimeoutError(
                        f"the overall deadline of {self.deadline:g} s passed during attempt {attempts}; "
                        "raise `deadline` to allow more time"
                    )
                    raise self._final(error, attempts, start, what, describe, named, "") from None
                else:
                    error = ProviderTimeoutError(
                        f"no answer within request_timeout={self.request_timeout:g} s; check that the "
                        "server is responding, or raise request_timeout"
                    )
            except Exception as exc:  # CancelledError and KeyboardInterrupt pass through
                error = exc
            always = isinstance(error, ProviderTimeoutError | StreamStallError)
            if not (always or _safe(is_transient, error)):
                reason = "not retried: not a transient error"
                raise self._final(error, attempts, start, what, describe, named, reason)
            if attempts > self.max_retries:
                reason = f"gave up after max_retries={self.max_retries}" if self.max_retries else (
                    "retries are disabled (max_retries=0)")
                raise self._final(error, attempts, start, what, describe, named, reason)
            delay = self.backoff(attempts, error)
            if deadline_at is not None and time.monotonic() + delay >= deadline_at:
                raise self._final(error, attempts, start, what, describe, named,
                                  f"stopped retrying: the overall deadline of {self.deadline:g} s would pass")
            log.info(redact(f"{what}: attempt {attempts} failed ({_brief(error)}); retrying in {delay:.2f} s",
                            named))
            await asyncio.sleep(delay)

    def _final(
        self,
        error: BaseException,
        attempts: int,
        start: float,
        what: str,
        describe: Callable[[BaseException], str] | None,
        secrets: tuple[str, ...],
        reason: str,
    ) -> ProviderError:
        elapsed = time.monotonic() - start
        try:
            detail = describe(error) if describe is not None else default_describe(error)
        except Exception:  # a describe bug must not hide the real error
            detail = default_describe(error)
        plural = "" if attempts == 1 else "s"
        message = f"{what} failed after {attempts} attempt{plural} ({elapsed:.1f} s): {detail}"
        if reason:
            message += f" [{reason}]"
        message = redact(message, secrets)
        kwargs: dict[str, Any] = {
            "attempts": attempts, "status_code": status_code_of(error), "elapsed": elapsed,
        }
        final: ProviderError
        if isinstance(error, StreamStallError):
            final = StreamStallError(message, gap=error.gap, **kwargs)
        elif isinstance(error, ProviderTimeoutError):
            final = ProviderTimeoutError(message, **kwargs)
        else:
            final = ProviderError(message, **kwargs)
        # Chain the original only when nothing in its chain could carry a secret.
        if not isinstance(error, ProviderError) and not _chain_mentions(error, secrets):
            final.__cause__ = error
        final.__suppress_context__ = True
        log.info(message)
        return final


def _safe(predicate: Callable[[BaseException], bool], error: BaseException) -> bool:
    try:
        return bool(predicate(error))
    except Exception:
        return False


def _brief(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


def _chain_mentions(error: BaseException, secrets: tuple[str, ...]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = f"{current!s} {current.args!r}"
        if any(secret in text for secret in secrets) or _KEY_PATTERN.search(text):
            return True
        current = current.__cause__ or current.__context__
    return False


def status_code_of(error: BaseException | None) -> int | None:
    """The HTTP status an error carries (``status_code`` or ``response.status_code``), if any."""
    for holder in (error, getattr(error, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int) and not isinstance(code, bool) and code > 0:
            return code
    return None


def is_transient_status(code: int | None) -> bool:
    """408, 409, 425, 429 and every 5xx."""
    return code is not None and (code in _TRANSIENT_STATUS or 500 <= code <= 599)


def default_is_transient(error: BaseException) -> bool:
    """Timeouts, stalls, connection errors (OSError), and transient HTTP statuses."""
    if isinstance(error, ProviderTimeoutError | StreamStallError | TimeoutError | ConnectionError):
        return True
    if isinstance(error, ProviderError):
        return False
    if is_transient_status(status_code_of(error)):
        return True
    return isinstance(error, OSError)


def default_describe(error: BaseException) -> str:
    """The error's own message, or its type when it has none."""
    if isinstance(error, ProviderError):
        return str(error)
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def retry_after_seconds(error: BaseException | None) -> float | None:
    """Seconds from a ``retry-after-ms`` or ``Retry-After`` header (seconds or HTTP date) on ``error``.

    Looks at ``error.response.headers`` and ``error.headers``; None when
    there is no such header or it does not parse.
    """
    for holder in (getattr(error, "response", None), error):
        headers = getattr(holder, "headers", None)
        if headers is None or not hasattr(headers, "get"):
            continue
        try:
            milliseconds = _header(headers, "retry-after-ms")
            if milliseconds is not None:
                value = float(milliseconds) / 1000
                if math.isfinite(value) and value >= 0:
                    return value
            raw = _header(headers, "retry-after")
        except (TypeError, ValueError):
            continue
        if raw is None:
            continue
        try:
            value = float(raw)
        except (TypeError, ValueError):
            try:
                when = email.utils.parsedate_to_datetime(str(raw))
            except (TypeError, ValueError, IndexError):
                continue
            if when is None:
                continue
            return max(when.timestamp() - time.time(), 0.0)
        if math.isfinite(value) and value >= 0:
            return value
    return None


def _header(headers: Any, name: str) -> Any:
    """A header from httpx-style (case-insensitive) headers or a plain mapping, in any case."""
    value = headers.get(name)
    if value is None and isinstance(headers, Mapping):
        value = next((v for k, v in headers.items() if str(k).lower() == name), None)
    return value


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
