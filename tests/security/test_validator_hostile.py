"""Hostile programs against the validator, which runs in the caller, outside the sandbox.

Each reproduction from the second security round (issue 9, item 2) goes through
every entry point that validates in the caller: ``validate``, the in-process
``RestrictedRunner.run`` and ``LackpyService.run_program`` (with and without the
sandbox). None may raise; each gives a result that says what is wrong and where.
"""

import multiprocessing
import os
import sys
import time

import pytest

from lackpy_kernel.lang import validate
from lackpy_kernel.lang.grammar import MAX_NESTING
from lackpy_kernel.run import ExecutionResult, RestrictedRunner
from lackpy_kernel.service import LackpyService

TOOLS = {"read_file": len}
KIT = ["read_file"]
TOO_DEEP = f"nested more than {MAX_NESTING} levels deep"

# Valid programs nested just under the guard: copying or recursing over their
# trees raised RecursionError out of run_program.
NESTED_UNDER_THE_GUARD = {
    "lists": "x = " + "[" * 172 + "]" * 172,
    "calls": "x = " + "str(" * 165 + "1" + ")" * 165,
    "dicts": "x = " + "{1: " * 165 + "1" + "}" * 165,
    "and chain": "x = " + "(1 and " * 165 + "1" + ")" * 165,
    "for iterable": "for a in " + "str(" * 165 + "1" + ")" * 165 + ":\n    x = a",
    "comprehension iterables": "x = " + "[a for a in " * 60 + "'ab'" + "]" * 60,
    "subscripts": "x = [1]\ny = x" + "[0:1]" * 190,
}

# Deeper than the guard, in ways the parser accepts: an invalid program with a position.
NESTED_OVER_THE_GUARD = {
    "unary minus": ("x = 1\ny = " + "-" * 400 + "1", 2),
    "attributes": ("x = 'a'\ny = x" + ".upper()" * 150, 2),
    "binary chain": ("x = 1\n\ny = " + " + ".join(["x"] * 400), 3),
    "compare in unary": ("x = 1\ny = " + "not " * 300 + "x", 2),
}


@pytest.mark.parametrize("program", NESTED_UNDER_THE_GUARD.values(), ids=NESTED_UNDER_THE_GUARD)
def test_nesting_under_the_guard_is_valid_and_runs(program):
    assert validate(program, TOOLS, protected_names=TOOLS).valid
    result = RestrictedRunner().run(program, TOOLS)
    assert result.success, result.error


@pytest.mark.parametrize(("program", "line"), NESTED_OVER_THE_GUARD.values(), ids=NESTED_OVER_THE_GUARD)
def test_nesting_over_the_guard_is_an_error_with_a_position(program, line):
    result = validate(program, TOOLS, protected_names=TOOLS)
    (issue,) = result.issues
    assert TOO_DEEP in issue.message
    assert issue.line == line and issue.col > 1
    run = RestrictedRunner().run(program, TOOLS)
    assert not run.success and run.error_type == "LackpyValidationError"
    assert run.issues == result.issues


@pytest.mark.parametrize(
    "program",
    [
        "x = " + "[" * 300 + "]" * 300,  # the parser's own limit
        "x = " + "-" * 200_000 + "1",  # the parser's stack
        "x = " + "f(" * 2000 + ")" * 2000,
        "x = 1\n" + "".join(" " * i + "if x:\n" for i in range(120)) + " " * 120 + "y = 1",
    ],
)
def test_nesting_the_parser_refuses_is_an_invalid_program(program):
    result = validate(program, {"f"})
    assert not result.valid and result.errors
    assert not RestrictedRunner().run(program, {"f": len}).success


def test_forbidden_nodes_nested_in_forbidden_nodes_are_reported_once_each_level_deep():
    whiles = "".join(" " * depth + "while x:\n" for depth in range(90))
    program = whiles + " " * 90 + "open('a')\n" + " " * 90 + "pass"
    errors = validate(program, {"x"}).errors
    assert errors == [
        "line 1, col 1: While is not allowed: use a for loop over range(n) or a list",
        "line 91, col 91: the name 'open' is forbidden: use read_file(path) or write_file(path, content)",
    ]


def test_a_past_deadline_stops_validation_with_a_clear_error():
    program = "\n".join(f"v{i} = {i}" for i in range(20_000))
    result = validate(program, deadline=time.monotonic() - 1)
    assert not result.valid
    assert result.errors == ["the program is too large to validate in the time allowed; "
                             "split it into smaller programs"]


def test_a_deadline_in_the_future_changes_nothing():
    program = "\n".join(f"v{i} = {i}" for i in range(2_000)) + "\nnope()"
    assert validate(program, deadline=time.monotonic() + 600) == validate(program)


def test_long_identifiers_are_shortened_in_messages_and_get_no_suggestion():
    name = "a" * 6000
    result = validate(f"{name}b()\nx = {name}c", {name})
    assert result.errors == [
        f"line 1, col 1: unknown function '{'a' * 60}...' (6,001 characters): "
        "not a builtin, a kit tool, a parameter or a variable",
        f"line 2, col 5: unknown name '{'a' * 60}...' (6,001 characters): "
        "not a builtin, a kit tool, a parameter or a variable; assign it before using it",
    ]


def test_suggestions_stop_after_the_first_few_unknown_functions():
    program = "\n".join(f"read_fil{i}('a')" for i in range(30))
    errors = validate(program, {"read_file"}).errors
    assert sum("did you mean read_file" in error for error in errors) == 10
    assert len(errors) == 30


def test_many_errors_on_one_line_have_character_columns():
    count = 500
    program = "é = 1; x = [" + ", ".join(f"q.__a{i}" for i in range(count)) + "]"
    result = validate(program, {"q"})
    assert result.issues[0].col == 13
    assert result.issues[99].col == 13 + sum(len(f"q.__a{i}, ") for i in range(99))
    assert result.errors[-1] == f"... and {count - 100} more errors"


def test_a_hundred_thousand_assigned_names_are_valid():
    count = 100_000
    program = ", ".join(f"v{i}" for i in range(count)) + f" = range({count})"
    result = validate(program)
    assert result.valid
    assert len(result.variables) == count and result.variables[-1] == f"v{count - 1}"
    run = RestrictedRunner().run(program + f"\nv{count - 1}", {})
    assert run.success and run.output == count - 1


def _validate_with_memory_cap(conn, program, headroom_mb):
    import resource

    with open("/proc/self/statm") as statm:
        in_use = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (in_use + headroom_mb * 2**20, resource.RLIM_INFINITY))
    try:
        conn.send(validate(program).errors)
    except BaseException as exc:  # what the test is about: nothing may escape
        conn.send(f"raised {type(exc).__name__}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_running_out_of_memory_while_validating_is_an_invalid_program():
    program = "x = [" + "0, " * 300_000 + "]"  # parsing it takes some 300 MB
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(
        target=_validate_with_memory_cap, args=(child, program, 64))
    process.start()
    process.join(60)
    assert parent.poll(), f"the child sent nothing (exit code {process.exitcode})"
    assert parent.recv() == ["program is nested too deeply or too large to parse; "
                             "flatten it or split it into smaller programs"]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("hostile")
    (workspace / "a.txt").write_text("alpha")
    with LackpyService(workspace) as svc:
        yield svc


@pytest.mark.parametrize("sandbox", [False, True], ids=["in-process", "sandbox"])
@pytest.mark.parametrize("program", NESTED_UNDER_THE_GUARD.values(), ids=NESTED_UNDER_THE_GUARD)
async def test_the_service_runs_nesting_under_the_guard(service, program, sandbox):
    result = await service.run_program(program, kit=KIT, sandbox=sandbox)
    assert isinstance(result, ExecutionResult)
    assert result.success, result.error


@pytest.mark.parametrize(("program", "line"), NESTED_OVER_THE_GUARD.values(), ids=NESTED_OVER_THE_GUARD)
async def test_the_service_returns_a_failed_result_for_nesting_over_the_guard(service, program, line):
    result = await service.run_program(program, kit=KIT)
    assert not result.success
    assert result.error_type == "LackpyValidationError"
    assert result.error_line == line and TOO_DEEP in result.error


async def test_the_service_refuses_rebinding_a_tool_in_a_deep_program(service):
    program = "x = " + "[" * 172 + "]" * 172 + "\nsorted([1], key=lambda read_file: 1)"
    result = await service.run_program(program, kit=KIT)
    assert not result.success
    assert [str(issue) for issue in result.issues] == [
        "line 2, col 24: cannot assign to the tool 'read_file'; choose another name"
    ]
