"""The dispatcher: try providers in order, validate everything, correct what fails."""

from __future__ import annotations

import inspect
import time
from collections.abc import Iterable, Sequence
from typing import Any

from lackpy_kernel.errors import GenerationError
from lackpy_kernel.lang import Rule, validate

from .correction import deterministic_cleanup
from .prompt import build_system_prompt
from .provider import GenerationResult, provider_kind
from .sanitize import sanitize_output


class InferenceDispatcher:
    """Tries each available provider in order and returns the first valid program.

    A program that fails validation goes through the correction chain before
    the dispatcher moves on: deterministic cleanup, then one retry with the
    errors fed back, then a fresh fixer (the provider's ``fix`` if it has one,
    else ``generate`` again with the broken program and its errors).
    """

    def __init__(self, providers: Sequence[Any]) -> None:
        self.providers = providers

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        allowed_names: Iterable[str],
        params_desc: str | None = None,
        extra_rules: list[Rule] | None = None,
        interpreter: Any = None,
        example_pool: list[Any] | None = None,
    ) -> GenerationResult:
        """A validated program for ``intent``.

        Raises GenerationError (a RuntimeError) listing every provider and why it gave none.
        """
        started = time.perf_counter()
        allowed = set(allowed_names)
        config = {
            "system_prompt": build_system_prompt(
                namespace_desc, params_desc, intent, example_pool, interpreter=interpreter
            ),
            "params_desc": params_desc,
            "allowed_names": sorted(allowed),
            "example_pool": example_pool or [],
        }
        attempt = _Attempt(intent, namespace_desc, allowed, extra_rules, config)
        failures: list[str] = []
        for provider in list(self.providers):
            outcome = await attempt.with_provider(provider)
            if isinstance(outcome, GenerationResult):
                outcome.generation_time_ms = _ms_since(started)
                return outcome
            failures.append(f"{provider.name}: {outcome}")
        raise GenerationError(
            f"no provider could write a valid program for {intent!r}:\n"
            + "\n".join(f"  - {failure}" for failure in failures)
        )


class _Attempt:
    """One dispatch: the shared context, and the log of every try."""

    def __init__(self, intent, namespace_desc, allowed, extra_rules, config) -> None:
        self.intent = intent
        self.namespace_desc = namespace_desc
        self.allowed = allowed
        self.extra_rules = extra_rules
        self.config = config
        self.log: list[dict[str, Any]] = []

    async def with_provider(self, provider: Any) -> GenerationResult | str:
        """A result, or why this provider gave none."""
        if not is_available(provider):
            return "not available" + _reason(provider)
        raw = await self._call(provider, "generate", provider.generate,
                               self.intent, self.namespace_desc, dict(self.config))
        if isinstance(raw, _Failed):
            return raw.reason
        if raw is None:
            return "no program for this intent"
        program = sanitize_output(raw)
        errors = self._errors(program)
        if not errors:
            return self._result(provider, raw, program)
        corrected = await self._correct(provider, program, errors)
        if isinstance(corrected, str):
            return corrected
        return self._result(provider, raw, *corrected)

    def _result(self, provider: Any, raw: str, program: str, strategy: str | None = None,
                steps: int = 0) -> GenerationResult:
        return GenerationResult(
            program, provider.name, 0.0, strategy, steps, self.log if strategy else None,
            kind=provider_kind(provider), source=getattr(raw, "source", None))

    async def _correct(self, provider: Any, program: str, errors: list[str]
                       ) -> tuple[str, str, int] | str:
        """(program, strategy, steps) for the first correction that validates, or why none did."""
        self._note(provider, "validate", program, errors)
        steps = 0
        for strategy in ("cleanup", "retry", "fixer"):
            steps += 1
            candidate = await self._candidate(strategy, provider, program, errors)
            if isinstance(candidate, _Failed):
                continue
            if candidate is None:
                self._note(provider, strategy, None, ["no program"])
                continue
            candidate = sanitize_output(candidate)
            candidate_errors = self._errors(candidate)
            self._note(provider, strategy, candidate, candidate_errors)
            if not candidate_errors:
                return candidate, strategy, steps
            if strategy != "cleanup":
                program, errors = candidate, candidate_errors
        return f"invalid program after correction: {'; '.join(errors[:3])}"

    async def _candidate(self, strategy: str, provider: Any, program: str, errors: list[str]):
        if strategy == "cleanup":
            return deterministic_cleanup(program, self.allowed)
        config = dict(self.config, previous_program=program)
        if strategy == "retry":
            return await self._call(provider, strategy, provider.generate, self.intent,
                                    self.namespace_desc, config, errors)
        fix = getattr(provider, "fix", None)
        if callable(fix):
            extra = (config,) if _takes_config(fix) else ()
            return await self._call(provider, strategy, fix, self.intent, program, errors,
                                    self.namespace_desc, *extra)
        return await self._call(provider, strategy, provider.generate, self.intent,
                                self.namespace_desc, dict(config, fixer=True), errors)

    async def _call(self, provider: Any, step: str, method: Any, *args: Any) -> Any:
        try:
            return await method(*args)
        except Exception as exc:  # a broken provider is skipped, not fatal
            reason = f"{type(exc).__name__}: {exc}"
            self._note(provider, step, None, [reason])
            return _Failed(reason)

    def _errors(self, program: str) -> list[str]:
        if not program.strip():
            return ["the provider returned an empty program"]
        return validate(program, self.allowed, self.extra_rules).errors

    def _note(self, provider: Any, step: str, program: str | None, errors: list[str]) -> None:
        self.log.append({"provider": provider.name, "step": step, "program": program,
                         "errors": errors})


class _Failed:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _takes_config(method: Any) -> bool:
    """Whether ``fix`` accepts the optional fifth ``config`` argument."""
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return "config" in parameters or any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters.values()
    )


def is_available(provider: Any) -> bool:
    """``provider.available()``, False when that raises."""
    try:
        return bool(provider.available())
    except Exception:
        return False


def unavailable_reason(provider: Any) -> str | None:
    """Why ``provider`` is unavailable, when it can say."""
    explain = getattr(provider, "unavailable_reason", None)
    return explain() if callable(explain) else None


def _reason(provider: Any) -> str:
    reason = unavailable_reason(provider)
    return f" ({reason})" if reason else ""


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
