"""Tier 0: templates, their patterns, safe placeholder filling and atomic counts."""

import ast
import threading
from pathlib import Path

import pytest

from lackpy_kernel.infer.templates import (
    TemplateError,
    TemplatesProvider,
    compile_pattern,
    fill_placeholders,
    format_template,
    parse_template,
    update_counts,
)
from lackpy_kernel.lang import validate

NAMESPACE = "read_file(path: str) -> str: read"


def write(folder, name, pattern, body, success=0, failed=0):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.tmpl"
    path.write_text(format_template(name, pattern, body, success, failed))
    return path


@pytest.fixture
def folder(tmp_path):
    return tmp_path / "templates"


async def generate(provider, intent):
    return await provider.generate(intent, NAMESPACE)


async def test_placeholder_inside_a_string_becomes_part_of_it(folder):
    write(folder, "read", "read the file {path}", "content = read_file('{path}')\ncontent")
    program = await generate(TemplatesProvider(folder), "Read the file setup.py")
    assert program == "content = read_file('setup.py')\ncontent"


async def test_bare_placeholder_becomes_a_string_literal(folder):
    write(folder, "count", "count {word}", "text = read_file('a.txt')\ntext.count({word})")
    program = await generate(TemplatesProvider(folder), "count hello")
    assert program.endswith("text.count('hello')")


@pytest.mark.parametrize(
    "evil",
    [
        "x'); import os; ('",
        "x\\'); __import__('os'); ('",
        "x\n__import__('os')",
        "{path}",
        "'''",
        'a" + open("f").read() + "b',
    ],
)
async def test_captured_values_can_never_inject_code(folder, evil):
    write(folder, "read", "read the file {path}", "content = read_file('{path}')\ncontent")
    write(folder, "count", "count {word}", "x = {word}\nx")
    provider = TemplatesProvider(folder)
    for intent in (f"read the file {evil}", f"count {evil}"):
        program = await generate(provider, intent)
        tree = ast.parse(program)
        calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)]
        assert calls in (["read_file"], [])
        constants = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        assert evil in constants


async def test_f_string_placeholders_are_literal_text(folder):
    write(folder, "greet", "greet {who}", "msg = f'hello {who}!'\nmsg")
    program = await generate(TemplatesProvider(folder), "greet ada")
    assert "hello ada!" in program and "who" not in program


async def test_first_match_in_file_name_order_wins(folder):
    write(folder, "b-specific", "read the file {path}", "'b'")
    write(folder, "a-general", "read {anything}", "'a'")
    assert await generate(TemplatesProvider(folder), "read the file x") == "'a'"


async def test_the_whole_intent_must_match(folder):
    write(folder, "read", "read the file {path}", "read_file('{path}')")
    provider = TemplatesProvider(folder)
    assert await generate(provider, "please read the file x") is None
    assert await generate(provider, "read   the\tfile   x.txt") == "read_file('x.txt')"


async def test_retry_with_feedback_passes(folder):
    write(folder, "read", "read {x}", "read_file('{x}')")
    provider = TemplatesProvider(folder)
    assert await provider.generate("read a", NAMESPACE, error_feedback=["bad"]) is None


def test_literal_braces_and_regex_characters_in_patterns():
    pattern = compile_pattern("sum (a+b) {{x}} of {values}")
    assert pattern.placeholders == ["values"]
    assert pattern.match("SUM (a+b) {x} of 1,2") == {"values": "1,2"}
    assert pattern.leading_words == ("sum", "(a+b)", "{x}", "of")  # the index's key


def test_duplicate_placeholder_is_an_error(folder):
    path = write(folder, "dup", "read {x} and {x}", "1")
    with pytest.raises(TemplateError, match="appears twice"):
        parse_template(path)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no frontmatter\n1", "line 1"),
        ("---\npattern: x\n", "no closing"),
        ("---\nname: a\n---\n1", "needs a 'pattern:'"),
        ("---\npattern: x\nsuccess_count: many\n---\n1", "whole number"),
        ("---\npattern: x\njunk line\n---\n1", "line 3"),
        ("---\npattern: x\n---\ndef (", "not Python"),
    ],
)
def test_bad_template_files_are_clear_errors(folder, text, problem):
    folder.mkdir()
    path = folder / "bad.tmpl"
    path.write_text(text)
    with pytest.raises(TemplateError, match=problem) as caught:
        parse_template(path)
    assert str(path) in str(caught.value)


async def test_a_bad_template_is_skipped_and_reported(folder):
    folder.mkdir()
    (folder / "a-bad.tmpl").write_text("garbage")
    write(folder, "b-good", "hello", "'hi'")
    provider = TemplatesProvider(folder)
    assert await generate(provider, "hello") == "'hi'"
    assert list(provider.problems) == [folder / "a-bad.tmpl"]


async def test_edits_to_a_template_are_seen(folder):
    path = write(folder, "t", "hello", "'one'")
    provider = TemplatesProvider(folder)
    assert await generate(provider, "hello") == "'one'"
    path.write_text(format_template("t", "hello", "'two, a longer body'"))
    assert await generate(provider, "hello") == "'two, a longer body'"


async def test_a_program_names_its_template_and_counts_go_there(folder):
    path = write(folder, "t", "hello", "'hi'")
    write(folder, "u", "goodbye", "'bye'")
    provider = TemplatesProvider(folder)
    program = await generate(provider, "hello")
    assert program.source == str(path)
    update_counts(Path(program.source), success=True)
    program = await generate(provider, "hello")
    update_counts(Path(program.source), success=False)
    template = parse_template(path)
    assert (template.success_count, template.fail_count) == (1, 1)
    assert template.body == "'hi'\n"


def test_concurrent_count_updates_lose_nothing(folder):
    path = write(folder, "t", "hello", "'hi'")
    threads = [threading.Thread(target=update_counts, args=(path, True)) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert parse_template(path).success_count == 20
    assert sorted(p.name for p in folder.iterdir()) == [".templates.lock", "t.tmpl"]


def test_fill_placeholders_output_validates():
    program = fill_placeholders("x = read_file('{p}')\nx", {"p": "a'b\"c"})
    assert validate(program, {"read_file"}).valid
    assert ast.literal_eval(ast.parse(program).body[0].value.args[0]) == "a'b\"c"


async def test_thousands_of_templates_still_match(folder):
    for index in range(2000):
        write(folder, f"t{index:05d}", f"task number {index} on {{path}}", f"'{index}'")
    provider = TemplatesProvider(folder)
    assert await generate(provider, "task number 1999 on x") == "'1999'"
    assert await generate(provider, "no such task") is None
