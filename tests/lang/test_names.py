"""free_names: what a program needs from outside, in the order it runs."""

import pytest

from lackpy_kernel.lang import free_names
from lackpy_kernel.lang.grammar import MAX_PROGRAM_CHARS


@pytest.mark.parametrize(("program", "free"), [
    ("len(text)", {"len", "text"}),
    ("text = read_file('a.txt')\nlen(text)", {"read_file", "len"}),
    ("x = x + 1", {"x"}),
    ("x += 1", {"x"}),
    ("total = 0\nfor n in numbers:\n    total = total + n\ntotal", {"numbers"}),
    ("[line for line in lines if line]", {"lines"}),
    ("{k: v for k, v in pairs}", {"pairs"}),
    ("sorted(rows, key=lambda row: row['n'])", {"sorted", "rows"}),
    ("[n for n in range(3)]\nn", {"range", "n"}),  # a comprehension's name is its own
    ("if flag:\n    y = 1\nelse:\n    y = 2\ny", {"flag"}),
    ("a, b = pair\na + b", {"pair"}),
    ("d['k'] = value", {"d", "value"}),
])
def test_names_read_before_they_are_bound_are_free(program, free):
    assert free_names(program) == free


@pytest.mark.parametrize("text", ["x = (", "", "\0"])
def test_text_that_does_not_parse_needs_nothing(text):
    assert free_names(text) == frozenset()


def test_a_program_over_the_size_limit_is_not_parsed():
    # validation refuses it unparsed; its free names would otherwise cost seconds of parsing
    at_limit = "a + b\n" + " " * (MAX_PROGRAM_CHARS - len("a + b\n"))
    assert free_names(at_limit) == {"a", "b"}
    assert free_names(at_limit + " ") == frozenset()
