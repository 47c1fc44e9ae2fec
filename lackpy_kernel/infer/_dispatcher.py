"""The dispatcher: try providers in order, validate everything, correct what fails."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from lackpy_kernel.errors import GenerationError
from lackpy_kernel.kibitzer import Watch, classify_failure, watching
from lackpy_kernel.lang import ALLOWED_BUILTINS, Rule, validate
from lackpy_kernel.telemetry import span
from lackpy_kernel.timing import ms_since as _ms_since

from ._advice import MODELS_FAILED, MODELS_NONE, MODELS_UNREACHABLE, failure_text
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
from ._provider import (
    DEFAULT_ROUNDS,
    DEFAULT_SAMPLES,
    DETERMINISTIC_KINDS,
    KIND_MODEL,
    KIND_REPLAY,
    KIND_RULES,
    KIND_TEMPLATE,
    GenerationResult,
    InferenceProvider,
    provider_kind,
)
from ._tryout import (
    ANSWER_CHECKS,
    Tryout,
    TryoutRunner,
    answer_check,
    output_key,
    path_repair,
    runtime_feedback,
    shape_repair,
)
from .prompt import (
    DEFAULT_STOP,
    FEEDBACK_ERRORS,
    FIXER_INSTRUCTION,
    N_EXAMPLES,
    Example,
    Interpreter,
    build_instructions,
    default_max_tokens,
    program_slot,
    select_examples,
    with_examples,
)
from .sanitize import sanitize_output

EventCallback = Callable[[GenerationEvent], None]
MAX_REPAIRS = 4  # repairs without a model call one program may have (missing files, a shape)


class InferenceDispatcher:
    """Tries each available provider in order and returns the first valid program.

    A reply that is not a valid program goes through the correction chain
    before the dispatcher moves on: a free cleanup (:func:`.correction.clean_reply`),
    then up to the provider's ``correction_rounds`` model calls (default 2): a
    retry told the first errors (skipped when the reply only copied the
    prompt), then fresh fixers (the provider's ``fix``, else ``generate``
    again) shown an excerpt of the best attempt so far and its first errors.
    Each reply is cleaned up the same way; a model's empty first reply goes through the
    chain too (a rules tier's means it has no program). ``attempts_log`` says what each
    step did.

    Given a ``tryout`` (the service's dry run), a valid program a model wrote is run before
    it is returned; a failure, or an answer of the wrong shape (:data:`._tryout.SHAPES`),
    goes back to the model with the error and the context that would fix it
    (:func:`._tryout.runtime_feedback`), as one more round of the same
    ``correction_rounds``. A model tier's ``samples`` (default 1) asks for that many
    programs: the valid ones are dry-run, those that fail dropped, the rest grouped by
    their output, and a program of the largest group returned (ties: the shortest). One
    intent never costs a provider more than ``samples + correction_rounds`` model calls.
    A missing file that can only mean one workspace file, and an answer of the wrong shape
    whose value says how to make it right (the size of a list where a number is asked), are
    repaired without a model call (:func:`._tryout.path_repair`, :func:`._tryout.shape_repair`;
    strategy ``repair``). At temperature 0, a feedback round
    whose reply is the program that failed, failing the same way, ends the rounds: asking
    the same again would get the same answer.
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
        tryout: TryoutRunner | None = None,
        kibitzer_session: Any = None,
    ) -> GenerationResult:
        """A validated program for ``intent``.

        ``namespace_desc`` describes the kit's tools for a model's prompt and
        ``tool_names`` names them (default: ``allowed_names``), for providers
        that match on tools. ``variables_desc`` describes the session's
        variables for the prompt (their names belong in ``allowed_names``).
        ``on_event`` receives the progress events of :mod:`.events`, in order.
        ``tryout`` dry-runs a model's valid programs (see the class).
        ``kibitzer_session`` (a KibitzerSession or ``lackpy_kernel.kibitzer.Watch``) hears of
        each model tier's outcome (``report_generation``); its prompt hints join the prompt
        and its correction hints the errors the correction chain tells the model.
        The prompt's examples come from ``example_pool`` and, for the kit's
        tools, :data:`.examples.GENERAL_EXAMPLES`.

        Raises GenerationError (a RuntimeError) listing every provider and why
        it gave none; an exception raised by ``on_event`` propagates.
        """
        started = time.perf_counter()
        allowed = set(allowed_names)
        tools = allowed if tool_names is None else set(tool_names)
        examples = [*(example_pool or []), *general_examples(tools)]
        watch = None if kibitzer_session is None else watching(kibitzer_session)
        config: dict[str, Any] = {
            "system_prompt": build_instructions(
                namespace_desc, params_desc, interpreter, variables_desc=variables_desc,
            ) + _hinted(watch),
            "examples": list(reversed(select_examples(intent, examples, N_EXAMPLES))),
            "params_desc": params_desc,
            "variables_desc": variables_desc,
            "allowed_names": sorted(allowed),
            "tool_names": sorted(tools),
            "example_pool": examples,
            "stop": list(DEFAULT_STOP),
            "max_tokens": default_max_tokens(examples),
        }
        attempt = _Attempt(intent, namespace_desc, allowed, extra_rules, config, _Events(on_event),
                           tryout, watch, tools=tools)
        failures: list[str] = []
        models = MODELS_NONE
        for provider in list(self.providers):
            with span(f"lackpy.tier {provider.name}", {"lackpy.tier": provider.name}) as tier:
                outcome = await attempt.with_provider(provider)
                tier.set({"lackpy.outcome": "program" if isinstance(outcome, GenerationResult) else outcome})
            attempt.report(provider, outcome)
            if isinstance(outcome, GenerationResult):
                outcome.generation_time_ms = _ms_since(started)
                return outcome
            failures.append(f"{provider.name}: {outcome}")
            if provider_kind(provider) == KIND_MODEL and models != MODELS_FAILED:
                models = MODELS_FAILED if attempt.answered(provider) else MODELS_UNREACHABLE
        error = GenerationError("", intent=intent, failures=tuple(failures), models=models,
                                **attempt.kit_needed)
        error.args = (failure_text(error),)
        raise error


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


@dataclass
class _Candidate:
    """A valid program, the reply it came from, and how the chain got it."""

    raw: str
    program: str
    strategy: str | None = None
    steps: int = 0
    tryout: Tryout | None = None


class _Budget:
    """The model calls a provider may still make after its first (``correction_rounds``)."""

    def __init__(self, rounds: int) -> None:
        self.left = rounds

    def spend(self) -> None:
        self.left -= 1


class _Attempt:
    """One dispatch: the shared context, and the log of every step."""

    def __init__(self, intent: str, namespace_desc: str, allowed: set[str], extra_rules: list[Rule] | None,
                 config: dict[str, Any], events: _Events, tryout: TryoutRunner | None = None,
                 watch: Watch | None = None, *, tools: Collection[str] = ()) -> None:
        self.tools = frozenset(tools)
        self.tried: set[str] = set()  # the providers asked (they were available)
        self.broken: set[str] = set()  # those whose call raised (a server down, a key refused)
        # the kit a deterministic tier's program needs (GenerationError's kit, missing, source)
        self.kit_needed: dict[str, Any] = {}
        self.tryout = tryout
        self.watch = watch
        self.intent = intent
        self.namespace_desc = namespace_desc
        self.allowed = allowed
        self.extra_rules = extra_rules
        self.config = config
        self.events = events
        self.prompt_text = "\n".join((with_examples(config["system_prompt"], config["examples"]),
                                      FIXER_INSTRUCTION, program_slot(intent)))
        self.log: list[dict[str, Any]] = []

    async def with_provider(self, provider: InferenceProvider) -> GenerationResult | str:
        """A result, or why this provider gave none."""
        if not is_available(provider):
            reason = "not available" + _reason(provider)
            self.events.emit(ProviderUnavailable(provider.name, reason))
            return reason
        self.events.emit(ProviderTried(provider.name, provider_kind(provider)))
        self.tried.add(provider.name)
        outcome = await self._write(provider)
        if isinstance(outcome, str):
            self.events.emit(ProviderFailed(provider.name, outcome))
        return outcome

    async def _write(self, provider: InferenceProvider) -> GenerationResult | str:
        budget = _Budget(_rounds(provider))
        samples = _samples(provider)
        if samples > 1:
            outcome = await self._sample(provider, samples, budget)
        else:
            outcome = await self._first(provider, budget)
        if isinstance(outcome, str):
            return outcome
        return self._result(provider, await self._checked(provider, outcome, budget))

    async def _first(self, provider: InferenceProvider, budget: _Budget) -> _Candidate | str:
        """The first reply, through the correction chain when it is not valid."""
        raw = await self._call(provider, "generate", provider.generate, self.intent, self.namespace_desc,
                               self._config(provider, "generate"))
        if isinstance(raw, _Failed):
            return raw.reason
        if raw is None and provider_kind(provider) != KIND_MODEL:
            return "no program for this intent"
        if raw is None:  # a model that stopped at once: asked again, told so
            self._note(provider, "generate", "gave an empty reply", None, ["the reply was empty"])
            return await self._correct(provider, "", budget)
        program = sanitize_output(raw)
        errors = self._check(program) if program.strip() else ["the provider returned an empty program"]
        if not errors:
            return _Candidate(raw, program)
        if provider_kind(provider) in DETERMINISTIC_KINDS:  # fixed text: asking again gets the same
            return self._fixed_text_invalid(provider, raw, program, errors)
        self._note(provider, "generate", "wrote a program that is not valid", program, errors)
        return await self._correct(provider, raw, budget)

    def _fixed_text_invalid(self, provider: InferenceProvider, raw: str, program: str,
                            errors: list[str]) -> str:
        """Why a template's, rule's or recording's program cannot be used here (no correction
        chain: fixed text gives the same answer again); when it only calls tools outside the
        kit, the kit it needs is kept for the error's advice."""
        source = _source_of(provider, raw)
        missing = self._missing_tools(program)
        if missing and not self._check_with(program, missing):
            shown = ", ".join(sorted(self.tools)) or "no tools"
            self._note(provider, "generate", f"{source} has a program that calls {', '.join(missing)}, "
                       "outside the kit", program, errors)
            if not self.kit_needed:
                self.kit_needed = {"kit": (*sorted(self.tools), *missing), "missing": tuple(missing),
                                   "source": source}
            return (f"{source} has a program for this, but it calls {', '.join(missing)}, which the kit "
                    f"({shown}) does not have")
        self._note(provider, "generate", f"{source} has a program that is not valid here", program, errors)
        return f"{source} has a program for this, not valid here: {'; '.join(errors[:3])}"

    def _missing_tools(self, program: str) -> list[str]:
        """The names ``program`` calls that are neither allowed here nor builtins nor its own."""
        checked = validate(program)
        own = set(checked.variables)
        return sorted({name for name in checked.calls
                       if name not in self.allowed and name not in ALLOWED_BUILTINS and name not in own})

    def _check_with(self, program: str, more: Iterable[str]) -> list[str]:
        """``program``'s errors were ``more`` names allowed too."""
        return validate(program, self.allowed | set(more), self.extra_rules).errors

    def answered(self, provider: InferenceProvider) -> bool:
        """Whether ``provider`` answered in this dispatch: it was available and its calls did
        not fail (a server down, a key refused)."""
        return provider.name in self.tried and provider.name not in self.broken

    async def _correct(self, provider: InferenceProvider, raw: str, budget: _Budget,
                       steps: int = 0) -> _Candidate | str:
        """The correction chain (see :class:`InferenceDispatcher`) for the invalid reply ``raw``."""
        tries = [self._clean(raw)]
        self._step(provider, "cleanup", "; ".join(tries[0].did) or "found nothing to clean", tries[0])
        steps += 1
        if tries[0].valid:
            return _Candidate(raw, tries[0].program, "cleanup", steps)
        for step in self._plan(provider, raw, budget.left):
            shown = tries[-1] if step == "retry" else max(tries, key=_score)
            reply = self._retry(provider, shown) if step == "retry" else self._fix(provider, shown)
            steps += 1
            budget.spend()
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
                return _Candidate(answer, cleaned.program, step, steps)
        best = max(tries, key=_score)
        return f"invalid program after correction: {'; '.join(best.errors[:3])}"

    async def _sample(self, provider: InferenceProvider, samples: int, budget: _Budget
                      ) -> _Candidate | str:
        """``samples`` programs, dry-run and grouped by output; a program of the largest group,
        else the correction chain on the best of them."""
        replies: list[tuple[str, Cleaned]] = []
        for number in range(1, samples + 1):
            step = f"sample {number}"
            raw = await self._call(provider, step, provider.generate, self.intent, self.namespace_desc,
                                   self._config(provider, "generate"))
            if isinstance(raw, _Failed):
                if replies:
                    break
                return raw.reason
            if raw is None:
                self._note(provider, step, "gave no program", None, [])
                continue
            cleaned = self._clean(raw)
            wrote = "wrote a valid program" if cleaned.valid else "wrote a program that is not valid"
            self._note(provider, step, "; ".join([wrote, *cleaned.did]), cleaned.program, cleaned.errors)
            replies.append((raw, cleaned))
        if not replies:
            return "no program for this intent"
        valid = [_Candidate(raw, cleaned.program, "samples", samples)
                 for raw, cleaned in replies if cleaned.valid]
        failed: list[tuple[_Candidate, list[str]]] = []
        passed: list[_Candidate] = []
        for candidate in valid:
            errors = await self._dry_run(provider, candidate, ANSWER_CHECKS)
            if errors:
                failed.append((candidate, errors))
            else:
                passed.append(candidate)
        groups = _groups(passed)
        did = (f"asked for {samples}: {len(valid)} valid, {len(passed)} passed their dry run; "
               f"groups by output: {', '.join(str(len(g)) for g in groups) or 'none'}")
        self._note(provider, "samples", did, None, [])
        self.events.emit(CorrectionStep(provider.name, "samples", did, bool(passed)))
        if groups:
            return min(groups[0], key=lambda c: (len(c.program), c.program))
        if failed:
            candidate, errors = failed[0]
            return await self._fed_back(provider, candidate, errors, budget)
        best = max(replies, key=lambda reply: _score(reply[1]))
        return await self._correct(provider, best[0], budget, samples)

    async def _checked(self, provider: InferenceProvider, candidate: _Candidate, budget: _Budget
                       ) -> _Candidate:
        """``candidate`` once it passed its dry run (or was not run), else after feedback rounds."""
        if candidate.tryout is not None or not self._dry_runs(provider):
            return candidate
        errors = await self._dry_run(provider, candidate, ANSWER_CHECKS)
        if not errors:
            return candidate
        return await self._fed_back(provider, candidate, errors, budget)

    async def _fed_back(self, provider: InferenceProvider, candidate: _Candidate, errors: list[str],
                        budget: _Budget) -> _Candidate:
        """Rounds of run-time feedback while the budget lasts: the program that passed, else
        the last that ran to its end (its answer's shape was wrong), else the last valid one."""
        checks = _left(ANSWER_CHECKS, errors)
        candidate, errors = await self._repaired(provider, candidate, errors, checks)
        steps = candidate.steps
        ran = candidate if _ran(candidate) else None
        told: set[tuple[str, tuple[str, ...]]] = set()
        while errors and budget.left > 0:
            if (candidate.program, tuple(errors)) in told and _deterministic(provider):
                self._step(provider, "feedback", "not asked again: it wrote the program that failed, "
                           "and at temperature 0 the same question gets the same answer", None)
                break
            told.add((candidate.program, tuple(errors)))
            budget.spend()
            steps += 1
            config = dict(self._config(provider, "feedback"), previous_program=candidate.program,
                          fixer=True)
            answer = await self._call(provider, "feedback", provider.generate, self.intent,
                                      self.namespace_desc, config,
                                      self._hinted(provider, errors, attempt=steps))
            if isinstance(answer, _Failed):
                break
            if answer is None:
                self._step(provider, "feedback", "told the run-time error; it gave no program", None)
                continue
            cleaned = self._clean(answer)
            self._step(provider, "feedback", "; ".join(["told the run-time error", *cleaned.did]),
                       cleaned)
            if not cleaned.valid:
                continue
            candidate = _Candidate(answer, cleaned.program, "feedback", steps)
            errors = await self._dry_run(provider, candidate, checks)
            candidate, errors = await self._repaired(provider, candidate, errors, checks)
            checks = _left(checks, errors)
            ran = candidate if _ran(candidate) else ran
        if errors and ran is not None and not _ran(candidate):
            self._note(provider, "feedback", "kept the last program that ran to its end", ran.program, [])
            candidate = ran
        candidate.steps = steps
        return candidate

    async def _repaired(self, provider: InferenceProvider, candidate: _Candidate, errors: list[str],
                        checks: Collection[str]) -> tuple[_Candidate, list[str]]:
        """``candidate`` repaired without a model call and dry-run again, with its feedback: a
        missing file's name replaced by the one workspace file it can mean
        (:func:`._tryout.path_repair`), an answer of the wrong shape made the shape asked
        for where its value says how (:func:`._tryout.shape_repair`); as it was when there
        is nothing to repair."""
        for _ in range(MAX_REPAIRS):
            repair = self._repair(candidate)
            if repair is None:
                break
            program, did = repair
            self._note(provider, "repair", did, program, [])
            self.events.emit(CorrectionStep(provider.name, "repair", did, True))
            candidate = _Candidate(candidate.raw, program, "repair", candidate.steps)
            errors = await self._dry_run(provider, candidate, checks)
        return candidate, errors

    def _repair(self, candidate: _Candidate) -> tuple[str, str] | None:
        """A valid repair of ``candidate`` after its dry run, and what it did; None when there is none."""
        tryout = candidate.tryout
        if tryout is None:
            return None
        repair = (path_repair(candidate.program, tryout)
                  or shape_repair(self.intent, candidate.program, tryout))
        return None if repair is None or self._check(repair[0]) else repair

    def _dry_runs(self, provider: InferenceProvider) -> bool:
        """Whether this provider's programs are dry-run: a model's, when a runner is given and
        its ``dry_run`` setting (default true) allows."""
        wanted = getattr(provider, "dry_run", True)
        return self.tryout is not None and provider_kind(provider) == KIND_MODEL and wanted is not False

    async def _dry_run(self, provider: InferenceProvider, candidate: _Candidate,
                       checks: Collection[str]) -> list[str]:
        """Dry-run ``candidate`` (kept on it): the feedback its run and the answer ``checks``
        give, ``[]`` when it passed."""
        if not self._dry_runs(provider) or self.tryout is None:
            return []
        tryout = await self.tryout(candidate.program)
        candidate.tryout = tryout
        errors = runtime_feedback(self.intent, tryout, checks=checks, program=candidate.program)
        if tryout.skipped is not None:
            did = f"not run: {tryout.skipped}"
        elif errors:
            did = f"ran it: {errors[0]}"
        else:
            did = "ran it: it passed"
        self._note(provider, "dry run", did, candidate.program, errors, tryout=tryout.to_dict())
        self.events.emit(CorrectionStep(provider.name, "dry run", did, not errors))
        return errors

    def _plan(self, provider: InferenceProvider, raw: str, rounds: int) -> list[str]:
        """The model calls the chain may make: a retry, then fixers; no retry after a copy of the prompt."""
        if rounds and copies_prompt(raw, self.prompt_text):
            self._step(provider, "retry", "skipped: the reply copies the prompt", None)
            return ["fixer"] * rounds
        return ["retry", *["fixer"] * (rounds - 1)] if rounds else []

    def _retry(self, provider: InferenceProvider, rejected: Cleaned) -> Awaitable[Any]:
        config = dict(self._config(provider, "retry"), previous_program=_program_of(rejected))
        return self._call(provider, "retry", provider.generate, self.intent, self.namespace_desc, config,
                          self._hinted(provider, rejected.errors))

    def _fix(self, provider: InferenceProvider, best: Cleaned) -> Awaitable[Any]:
        config = self._config(provider, "fixer")
        program, errors = _program_of(best), self._hinted(provider, best.errors, attempt=2)
        fix = getattr(provider, "fix", None)
        if callable(fix):
            extra = (config,) if _takes_config(fix) else ()
            return self._call(provider, "fixer", fix, self.intent, program, errors, self.namespace_desc,
                              *extra)
        config = dict(config, previous_program=program, fixer=True)
        return self._call(provider, "fixer", provider.generate, self.intent, self.namespace_desc, config,
                          errors)

    def _hinted(self, provider: InferenceProvider, errors: list[str], attempt: int = 1) -> list[str]:
        """``errors``, and Kibitzer's correction hint for them when it has one."""
        hint = None if self.watch is None else self.watch.correction_hint(
            errors, getattr(provider, "model", None), attempt)
        return [*errors, hint] if hint else list(errors)

    def report(self, provider: InferenceProvider, outcome: GenerationResult | str) -> None:
        """Tell Kibitzer how a model tier did (``report_generation``)."""
        if self.watch is None or provider_kind(provider) != KIND_MODEL:
            return
        report: dict[str, Any] = {"intent": self.intent, "provider": provider.name,
                                  "model": getattr(provider, "model", None)}
        if isinstance(outcome, GenerationResult):
            report.update(success=True, program=outcome.program,
                          correction_attempts=outcome.correction_attempts)
        else:
            report.update(success=False, failure_mode=classify_failure([outcome]))
        self.watch.report_generation(report)

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
            self.broken.add(provider.name)
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

    def _result(self, provider: InferenceProvider, candidate: _Candidate) -> GenerationResult:
        return GenerationResult(
            candidate.program, provider.name, 0.0, candidate.strategy, candidate.steps,
            self.log or None, kind=provider_kind(provider), source=getattr(candidate.raw, "source", None),
            dry_run=candidate.tryout)

    def _step(self, provider: InferenceProvider, step: str, did: str, cleaned: Cleaned | None) -> None:
        program, errors = (cleaned.program, cleaned.errors) if cleaned is not None else (None, [])
        self._note(provider, step, did, program, errors)
        self.events.emit(CorrectionStep(provider.name, step, did, cleaned is not None and cleaned.valid))

    def _note(self, provider: InferenceProvider, step: str, did: str, program: str | None,
              errors: list[str], **extra: Any) -> None:
        self.log.append({"provider": provider.name, "step": step, "did": did, "program": program,
                         "errors": list(errors), **extra})


def _source_of(provider: InferenceProvider, raw: str) -> str:
    """Who has a deterministic tier's program, as the error says it: the template by name."""
    source, kind = getattr(raw, "source", None), provider_kind(provider)
    if kind == KIND_TEMPLATE:
        return f"the template {PurePath(source).stem}" if source else "a template"
    return {KIND_RULES: "a rule", KIND_REPLAY: "a recording"}.get(kind, f"the tier {provider.name}")


def _hinted(watch: Watch | None) -> str:
    """Kibitzer's prompt hints as a section of the system prompt ("" when it has none)."""
    hints = [] if watch is None else watch.prompt_hints()
    return "".join(["\n\nLessons from earlier programs:", *(f"\n- {hint}" for hint in hints)]
                   ) if hints else ""


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


def _samples(provider: InferenceProvider) -> int:
    samples = getattr(provider, "samples", DEFAULT_SAMPLES)
    return samples if isinstance(samples, int) and not isinstance(samples, bool) and samples >= 1 else (
        DEFAULT_SAMPLES)


def _left(checks: Collection[str], errors: Sequence[str]) -> frozenset[str]:
    """The answer ``checks`` still to make once ``errors`` are fed back (each check once)."""
    return frozenset(checks) - {answer_check(errors)}


def _ran(candidate: _Candidate) -> bool:
    """Whether ``candidate``'s dry run ran to its end (its answer may still be wrong)."""
    return candidate.tryout is not None and candidate.tryout.success


def _deterministic(provider: InferenceProvider) -> bool:
    """Whether ``provider`` samples at temperature 0 (the same prompt gets the same reply)."""
    return getattr(provider, "temperature", None) == 0


def _groups(passed: Sequence[_Candidate]) -> list[list[_Candidate]]:
    """``passed`` grouped by their dry run's output (a program not run is a group of its own),
    the largest group first (ties: the one holding the shortest program)."""
    groups: dict[str, list[_Candidate]] = {}
    for candidate in passed:
        tryout = candidate.tryout
        ran = tryout is not None and tryout.skipped is None
        key = "output:" + output_key(tryout.output) if ran and tryout else "program:" + candidate.program
        groups.setdefault(key, []).append(candidate)
    return sorted(groups.values(), key=lambda group: (-len(group), min(len(c.program) for c in group)))


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
