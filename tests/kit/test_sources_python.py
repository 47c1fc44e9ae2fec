"""plugin = "python": a module's functions as tools, in a temporary workspace."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from lackpy_kernel.errors import ToolSourceError, UnknownToolError
from lackpy_kernel.kit import resolve_kit
from lackpy_kernel.run import RestrictedRunner

TOOLS = '''
from os.path import join  # imported: not a tool of this module

def count_words(text: str) -> int:
    """Count the words of a text.

    Args:
        text: the text to count.
    """
    return len(text.split())

def shout(text: str, times: int = 1) -> str:
    """The text in capitals."""
    return " ".join([text.upper()] * times)

def undocumented(x):
    return x

def _helper():
    """Private."""
'''


def write_module(workspace: Path, text: str, name: str = "tools/mytools.py") -> str:
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return name


def python_source(path: str, **settings) -> dict:
    return {"plugin": "python", "path": path, **settings}


def test_the_public_documented_functions_defined_in_the_module_are_its_tools(workspace,
                                                                            make_sources):
    toolbox, sources = make_sources(mine=python_source(write_module(workspace, TOOLS)))
    assert toolbox.resolve("count_words")("one two three") == 3
    assert sources.statuses()[0].tools == ["count_words", "shout"]
    for hidden in ("join", "undocumented", "_helper"):
        assert hidden not in toolbox


def test_a_tool_spec_is_described_like_a_built_in(workspace, make_sources):
    toolbox, _ = make_sources(mine=python_source(write_module(workspace, TOOLS), grade="read"))
    spec = toolbox.get("count_words")
    assert spec.describe() == "count_words(text: str) -> int: Count the words of a text."
    assert spec.args[0].description == "the text to count."
    assert (spec.provider, spec.grade_w, spec.effects_ceiling) == ("mine", 1, 1)
    assert spec.source == "mine (python: tools/mytools.py)"
    assert toolbox.get("shout").signature() == "shout(text: str, times: int = 1) -> str"


def test_functions_names_the_tools_even_without_a_docstring(workspace, make_sources):
    path = write_module(workspace, TOOLS)
    toolbox, sources = make_sources(mine=python_source(path, functions=["undocumented",
                                                                        "missing"]))
    assert toolbox.resolve("undocumented")(5) == 5
    assert "count_words" not in toolbox
    assert sources.statuses()[0].problems == [
        "functions names 'missing', which the module does not define"]


def test_a_module_by_name_is_imported_from_the_path(tmp_path, workspace, make_sources,
                                                    monkeypatch):
    package = tmp_path / "site" / "textkit"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "words.py").write_text(textwrap.dedent(TOOLS))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    toolbox, sources = make_sources(words={"plugin": "python", "module": "textkit.words"})
    assert toolbox.resolve("shout")("hi", 2) == "HI HI"
    assert toolbox.get("shout").source == "words (python: textkit.words)"


def test_grade_is_write_unless_the_config_says_read_and_an_override_wins(workspace,
                                                                        make_sources):
    path = write_module(workspace, TOOLS)
    toolbox, _ = make_sources(
        plain=python_source(path),
        read=python_source(write_module(workspace, "def peek(x):\n    'Peek.'\n    return x\n",
                                        "tools/peek.py"),
                           grade="read"),
    )
    assert (toolbox.get("count_words").grade_w, toolbox.get("count_words").effects_ceiling) \
        == (3, 3)
    assert toolbox.get("peek").grade_w == 1
    toolbox, _ = make_sources(mine=python_source(path, grade="read",
                                                 overrides={"shout": {"grade": "write"}}))
    assert [toolbox.get(name).grade_w for name in ("count_words", "shout")] == [1, 3]


def test_where_is_the_child_unless_the_config_says_kernel(workspace, make_sources):
    path = write_module(workspace, TOOLS)
    toolbox, _ = make_sources(mine=python_source(path, overrides={"shout": {"where": "kernel"}}))
    assert toolbox.get("count_words").provider_config["where"] == "child"
    assert toolbox.get("shout").provider_config["where"] == "kernel"
    toolbox, _ = make_sources(mine=python_source(path, where="kernel"))
    assert toolbox.get("count_words").provider_config["where"] == "kernel"


def test_an_override_for_a_function_the_module_lacks_is_reported(workspace, make_sources):
    toolbox, sources = make_sources(mine=python_source(write_module(workspace, TOOLS),
                                                       overrides={"shuot": {"grade": "read"}}))
    toolbox.list_tools()
    assert "overrides names 'shuot', which this source does not offer" in \
        sources.statuses()[0].problems[0]


def test_a_source_loads_only_when_a_tool_it_may_hold_is_asked_for(workspace, make_sources):
    marker = workspace / "imported.txt"
    text = f"open({str(marker)!r}, 'w').close()\n{TOOLS}"
    toolbox, sources = make_sources(mine=python_source(write_module(workspace, text)))
    resolve_kit(["read_file"], toolbox)
    assert not marker.exists() and sources.statuses()[0].state == "not loaded"
    resolve_kit(["read_file", "count_words"], toolbox)
    assert marker.exists() and sources.statuses()[0].state == "loaded"


@pytest.mark.parametrize(("text", "expected"), [
    ("def broken(:\n    pass\n", "the module failed to import: SyntaxError"),
    ("raise RuntimeError('needs a token')\n", "RuntimeError: needs a token"),
    ("import no_such_dependency_xyz\n", "ModuleNotFoundError"),
    ("import sys\nsys.exit(2)\n", "SystemExit"),
])
def test_a_module_that_fails_to_import_names_the_source_and_the_others_keep_working(
        workspace, make_sources, text, expected):
    broken = write_module(workspace, text, "tools/broken.py")
    toolbox, sources = make_sources(broken=python_source(broken),
                                    good=python_source(write_module(workspace, TOOLS)))
    assert toolbox.resolve("count_words")("a b") == 2
    statuses = {status.name: status for status in sources.check()}
    assert statuses["good"].ok and not statuses["broken"].ok
    assert statuses["broken"].error.startswith(
        "tool source 'broken' (python: tools/broken.py): ")
    assert expected in statuses["broken"].error
    with pytest.raises(UnknownToolError, match="tool sources that failed to load: tool source "
                                               "'broken'"):
        toolbox.get("nothing_like_this")


def test_a_module_that_is_not_installed_says_to_install_it(make_sources):
    _, sources = make_sources(gone={"plugin": "python", "module": "no_such_package_xyz.tools"})
    status = sources.check()[0]
    assert "there is no module 'no_such_package_xyz.tools' to import; install its package" in \
        status.error


def test_a_source_that_failed_is_tried_again_by_check_and_after_a_while(workspace,
                                                                         make_sources):
    path = write_module(workspace, "raise ImportError('not yet')\n")
    toolbox, sources = make_sources(mine=python_source(path))
    assert "count_words" not in toolbox
    write_module(workspace, TOOLS)
    assert "count_words" not in toolbox  # a moment later: too soon to try again
    assert sources.check()[0].ok and "count_words" in toolbox

    toolbox, sources = make_sources(again=python_source(write_module(
        workspace, "raise ImportError('not yet')\n", "tools/later.py")))
    toolbox.source_retry_seconds = 0
    assert "count_words" not in toolbox
    write_module(workspace, TOOLS, "tools/later.py")
    assert "count_words" in toolbox and sources.statuses()[0].ok


def test_a_function_that_cannot_be_described_is_left_out_and_the_others_load(workspace,
                                                                            make_sources):
    text = TOOLS + '\ndef numbers(n):\n    """Numbers."""\n    yield from range(n)\n'
    toolbox, sources = make_sources(mine=python_source(write_module(workspace, text),
                                                       functions=["numbers", "shout"]))
    assert toolbox.resolve("shout")("a") == "A"
    assert "numbers" not in toolbox
    assert sources.statuses()[0].problems == [
        "function 'numbers' cannot be a tool: it is a generator function; return a list "
        "instead of yielding"]


def test_a_name_two_sources_define_goes_to_the_first(workspace, make_sources):
    first = write_module(workspace, TOOLS)
    second = write_module(workspace, "def count_words(t):\n    'Other.'\n    return -1\n",
                          "tools/other.py")
    toolbox, sources = make_sources(mine=python_source(first), other=python_source(second))
    assert toolbox.resolve("count_words")("a b") == 2
    toolbox.list_tools()
    assert sources.statuses()[1].problems == [
        "tool 'count_words' is refused: the name is taken by mine (python: tools/mytools.py); "
        "rename one of them (an MCP source can set prefix)"]


def test_a_name_that_masks_a_standard_module_registers_with_a_warning(workspace, make_sources):
    path = write_module(workspace, "def json(text):\n    'Parse.'\n    return text\n")
    toolbox, sources = make_sources(mine=python_source(path))
    with pytest.warns(UserWarning, match="tool source 'mine' .*masks the standard library "
                                         "module 'json'"):
        assert "json" in toolbox
    assert "masks the standard library module 'json'" in sources.statuses()[0].warnings[0]


def test_a_python_tool_runs_in_a_program_with_its_calls_traced(workspace, make_sources):
    toolbox, _ = make_sources(mine=python_source(write_module(workspace, TOOLS)))
    kit = resolve_kit(["count_words", "shout"], toolbox)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = RestrictedRunner().run("n = count_words(shout('a b', times=2))\nn",
                                        kit.callables)
    assert result.success and result.output == 4
    assert [(entry.tool, entry.args) for entry in result.trace.entries] == [
        ("shout", {"text": "a b", "times": 2}), ("count_words", {"text": "A B A B"})]


def test_loading_twice_gives_the_same_tools_without_a_clash(workspace, make_sources):
    toolbox, sources = make_sources(mine=python_source(write_module(workspace, TOOLS)))
    toolbox.list_tools()
    sources.check()
    assert sources.statuses()[0].tools == ["count_words", "shout"]
    assert sources.statuses()[0].problems == []


def test_settings_without_module_or_path_fail_with_what_to_set(make_sources):
    _, sources = make_sources(mine={"plugin": "python"})
    with pytest.raises(ToolSourceError, match="set either module"):
        sources.sources[0].load()
