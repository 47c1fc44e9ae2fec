"""The dispatcher: try providers in order, validate everything, correct what fails."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lackpy_kernel.errors import GenerationError
from lackpy_kernel.lang import Rule, validate
from lackpy_kernel.telemetry import span
from lackpy_kernel.timing import ms_since as _ms_since

from ._correction import Cleaned, clean_reply, copies_prompt, has_code
from ._events import (
    CorrectionStep,
    GenerationEvent,
    ProgramStreaming,
    ProviderFailed,
    ProviderTried,
    ProviderUnavailable,
)
from ._examples import general_examples
from ._provider import DEFAULT_ROUNDS, GenerationResult, InferenceProvider, provider_kind
from .prompt import (
    DEFAULT_STOP,
    FEEDBACK_ERRORS,
    FIXER_INSTRUCTION,
    Example,
    Interpreter,
    build_system_prompt,
    default_max_tokens,
    program_slot,
)
from .sanitize import sanitize_output

EventCallback = Callable[[GenerationEvent], None]


class InferenceDispatcher:
    """Tries each available provider in order and returns the first valid program.

    A reply that is not a valid program goes through the correction chain
    before the dispatcher moves on: a free cleanup (:func:`.correction.clean_reply`),
    then up to the provider's ``correction_rounds`` model calls (default 2): a
    retry told the first errors (skipped when the reply only copied the
    prompt), then fresh fixers (the provider's ``fix``, else ``generate``
    again) shown an excerpt of the best attempt so far and its first errors.
    Each reply is cleaned up the same way. ``attempts_log`` says what each
    step did.
    """

    def __init__(self, providers: Sequence[InferenceProvider]) -> None:
        self.providers = providers

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        allowed_names: Iterable[str],
        *,
        params_desc: str | None = None,
        extra_rules: list[Rule] | None = None,
        interpreter: Interpreter | None = None,
        example_pool: Sequence[Example | Mapping[str, Any]] | None = None,
        tool_names: Iterable[str] | None = None,
        variables_desc: str | None = None,
        on_event: EventCallback | None = None,
    ) -> GenerationResult:
        """A validated program for ``intent``.

        ``namespace_desc`` describes the kit's tools for a model's prompt and
        ``tool_names`` names them (default: ``allowed_names``), for providers
        that match on tools. ``variables_desc`` describes the session's
        variables for the prompt (their names belong in ``allowed_names``).
        ``on_event`` receives the progress events of :mod:`.events`, in order.
        The prompt's examples come from ``example_pool`` and, for the kit's
        tools, :data:`.examples.GENERAL_EXAMPLES`.

        Raises GenerationError (a RuntimeError) listing every provider and why
        it gave none; an exception raised by ``on_event`` propagates.
        """
        started = time.perf_counter()
        allowed = set(allowed_names)
        tools = allowed if tool_names is None else set(tool_names)
        examples = [*(example_pool or []), *general_examples(tools)]
        config: dict[str, Any] = {
            "system_prompt": build_system_prompt(
                namespace_desc, params_desc, intent, examples, interpreter=interpreter,
                variables_desc=variables_desc,
            ),
            "params_desc": params_desc,
            "variables_desc": variables_desc,
            "allowed_names": sorted(allowed),
            "tool_names": sorted(tools),
            "example_pool": examples,
            "stop": list(DEFAULT_STOP),
            "max_tokens": default_max_tokens(examples),
        }
        attempt = _Attempt(intent, namespace_desc, allowed, extra_rules, config, _Events(on_event))
        failures: list[str] = []
        for provider in list(self.providers):
            with span(f"lackpy.tier {provider.name}", {"lackpy.tier": provider.name}) as tier:
                outcome = await attempt.with_provider(provider)
                tier.set({"lackpy.outcome": "program" if isinstance(outcome, GenerationResult) else outcome})
            if isinstance(outcome, GenerationResult):
                outcome.generation_time_ms = _ms_since(started)
                return outcome
            failures.append(f"{provider.name}: {outcome}")
        raise GenerationError(
            f"no provider could write a valid program for {intent!r}:\n"
            + "\n".join(f"  - {failure}" for failure in failures)
        )


class _Events:
    """Delivers events; an error raised by the callback while a provider streams is kept and re-raised."""

    def __init__(self, callback: EventCallback | None) -> None:
        self.callback = callback
        self.error: Exception | None = None

    def emit(self, event: GenerationEvent) -> None:
        if self.callback is not None:
            self.callback(event)

    def streaming(self, provider: str, step: str) -> Callable[[str], None] | None:
        """The ``on_text`` a provider calls while it streams, or None when nobody listens."""
        callback = self.callback
        if callback is None:
            return None

        def on_text(text: str) -> None:
            if self.error is None:
                try:
                    callback(ProgramStreaming(provider, step, text))
                except Exception as exc:  # raised again by the dispatcher, outside the provider
                    self.error = exc

        return on_text

    def raise_pending(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error


@dataclass
class _Failed:
    reason: str


class _Attempt:
    """One dispatch: the shared context, and the log of every step."""

    def __init__(self, intent: str, namespace_desc: str, allowed: set[str], extra_rules: list[Rule] | None,
                 config: dict[str, Any], events: _Events) -> None:
        self.intent = intent
        self.namespace_desc = namespace_desc
        self.allowed = allowed
        self.extra_rules = extra_rules
        self.config = config
        self.events = events
        self.prompt_text = "\n".join((config["system_prompt"], FIXER_INSTRUCTION, program_slot(intent)))
        self.log: list[dict[str, Any]] = []

    async def with_provider(self, provider: InferenceProvider) -> GenerationResult | str:
        """A result, or why this provider gave none."""
        if not is_available(provider):
            reason = "not available" + _reason(provider)
            self.events.emit(ProviderUnavailable(provider.name, reason))
            return reason
        self.events.emit(ProviderTried(provider.name, provider_kind(provider)))
        outcome = await self._write(provider)
        if isinstance(outcome, str):
            self.events.emit(ProviderFailed(provider.name, outcome))
        return outcome

    async def _write(self, provider: InferenceProvider) -> GenerationResult | str:
        raw = await self._call(provider, "generate", provider.generate, self.intent, self.namespace_desc,
                               self._config(provider, "generate"))
        if isinstance(raw, _Failed):
            return raw.reason
        if raw is None:
            return "no program for this intent"
        program = sanitize_output(raw)
        errors = self._check(program) if program.strip() else ["the provider returned an empty program"]
        if not errors:
            return self._result(provider, raw, program)
        self._note(provider, "generate", "wrote a program that is not valid", program, errors)
        return await self._correct(provider, raw)

    async def _correct(self, provider: InferenceProvider, raw: str) -> GenerationResult | str:
        """The correction chain (see :class:`InferenceDispatcher`) for the invalid reply ``raw``."""
        tries = [self._clean(raw)]
        self._step(provider, "cleanup", "; ".join(tries[0].did) or "found nothing to clean", tries[0])
        if tries[0].valid:
            return self._result(provider, raw, tries[0].program, "cleanup", 1)
        steps = 1
        for step in self._plan(provider, raw):
            shown = tries[-1] if step == "retry" else max(tries, key=_score)
            reply = self._retry(provider, shown) if step == "retry" else self._fix(provider, shown)
            steps += 1
            answer = await reply
            if isinstance(answer, _Failed):
                return answer.reason
            if answer is None:
                self._step(provider, step, f"{_asked(step, shown, tries)}; it gave no program", None)
                continue
            cleaned = self._clean(answer)
            tries.append(cleaned)
            self._step(provider, step, "; ".join([_asked(step, shown, tries[:-1]), *cleaned.did]), cleaned)
            if cleaned.valid:
                return self._result(provider, answer, cleaned.program, step, steps)
        best = max(tries, key=_score)
        return f"invalid program after correction: {'; '.join(best.errors[:3])}"

    def _plan(self, provider: InferenceProvider, raw: str) -> list[str]:
        """The model calls the chain may make: a retry, then fixers; no retry after a copy of the prompt."""
        rounds = _rounds(provider)
        if rounds and copies_prompt(raw, self.prompt_text):
            self._step(provider, "retry", "skipped: the reply copies the prompt", None)
            return ["fixer"] * rounds
        return ["retry", *["fixer"] * (rounds - 1)] if rounds else []

    def _retry(self, provider: InferenceProvider, rejected: Cleaned) -> Awaitable[Any]:
        config = dict(self._config(provider, "retry"), previous_program=_program_of(rejected))
        return self._call(provider, "retry", provider.generate, self.intent, self.namespace_desc, config,
                          list(rejected.errors))

    def _fix(self, provider: InferenceProvider, best: Cleaned) -> Awaitable[Any]:
        config = self._config(provider, "fixer")
        program, errors = _program_of(best), list(best.errors)
        fix = getattr(provider, "fix", None)
        if callable(fix):
            extra = (config,) if _takes_config(fix) else ()
            return self._call(provider, "fixer", fix, self.intent, program, errors, self.namespace_desc,
                              *extra)
        config = dict(config, previous_program=program, fixer=True)
        return self._call(provider, "fixer", provider.generate, self.intent, self.namespace_desc, config,
                          errors)

    def _config(self, provider: InferenceProvider, step: str) -> dict[str, Any]:
        config = dict(self.config)
        on_text = self.events.streaming(provider.name, step)
        if on_text is not None:
            config["on_text"] = on_text
        return config

    async def _call(self, provider: InferenceProvider, step: str, method: Callable[..., Awaitable[Any]],
                    *args: Any) -> Any:
        try:
            answer = await method(*args)
        except Exception as exc:  # a broken provider is skipped, not fatal
            self.events.raise_pending()
            reason = f"{type(exc).__name__}: {exc}"
            self._note(provider, step, "failed", None, [reason])
            return _Failed(reason)
        self.events.raise_pending()
        return answer

    def _clean(self, raw: str) -> Cleaned:
        return clean_reply(raw, self._check, self.allowed, prompt=self.prompt_text)

    def _check(self, program: str) -> list[str]:
        errors = validate(program, self.allowed, self.extra_rules).errors
        if not errors and not has_code(program):
            return ["the reply holds no code, only comments"]
        return errors

    def _result(self, provider: InferenceProvider, raw: str, program: str, strategy: str | None = None,
                steps: int = 0) -> GenerationResult:
        return GenerationResult(
            program, provider.name, 0.0, strategy, steps, self.log if strategy else None,
            kind=provider_kind(provider), source=getattr(raw, "source", None))

    def _step(self, provider: InferenceProvider, step: str, did: str, cleaned: Cleaned | None) -> None:
        program, errors = (cleaned.program, cleaned.errors) if cleaned is not None else (None, [])
        self._note(provider, step, did, program, errors)
        self.events.emit(CorrectionStep(provider.name, step, did, cleaned is not None and cleaned.valid))

    def _note(self, provider: InferenceProvider, step: str, did: str, program: str | None,
              errors: list[str]) -> None:
        self.log.append({"provider": provider.name, "step": step, "did": did, "program": program,
                         "errors": list(errors)})


def _score(attempt: Cleaned) -> tuple[bool, int]:
    """Higher is better: a program over prose, then fewer errors (the earliest wins a tie)."""
    return attempt.is_program, -len(attempt.errors)


def _program_of(attempt: Cleaned) -> str | None:
    return attempt.program if attempt.is_program else None


def _asked(step: str, shown: Cleaned, tries: Sequence[Cleaned]) -> str:
    """What a retry or fixer was told: the first errors (a fixer also an excerpt), or "not a program"."""
    errors = f"its first {min(len(shown.errors), FEEDBACK_ERRORS)} error(s)"
    if step == "retry":
        return "asked again with " + (errors if shown.is_program else "word that the reply was not a program")
    number = next(i for i, attempt in enumerate(tries, start=1) if attempt is shown)
    what = f"an excerpt of it and {errors}" if shown.is_program else "word that it was not a program"
    return f"asked a fresh fixer to repair attempt {number}, the best so far, with {what}"


def _rounds(provider: InferenceProvider) -> int:
    rounds = getattr(provider, "correction_rounds", DEFAULT_ROUNDS)
    return rounds if isinstance(rounds, int) and not isinstance(rounds, bool) and rounds >= 0 else (
        DEFAULT_ROUNDS)


def _takes_config(method: Callable[..., Any]) -> bool:
    """Whether ``fix`` accepts the optional fifth ``config`` argument."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return "config" in parameters or any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters.values()
    )


def is_available(provider: InferenceProvider) -> bool:
    """``provider.available()``, False when that raises."""
    try:
        return bool(provider.available())
    except Exception:
        return False


def unavailable_reason(provider: InferenceProvider) -> str | None:
    """Why ``provider`` is unavailable, when it can say."""
    explain = getattr(provider, "unavailable_reason", None)
    if not callable(explain):
        return None
    reason = explain()
    return reason if isinstance(reason, str) else None


def _reason(provider: InferenceProvider) -> str:
    reason = unavailable_reason(provider)
    return f" ({reason})" if reason else ""
