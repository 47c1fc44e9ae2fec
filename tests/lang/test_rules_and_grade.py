"""Extra rules and grades."""

from lackpy_kernel.lang import (
    Grade,
    compute_grade,
    max_calls,
    max_depth,
    no_loops,
    no_nested_calls,
    validate,
)


def test_no_loops():
    result = validate("for i in range(3):\n    print(i)", extra_rules=[no_loops])
    assert not result.valid
    assert result.issues[0].line == 1
    assert "loops are not allowed" in result.errors[0]
    assert validate("print(1)", extra_rules=[no_loops]).valid


def test_no_loops_covers_comprehensions():
    assert not validate("[i for i in range(3)]", extra_rules=[no_loops]).valid


def test_max_depth():
    program = "x = 1\nif x:\n    for i in range(2):\n        if i:\n            print(i)"
    assert validate(program, extra_rules=[max_depth(3)]).valid
    result = validate(program, extra_rules=[max_depth(2)])
    assert not result.valid
    assert result.issues[0].line == 4
    assert "limit is 2" in result.errors[0]


def test_max_calls():
    assert validate("len('a')\nlen('b')", extra_rules=[max_calls(2)]).valid
    result = validate("len('a')\nlen('b')\nlen('c')", extra_rules=[max_calls(2)])
    assert result.errors == ["the program makes 3 calls; the limit is 2"]


def test_no_nested_calls():
    assert validate("x = len('a')\nstr(x)", extra_rules=[no_nested_calls]).valid
    result = validate("str(len('a'))\nprint(sep=str(1))", extra_rules=[no_nested_calls])
    assert [issue.line for issue in result.issues] == [1, 2]


def test_rules_only_add_errors():
    assert not validate("import os", extra_rules=[lambda tree: []]).valid


def test_a_broken_rule_is_an_error_not_a_crash():
    def broken(tree):
        raise RuntimeError("boom")

    result = validate("x = 1", extra_rules=[broken])
    assert not result.valid
    assert "rule broken failed: RuntimeError: boom" in result.errors[0]


def test_compute_grade():
    assert compute_grade({}) == Grade(0, 0)
    assert compute_grade({"a": {"grade_w": 1, "effects_ceiling": 1}}) == Grade(1, 1)
    assert compute_grade({"a": {"grade_w": 1, "effects_ceiling": 1}, "b": {"grade_w": 2}}) == Grade(2, 3)
    assert compute_grade({"a": {}}) == Grade(3, 3)
