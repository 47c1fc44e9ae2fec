"""One frontmatter parser: kit files and templates read their ``---`` block by the same rules."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lackpy_kernel.errors import KitError, TemplateError
from lackpy_kernel.infer.tiers import TEMPLATE_FRONTMATTER, parse_template
from lackpy_kernel.kit import parse_kit_file
from lackpy_kernel.kit.frontmatter import FrontmatterFormat
from lackpy_kernel.kit.registry import KIT_FRONTMATTER

FORMAT = FrontmatterFormat("note", KitError, keys=("name", "title", "tags"))


def kit_and_template(tmp_path, frontmatter: str):
    """The same frontmatter lines, read once as a kit file and once as a template."""
    kit = tmp_path / "same.kit"
    kit.write_text(f"---\n{frontmatter}\n---\nread_file\n")
    template = tmp_path / "same.tmpl"
    template.write_text(f"---\npattern: read it\n{frontmatter}\n---\nread_file('x')\n")
    return kit, template


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("name: plain words", "plain words"),
        ("name:   spaced out   ", "spaced out"),
        ("name: 'single: quoted'", "single: quoted"),
        ('name: "json \\"quoted\\"\\nline"', 'json "quoted"\nline'),
        ("name: # not a comment", "# not a comment"),
        ("name:", ""),
    ],
)
def test_kits_and_templates_read_a_value_the_same_way(tmp_path, line, value):
    kit, template = kit_and_template(tmp_path, line)
    assert parse_kit_file(kit).name == (value or "same")
    assert parse_template(template).name == (value or "same")


@pytest.mark.parametrize(
    ("lines", "line", "problem"),
    [
        ("name x", 3, "expected 'key: value'"),
        (": nothing", 3, "expected 'key: value'"),
        ("colour: red", 3, "unknown key 'colour'"),
        ('name: "unclosed', 3, "badly quoted value"),
        ('name: "two" "strings"', 3, "badly quoted value"),
        ("name: a\nname: b", 4, "'name' was already given on line"),
    ],
)
def test_kits_and_templates_refuse_the_same_lines_naming_file_and_line(tmp_path, lines, line, problem):
    kit, template = kit_and_template(tmp_path, lines)
    kit_line = line - 1  # the kit has no 'pattern:' line before them
    with pytest.raises(KitError, match=rf"malformed kit file .*same\.kit, line {kit_line}: {problem}"):
        parse_kit_file(kit)
    with pytest.raises(TemplateError, match=rf"malformed template .*same\.tmpl, line {line}: {problem}"):
        parse_template(template)


def test_a_key_given_twice_names_both_lines(tmp_path):
    with pytest.raises(KitError, match=r"line 4: 'tags' was already given on line 2"):
        FORMAT.parse("---\ntags: a\nname: n\ntags: b\n---\n", tmp_path / "n")


def test_an_unknown_key_lists_the_keys_the_file_knows(tmp_path):
    kit, template = kit_and_template(tmp_path, "author: me")
    with pytest.raises(KitError, match="a kit file knows name, description, docs"):
        parse_kit_file(kit)
    with pytest.raises(TemplateError, match="a template knows name, pattern, success_count, fail_count"):
        parse_template(template)


def test_a_byte_order_mark_and_blank_lines_before_the_fence_are_ignored(tmp_path):
    kit = tmp_path / "bom.kit"
    kit.write_text("\ufeff\n\n---\nname: marked\n---\nread_file\n", encoding="utf-8")
    template = tmp_path / "bom.tmpl"
    template.write_text("\ufeff\n---\npattern: hello\n---\n'hi'\n", encoding="utf-8")
    assert parse_kit_file(kit).name == "marked"
    assert parse_template(template).pattern == "hello"


def test_windows_line_endings_read_like_unix_ones(tmp_path):
    kit = tmp_path / "crlf.kit"
    kit.write_bytes(b"---\r\nname: crlf\r\n---\r\nread_file\r\nfind_files\r\n")
    template = tmp_path / "crlf.tmpl"
    template.write_bytes(b"---\r\npattern: \"say {what}\"\r\n---\r\nprint('{what}')\r\n")
    assert parse_kit_file(kit).tools == ["read_file", "find_files"]
    assert parse_template(template).render({"what": "hi"}) == "print('hi')"


def test_only_a_template_requires_its_frontmatter(tmp_path):
    FORMAT.parse("no frontmatter here", tmp_path / "n")  # optional for this kind
    with pytest.raises(TemplateError, match=r"line 3: a template starts with a '---' line, then "
                                            r"'pattern: \.\.\.', then '---'"):
        TEMPLATE_FRONTMATTER.parse("\n\nprint(1)\n", tmp_path / "t.tmpl")


def test_the_body_starts_after_the_closing_fence_with_its_line_number(tmp_path):
    front = FORMAT.parse("\n---\n# a comment\nname: n\n\n---\nfirst\nsecond", tmp_path / "n")
    assert (front.meta, front.lines) == ({"name": "n"}, {"name": 4})
    assert (front.body, front.body_line) == (["first", "second"], 7)


def test_an_unreadable_file_is_the_kinds_own_error(tmp_path):
    with pytest.raises(KitError, match="kit file .*missing.kit cannot be read"):
        KIT_FRONTMATTER.read(tmp_path / "missing.kit")
    (tmp_path / "latin1.tmpl").write_bytes(b"---\npattern: caf\xe9\n---\n1\n")
    with pytest.raises(TemplateError, match="template .*latin1.tmpl cannot be read"):
        parse_template(tmp_path / "latin1.tmpl")


_VALUES = st.one_of(st.integers(min_value=0), st.text(st.characters(exclude_categories=["Cs"])))


@given(st.dictionaries(st.sampled_from(["name", "title", "tags"]), _VALUES))
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # both cores may be busy
def test_what_format_writes_parse_reads_back(values):
    text = FORMAT.format(values, "the body\n")
    front = FORMAT.parse(text, "generated")
    assert front.meta == {key: str(value) for key, value in values.items()}
    assert front.body == ["the body"]
