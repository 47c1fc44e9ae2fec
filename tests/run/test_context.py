"""A bounded description of a session's variables: what a model's prompt says about them."""

from __future__ import annotations

from lackpy_kernel.run.context import CONTEXT_LIMIT, describe_variables


def test_describe_variables_gives_name_type_size_and_a_bounded_preview():
    text = describe_variables({"text": "alpha\nbeta\ngamma\n", "n": 3, "rows": [{"a": 1}] * 40,
                               "blob": "x" * 10_000})
    lines = text.splitlines()
    assert lines[0].startswith("blob: str, 10000 chars, 1 lines = 'xxxx")
    assert lines[1] == "n: int = 3"
    assert lines[2].startswith("rows: list, 40 items = [{'a': 1}, {'a': 1},") and "..." in lines[2]
    assert lines[3] == "text: str, 17 chars, 4 lines = 'alpha\\nbeta\\ngamma\\n'"
    assert all(len(line) < 140 for line in lines)
    assert describe_variables({"text": "abc"}, previews=False) == "text: str, 3 chars, 1 lines"
    assert describe_variables({}) == ""


def test_the_description_is_capped_and_the_largest_values_lose_their_preview_first():
    values = {f"small{n}": n for n in range(5)}
    values["big"] = list(range(10_000))
    values["text"] = "hello"
    capped = describe_variables(values, limit=150)
    assert len(capped) <= 150
    assert "big: list, 10000 items" in capped and "big: list, 10000 items =" not in capped
    assert "text: str, 5 chars, 1 lines = 'hello'" in capped
    many = {f"variable_{n:03}": "v" * 50 for n in range(200)}
    text = describe_variables(many)
    assert len(text) <= CONTEXT_LIMIT and "more: variable_" in text.splitlines()[-1]


def test_a_value_whose_repr_fails_still_gets_described():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no repr")

    assert describe_variables({"thing": Broken()}).startswith("thing: Broken = <Broken instance at")
