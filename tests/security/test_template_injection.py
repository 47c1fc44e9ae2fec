"""Templates cannot inject: captured intent text is string data wherever the body puts it.

The attack (security round 2, item 3): a template whose body formats a number with a
width from the intent, ``print(f'{total:>{width}}')``, and the intent
``show the word count padded to {write_file('pwned.txt', 'x')}``. Before, the capture
was written into the f-string's format spec as text, where ``{...}`` is a nested field:
the call ran. Now the rendered program must have the body's syntax tree with only
string constants changed, whatever the captured text; a text that cannot be written
that way is refused (the template does not answer), never placed as code.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lackpy_kernel.errors import TemplateError
from lackpy_kernel.infer.tiers import fill_placeholders
from lackpy_kernel.service import LackpyService

ATTACK = "{write_file('pwned.txt', 'x')}"
NASTY = [
    ATTACK,
    "'); write_file('pwned.txt', 'x'); ('",
    "\"); write_file('pwned.txt', 'x'); (\"",
    "'''", '"""', "'''\"\"\"", "\\", "\\'", "a\\nb", "\n", "\r\n", "\x00", "\x85", "\u2028",
    "{", "}", "{{", "}}", "{p}", "{q}", "{{p}}", "!r", ":>10", "{0.__class__}",
    "x}}{write_file('pwned.txt', 'x')}{{",
    "\N{BULLET} é ü 漢字",
]
CAPTURED = st.one_of(st.sampled_from(NASTY), st.text(min_size=1),
                     st.text(alphabet="{}'\"\\:!rx\n", min_size=1))

# Statements that put placeholders inside string literals only: the rendered tree must be
# the body's tree with only string constants changed, and rendering never refuses.
IN_STRINGS = [
    "a = '{p}'",
    'b = "x {p} y {q}"',
    "c = '''multi\n{p}\nline'''",
    "d = read_file('{p}')  # {p} in a comment stays a comment",
    "e = 'é ü 漢字 {p}' + '{q}'",
    "g = u'{p}'",
    "h = r'{p}\\d'",
    "i = {'{p}': '{q}'}",
    "j = 'a' '{p}' 'b'",
    '"""doc {p}"""',
    "k = b'{p}'",
    "l = '{{p}} is not a placeholder'",
]
# Statements where a placeholder stands for a value: a bare ``{p}``, an f-string field
# (in its text, in a format spec, with a conversion, nested). The tree is the same for
# any captured text as for a harmless one; texts an f-string field cannot hold as a
# constant (a backslash, in Python 3.11) are refused.
AS_VALUES = [
    "m = {p}",
    "n = [{p}, {q}]",
    "o = f'{p}'",
    "s = f'hello {p} and {q}!'",
    "t = f'{{p}} stays, {p} goes'",
    "w = print(f'{p}', '{q}')",
    "x = 'a' '{p}' f'{q}'",
    "y = {p: 1}",  # not a placeholder: a dict keyed by the variable p
    "z = p",  # a variable, not a placeholder
]
MAY_REFUSE = [
    "u = f'{total:>{p}}'",
    "v = f'{total:{q}>{p}}'",
    "aa = f'{p!r}'",
    "ab = f'{p:>10}'",
    "ac = f\"{d['{p}']}\"",
    "ad = f'{f\"{p}\"}'",
]
HARMLESS = {"p": "x", "q": "y"}


def skeleton(tree: ast.AST) -> str:
    """The tree with every string constant emptied: what is code, not what is data."""

    class Empty(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Constant("") if isinstance(node.value, str) else node

    return ast.dump(Empty().visit(tree))


def string_data(program: str) -> str:
    return "\n".join(node.value for node in ast.walk(ast.parse(program))
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def body_of(statements: list[str]) -> str:
    return "total = 3\nd = {}\np = 'variable'\n" + "\n".join(statements) + "\n"


@given(st.lists(st.sampled_from(IN_STRINGS), min_size=1, max_size=6), CAPTURED, CAPTURED)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_inside_strings_only_string_constants_change(statements, p, q):
    body = body_of(statements)
    rendered = fill_placeholders(body, {"p": p, "q": q})
    assert skeleton(ast.parse(rendered)) == skeleton(ast.parse(body))
    if any("'{p}'" in s or "{p}\n" in s or " {p}" in s for s in statements if not s.startswith("k")):
        assert p in string_data(rendered)


@given(st.lists(st.sampled_from(IN_STRINGS + AS_VALUES + MAY_REFUSE), min_size=1, max_size=6),
       CAPTURED, CAPTURED)
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_captured_text_never_changes_the_programs_structure(statements, p, q):
    body = body_of(statements)
    harmless = fill_placeholders(body, HARMLESS)
    try:
        rendered = fill_placeholders(body, {"p": p, "q": q})
    except TemplateError:
        assert any(s in MAY_REFUSE for s in statements)
        return
    assert skeleton(ast.parse(rendered)) == skeleton(ast.parse(harmless))


@pytest.mark.parametrize("captured", NASTY)
@pytest.mark.parametrize("statement", AS_VALUES + MAY_REFUSE)
def test_no_captured_text_makes_a_call(statement, captured):
    body = body_of([statement])
    try:
        rendered = fill_placeholders(body, {"p": captured, "q": captured})
    except TemplateError:
        return
    calls = [node for node in ast.walk(ast.parse(rendered)) if isinstance(node, ast.Call)]
    assert len(calls) == len([n for n in ast.walk(ast.parse(body)) if isinstance(n, ast.Call)])


def test_a_format_spec_placeholder_becomes_a_string_constant_field():
    rendered = fill_placeholders("print(f'{total:>{width}}')", {"width": "12"})
    spec = ast.parse(rendered).body[0].value.args[0].values[0].format_spec
    expected = ast.JoinedStr([ast.Constant(">"), ast.FormattedValue(ast.Constant("12"), -1, None)])
    assert ast.dump(spec) == ast.dump(expected)


# --- the reproduction, through the service ---------------------------------------------------

PADDED = "total = len(read_file('notes.txt').split())\nprint(f'{total:>{width}}')\ntotal"


@pytest.fixture
def service(tmp_path):
    (tmp_path / "notes.txt").write_text("one two three\n")
    with LackpyService(tmp_path) as svc:
        yield svc


async def test_the_format_spec_attack_writes_nothing(service, tmp_path):
    made = await service.create(PADDED, ["read_file", "write_file"], "padded",
                                pattern="show the word count padded to {width}")
    assert made["success"], made
    outcome = await service.delegate(f"show the word count padded to {ATTACK}",
                                     ["read_file", "write_file"])
    assert outcome["generation_tier"] == "templates"
    assert not (tmp_path / "pwned.txt").exists()
    assert [e["tool"] for e in outcome["trace"]] == ["read_file"]
    assert ATTACK in string_data(outcome["program"])
    assert not outcome["success"]  # the text is not a format spec: a runtime error, no write


async def test_the_same_template_pads_as_meant(service):
    await service.create(PADDED, ["read_file", "write_file"], "padded",
                         pattern="show the word count padded to {width}")
    outcome = await service.delegate("show the word count padded to 6", ["read_file", "write_file"])
    assert (outcome["generation_tier"], outcome["success"]) == ("templates", True)
    assert (outcome["stdout"], outcome["output"]) == ("     3\n", 3)
