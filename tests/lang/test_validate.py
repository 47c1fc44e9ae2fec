"""The validator: what it accepts, what it refuses, and how it says so."""

import ast

import pytest

from lackpy_kernel.lang import (
    ALLOWED_BUILTINS,
    ALLOWED_NODES,
    FORBIDDEN_NAMES,
    FORBIDDEN_NODES,
    Issue,
    validate,
)
from lackpy_kernel.lang.grammar import MAX_NESTING, MAX_PROGRAM_CHARS

TOOLS = {"read_file", "find_files"}


def errors_of(program, names=TOOLS, rules=None):
    result = validate(program, names, rules)
    assert result.valid is (not result.errors)
    return result.errors


@pytest.mark.parametrize(
    "program",
    [
        "content = read_file('a.txt')\ncontent",
        "files = find_files('**/*.py')\n[f for f in files if f.endswith('.py')]",
        "n = len(read_file('a'))\nif n > 3:\n    print(n)\nelse:\n    print('short')",
        "d = {'a': 1}\nd['b'] = 2\nsorted(d.items(), key=lambda kv: kv[1])",
        "rows = [{'n': 2}, {'n': 1}]\nsort_by(rows, 'n')",
        "total = 0\nfor i in range(10):\n    total += i\ntotal",
        "x: int = 3\nx",
        "s = f'{len(\"abc\")!r:>5}'\ns",
        "a, *rest = [1, 2, 3]\nrest[1:]",
        "{k: v for k, v in zip('ab', [1, 2])}",
        "f = read_file\nf('a')",
        "x = 'abc'.upper().split('B')\nx",
        "_ = 1\nfor _ in range(2):\n    pass_ = 1",
        "isinstance(3, int) and not 1 in [2] or 3 // 2 % 2 - -1",
    ],
)
def test_accepts_lackpy(program):
    assert errors_of(program) == []


def test_result_lists_calls_and_variables():
    result = validate("a = read_file('x')\nb, c = 1, 2\nfor i in range(2):\n    a += 'x'\nlen(a)", TOOLS)
    assert result.valid
    assert result.calls == ["read_file", "range", "len"]
    assert result.variables == ["a", "b", "c", "i"]
    assert isinstance(result.tree, ast.Module)


def test_comprehension_and_lambda_names_are_not_variables():
    result = validate("xs = [y for y in range(3)]\nsorted(xs, key=lambda z: -z)")
    assert result.variables == ["xs"]


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("import os", "Import is not allowed"),
        ("from os import path", "ImportFrom is not allowed"),
        ("def f():\n    return 1", "FunctionDef is not allowed"),
        ("class A:\n    x = 1", "ClassDef is not allowed"),
        ("while True:\n    x = 1", "use a for loop"),
        ("try:\n    x = 1\nexcept Exception:\n    x = 2", "Try is not allowed"),
        ("raise ValueError()", "Raise is not allowed"),
        ("assert 1", "Assert is not allowed"),
        ("x = 1\ndel x", "Delete is not allowed"),
        ("x = (y := 3)", "NamedExpr is not allowed"),
        ("x = 2 ** 8", "multiply instead"),
        ("x = 1 << 40", "LShift is not allowed"),
        ("x = list(i for i in range(3))", "list comprehension"),
        ("global x", "Global is not allowed"),
        ("match 1:\n    case 1:\n        x = 1", "Match is not allowed"),
    ],
)
def test_refuses_forbidden_nodes(program, expected):
    errors = errors_of(program)
    assert any(expected in error for error in errors), errors


def test_forbidden_statement_reported_once():
    assert len(errors_of("while True:\n    pass")) == 1
    assert len(errors_of("import os, sys")) == 1


@pytest.mark.parametrize("name", sorted(FORBIDDEN_NAMES))
def test_every_forbidden_name_is_refused(name):
    if name.startswith("__"):
        program = f"x = {name}"
    else:
        program = f"x = {name}"
    errors = errors_of(program, names={name} | TOOLS)
    assert errors and ("forbidden" in errors[0] or "reserved" in errors[0]), errors


def test_forbidden_name_gives_an_alternative():
    (error,) = errors_of("open('a.txt').read()")
    assert "line 1, col 1" in error
    assert "read_file" in error


def test_unknown_function_names_close_matches():
    (error,) = errors_of("read_fil('a')")
    assert "unknown function 'read_fil'" in error
    assert "did you mean read_file" in error


def test_allowed_names_extend_the_namespace():
    assert errors_of("my_tool(1)", names={"my_tool"}) == []
    assert errors_of("my_tool(1)", names=set())


def test_assigned_variables_and_parameters_are_callable():
    assert errors_of("g = len\ng('ab')") == []
    assert errors_of("param_fn(1)", names={"param_fn"}) == []


def test_collects_all_errors_in_order_with_positions():
    program = "import os\nx = open('f')\ny = x.__class__\nwhile x:\n    pass"
    result = validate(program, TOOLS)
    assert [issue.line for issue in result.issues] == [1, 2, 3, 4]
    for line, error in zip([1, 2, 3, 4], result.errors, strict=True):
        assert error.startswith(f"line {line}, col ")


def test_column_counts_characters_not_bytes():
    (issue,) = validate("é = 'ü'; open('x')").issues
    assert issue.col == 10


def test_cannot_rebind_builtins():
    (error,) = errors_of("len = 3")
    assert "cannot assign to the builtin 'len'" in error


@pytest.mark.parametrize(
    "program",
    [
        "sorted([1], key=lambda x: x.__class__)",
        "f = lambda x: x",
        "sorted([1], cmp=lambda x: x)",
        "sorted([1], key=lambda *a: a)",
        "sorted([1], key=lambda x=print: x)",
        "sorted([1], key=lambda x: open(x))",
        "(lambda: 1)()",
    ],
)
def test_lambda_only_as_key_with_checked_body(program):
    assert errors_of(program)


@pytest.mark.parametrize(
    "program",
    [
        "for x in [1, 2]:\n    print(x)",
        "for x in 'ab':\n    print(x)",
        "d = {}\nfor x in d.keys:\n    print(x)",
    ],
)
def test_for_must_iterate_a_call_or_variable(program):
    assert any("for loop must iterate" in e for e in errors_of(program))


@pytest.mark.parametrize(
    "program",
    [
        "x = '{0.__class__}'",
        "x = '{__globals__}'",
        "x = '{0.__init__.__globals__}'",
        "x = '{' '_' '_class__}'",
        "x = '{0[__builtins__]}'",
        "x = f'{{0.__class__}}'",
    ],
)
def test_dunder_strings_in_a_format_field_are_refused(program):
    assert any("'__' inside a {} field" in e for e in errors_of(program))


@pytest.mark.parametrize(
    "program",
    [
        "read_file('pkg/__init__.py')",
        "find_files('**/__init__.py')",
        "find_definitions('__init__')",
        "x = '__class__'",
        "d = {}\nd.get('__globals__')",
        "x = f'{1}__x'",
    ],
)
def test_dunder_names_and_paths_are_data(program):
    assert errors_of(program, {"read_file", "find_files", "find_definitions"}) == []


def test_bytes_literals_refused():
    assert any("bytes literals" in e for e in errors_of("x = b'abc'"))


def test_unicode_lookalike_identifiers_normalise_to_the_forbidden_name():
    assert any("'open' is forbidden" in e for e in errors_of("ｏｐｅｎ('x')"))
    assert errors_of("x = 1\nx.＿＿class＿＿")  # fullwidth low lines: not an identifier
    assert any("'open' is forbidden" in e for e in errors_of("x = 𝐨𝐩𝐞𝐧"))  # mathematical bold
    assert any("'.format' is forbidden" in e for e in errors_of("'{}'.ｆｏｒｍａｔ(1)"))


@pytest.mark.parametrize(
    "program",
    [
        "[[[[" * 60 + "]]]]" * 60,
        "x = " + "-" * 5000 + "1",
        "x = " + "1 + " * 1000 + "1",
        "x = " + "(" * 300 + "1" + ")" * 300,
        "x = " + "f(" * 400 + ")" * 400,
        "x = 1\n" + "if x:\n" + "".join(" " * i + "if x:\n" for i in range(1, 150)) + " " * 150 + "y = 1",
    ],
)
def test_deep_nesting_is_an_error_not_a_crash(program):
    errors = errors_of(program, names={"f"})
    assert errors
    assert any("nested" in e or "syntax error" in e or "too many" in e for e in errors), errors


def test_nesting_at_the_limit_is_fine():
    program = "x = " + "-" * (MAX_NESTING - 5) + "1"
    assert errors_of(program) == []


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("x = 1\0", "NUL byte"),
        (b"x = 1", "must be text"),
        (None, "must be text"),
        ("x = 'a" , "syntax error"),
        ("x = '\udcff'", None),
        ("\ufeffx = 1", None),
        ("# -*- coding: latin-1 -*-\nx = 'é'", None),
        ("x = 1\n\x0c\ny = 2", None),
        ("x = 1" + " " * (MAX_PROGRAM_CHARS), "characters; the limit"),
    ],
)
def test_odd_input_never_crashes(program, expected):
    result = validate(program)
    if expected is None:
        assert isinstance(result.valid, bool)
    else:
        assert not result.valid
        assert expected in result.errors[0]


def test_attribute_assignment_refused():
    assert any("cannot assign to the attribute" in e for e in errors_of("read_file.x = 1"))


def test_async_comprehension_refused():
    assert any("async comprehension" in e for e in errors_of("x = [a async for a in b]", {"b"}))


def test_call_of_non_name_refused():
    errors = errors_of("x = [len][0]('a')")
    assert any("only named functions and methods" in e for e in errors)
    assert any("only named functions" in e for e in errors_of("x = read_file('a')('b')"))


def test_grammar_sets_match_the_contract():
    assert "sort_by" in ALLOWED_BUILTINS
    assert not ALLOWED_NODES & FORBIDDEN_NODES
    assert {"open", "getattr", "__import__", "type", "os"} <= FORBIDDEN_NAMES
    assert not ALLOWED_BUILTINS & FORBIDDEN_NAMES


def test_issue_round_trips_through_text():
    issue = Issue(3, 7, "something: wrong")
    assert Issue.from_text(str(issue)) == issue
    assert Issue.from_text("plain message") == Issue(0, 0, "plain message")


def test_unknown_names_are_errors():
    (error,) = errors_of("x = path + 1")
    assert "line 1, col 5: unknown name 'path'" in error
    assert errors_of("x = path + 1", names={"path"}) == []


def test_names_bound_anywhere_are_known():
    program = "total = 0\nfor i in range(3):\n    total = total + i\n[j for j in range(i)]\n"
    program += "sorted([1], key=lambda k: k)\nwith read_file('a') as f:\n    f"
    assert errors_of(program) == []


def test_an_unknown_call_is_reported_once():
    assert len(errors_of("nope(1)")) == 1


def test_many_unknown_names_validate_quickly_with_capped_errors():
    count = 3000
    program = "\n".join(f"v{i} = 0" for i in range(count)) + "\n"
    program += "\n".join(f"w{i}()" for i in range(count))
    result = validate(program)
    assert len(result.errors) == 101
    assert result.errors[-1] == f"... and {count - 100} more errors"


def test_lambda_cannot_be_smuggled_out_through_another_call():
    assert any("key= of sorted" in e for e in errors_of("f = dict(key=lambda a: a)['key']"))
    assert errors_of("y = [3, 1]\ny.sort(key=lambda a: -a)\nmin(y, key=lambda a: a)") == []


def test_sort_by_takes_a_key_lambda_as_the_seed_grammar_allows():
    """The seed's grammar allows Lambda as a key argument, and sort_by is a curated builtin."""
    assert errors_of("rows = [{'a': 2}, {'a': 1}]\nsort_by(rows, key=lambda r: r['a'])") == []
    assert any("key= of sorted, min, max, sort_by" in e
               for e in errors_of("sort_by([{'a': 1}], lambda r: r['a'])"))


def test_a_rule_returning_nothing_is_an_error_not_a_crash():
    result = validate("x = 1", extra_rules=[lambda tree: None])
    assert not result.valid and "failed: TypeError" in result.errors[0]


def test_rules_see_a_copy_of_the_tree():
    def vandal(tree):
        tree.body.clear()
        return []

    result = validate("x = 1", extra_rules=[vandal])
    assert result.valid and len(result.tree.body) == 1


def test_columns_after_unusual_line_breaks():
    (issue,) = validate("s = '\u2028'; import os").issues
    assert (issue.line, issue.col) == (1, 10)


@pytest.mark.parametrize(
    "program",
    [
        "open", "x = open", "open = 1", "open += 1", "x += open", "open: int = 1", "x: open = 1",
        "x: int = open", "for open in x:\n    y = 1", "for a in open:\n    y = 1",
        "for a in x:\n    open", "for a in x:\n    y = 1\nelse:\n    open", "if open:\n    y = 1",
        "if x:\n    open", "if x:\n    y = 1\nelse:\n    open", "with open as f:\n    y = 1",
        "with x as open:\n    y = 1", "with x as f:\n    open", "open()", "len(open)", "len(k=open)",
        "open.x", "open[0]", "x[open]", "[open]", "(open,)", "{open}", "{open: 1}", "{1: open}",
        "{**open}", "[open for a in x]", "[1 for open in x]", "[1 for a in open]",
        "[1 for a in x if open]", "{open for a in x}", "{open: 1 for a in x}", "{1: open for a in x}",
        "{1: 2 for a in open}", "open < 1", "1 < open", "x and open", "-open", "open + 1", "1 + open",
        "1 if open else 2", "open if x else 2", "1 if x else open", "f'{open}'", "f'{x:{open}}'",
        "[*open]", "x[open:]", "x[:open]", "x[::open]", "sorted(x, key=lambda a: open)",
        "sorted(x, key=lambda open: 1)", "sorted(x, key=lambda a=open: a)",
        "sorted(x, key=lambda *, a=open: a)", "sorted(x, key=lambda *open: 1)",
        "sorted(x, key=lambda **open: 1)", "sorted(x, key=lambda open, /: 1)",
        "while open:\n    y = 1", "def f(a=open):\n    return 1", "try:\n    open\nexcept E:\n    y = 1",
        "x = (y := open)", "x = list(open for a in x)",
    ],
)
def test_a_forbidden_name_is_found_in_every_part_of_every_node(program):
    assert any("'open' is forbidden" in error for error in errors_of(program, names={"x", "E"})), program
