"""Fuzzing the validator with nested and wide programs: nothing escapes, work grows linearly.

Linear growth is asserted two ways, neither an absolute time: the number of
function calls ``validate`` makes (exact, so the bound is tight) and its CPU
time (ratios with margins that hold with both cores busy), which also sees
work done inside a single C call, such as re-encoding a long line per issue.
"""

import math
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lackpy_kernel.lang import ValidationResult, validate
from lackpy_kernel.lang.validator import MAX_ISSUES, source_lines
from lackpy_kernel.run import ExecutionResult, RestrictedRunner

NAMES = {"x", "read_file"}
TOOLS = {"read_file": len}
ATOMS = ["1", "'a'", "x", "read_file('a')", "__x", "open", "'__'", "b''", "é", "x.__class__",
         "None", "f'{x}'", "[]", "{}", "y", "ｏｐｅｎ"]
# Each wraps an expression once (str.format: "{}" is the expression, "{{" a brace).
WRAPPERS = ["[{}]", "({},)", "{{1: {}}}", "{{{}}}", "str({})", "-{}", "not {}", "({} and 1)",
            "(1 or {})", "({} + 1)", "{}[0]", "{}.upper()", "[a for a in {}]",
            "{{k: 1 for k in {}}}", "(1 if {} else 2)", "sorted({}, key=lambda r: r)", "(lambda: {})",
            "({} ** 2)", "(y := {})", "{}(1)", "read_file(path={})", "({} < 1 < 2)", "f'{{{}}}'",
            "{}[1:2:3]", "len({})", "[*{}]", "{{**{}}}", "({} for a in x)"]
STATEMENTS = ["y = {}", "{}", "for a in {}:\n    print(a)", "read_file = {}", "y += {}", "del {}",
              "a, *b = {}", "with {} as z:\n    print(z)", "if {}:\n    y = 1\nelse:\n    y = 2"]
BLOCKS = ["if x:", "for a in x:", "with read_file('a') as q:", "while x:", "def f():", "try:"]

settings.register_profile("validator", database=None, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def statements(draw, max_wrappers=260, max_blocks=110):
    expression = draw(st.sampled_from(ATOMS))
    for wrapper in draw(st.lists(st.sampled_from(WRAPPERS), max_size=max_wrappers)):
        expression = wrapper.format(expression)
    statement = draw(st.sampled_from(STATEMENTS)).format(expression)
    for block in draw(st.lists(st.sampled_from(BLOCKS), max_size=max_blocks)):
        body = textwrap.indent(statement, " ")
        statement = f"{block}\n{body}" + ("\nexcept E:\n pass" if block == "try:" else "")
    return statement


@st.composite
def wide_programs(draw):
    statement = draw(statements(max_wrappers=6, max_blocks=3))
    count = draw(st.integers(1, 400))
    shape = draw(st.sampled_from(["lines", "semicolons", "list"]))
    if shape == "list":
        return "y = [" + ", ".join([statement] * count) + "]"
    return ("\n" if shape == "lines" else "; ").join([statement] * count)


def check_result(program: str, result: ValidationResult) -> None:
    assert isinstance(result, ValidationResult)
    assert result.valid is (not result.issues)
    assert (result.tree is not None) is result.valid
    assert result.errors == [str(issue) for issue in result.issues]
    assert len(result.issues) <= MAX_ISSUES + 1
    lines = len(source_lines(program))
    for issue in result.issues:
        assert 0 <= issue.line <= lines + 1 and issue.col >= 0
        assert issue.line or not issue.col


@settings(settings.get_profile("validator"), max_examples=150)
@given(st.one_of(statements(), wide_programs()))
@example("x = " + "[" * 172 + "]" * 172)
@example("y = " + "str(" * 199 + "x" + ")" * 199)
@example("y = " + "(1 and " * 199 + "x" + ")" * 199)
@example("y = " + "{1: " * 199 + "x" + "}" * 199)
@example("".join(" " * depth + "if x:\n" for depth in range(99)) + " " * 99 + "y = x")
def test_no_exception_escapes_the_validator_or_the_runner(program):
    result = validate(program, NAMES, protected_names={"read_file"})
    check_result(program, result)
    run = RestrictedRunner().run(program, TOOLS, variables={"x": "abc"})
    assert isinstance(run, ExecutionResult)
    if not result.valid:
        assert not run.success and run.error_type == "LackpyValidationError"
        assert run.issues == result.issues


def calls_made(program: str, names=NAMES) -> int:
    """The Python and C function calls ``validate`` makes: a count of its work."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        validate(program, names)
    finally:
        sys.setprofile(None)
    return calls


def cpu_seconds(program: str, names=NAMES, repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        started = time.process_time()
        validate(program, names)
        best = min(best, time.process_time() - started)
    return best


def assert_linear(make, n: int, names=NAMES) -> None:
    """Work for ``make(4n)`` within 4x that for ``make(n)``, time for ``make(16n)`` within 16x.

    The call count is exact: 10% over linear fails. Time has a 3x margin for a
    busy machine; a quadratic cost would be 16x over.
    """
    small, medium, large = make(n), make(4 * n), make(16 * n)
    calls_small, calls_medium = calls_made(small, names), calls_made(medium, names)
    assert calls_medium <= 4.4 * calls_small + 500, (calls_small, calls_medium)
    time_small, time_large = cpu_seconds(small, names), cpu_seconds(large, names)
    assert time_large <= 16 * 3 * time_small + 0.05, (time_small, time_large)


LONG_NAME = "".join(chr(0x4E00 + i) for i in range(6000))  # 6,000 distinct letters


def assigned_names(n):
    return ", ".join(f"v{i}" for i in range(n)) + f" = range({n})"


def assignments(n):
    return "\n".join(f"v{i} = {i}" for i in range(n))


def errors_on_one_long_line(n):
    """A line that is long before its errors start, and errors on it: re-reading the line
    for each error's column is quadratic."""
    return "x = ['" + "é" * (100 * n) + "', " + ", ".join(f"x.__a{i}" for i in range(n)) + "]"


def long_unknown_names(n):
    """Calls of 6,000-letter names, each a rotation of a tool's name (close, for difflib)."""
    return "\n".join(f"{LONG_NAME[i + 1:] + LONG_NAME[:i + 1]}()" for i in range(n))


def unknown_functions(n):
    return "\n".join(f"read_fil{i}('a')" for i in range(n))


def unknown_names(n):
    return "y = [" + ", ".join(f"w{i}" for i in range(n)) + "]"


def nesting_at_the_limit(n):
    return "\n".join(["y = " + "[" * 190 + "]" * 190] * n)


def forbidden_in_forbidden(n):
    return "while x:\n while x:\n" + "\n".join(["  pass"] * n)


GROWTH = {
    "assigned names": (assigned_names, 1000),
    "assignments": (assignments, 600),
    "errors on one long line": (errors_on_one_long_line, 300),
    "6,000-letter names": (long_unknown_names, 1),
    "unknown functions": (unknown_functions, 500),
    "unknown names": (unknown_names, 1000),
    "nesting at the limit": (nesting_at_the_limit, 10),
    "forbidden in forbidden": (forbidden_in_forbidden, 1000),
}


@pytest.mark.parametrize(("make", "n"), GROWTH.values(), ids=GROWTH)
def test_validation_grows_linearly(make, n):
    assert_linear(make, n, NAMES | {LONG_NAME})


@settings(settings.get_profile("validator"), max_examples=8)
@given(statements(max_wrappers=190, max_blocks=20), st.sampled_from(["lines", "list"]))
def test_repeating_any_statement_grows_validation_linearly(statement, shape):
    if shape == "list":
        def make(n):
            return "y = [" + ", ".join([f"({statement})"] * n) + "]"
    else:
        def make(n):
            return "\n".join([statement] * n)
    assert_linear(make, max(1, 2000 // len(statement)))
