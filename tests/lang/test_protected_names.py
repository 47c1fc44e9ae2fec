"""Protected names: a kit's tools may be used but never bound, in any form of binding."""

import ast

import pytest

from lackpy_kernel.lang import Issue, issue_at, no_rebinding, validate
from lackpy_kernel.run import RestrictedRunner
from lackpy_kernel.run import no_rebinding as run_no_rebinding

TOOLS = {"read_file", "find_files"}
REBOUND = "cannot assign to the tool 'read_file'; choose another name"


@pytest.mark.parametrize(
    ("program", "line", "col"),
    [
        ("read_file = 1", 1, 1),
        ("x = 1\nread_file += 'a'", 2, 1),
        ("read_file: int = 3", 1, 1),
        ("x = (read_file := 3)", 1, 6),
        ("for read_file in range(3):\n    print(1)", 1, 5),
        ("[1 for read_file in range(3)]", 1, 8),
        ("{k: 1 for k, read_file in [(1, 2)]}", 1, 14),
        ("a, (b, *read_file) = 1, (2, 3)", 1, 9),
        ("[a, *read_file] = [1, 2]", 1, 6),
        ("sorted([1], key=lambda read_file: read_file)", 1, 24),
        ("del read_file", 1, 5),
        ("with find_files('a') as read_file:\n    print(1)", 1, 25),
    ],
)
def test_every_binding_of_a_protected_name_is_refused(program, line, col):
    result = validate(program, TOOLS, protected_names=TOOLS)
    assert Issue(line, col, REBOUND) in result.issues, result.errors


def test_protected_names_may_be_used():
    program = "text = read_file('a')\nf = read_file\nsorted(find_files('*'), key=lambda p: p)"
    assert validate(program, TOOLS, protected_names=TOOLS).valid


def test_a_rebinding_is_reported_in_characters_on_a_non_ascii_line():
    (issue,) = validate("é = 'ü'; read_file = 1", TOOLS, protected_names=TOOLS).issues
    assert (issue.line, issue.col) == (1, 10)


def test_protected_names_are_not_allowed_names_by_themselves():
    result = validate("read_file('a')", protected_names=TOOLS)
    assert any("unknown function 'read_file'" in error for error in result.errors)


def test_the_no_rebinding_rule_gives_the_same_issues_as_protected_names():
    program = "read_file = 1\nfor find_files in range(2):\n    print(1)\ndel read_file"
    by_rule = validate(program, TOOLS, [no_rebinding(TOOLS)])
    by_input = validate(program, TOOLS, protected_names=TOOLS)
    assert by_rule.issues == by_input.issues
    assert sum(REBOUND in error for error in by_rule.errors) == 2


def test_the_runner_exports_the_same_rule():
    assert run_no_rebinding is no_rebinding
    assert not validate("read_file = 1", TOOLS, [run_no_rebinding(TOOLS)]).valid


def test_the_rule_called_on_a_tree_finds_the_bindings_itself():
    rule = no_rebinding(TOOLS)
    tree = ast.parse("read_file = 1\nsorted([1], key=lambda find_files: 1)\nread_file('a')")
    assert rule(tree) == [
        Issue(1, 1, REBOUND),
        Issue(2, 24, "cannot assign to the tool 'find_files'; choose another name"),
    ]
    assert rule.__name__ == "no_rebinding"


def test_protected_names_hold_under_nesting_that_a_tree_copy_could_not_survive():
    # copy.deepcopy of this tree raised RecursionError: the check must not copy the tree.
    program = "x = " + "[" * 172 + "]" * 172 + "\nread_file = 1"
    assert validate(program, TOOLS, protected_names=TOOLS).errors == [f"line 2, col 1: {REBOUND}"]
    assert validate(program, TOOLS, [no_rebinding(TOOLS)]).errors == [f"line 2, col 1: {REBOUND}"]


def test_the_runner_refuses_rebinding_its_tools():
    result = RestrictedRunner().run("read_file = 1\nread_file", {"read_file": len})
    assert not result.success
    assert result.error_type == "LackpyValidationError"
    assert result.issues == [Issue(1, 1, REBOUND)]


def test_a_builtin_that_is_also_protected_gets_both_errors():
    errors = validate("len = 1", {"len"}, protected_names={"len"}).errors
    assert errors == ["line 1, col 1: cannot assign to the builtin 'len'; choose another name",
                      "line 1, col 1: cannot assign to the tool 'len'; choose another name"]


def test_rules_may_return_issue_objects_with_their_positions():
    def flag_calls(tree):
        return [issue_at(node, "no calls here") for node in ast.walk(tree) if isinstance(node, ast.Call)]

    result = validate("x = 'é'; y = len('a')", extra_rules=[flag_calls])
    assert result.issues == [Issue(1, 14, "no calls here")]  # a character column, not bytes


def test_rules_may_still_return_strings():
    result = validate("x = 1", extra_rules=[lambda tree: ["line 1, col 1: no x", "everywhere"]])
    assert result.issues == [Issue(0, 0, "everywhere"), Issue(1, 1, "no x")]


def test_a_rule_returning_something_else_is_an_error_not_a_crash():
    result = validate("x = 1", extra_rules=[lambda tree: [42]])
    assert not result.valid
    assert "failed: TypeError: a rule returns Issue objects or strings, not int" in result.errors[0]
