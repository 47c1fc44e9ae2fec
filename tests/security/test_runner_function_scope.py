"""A program with a ``for`` loop runs as the body of a function (``__lackpy_program__``):
its names are fast locals, the names it binds that the scope holds are the function's
arguments, and ``locals()`` (``__lackpy_locals__`` in its globals) hands its variables back.

Nothing of that machinery is within a program's reach (the function, its frame, the
``locals`` builtin, the scope dict), the limits hold as for any program, and a loop's
program behaves as the same statements run as a module: the same variables, output,
stdout and errors (a name read before it is bound is ``NameError: name 'x' is not
defined``, as a module says, not an UnboundLocalError).
"""

from __future__ import annotations

import ast
import textwrap
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.run import RestrictedRunner, Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run import runner as runner_module
from lackpy_kernel.run.runner import STDOUT_LIMIT, VALIDATION_ERROR
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from tests.security import test_escapes as escapes

needs_sandbox = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

# One line that makes any program a loop's program (compiled as a function), its lines
# one further down than the same program's alone.
LOOP_LINE = "for _loop in range(1): _seen = _loop\n"
LOOP_NAMES = {"_loop", "_seen"}
SECRET = escapes.SECRET


def tool(value: Any = None) -> Any:
    """A plain tool that hands its argument back."""
    return value


TOOLS = {"tool": tool}


def run(program: str, *, tools: Mapping[str, Any] = TOOLS, params: dict | None = None,
        variables: dict | None = None, runner: RestrictedRunner | None = None):
    return (runner or RestrictedRunner()).run(program, tools, params, variables=variables)


def in_loop(program: str) -> str:
    """``program``'s statements as the body of a one-pass loop."""
    return "for _once in range(1):\n" + textwrap.indent(program, "    ")


def runs_as_function(program: str, scope_names: Mapping[str, Any] = TOOLS) -> bool:
    """Whether the runner compiles ``program`` as the body of its function."""
    scope = {"__builtins__": {}, **dict.fromkeys(scope_names)}
    code = runner_module._compile(ast.parse(program), scope)
    return code.co_name == runner_module._FUNCTION


def walk_values(value: Any, depth: int = 0) -> Iterator[Any]:
    """``value`` and what its lists, tuples, sets and dicts hold (bounded depth)."""
    yield value
    if depth > 20:
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from walk_values(key, depth + 1)
            yield from walk_values(item, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from walk_values(item, depth + 1)


def assert_nothing_usable(result) -> None:
    """No variable or output of ``result`` is the function, a frame, code, a traceback, the
    ``locals`` builtin, a module or a dict with ``__builtins__`` (a scope); no reserved name."""
    assert not any(name.startswith("__") for name in result.variables), result.variables
    for value in walk_values([result.output, result.variables, result.to_dict()]):
        assert not isinstance(value, (types.FrameType, types.CodeType, types.TracebackType,
                                      types.ModuleType, types.GeneratorType)), value
        assert value is not locals and value is not globals and value is not vars
        if isinstance(value, types.FunctionType):
            assert value.__name__ != runner_module._FUNCTION
        if isinstance(value, dict):
            assert value.get(runner_module._LOCALS) is not locals  # (a scope holds it)
            assert not isinstance(value.get("__builtins__"), dict)
    shown = " ".join(map(str, [result.output, result.stdout]))
    assert "__lackpy" not in shown, shown  # (an error may quote the program's own words)
    shown += str(result.error)
    assert "built-in function locals" not in shown and "function __lackpy" not in shown, shown


def test_the_loop_line_makes_a_function_and_a_plain_program_stays_a_module():
    """The guard for every test below: LOOP_LINE and in_loop really give function mode."""
    assert runs_as_function(LOOP_LINE + "x = 1")
    assert runs_as_function(in_loop("x = 1"))
    assert runs_as_function("if len([]) == 0:\n    with tool(1) as w:\n"
                            "        for i in range(1):\n            x = i")
    assert not runs_as_function("x = [i for i in range(3)]\nx")


# -- escapes ----------------------------------------------------------------------------


@pytest.fixture
def arena(tmp_path: Path):
    return escapes.make_arena(tmp_path)


def attempt(arena, program: str):
    """Run ``program`` with the real file tools (``escapes.attempt``: nothing leaked or
    changed); its variables hold no secret and nothing of the function's machinery."""
    result = escapes.attempt(arena, program)
    assert SECRET not in str(result.variables), f"secret leaked by {program!r}"
    assert_nothing_usable(result)
    return result


@pytest.mark.parametrize("placed", ["after_a_loop", "in_a_loop"])
@pytest.mark.parametrize("program", escapes.ATTACKS)
def test_the_escape_corpus_is_refused_or_confined_in_a_loops_program(arena, program, placed):
    """Every attack of test_escapes, at the top of a loop's function or inside its loop."""
    program = LOOP_LINE + program if placed == "after_a_loop" else in_loop(program)
    result = attempt(arena, program)
    assert not result.success, f"{program!r} succeeded with {result.output!r}"


# Each names the function's machinery, or reaches for frames, the scope or the builtins.
FUNCTION_ESCAPES = [
    "x = __lackpy_locals__()",
    "x = \uff3f\uff3flackpy_locals\uff3f\uff3f()",  # fullwidth low lines: '__' after NFKC
    "x = __lackpy_program__",
    "x = __lackpy_output__",
    "__lackpy_output__ = 1",
    "__lackpy_locals__ = print",
    "x = __builtins__",
    "x = locals()",
    "x = \uff4c\uff4f\uff43\uff41\uff4c\uff53()",  # fullwidth 'locals'
    "x = vars()",
    "x = globals()",
    "f = locals\nx = f()",
    "x = sort_by([1], key=__lackpy_locals__)",
    "x = sort_by([1], key=locals)",
    "x = sorted([1], key=lambda v: __lackpy_locals__())",
    "x = sorted([1], key=lambda v: locals())",
    "x = max([1], key=lambda v: vars())",
    "x = [__lackpy_locals__() for _ in range(1)]",
    "x = [v for v in __lackpy_locals__()]",
    "x = {k: v for k, v in vars().items()}",
    "x = f'{__lackpy_locals__}'",
    "x = f'{__lackpy_locals__()!r}'",
    "x = '{__lackpy_locals__}'.format_map({})",
    "x = '{0.__globals__}'.format(print)",
    "x = '{0.f_locals}'.format(1)",
    "x = str.format('{0}', 1)",
    "x = print.__globals__",
    "x = print.__closure__",
    "x = sort_by.__globals__",
    "x = tool.__globals__",
    "x = print.__code__",
    "x = zip([1])\ny = x.gi_frame",
    "x = enumerate([1])\ny = x.f_back",
    "x = sorted([1], key=lambda v: v.f_globals)",
    "x = sorted([1], key=lambda v: v.tb_frame)",
    "x = [1]\ny = x.co_consts",
    "x = [1].__class__.__subclasses__()",
    "for __hidden in range(1):\n    y = __hidden",
    "x = sorted([1], key=lambda __v: __v)",
    "x = [__v for __v in range(1)]",
    "def __lackpy_program__():\n    return 1",
    "global _seen",
    "nonlocal _seen",
    "x = (yield 1)",
    "x = (i for i in range(3))",
    "x = (y := 1)",
    "del _seen",
]


@pytest.mark.parametrize("placed", ["after_a_loop", "in_a_loop"])
@pytest.mark.parametrize("program", FUNCTION_ESCAPES)
def test_the_functions_machinery_cannot_be_named(program, placed):
    program = LOOP_LINE + program if placed == "after_a_loop" else in_loop(program)
    result = run(program)
    assert result.error_type == VALIDATION_ERROR, (program, result)
    assert_nothing_usable(result)


# Valid programs that build reserved names or frame-ish words at run time: only data.
HARMLESS_AT_RUN_TIME = [
    ("x = sort_by([{'a': 1}], key='__lackpy_locals__')", "KeyError"),
    ("d = {}\nx = d['__builtins__']", "KeyError"),
    ("d = {}\nx = d['_' + '_lackpy_locals_' + '_']", "KeyError"),
    ("k = '_' + '_lackpy_locals_' + '_'\nd = {k: 1}\nx = d[k]", None),
    ("x = '%(__builtins__)s' % {'__builtins__': 1}", None),
    ("x = '%s' % (print,)", None),
    ("x = str(sorted)", None),
    ("x = {}[print]", "KeyError"),
    ("x = int(sort_by)", "TypeError"),
    ("x = len(print)", "TypeError"),
    ("x = sort_by([print, len], key=str)", None),
    ("x = sort_by([1, 2], key=print)", "TypeError"),
    ("x = sorted([print, len], key=lambda f: str(f))", None),
    ("x = tool(print)", "TypeError"),
    ("x = isinstance(1, int)", None),
]


@pytest.mark.parametrize(("program", "error_type"), HARMLESS_AT_RUN_TIME)
def test_reserved_names_built_at_run_time_reach_nothing(program, error_type):
    for placed in (LOOP_LINE + program, in_loop(program)):
        result = run(placed)
        assert result.error_type == error_type, (placed, result.error)
        assert_nothing_usable(result)


def test_an_error_in_the_function_carries_no_traceback_or_frame_out():
    """A failing loop program's result is data only: no traceback, frame or exception."""
    result = run(in_loop("x = [1]\ny = x[3]"))
    assert result.error_type == "IndexError" and result.error_line == 3
    for value in walk_values(result.to_dict()):
        assert not isinstance(value, (BaseException, types.TracebackType, types.FrameType))


def test_a_loops_variables_hand_nothing_of_the_scope_to_the_next_program():
    """Kept variables go back in as ``variables=``: none is a scope, a reserved name, a tool,
    a parameter or a builtin, and the next program's loop sees only its own."""
    first = run("n = 0\nfor i in range(3):\n    n += tool(i)\nf = print\nnames = [n, i]",
                params={"p": 1})
    assert first.success, first.error
    assert set(first.variables) == {"n", "i", "f", "names"}
    assert_nothing_usable(first)
    second = run("for j in range(2):\n    n += j\n[n, names]", variables=first.variables)
    assert second.success and second.output == [4, [3, 2]]
    assert set(second.variables) == {"n", "i", "f", "names", "j"}
    assert_nothing_usable(second)


# -- the same semantics as a module ------------------------------------------------------

# (program, session variables, params): each run alone (a module) and after LOOP_LINE
# (a function), with the same outcome, one line further down.
SAME_AS_A_MODULE = [
    ("total += 1\ntotal", {"total": 10}, None),
    ("total = total + tool(5)\n[total]", {"total": 1}, None),
    ("ys = [total for total in range(3)]\n[ys, total]", {"total": 5}, None),
    ("ys = {total: 1 for total in range(2)}\nzs = {total for total in range(2)}\ntotal",
     {"total": "kept"}, None),
    ("ys = sorted([1, 2], key=lambda total: -total)\ntotal", {"total": 7}, None),
    ("ys = [s + i for i in range(2)]\ns = 10\n[ys, s]", {"s": 1}, None),
    ("ys = sorted([3, 1, 2], key=lambda v: v * sign)\nsign = 1\nys", {"sign": -1}, None),
    ("if len([]) > 0:\n    never = 1\nelse:\n    taken = 2\ntaken", None, None),
    ("if len([]) > 0:\n    kept = 1\nkept", {"kept": "session"}, None),
    ("p = p + 1\np", None, {"p": 41}),
    ("x: int\ny: int = 3\n[y]", None, None),
    ("x: int\nx", None, None),
    ("print('a', 1)\nprint(*[1, 2], sep='-', end='!')\nprint()", None, None),
    ("d = {'k': 1}\nd['k'] += 2\nd['n'] = d['k'] * 2\nd", None, None),
    ("a, (b, *c) = [1, [2, 3, 4]]\n[a, b, c]", None, None),
    ("w = 1\nwith tool(1) as w:\n    z = 2", None, None),
    ("print(later)\nlater = 1", None, None),
    ("n = later + 1\nlater = 1", {"n": 0}, None),
    ("ys = [later for _ in range(2)]\nlater = 1", None, None),
    ("ys = [[later for _ in range(1)] for _ in range(1)]\nlater = 1", None, None),
    ("ys = sorted([2, 1], key=lambda v: v * later)\nlater = 1", None, None),
    ("ys = sort_by([2, 1], key=lambda v: later)\nlater = 1", None, None),
    ("print(undefined_in_scope)", {"undefined_in_scope": 1}, None),
    ("x = [1, 2]\ny = x[5]", None, None),
    ("d = {}\nv = d['missing']", None, None),
    ("n = int('abc')", None, None),
    ("z = len(5)", None, None),
    ("q = 1 / 0", None, None),
    ("s = 'a' + 1", None, None),
    ("s = total.upper()", {"total": 3}, None),
    ("n = tool(1)\nm = n()", None, None),
    ("a = []\nb = a[0]\na = [1]", {"a": [7]}, None),
    ("caf\u00e9 = 1\n[caf\u00e9]", None, None),
    ("print(na\u00efve)\nna\u00efve = 1", None, None),
    ("\uff56\uff11 = 2\nv1", None, None),  # fullwidth 'v1': NFKC makes it v1
]


def _comparable(result, shift: int) -> dict[str, Any]:
    """What must match between a module's run and the loop's (lines ``shift`` down)."""
    error = result.error
    if result.error_line is not None and error is not None:
        error = error.replace(f"(line {result.error_line}", f"(line {result.error_line - shift}")
    return {
        "success": result.success, "output": result.output, "stdout": result.stdout,
        "error_type": result.error_type, "error": error,
        "error_line": None if result.error_line is None else result.error_line - shift,
        "variables": {k: v for k, v in result.variables.items() if k not in LOOP_NAMES},
        "tools": [entry.tool for entry in result.trace.entries],
    }


@pytest.mark.parametrize(("program", "variables", "params"), SAME_AS_A_MODULE)
def test_a_loops_program_behaves_as_the_same_module(program, variables, params):
    module = run(program, variables=dict(variables or {}), params=params)
    looped = run(LOOP_LINE + program, variables=dict(variables or {}), params=params)
    assert module.error_type != VALIDATION_ERROR, module.error
    assert _comparable(looped, 1) == _comparable(module, 0)


@pytest.mark.parametrize("name", ["a\u00b7b", "q\u0301"])
@pytest.mark.parametrize("shape", ["print({0})\n{0} = 1", "ys = [{0} for _ in range(1)]\n{0} = 1",
                                   "ys = sorted([1], key=lambda v: {0})\n{0} = 1"])
def test_a_name_of_any_identifier_characters_read_before_it_is_bound(name, shape):
    program = shape.format(name)
    module = run(program)
    looped = run(LOOP_LINE + program)
    assert module.error == f"NameError: name '{name}' is not defined (line 1: {program.splitlines()[0]})"
    assert _comparable(looped, 1) == _comparable(module, 0)


# Statements that fail, alone and as a loop's body: the same error, on the same statement.
FAILING_STATEMENTS = [
    "x = [1, 2]\ny = x[5]",
    "d = {'a': 1}\nv = d['b']",
    "n = int('abc')",
    "z = len(5)",
    "q = 1 / (len([]))",
    "s = 'a' + 1",
    "n = tool(1)\nm = n()",
    "w = 1\nwith tool(1) as w:\n    z = 2",
    "for i in range(3):\n    for j in range(3):\n        r = i / (j - 2)",
    "ys = [1 / (i - 1) for i in range(3)]",
    "ys = sorted([1, 'a'])",
    "ys = sort_by([{'a': 1}, {'b': 2}], 'a')",
    "print(later)\nlater = 1",
    "ys = [later for _ in range(1)]\nlater = 1",
]


@pytest.mark.parametrize("statements", FAILING_STATEMENTS)
def test_an_error_inside_a_loop_is_the_error_of_the_same_statements(statements):
    alone = run(statements)
    looped = run(in_loop(statements))
    assert not alone.success and alone.error_type != VALIDATION_ERROR, alone.error
    assert looped.error_type == alone.error_type
    assert looped.error_line == alone.error_line + 1
    assert looped.error == alone.error.replace(f"(line {alone.error_line}",
                                               f"(line {looped.error_line}")
    assert looped.stdout == alone.stdout


def test_loop_variables_and_names_bound_in_the_loop_are_kept():
    result = run("total = 0\nfor i, (a, b) in enumerate([[1, 2], [3, 4]]):\n"
                 "    s = a + b\n    total += s\n[i, a, b, s, total]")
    assert result.success and result.output == [1, 3, 4, 7, 10]
    assert result.variables == {"total": 10, "i": 1, "a": 3, "b": 4, "s": 7}


def test_a_comprehensions_names_do_not_leak_and_its_shadowed_variable_stays():
    result = run("for i in range(2):\n    ys = [x * i for x in range(3)]\n"
                 "    zs = {k: v for k, v in [[1, 2]]}\n    ws = {w for w in range(2)}",
                 variables={"x": "session", "k": None})
    assert result.success, result.error
    assert result.variables == {"x": "session", "k": None, "i": 1, "ys": [0, 1, 2],
                                "zs": {1: 2}, "ws": {0, 1}}


def test_names_bound_only_in_a_branch_not_taken_are_absent():
    result = run("for i in range(3):\n    if i > 5:\n        never = i\n    elif i > 9:\n"
                 "        nor = i\n    else:\n        taken = i")
    assert result.success and result.variables == {"i": 2, "taken": 2}


def test_a_name_bound_in_a_loop_that_ran_no_times_is_not_defined():
    result = run("for i in range(0):\n    j = i\nprint('before')\nj")
    assert result.error_type == "NameError"
    assert result.error == "NameError: name 'j' is not defined (line 4: j)"
    assert result.error_line == 4 and result.stdout == "before\n"
    # ...while the loop variable of a session keeps its value
    kept = run("for i in range(0):\n    j = i\ni", variables={"i": "session"})
    assert kept.success and kept.output == "session"


def test_nested_loops_for_else_with_blocks_and_subscript_augmented_assignment():
    result = run(
        "counts = {}\nwords = ['a', 'b', 'a']\nfor word in words:\n    if word not in counts:\n"
        "        counts[word] = 0\n    counts[word] += 1\n"
        "pairs = []\nfor i in range(2):\n    for j in range(2):\n        pairs.append([i, j])\n"
        "    else:\n        inner_done = j\nelse:\n    outer_done = i\n"
        "[counts, pairs, inner_done, outer_done]")
    assert result.success, result.error
    assert result.output == [{"a": 2, "b": 1}, [[0, 0], [0, 1], [1, 0], [1, 1]], 1, 1]
    failed = run("for i in range(2):\n    with tool([i]) as held:\n        x = held")
    assert failed.error_type == "TypeError" and failed.error_line == 2
    assert "context manager" in failed.error


def test_the_output_is_the_last_top_level_expression_and_print_goes_to_stdout():
    result = run("for i in range(3):\n    print(i, end=',')\n    i * 10\ni * 100")
    assert result.success and result.output == 200 and result.stdout == "0,1,2,"
    ends_in_loop = run("x = 5\nfor i in range(2):\n    x")
    assert ends_in_loop.success and ends_in_loop.output is None
    assert "__lackpy_output__" not in ends_in_loop.variables


def test_session_variables_are_read_then_rebound_and_others_stay_as_given():
    items = [1, 2]
    result = run("for x in items:\n    total += x\n    items2 = items + [x]\nrest",
                 variables={"total": 10, "items": items, "rest": "r"})
    assert result.success and result.output == "r"
    assert result.variables == {"total": 13, "items": [1, 2], "rest": "r", "x": 2,
                                "items2": [1, 2, 2]}
    assert result.variables["items"] is items


@pytest.mark.parametrize("program", [
    "for i in range(1):\n    tool = 1",
    "for tool in range(1):\n    x = 1",
    "for i in range(1):\n    ys = [1 for tool in range(1)]",
    "for i in range(1):\n    ys = sorted([1], key=lambda tool: 1)",
    "for i in range(1):\n    with tool(1) as tool:\n        x = 1",
    "for i in range(1):\n    tool += 1",
    "for i in range(1):\n    tool: int = 1",
    "for i in range(1):\n    a, tool = 1, 2",
    "for len in [1]:\n    x = len",
    "for i in range(1):\n    print = 1",
    "for i in range(1):\n    sort_by = 1",
    "for i in range(1):\n    zip += 1",
    "for i in range(1):\n    ys = [1 for sorted in range(1)]",
])
def test_tools_and_builtins_cannot_be_rebound_in_a_loops_program(program):
    result = run(program)
    assert result.error_type == VALIDATION_ERROR, (program, result)


def test_a_rebound_parameter_stays_a_parameter():
    result = run("for i in range(3):\n    p = p + i\np", params={"p": 1})
    assert result.success and result.output == 4
    assert "p" not in result.variables


def test_builtin_like_names_the_validator_allows_are_plain_variables():
    result = run("for i in range(2):\n    id = i\n    repr = 'r'\n    hash = [id]\n[id, repr, hash]")
    assert result.success and result.output == [1, "r", [1]]
    assert result.variables == {"i": 1, "id": 1, "repr": "r", "hash": [1]}


# -- limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("program", [
    "for i in range(10):\n    tool(i)",
    "for i in range(10):\n    ys = sort_by([1, 2, 3], key=tool)",
    "for i in range(10):\n    ys = [tool(j) for j in range(3)]",
    "for i in range(10):\n    ys = sorted([1, 2], key=lambda v: tool(v))",
    "for i in range(10):\n    with tool(1) as w:\n        x = 1",
])
def test_the_tool_call_budget_holds_in_a_loops_program(program):
    calls = []

    def counted(value=None):
        calls.append(value)
        return value

    result = run(program, tools={"tool": counted}, runner=RestrictedRunner(max_tool_calls=3))
    if "with" in program:  # the fourth call never comes: the with fails on the first
        assert result.error_type == "TypeError" and len(calls) == 1
        return
    assert result.error_type == "ToolCallBudgetError", result.error
    assert len(calls) == 3 and result.error_line == 2
    assert "budget" in result.error


def test_stdout_stays_bounded_in_a_loop():
    result = run("for i in range(1500):\n    print('x' * 1000)")
    assert result.success
    assert len(result.stdout) <= STDOUT_LIMIT + 100
    assert result.stdout.endswith(f"[output truncated at {STDOUT_LIMIT:,} characters]\n")


def test_a_value_nested_deeply_in_a_loop_is_a_clean_error_or_a_summary():
    failed = run("a = []\nfor i in range(200000):\n    a = [a]\nprint(a)")
    assert failed.error_type == "RecursionError" and failed.error_line == 4
    assert failed.error == "RecursionError: a value is nested too deeply (line 4: print(a))"
    shown = run("d = {}\nfor i in range(200000):\n    d = {'k': d}\nd")
    assert shown.success and isinstance(shown.output, str)
    assert shown.notes and "nested too deeply" in shown.notes[0]
    assert run("for i in range(2):\n    x = i\nx").output == 1  # the runner still works


def test_a_loops_program_with_thousands_of_names_and_given_arguments():
    count = 5000
    program = "".join(f"s{i} = s{i} + 1\nv{i} = {i}\n" for i in range(count))
    program += "for i in range(3):\n    s0 += i\n    v0 += i\n[s0, v0, s4999, v4999]"
    result = run(program, variables={f"s{i}": i for i in range(count)})
    assert result.success, result.error
    assert result.output == [4, 3, 5000, 4999]
    assert len(result.variables) == 2 * count + 1


# -- the sandbox -------------------------------------------------------------------------

SANDBOX_KIT = ["read_file"]


@needs_sandbox
def test_in_the_sandbox_an_endless_loop_times_out_and_the_session_survives(tmp_path):
    with Sandbox(tmp_path, SandboxLimits(timeout=1, memory_mb=256, max_result_mb=8),
                 approve_writes=False) as box:
        assert box.run("kept = 'still here'\nfor i in range(2):\n    n = i", SANDBOX_KIT).success
        result = box.run("total = 0\nfor i in range(1000000000000):\n    total += i",
                         SANDBOX_KIT)
        assert not result.success and result.error_type == "TimeoutError", result.error
        after = box.run("for j in range(1):\n    m = j\n[kept, n]", SANDBOX_KIT)
        assert after.success and after.output == ["still here", 1]
        refused = box.run(in_loop("x = __lackpy_locals__()"), SANDBOX_KIT)
        assert refused.error_type == VALIDATION_ERROR


@needs_sandbox
def test_in_the_sandbox_a_memory_hungry_loop_hits_the_memory_limit(tmp_path):
    with Sandbox(tmp_path, SandboxLimits(timeout=30, memory_mb=256, max_result_mb=8),
                 approve_writes=False) as box:
        result = box.run("x = []\nfor i in range(100000000):\n    x.append('abcdefgh' * 8)",
                         SANDBOX_KIT)
        assert not result.success and result.error_type == "MemoryError", result.error


@pytest.fixture(params=[True, False], ids=["sandbox", "in-process"])
def session(request, tmp_path: Path) -> Iterator[LackpySession]:
    if request.param and not sandbox_supported():
        pytest.skip("the worker needs Linux")
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / ".lackpy" / "kits").mkdir(parents=True)
    (tmp_path / ".lackpy" / "kits" / "mine.kit").write_text("read_file\n")
    config = LackpyConfig(kit_default="mine", sandbox_enabled=request.param)
    with LackpyService(tmp_path, config) as service:
        session = LackpySession(service)
        yield session
        session.close()


async def test_a_sessions_loop_program_keeps_its_variables_and_a_failing_one_changes_nothing(
        session):
    first = await session.run("lines = []\nfor line in read_file('notes.txt').splitlines():\n"
                              "    lines.append(line.upper())\ncount = len(lines)")
    assert first.success, first.error
    assert session.variable_types == {"lines": "list", "line": "str", "count": "int"}
    second = await session.run("for extra in list(['gamma']):\n    lines.append(extra)\n"
                               "    count += 1\n[lines, count, line]")
    assert second.success and second.output == [["ALPHA", "BETA", "gamma"], 3, "beta"]
    before = dict(session.variable_types)
    failed = await session.run("fresh = 1\nfor word in list(['x', 'y']):\n    lines.append(word)\n"
                               "    count += 1\n    ratio = count / (len(word) - 1)")
    assert failed.error_type == "ZeroDivisionError" and failed.error_line == 5, failed.error
    assert session.variable_types == before
    after = await session.run("[lines, count, line]")
    assert after.success and after.output == [["ALPHA", "BETA", "gamma"], 3, "beta"]
    unbound = await session.run("for i in range(0):\n    fresh = i\nfresh")
    assert unbound.error == "NameError: name 'fresh' is not defined (line 3: fresh)"
    assert session.variable_types == before
