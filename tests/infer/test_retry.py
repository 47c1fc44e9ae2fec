"""RetryPolicy: retries, backoff, Retry-After, timeouts, the deadline and redaction."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from types import SimpleNamespace

import pytest

from lackpy_kernel.errors import ProviderError, ProviderTimeoutError
from lackpy_kernel.infer.models import (
    REDACTED,
    RetryPolicy,
    default_is_transient,
    redact,
    retry_after_seconds,
)


class HTTPError(Exception):
    """An error shaped like the client libraries' ones: a status code and a response with headers."""

    def __init__(self, status: int, headers: dict[str, str] | None = None, text: str = "") -> None:
        super().__init__(text or f"HTTP {status}")
        self.status_code = status
        self.response = SimpleNamespace(status_code=status, headers=headers or {})


class Flaky:
    """An attempt that raises the given errors in turn, then returns ``result``."""

    def __init__(self, *errors: BaseException, result: str = "ok") -> None:
        self.errors = list(errors)
        self.result = result
        self.calls = 0
        self.times: list[float] = []

    async def __call__(self) -> str:
        self.calls += 1
        self.times.append(time.monotonic())
        if self.errors:
            raise self.errors.pop(0)
        return self.result


FAST = {"retry_delay": 0.001}


# --- knobs and settings ------------------------------------------------------------------------------

def test_defaults_are_lazybridges():
    policy = RetryPolicy()
    assert (policy.max_retries, policy.retry_delay, policy.request_timeout, policy.stream_idle_timeout,
            policy.deadline) == (3, 1.0, 120.0, 90.0, None)


def test_from_settings_reads_the_knobs_and_ignores_other_keys():
    policy = RetryPolicy.from_settings({
        "plugin": "ollama", "model": "m", "max_retries": 5, "retry_delay": 0, "request_timeout": 7,
        "stream_idle_timeout": 2.5, "deadline": 30,
    })
    assert policy == RetryPolicy(max_retries=5, retry_delay=0.0, request_timeout=7.0, stream_idle_timeout=2.5,
                                 deadline=30.0)
    assert RetryPolicy.from_settings({}) == RetryPolicy()


@pytest.mark.parametrize("settings, knob", [
    ({"max_retries": "3"}, "max_retries"),
    ({"max_retries": 2.0}, "max_retries"),
    ({"max_retries": True}, "max_retries"),
    ({"max_retries": -1}, "max_retries"),
    ({"retry_delay": "1s"}, "retry_delay"),
    ({"retry_delay": -0.5}, "retry_delay"),
    ({"retry_delay": None}, "retry_delay"),
    ({"request_timeout": "120"}, "request_timeout"),
    ({"request_timeout": -1}, "request_timeout"),
    ({"stream_idle_timeout": False}, "stream_idle_timeout"),
    ({"deadline": [1]}, "deadline"),
])
def test_from_settings_rejects_bad_values_naming_the_knob(settings, knob):
    with pytest.raises(ValueError, match=knob):
        RetryPolicy.from_settings(settings)


def test_zero_and_none_disable_the_timeouts_and_a_disabled_idle_timeout_warns():
    assert RetryPolicy(request_timeout=0).request_timeout is None
    assert RetryPolicy(request_timeout=None).request_timeout is None
    with pytest.warns(UserWarning, match="stream_idle_timeout"):
        assert RetryPolicy.from_settings({"stream_idle_timeout": 0}).stream_idle_timeout is None
    with pytest.warns(UserWarning, match="stream_idle_timeout"):
        RetryPolicy(stream_idle_timeout=None)


# --- retries -----------------------------------------------------------------------------------------

async def test_success_needs_one_attempt():
    attempt = Flaky()
    assert await RetryPolicy(**FAST).run(attempt, default_is_transient) == "ok"
    assert attempt.calls == 1


@pytest.mark.parametrize("error", [HTTPError(429), HTTPError(500), HTTPError(503), HTTPError(529),
                                   ConnectionRefusedError("refused"), TimeoutError()])
async def test_transient_errors_are_retried(error):
    attempt = Flaky(error, error)
    assert await RetryPolicy(**FAST).run(attempt, default_is_transient) == "ok"
    assert attempt.calls == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(status):
    attempt = Flaky(HTTPError(status, text=f"bad request {status}"))
    with pytest.raises(ProviderError) as caught:
        await RetryPolicy(**FAST).run(attempt, default_is_transient, what="the test call")
    assert attempt.calls == 1
    error = caught.value
    assert error.attempts == 1 and error.status_code == status
    assert "the test call failed after 1 attempt" in str(error)
    assert f"bad request {status}" in str(error) and "not retried" in str(error)
    assert isinstance(error.__cause__, HTTPError)  # the original stays reachable when it holds no secret


async def test_gives_up_after_max_retries_with_the_last_error():
    attempt = Flaky(*[HTTPError(500, text=f"boom {n}") for n in range(10)])
    with pytest.raises(ProviderError) as caught:
        await RetryPolicy(max_retries=2, retry_delay=0.001).run(attempt, default_is_transient)
    assert attempt.calls == 3 and caught.value.attempts == 3
    assert "after 3 attempts" in str(caught.value) and "boom 2" in str(caught.value)
    assert "max_retries=2" in str(caught.value)


async def test_max_retries_zero_makes_one_attempt():
    attempt = Flaky(HTTPError(503))
    with pytest.raises(ProviderError, match="max_retries=0"):
        await RetryPolicy(max_retries=0).run(attempt, default_is_transient)
    assert attempt.calls == 1


async def test_is_transient_decides_and_describe_writes_the_message():
    class Odd(Exception):
        pass

    attempt = Flaky(Odd(), Odd())
    result = await RetryPolicy(**FAST).run(attempt, lambda error: isinstance(error, Odd))
    assert result == "ok" and attempt.calls == 3

    with pytest.raises(ProviderError, match="start it with `ollama serve`"):
        await RetryPolicy(max_retries=1, **FAST).run(
            Flaky(*[ConnectionRefusedError()] * 3), default_is_transient,
            describe=lambda error: "is Ollama running? start it with `ollama serve`")


async def test_cancellation_is_not_wrapped():
    async def attempt():
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await RetryPolicy(**FAST).run(attempt, default_is_transient)


async def test_backoff_is_exponential_with_jitter():
    policy = RetryPolicy(retry_delay=1.0, max_delay=100)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0)]:
        delays = {policy.backoff(attempt) for _ in range(20)}
        assert all(0.9 * base <= delay <= 1.1 * base for delay in delays)
        assert len(delays) > 1  # jittered
    assert RetryPolicy(retry_delay=10, max_delay=3).backoff(4) == 3


async def test_backoff_waits_between_attempts():
    attempt = Flaky(HTTPError(500), HTTPError(500))
    await RetryPolicy(retry_delay=0.05).run(attempt, default_is_transient)
    gaps = [b - a for a, b in zip(attempt.times, attempt.times[1:], strict=False)]
    assert 0.04 <= gaps[0] < 0.5 and 0.09 <= gaps[1] < 0.6


def test_retry_after_headers_are_read():
    assert retry_after_seconds(HTTPError(429, {"retry-after": "0"})) == 0
    assert retry_after_seconds(HTTPError(429, {"retry-after": "2.5"})) == 2.5
    assert retry_after_seconds(HTTPError(429, {"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds(HTTPError(429, {"retry-after": date})) <= 31
    assert retry_after_seconds(HTTPError(429, {"retry-after": "soon"})) is None
    assert retry_after_seconds(HTTPError(429)) is None
    assert retry_after_seconds(ValueError()) is None


async def test_retry_after_replaces_the_backoff_and_is_capped():
    attempt = Flaky(HTTPError(429, {"Retry-After": "0"}))
    start = time.monotonic()
    await RetryPolicy(retry_delay=5).run(attempt, default_is_transient)
    assert attempt.calls == 2 and time.monotonic() - start < 1
    assert RetryPolicy(max_delay=0.5).backoff(1, HTTPError(429, {"retry-after": "3600"})) == 0.5


# --- timeouts and the deadline -----------------------------------------------------------------------

async def test_request_timeout_bounds_each_attempt_and_is_transient():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        await asyncio.sleep(10)

    start = time.monotonic()
    with pytest.raises(ProviderTimeoutError, match=r"request_timeout=0\.1") as caught:
        policy = RetryPolicy(max_retries=1, retry_delay=0.001, request_timeout=0.1)
        await policy.run(attempt, default_is_transient)
    assert calls == 2 and caught.value.attempts == 2
    assert 0.2 <= time.monotonic() - start < 1.5


async def test_a_timeout_raised_by_the_attempt_itself_is_not_a_request_timeout():
    attempt = Flaky(TimeoutError("the library's own timeout"))
    assert await RetryPolicy(**FAST, request_timeout=5).run(attempt, lambda e: True) == "ok"


async def test_the_deadline_stops_retries_without_sleeping_past_it(monkeypatch):
    # The policy's own waits are what must stay inside the deadline; a loaded machine may
    # add time around them, so they are recorded rather than the wall clock timed.
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded_sleep(delay: float, *args: object) -> None:
        waits.append(delay)
        await real_sleep(delay, *args)

    monkeypatch.setattr(asyncio, "sleep", recorded_sleep)
    attempt = Flaky(*[HTTPError(503)] * 100)
    with pytest.raises(ProviderError, match="deadline of 0.3 s") as caught:
        await RetryPolicy(max_retries=100, retry_delay=0.1, deadline=0.3).run(attempt, default_is_transient)
    assert 0 < sum(waits) < 0.3
    assert 1 <= attempt.calls <= 3 and caught.value.attempts == attempt.calls  # never the 101


async def test_the_deadline_cuts_a_slow_attempt_short():
    async def attempt():
        await asyncio.sleep(10)

    start = time.monotonic()
    with pytest.raises(ProviderTimeoutError, match="overall deadline of 0.2 s"):
        await RetryPolicy(deadline=0.2, request_timeout=5).run(attempt, default_is_transient)
    assert time.monotonic() - start < 1


# --- redaction ---------------------------------------------------------------------------------------

KEY = "sk-ant-api03-TESTKEY-abcdefghijklmnop"


def test_redact_replaces_secrets_and_key_shaped_strings():
    assert redact(f"key={KEY}!", [KEY]) == f"key={REDACTED}!"
    assert redact("token hunter2 here", ["hunter2", None, ""]) == f"token {REDACTED} here"
    assert redact(f"unnamed {KEY}") == f"unnamed {REDACTED}"
    assert redact("nothing secret") == "nothing secret"


async def test_secrets_never_reach_the_error_its_cause_or_the_log(caplog):
    caplog.set_level(logging.DEBUG)
    secret = "hunter2-secret-value"
    attempt = Flaky(*[HTTPError(500, text=f"bad key {secret}")] * 5)
    with pytest.raises(ProviderError) as caught:
        policy = RetryPolicy(max_retries=2, retry_delay=0.001)
        await policy.run(attempt, default_is_transient, secrets=[secret])
    error = caught.value
    assert secret not in str(error) and secret not in repr(error) and REDACTED in str(error)
    assert error.__cause__ is None and error.__suppress_context__
    assert caplog.records and all(secret not in record.getMessage() for record in caplog.records)
