"""A program cannot rewrite the code of a configured tool source.

A Python tool module lives in the workspace, where programs may write; its
top-level code runs in the kernel's process (and the sandbox's worker) when it
loads, outside the sandbox. So a program that rewrote it would run code there
the next time it loads. The file tools refuse to write every file of the
sources' code, as they refuse ``.lackpy/``: the module (whatever name the path
is given by), the packages on the way to a ``module =``, what the module
imports from the workspace as it loads, and an MCP server's script; in the
sandbox's child and in this process alike. Each attack is tried for real, and
the next service that loads the source proves the code was not changed.

Checked when a program writes, not only when the source loads (issue 25): every file of
the folder of a source's code, and what a tool that runs in the kernel imports as it runs
(a helper imported inside a function, from a folder it put on ``sys.path``).
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from lackpy_kernel.service import LackpyService

TOOL = '''
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''


def evil(canary) -> str:
    """A module that, imported, leaves a mark outside the workspace."""
    return f"open({str(canary)!r}, 'w').write('pwned')\n" + textwrap.dedent(TOOL)


def configure(workspace, tables: str) -> None:
    """The workspace's config: ``tables``, and changes that land unseen (these programs
    write with no one to ask: what stops a write here is the wall, not a person)."""
    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text(
        '[sandbox]\napprove = "never"\n' + textwrap.dedent(tables))


@pytest.fixture
def arena(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "tools").mkdir(parents=True)
    outside.mkdir()
    (workspace / "tools" / "words.py").write_text(textwrap.dedent(TOOL))
    (workspace / "alias.py").symlink_to(workspace / "tools" / "words.py")
    configure(workspace, """
        [tools.providers.words]
        plugin = "python"
        path = "tools/words.py"
        """)
    return workspace, outside / "canary.txt"


def loads_cleanly(workspace, canary) -> bool:
    """Load the sources as the next kernel would: whether no program's code ran."""
    with LackpyService(workspace) as service:
        service.check_tool_sources()
    return not canary.exists()


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
@pytest.mark.parametrize("program", [
    "write_file('tools/words.py', PAYLOAD)",
    "write_file('./tools/../tools/words.py', PAYLOAD)",
    "write_file('alias.py', PAYLOAD)",
    "edit_file('tools/words.py', 'return', PAYLOAD + '\\n    return')",
])
async def test_a_program_cannot_rewrite_a_python_tool_module(arena, sandbox, program):
    workspace, canary = arena
    before = (workspace / "tools" / "words.py").read_text()
    with LackpyService(workspace) as service:
        assert (await service.run_program("count_words('a b')", kit="count_words")).output == 2
        result = await service.run_program(program, kit="write_file,edit_file",
                                           params={"PAYLOAD": evil(canary)}, sandbox=sandbox)
    assert result.error_type == "WorkspaceError"
    assert "is the code of a tool source configured in .lackpy/config.toml, which programs " \
           "may not change" in result.error
    assert (workspace / "tools" / "words.py").read_text() == before
    assert loads_cleanly(workspace, canary)


async def test_a_tool_module_is_protected_before_its_source_first_loads(arena):
    workspace, canary = arena
    with LackpyService(workspace) as service:
        result = await service.run_program("write_file('tools/words.py', PAYLOAD)",
                                           kit="write_file", params={"PAYLOAD": evil(canary)})
        assert service.tool_sources.statuses()[0].state == "not loaded"
    assert result.error_type == "WorkspaceError"
    assert loads_cleanly(workspace, canary)


async def test_a_configured_module_that_does_not_exist_yet_cannot_be_created(arena):
    workspace, canary = arena
    configure(workspace, """
        [tools.providers.later]
        plugin = "python"
        path = "tools/later.py"
        """)
    with LackpyService(workspace) as service:
        result = await service.run_program("write_file('tools/later.py', PAYLOAD)",
                                           kit="write_file", params={"PAYLOAD": evil(canary)})
    assert result.error_type == "WorkspaceError"
    assert not (workspace / "tools" / "later.py").exists()


async def test_what_a_tool_module_imports_from_the_workspace_as_it_loads_is_protected(
        arena, monkeypatch):
    workspace, canary = arena
    monkeypatch.syspath_prepend(str(workspace / "tools"))
    (workspace / "tools" / "helpers.py").write_text("SEPARATOR = ' '\n")
    (workspace / "tools" / "words.py").write_text(
        "from helpers import SEPARATOR\n" + textwrap.dedent(TOOL))
    monkeypatch.delitem(sys.modules, "helpers", raising=False)
    with LackpyService(workspace) as service:
        assert (await service.run_program("count_words('a b')", kit="count_words")).output == 2
        result = await service.run_program("write_file('tools/helpers.py', PAYLOAD)",
                                           kit="write_file", params={"PAYLOAD": evil(canary)})
    assert result.error_type == "WorkspaceError"
    assert (workspace / "tools" / "helpers.py").read_text() == "SEPARATOR = ' '\n"


async def test_a_module_by_name_and_its_packages_are_protected(tmp_path, monkeypatch):
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(textwrap.dedent(TOOL))
    configure(tmp_path, """
        [tools.providers.pkg]
        plugin = "python"
        module = "mypkg.tools"
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    with LackpyService(tmp_path) as service:
        # a parameter, as the validator refuses dunder strings in the program itself
        refused = [(await service.run_program("write_file(PATH, 'x = 1')", kit="write_file",
                                              params={"PATH": path})).error_type
                   for path in ("mypkg/__init__.py", "mypkg/tools.py")]
        # every file of the package's folder (issue 25): a module it may import later
        folder = await service.run_program("write_file('mypkg/other.py', 'x = 1')",
                                           kit="write_file")
        allowed = await service.run_program("write_file('other/other.py', 'x = 1')",
                                            kit="write_file")
    assert refused == ["WorkspaceError", "WorkspaceError"]
    assert folder.error_type == "WorkspaceError" and "tool source 'pkg'" in folder.error
    assert allowed.success, allowed.error


async def test_an_mcp_servers_script_in_the_workspace_is_protected(tmp_path):
    (tmp_path / "server.py").write_text("print('an MCP server')\n")
    configure(tmp_path, f"""
        [tools.providers.glossary]
        plugin = "mcp"
        command = [{json.dumps(sys.executable)}, "server.py", "stdio"]
        """)
    with LackpyService(tmp_path) as service:
        result = await service.run_program("write_file('server.py', 'import os')",
                                           kit="write_file")
        other = await service.run_program("write_file('stdio', 'not the server')",
                                          kit="write_file")
    assert result.error_type == "WorkspaceError"
    assert (tmp_path / "server.py").read_text() == "print('an MCP server')\n"
    assert other.success  # "stdio" is an argument, not a file of the server's code


LAZY = '''
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def use_helper() -> str:
    """What the helper beside this module says (imported when first called)."""
    import lazy_helper_25

    return lazy_helper_25.greet()


def use_library() -> str:
    """What a helper in the workspace's lib/ says (imported when first called)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
    import lazy_library_25

    return lazy_library_25.greet()
'''


@pytest.fixture
def lazy(tmp_path, monkeypatch):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    for folder in (workspace / "tools", workspace / "lib", outside):
        folder.mkdir(parents=True)
    (workspace / "tools" / "lazy.py").write_text(LAZY)
    (workspace / "tools" / "lazy_helper_25.py").write_text("def greet():\n    return 'hello'\n")
    (workspace / "lib" / "lazy_library_25.py").write_text("def greet():\n    return 'hi'\n")
    configure(workspace, """
        [tools.providers.lazy]
        plugin = "python"
        path = "tools/lazy.py"
        where = "kernel"
        """)
    for name in ("lazy_helper_25", "lazy_library_25"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the module adds to it
    return workspace, outside / "canary.txt"


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
async def test_a_helper_a_kernel_tool_imports_lazily_cannot_be_written(lazy, sandbox):
    workspace, canary = lazy
    payload = f"open({str(canary)!r}, 'w').write('pwned')\ndef greet():\n    return 'pwned'\n"
    with LackpyService(workspace) as service:
        # before the tool ever imported it, and in the same program as the call
        first = await service.run_program(
            "write_file('tools/lazy_helper_25.py', PAYLOAD)\nuse_helper()",
            kit="write_file,use_helper", params={"PAYLOAD": payload}, sandbox=sandbox)
        said = await service.run_program("use_helper()", kit="use_helper", sandbox=sandbox)
    assert first.error_type == "WorkspaceError", first.error
    assert "tool source 'lazy'" in first.error and "may not change" in first.error
    assert said.output == "hello" and not canary.exists()


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
async def test_a_module_a_kernel_tool_imported_from_elsewhere_cannot_be_written(lazy, sandbox):
    workspace, canary = lazy
    with LackpyService(workspace) as service:
        assert (await service.run_program("use_library()", kit="use_library",
                                          sandbox=sandbox)).output == "hi"
        result = await service.run_program("write_file('lib/lazy_library_25.py', 'x = 1')",
                                           kit="write_file", sandbox=sandbox)
        beside = await service.run_program("write_file('lib/notes.txt', 'x')",
                                           kit="write_file", sandbox=sandbox)
    assert result.error_type == "WorkspaceError" and "tool source 'lazy'" in result.error
    assert (workspace / "lib" / "lazy_library_25.py").read_text().endswith("'hi'\n")
    assert beside.error_type == "WorkspaceError"  # its folder, as the source's own


async def test_a_tool_module_at_the_workspace_root_protects_only_what_python_imports(tmp_path):
    (tmp_path / "words.py").write_text(textwrap.dedent(TOOL))
    configure(tmp_path, """
        [tools.providers.words]
        plugin = "python"
        path = "words.py"
        """)
    with LackpyService(tmp_path) as service:
        refused = [(await service.run_program("write_file(PATH, 'x = 1')", kit="write_file",
                                              params={"PATH": path})).error_type
                   for path in ("helper.py", "pkg/__init__.py", "__pycache__/helper.pyc")]
        allowed = [(await service.run_program("write_file(PATH, 'x = 1')", kit="write_file",
                                              params={"PATH": path})).success
                   for path in ("notes.txt", "src/app.py")]
    assert refused == ["WorkspaceError"] * 3
    assert allowed == [True, True]
