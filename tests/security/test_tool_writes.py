"""A Python tool's own writes: a naive ``save`` tool cannot rewrite ``.lackpy/config.toml``,
its own module or any workspace file (the OS refuses, and the program is told to use the
workspace API); the workspace API's writes are staged with the program's, committed when it
ends well and dropped when it fails (issue 24)."""

from __future__ import annotations

import inspect
import sys
import textwrap

import pytest

from lackpy_kernel.kit import builtin_toolbox
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run.walls import WRITE_WALL
from tests.support.walls import needs

pytestmark = pytest.mark.skipif(not sandbox_supported() or not sys.platform.startswith("linux"),
                                reason="the worker and its walls need Linux")

LIMITS = SandboxLimits(timeout=20, memory_mb=256, max_result_mb=1)
CONFIG = "[sandbox]\ntimeout = 5\n"
MODULE = '''
from lackpy_kernel.kit import read_text, write_bytes, write_text


def save(path: str, text: str) -> str:
    """Write a file, the naive way."""
    with open(path, "w") as stream:
        stream.write(text)
    return "saved"


def drop(path: str) -> str:
    """Delete a file, the naive way."""
    import os

    os.remove(path)
    return "dropped"


def keep(path: str, text: str) -> str:
    """Write a file through lackpy's workspace API."""
    return write_text(path, text)


def keep_bytes(path: str, size: int) -> str:
    """Write ``size`` zero bytes through lackpy's workspace API."""
    return write_bytes(path, bytes(size))


def seen(path: str) -> str:
    """A file as the program sees it."""
    return read_text(path)
'''
KIT = ["save", "drop", "keep", "keep_bytes", "seen", "read_file"]
# The sandbox asks before it commits where it can (the approval of the diff): these tests
# are about the walls, not the question.
UNASKED = {"approve_writes": False} if "approve_writes" in inspect.signature(
    Sandbox).parameters else {}


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "mine.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(CONFIG)
    (tmp_path / "notes.txt").write_text("notes")
    return tmp_path


@pytest.fixture
def sandbox(workspace):
    sources = ToolSources({"mine": {"plugin": "python", "path": "tools/mine.py"}}, workspace)
    toolbox = builtin_toolbox(workspace, sources.protected)
    sources.attach(toolbox)
    with Sandbox(workspace, LIMITS, toolbox=toolbox, protected=sources.protected,
                 **UNASKED) as box:
        yield box
    sources.close()


def files(workspace) -> dict[str, bytes]:
    """Every file of the workspace but the stages, journal and undo records."""
    skipped = {"staging", "journal", "undo"}
    return {str(path.relative_to(workspace)): path.read_bytes()
            for path in sorted(workspace.rglob("*"))
            if path.is_file() and not skipped & set(path.relative_to(workspace).parts)}


@needs(WRITE_WALL)
@pytest.mark.parametrize("program", [
    "save('.lackpy/config.toml', '[sandbox]\\ntimeout = 600\\n')",
    "save('tools/mine.py', 'import os')",
    "save('notes.txt', 'changed')",
    "save('new.txt', 'made')",
    "save('tools/helper.py', 'import os')",
    "drop('.lackpy/config.toml')",
    "drop('notes.txt')",
])
def test_a_naive_save_tool_cannot_change_the_workspace(sandbox, workspace, program):
    before = files(workspace)
    result = sandbox.run(program, KIT)
    assert result.error_type == "ToolCallError", result.error
    assert "lackpy_kernel.kit.write_text(path, text)" in result.error
    assert "(Permission denied)" in result.error
    assert files(workspace) == before


def test_the_workspace_api_stages_writes_that_land_when_the_program_ends_well(sandbox,
                                                                             workspace):
    result = sandbox.run("keep('a.txt', 'one')\nkeep_bytes('sub/b.bin', 3)\n"
                         "[seen('a.txt'), read_file('a.txt')]", KIT)
    assert result.success, result.error
    assert result.output == ["one", "one"]  # the program sees what it staged
    assert (workspace / "a.txt").read_text() == "one"
    assert (workspace / "sub" / "b.bin").read_bytes() == b"\0\0\0"
    assert sorted(result.trace.files_modified) == ["a.txt", "sub/b.bin"]


def test_the_workspace_apis_writes_are_dropped_when_the_program_fails(sandbox, workspace):
    before = files(workspace)
    result = sandbox.run("keep('a.txt', 'one')\nkeep('notes.txt', 'changed')\n"
                         "read_file('missing.txt')", KIT)
    assert result.error_type == "FileNotFoundError"
    assert files(workspace) == before


@pytest.mark.parametrize(("path", "named"), [
    (".lackpy/config.toml", ".lackpy"),
    ("tools/mine.py", "tool source 'mine'"),
    ("tools/helper.py", "tool source 'mine'"),
    ("../outside.txt", "outside"),
])
def test_the_workspace_api_refuses_what_write_file_refuses(sandbox, workspace, path, named):
    before = files(workspace)
    result = sandbox.run(f"keep({path!r}, 'x')", KIT)
    assert result.error_type == "WorkspaceError", result.error
    assert named in result.error
    assert files(workspace) == before
    assert not (workspace.parent / "outside.txt").exists()
