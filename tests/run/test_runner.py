"""The in-process restricted runner and traces."""

import ast

import pytest

from lackpy_kernel.run import ExecutionResult, RestrictedRunner, Trace, make_traced, runner, summarize
from lackpy_kernel.run.runner import STDOUT_LIMIT


def greet(name, punctuation="!"):
    return f"hello {name}{punctuation}"


def fail(reason):
    raise ValueError(f"bad: {reason}")


def leak():
    return greet  # a function is not plain data


TOOLS = {"greet": greet, "fail": fail, "leak": leak}


def run(program, params=None, variables=None, tools=TOOLS):
    return RestrictedRunner().run(program, tools, params, variables=variables)


def test_last_expression_is_the_output():
    result = run("x = greet('ada')\nx.upper()")
    assert result.success
    assert result.output == "HELLO ADA!"
    assert result.variables == {"x": "hello ada!"}


def test_no_output_when_the_program_ends_with_a_statement():
    result = run("x = 1")
    assert result.success and result.output is None


def test_variables_exclude_params_tools_and_internals():
    result = run("y = n + 1\nfor i in range(2):\n    pass_ = i", params={"n": 4})
    assert result.variables == {"y": 5, "i": 1, "pass_": 1}
    annotated = run("z: int = 1\nz")  # a module's annotations are not a variable
    assert annotated.variables == {"z": 1}


def test_session_variables_are_visible_and_returned():
    result = run("total = total + 1\ntotal", variables={"total": 41})
    assert result.output == 42
    assert result.variables == {"total": 42}


def test_session_variables_are_known_to_the_validator():
    assert run("f = greet\nf('x')").success
    assert run("g('x')", variables={"g": greet}).success


def test_a_program_with_a_loop_runs_as_a_function_with_module_semantics():
    # its names are a function's locals (fast), yet it reads and rebinds what it is given
    # as a module would, and a name it has not bound yet is not defined, as at module level
    given = {"total": 41, "rows": [3, 1, 2], "k": 10}
    result = run("for row in rows:\n    total += row\nrows = sort_by(rows, key=lambda r: r * k)\n"
                 "k = 2\nn = len([k for k in rows])\nk", variables=given)
    assert result.success, result.error
    assert result.output == 2
    assert result.variables == {"total": 47, "rows": [1, 2, 3], "k": 2, "n": 3, "row": 2}
    if_unset = run("for row in rows:\n    if row > 100:\n        late = 1\nlate", variables=given)
    assert (if_unset.error_type, if_unset.error) == (
        "NameError", "NameError: name 'late' is not defined (line 4: late)")
    in_lambda = run("for u in range(1):\n    xs = sort_by([2, 1], key=lambda v: v * later)\n"
                    "later = 2")
    assert (in_lambda.error_type, in_lambda.error_line) == ("NameError", 2)
    assert in_lambda.error.startswith("NameError: name 'later' is not defined")
    assert run("with_loop = 0\nfor i in range(3):\n    with_loop += i\nwith_loop").output == 3


@pytest.mark.parametrize(("program", "locals_"), [
    ("total = 0\nfor i in range(3):\n    total += i", ("total", "i")),
    ("if True:\n    with_ = 1\n    for i in range(3):\n        with_ += i", ("with_", "i")),
    ("x = 1\ny = [i for i in range(3)]", None),  # no for statement: a module's code
])
def test_only_a_program_with_a_for_loop_gets_fast_locals(program, locals_):
    code = runner._compile(ast.parse(program), {"total": 5})
    if locals_ is None:
        assert code.co_name == "<module>"
    else:
        assert set(code.co_varnames) >= set(locals_)
        assert code.co_varnames[:code.co_argcount] == (("total",) if "total" in locals_ else ())


@pytest.mark.parametrize("loop", ["", "for i in range(1):\n    pass_ = i\n"])
def test_many_names_still_compile(loop):
    names = ", ".join(f"v{i}" for i in range(20_000))
    result = run(f"{loop}{names} = range(20000)\nv19999", variables={"v7": 0})
    assert result.success and result.output == 19_999


def test_runtime_error_names_type_message_and_line():
    result = run("a = 1\nb = 0\nc = a / b")
    assert not result.success
    assert result.error_type == "ZeroDivisionError"
    assert result.error_line == 3
    assert result.error == "ZeroDivisionError: division by zero (line 3: c = a / b)"


def test_tool_errors_point_at_the_program_line():
    result = run("x = 1\nfail('nope')")
    assert result.error_type == "ValueError"
    assert result.error_line == 2
    assert "bad: nope" in result.error


def test_validation_failure_is_a_result_not_an_exception():
    result = run("import os\nx = open('a')")
    assert not result.success
    assert result.error_type == "LackpyValidationError"
    assert result.error_line == 1
    assert [issue.line for issue in result.issues] == [1, 2]
    assert result.error.startswith("invalid program:\n  line 1")


def test_tools_cannot_be_rebound():
    result = run("greet = 1")
    assert not result.success
    assert "cannot assign to the tool 'greet'" in result.error


def test_trace_records_each_call_with_named_arguments():
    result = run("a = greet('ada')\nb = greet('bob', punctuation='?')\n[a, b]")
    first, second = result.trace.entries
    assert (first.step, first.tool, first.args, first.result, first.success) == (
        0, "greet", {"name": "ada"}, "hello ada!", True,
    )
    assert second.args == {"name": "bob", "punctuation": "?"}
    assert first.duration_ms >= 0 and first.error is None


def test_trace_records_a_failing_call():
    result = run("fail('x')")
    (entry,) = result.trace.entries
    assert not entry.success
    assert entry.result is None
    assert entry.error == "ValueError: bad: x"


def test_tools_must_return_plain_data():
    result = run("f = leak()")
    assert not result.success
    assert "returned a function, which is not plain data" in result.error


def test_tools_take_plain_data_only():
    result = run("greet(enumerate([1]))")
    assert not result.success
    assert "takes plain data, not enumerate" in result.error
    assert not run("greet(len)").success


def test_print_is_captured():
    result = run("print('a', 1, sep='-')\nprint('b', end='')")
    assert result.stdout == "a-1\nb"


def test_print_cannot_write_to_a_file_object():
    result = run("print('x', file=greet)")
    assert not result.success and result.error_type == "TypeError"


def test_stdout_is_bounded():
    result = run("for i in range(3000):\n    print('x' * 1000)")
    assert result.success
    assert len(result.stdout) < STDOUT_LIMIT + 100
    assert result.stdout.endswith("[output truncated at 1,000,000 characters]\n")


def test_sort_by_uses_dict_keys():
    result = run("sort_by([{'n': 2}, {'n': 1}], 'n', reverse=True)")
    assert result.output == [{"n": 2}, {"n": 1}]
    missing = run("sort_by([{'n': 2}, {'m': 1}], 'n')")
    assert not missing.success and "item 1 has no key 'n'" in missing.error


def test_sort_by_never_reads_attributes():
    result = run("sort_by(['abc'], 'upper')")
    assert not result.success and "has no key 'upper'" in result.error


def test_result_round_trips_through_plain_data():
    result = run("fail('x')")
    again = ExecutionResult.from_dict(result.to_dict())
    assert again == result


def test_make_traced_wraps_any_callable():
    trace = Trace()
    traced = make_traced("add", lambda a, b: a + b, trace)
    assert traced(1, b=2) == 3
    assert trace.entries[0].args == {"a": 1, "b": 2}
    with pytest.raises(ZeroDivisionError):
        make_traced("div", lambda a: 1 / a, trace)(0)
    assert trace.entries[1].error == "ZeroDivisionError: division by zero"


def test_summarize_copes_with_huge_nested_and_cyclic_values():
    cyclic = [1]
    cyclic.append(cyclic)
    nested = []
    for _ in range(10000):
        nested = [nested]
    assert summarize("short") == "short"
    assert len(summarize("x" * 10**6)) < 300
    assert len(summarize(list(range(10**5)))) < 300
    assert "..." in summarize(cyclic)
    assert len(summarize(nested)) < 300
    assert summarize(10**100) != 10**100


def test_a_self_referencing_output_is_summarised():
    result = run("a = [1]\na.append(a)\na")
    assert result.success
    assert result.output == "[1, [1, [1, [1, [...]]]]]"
    assert result.notes == ["the output is self-referencing; it is shown as a summary"]


@pytest.mark.parametrize(
    ("program", "problem"),
    [
        ("a = [0]\nfor i in range(60):\n    a = [a, a]\na", "too large to show in full"),
        ("x = 10\nfor i in range(13):\n    x = x * x\nx", "an int too long to show"),
        ("a = []\nfor i in range(500):\n    a = [a]\na", "nested too deeply to show"),
    ],
)
def test_outputs_that_cannot_be_shown_become_summaries_quickly(program, problem):
    result = run(program)
    assert result.success
    assert isinstance(result.output, str) and len(result.output) < 2000
    assert problem in result.notes[0]


def test_error_messages_survive_values_that_cannot_be_printed():
    result = run("x = 10\nfor i in range(13):\n    x = x * x\nd = {}\nd[x]")
    assert result.error == "KeyError: <int with about 8,193 digits> (line 5: d[x])"


@pytest.mark.parametrize("kind", ["zip", "enumerate"])
def test_iterator_chains_are_bounded_instead_of_crashing(kind):
    start = "zip()" if kind == "zip" else "enumerate([])"
    result = run(f"z = {start}\nfor i in range(1000000):\n    z = {kind}(z)\nlist(z)")
    assert not result.success
    assert result.error_type == "RecursionError"
    assert f"{kind}() nested more than 100 deep" in result.error


def test_bounded_iterators_still_behave_like_the_builtins():
    result = run("pairs = list(zip([1, 2], 'ab'))\nd = dict(enumerate('xy', 1))\n[pairs, d, zip([1])]")
    assert result.output[:2] == [[(1, "a"), (2, "b")], {1: "x", 2: "y"}]
    assert repr(result.output[2]) == "<zip object>"
    assert "takes plain data, not zip" in run("greet(zip([1]))").error


def test_error_line_counts_lines_as_python_does():
    result = run("# note\x0cpage two\nd = {}\nd['missing']")
    assert result.error == "KeyError: 'missing' (line 3: d['missing'])"


class CountedTool:
    """A tool that counts how often its signature is read (each wrapping of it reads it)."""

    def __init__(self):
        self.signature_reads = 0

    @property
    def __signature__(self):
        self.signature_reads += 1
        import inspect
        return inspect.Signature([inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD)])

    def __call__(self, x):
        return x * 2


def test_only_the_tools_a_program_names_are_prepared_for_it():
    """A kit may hold hundreds of tools (an MCP server's): a program pays only for those
    it names."""
    named, unnamed = CountedTool(), CountedTool()
    result = run("double(21)", tools={**TOOLS, "double": named, "unused": unnamed})
    assert result.output == 42
    assert named.signature_reads >= 1
    assert unnamed.signature_reads == 0


def test_a_tool_named_in_another_form_is_still_there():
    result = run("ｇｒｅｅｔ('ada')")  # fullwidth letters: the same name after NFKC, as Python reads it
    assert result.success, result.error
    assert result.output == "hello ada!"
    assert [entry.tool for entry in result.trace.entries] == ["greet"]


class UnhashableTool:
    __hash__ = None  # as a dataclass with eq=True is

    def __call__(self, text):
        return text.upper()


def test_a_tool_that_cannot_be_hashed_still_runs():
    result = run("shout('hi')", tools={**TOOLS, "shout": UnhashableTool()})
    assert result.output == "HI"
    assert result.trace.entries[0].args == {"text": "hi"}
