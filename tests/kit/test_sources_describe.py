"""A Python function described as a tool: its signature, annotations and docstring."""

from __future__ import annotations

import pytest

from lackpy_kernel.errors import ToolSourceError
from lackpy_kernel.kit import ArgSpec, ToolSpec
from lackpy_kernel.kit.sources import describe_function, parse_docstring


def google(text: str, limit: int = 10, *, unique: bool = False) -> dict[str, int]:
    """Count the words of a text.

    A second paragraph the prompt line leaves out.

    Args:
        text: the text to count,
            over two lines.
        limit (int): how many words to keep.
        unique: count each word once.

    Returns:
        each word and its count.

    Raises:
        ValueError: never.
    """
    return {}


def numpy_style(a, b=2):
    """Add two numbers.

    Parameters
    ----------
    a : int
        the first
    b : int
        the second

    Returns
    -------
    int
        their sum
    """
    return a + b


def sphinx_style(path, pattern):
    """Find a pattern in a file.

    :param path: the file
    :type path: str
    :param str pattern: what to find
    :returns: the matching lines
    :rtype: list[str]
    """
    return []


def test_a_google_docstring_gives_the_description_and_each_argument():
    described = describe_function(google)
    assert described.description == "Count the words of a text. Returns: each word and its count."
    assert described.returns == "dict[str, int]"
    assert described.args == [
        ArgSpec("text", "str", "the text to count, over two lines."),
        ArgSpec("limit", "int", "how many words to keep.", "10"),
        ArgSpec("*", ""),
        ArgSpec("unique", "bool", "count each word once.", "False"),
    ]


def test_a_numpy_docstring_gives_types_where_there_are_no_annotations():
    described = describe_function(numpy_style)
    assert [(arg.name, arg.type, arg.description, arg.default) for arg in described.args] == [
        ("a", "int", "the first", None), ("b", "int", "the second", "2")]
    assert described.returns == "int"
    assert described.description == "Add two numbers. Returns: their sum"


def test_a_sphinx_docstring_gives_types_and_the_return_type():
    described = describe_function(sphinx_style)
    assert [(arg.name, arg.type, arg.description) for arg in described.args] == [
        ("path", "str", "the file"), ("pattern", "str", "what to find")]
    assert described.returns == "list[str]"
    assert described.description == "Find a pattern in a file. Returns: the matching lines"


def test_the_signature_line_reads_like_python():
    described = describe_function(google)
    spec = ToolSpec("count", "mine", description=described.description, args=described.args,
                    returns=described.returns)
    assert spec.signature() == ("count(text: str, limit: int = 10, *, unique: bool = False)"
                                " -> dict[str, int]")


def test_positional_only_and_variadic_parameters_keep_their_marks():
    def tool(a: int, b: int, /, c: int, *rest: str, d: int, **more: int) -> None:
        """Marks."""

    spec = ToolSpec("tool", "p", args=describe_function(tool).args, returns="None")
    assert spec.signature() == "tool(a: int, b: int, /, c: int, *rest: str, d: int, **more: int) -> None"


def test_a_default_that_is_not_plain_data_shows_as_an_ellipsis():
    marker = object()

    def tool(value=marker, text="x" * 100):
        """Defaults."""

    assert [arg.default for arg in describe_function(tool).args] == ["...", "..."]


def test_string_annotations_that_do_not_evaluate_are_kept_as_written():
    def tool(frame: SomeFrame) -> list[Row]:  # noqa: F821 - names that do not exist
        """Forward references."""

    described = describe_function(tool)
    assert (described.args[0].type, described.returns) == ("SomeFrame", "list[Row]")


def test_a_function_without_a_docstring_has_an_empty_description():
    def tool(x):
        return x

    described = describe_function(tool)
    assert (described.description, described.args, described.returns) == (
        "", [ArgSpec("x")], "Any")


class Shape:
    """A class."""


async def fetch(url: str) -> str:
    """Async."""
    return url


def numbers(n: int):
    """A generator."""
    yield from range(n)


@pytest.mark.parametrize(("target", "reason"), [
    (Shape, "it is a class"),
    (fetch, "it is an async function"),
    (numbers, "it is a generator function; return a list"),
    (42, "it is a int, not a function"),
    (next, "Python cannot read its signature"),  # a builtin without a text signature
])
def test_what_cannot_be_a_tool_is_refused_with_the_reason(target, reason):
    with pytest.raises(ToolSourceError, match=reason):
        describe_function(target)


def test_a_summary_line_ending_in_a_colon_is_not_mistaken_for_a_section():
    doc = parse_docstring("Return the following:\n\nthe words.\n")
    assert doc.summary == "Return the following:"
