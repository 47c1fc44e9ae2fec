"""The one error tree: every class is a LackpyError and the builtin its callers expect."""

from __future__ import annotations

import inspect

import pytest

from lackpy_kernel import errors
from lackpy_kernel.lang import Issue
from lackpy_kernel.run import ExecutionResult

EXPECTED_BUILTIN = {
    errors.UsageError: ValueError,
    errors.ConfigError: ValueError,
    errors.KitError: LookupError,
    errors.UnknownToolError: KeyError,
    errors.WorkspaceError: PermissionError,
    errors.WorkspacePathTypeError: TypeError,
    errors.WriteBudgetError: OSError,
    errors.TooManyMatchesError: ValueError,
    errors.TemplateError: ValueError,
    errors.GenerationError: RuntimeError,
    errors.ProviderError: RuntimeError,
    errors.ProviderTimeoutError: TimeoutError,
    errors.LackpyValidationError: ValueError,
    errors.LackpyRuntimeError: RuntimeError,
    errors.ProgramTimeoutError: TimeoutError,
    errors.ProgramMemoryError: MemoryError,
    errors.PlanCompileError: ValueError,
    errors.PlanRuntimeError: RuntimeError,
    errors.ConcurrentPlanRunError: RuntimeError,
    errors.PlanStepError: RuntimeError,
    errors.ToolTimeoutError: TimeoutError,
    errors.ToolApprovalError: PermissionError,
    errors.MaxTurnsExceeded: RuntimeError,
    errors.AgentOutputError: ValueError,
}


def public_classes() -> list[type]:
    """Every public class but PlanPaused, the one documented exception to the tree."""
    return [obj for name in errors.__all__
            if inspect.isclass(obj := getattr(errors, name)) and obj is not errors.PlanPaused]


def test_every_public_error_is_a_lackpy_error():
    assert set(EXPECTED_BUILTIN) <= set(public_classes())
    for cls in public_classes():
        assert issubclass(cls, errors.LackpyError), cls


@pytest.mark.parametrize(("cls", "builtin"), EXPECTED_BUILTIN.items(), ids=lambda c: c.__name__)
def test_each_error_is_also_the_builtin_callers_expect(cls, builtin):
    assert issubclass(cls, builtin)


def test_the_module_docstring_lists_every_class():
    for cls in public_classes():
        assert f"* {cls.__name__}" in errors.__doc__, cls.__name__


def test_plan_paused_is_outside_the_tree_so_except_exception_cannot_swallow_it():
    assert issubclass(errors.PlanPaused, BaseException)
    assert not issubclass(errors.PlanPaused, Exception)
    assert "``PlanPaused`` derives from ``BaseException``" in errors.__doc__
    assert errors.PlanPaused("waiting for approval").message == "waiting for approval"


def test_a_kit_error_reads_without_quotes():
    exc = errors.UnknownToolError("unknown tool 'x'")
    assert str(exc) == "unknown tool 'x'" and errors.error_text(exc) == "unknown tool 'x'"


def test_ipython_shows_an_expected_failure_without_frames():
    lines = errors.KitError("no kit named 'x'\nlooked in .lackpy/kits")._render_traceback_()
    assert lines == ["KitError: no kit named 'x'", "looked in .lackpy/kits"]


@pytest.mark.parametrize(
    ("error_type", "cls"),
    [
        ("TimeoutError", errors.ProgramTimeoutError),
        ("MemoryError", errors.ProgramMemoryError),
        ("ResultTooLarge", errors.ResultTooLargeError),
        ("KeyboardInterrupt", errors.ProgramInterrupted),
        ("SandboxError", errors.SandboxError),
        ("ZeroDivisionError", errors.LackpyRuntimeError),
    ],
)
def test_raise_for_error_raises_the_failure_it_names(error_type, cls):
    result = ExecutionResult(False, error="it went wrong", error_type=error_type, error_line=3)
    with pytest.raises(cls, match="it went wrong") as caught:
        result.raise_for_error()
    assert type(caught.value) is cls
    assert caught.value.result is result
    assert caught.value.error_type == error_type and caught.value.error_line == 3


def test_raise_for_error_lists_validation_issues():
    issues = [Issue(1, 1, "Import is not allowed"), Issue(2, 5, "unknown name 'x'")]
    result = ExecutionResult(False, error="invalid", error_type="LackpyValidationError",
                             issues=issues)
    with pytest.raises(errors.LackpyValidationError) as caught:
        result.raise_for_error()
    assert caught.value.issues == issues
    assert str(caught.value).splitlines() == [
        "invalid lackpy program:", f"  {issues[0]}", f"  {issues[1]}"]


def test_raise_for_error_of_a_kit_failure_is_a_kit_error():
    result = ExecutionResult(False, error="no kit named 'x'", error_type="KitError")
    with pytest.raises(errors.KitError, match="no kit named 'x'"):
        result.raise_for_error()


def test_a_successful_result_raises_nothing():
    result = ExecutionResult(True, output=3)
    assert result.raise_for_error() is result
