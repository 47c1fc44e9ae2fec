"""A Python tool's own writes: a naive ``save`` tool cannot rewrite ``.lackpy/config.toml``,
its own module or any workspace file (the OS refuses, and the program is told to use the
workspace API); the workspace API's writes are staged with the program's, committed when it
ends well and dropped when it fails (issue 24)."""

from __future__ import annotations

import errno
import inspect
import os
import sys
import textwrap
from pathlib import Path

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


def _own_stage() -> str:
    import os

    return os.path.join(".lackpy", "staging", str(os.getpid()))


def forge(path: str, text: str) -> str:
    """Write ``text`` straight into the program's own stage at ``path`` and record it as
    written, as the file tools would: the worker's commit then checks it."""
    import os

    from lackpy_kernel.kit.effects import record_write

    target = os.path.join(_own_stage(), path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as stream:
        stream.write(text)
    record_write(path, len(text))
    return "forged"


def second_name(path: str, other: str) -> str:
    """Give the staged copy of ``path`` a second name (a hard link) in the stage."""
    import os

    os.link(os.path.join(_own_stage(), path), os.path.join(_own_stage(), other))
    return "linked"


def plant_in_other_stages() -> list:
    """Try to plant a file in every other program's stage: errno of each try."""
    import os

    results = []
    for name in sorted(os.listdir(os.path.join(".lackpy", "staging"))):
        if name != str(os.getpid()):
            try:
                open(os.path.join(".lackpy", "staging", name, "planted.txt"), "w").close()
                results.append("written")
            except OSError as error:
                results.append(error.errno)
    return results
'''
KIT = ["save", "drop", "keep", "keep_bytes", "seen", "read_file", "forge", "second_name",
       "plant_in_other_stages"]
# The sandbox asks before it commits where it can (the approval of the diff): these tests
# are about the walls, not the question.
UNASKED = {"approve_writes": False} if "approve_writes" in inspect.signature(
    Sandbox).parameters else {}


@pytest.fixture
def workspace(tmp_path):
    workspace = tmp_path / "ws"  # its parent is this test's own
    (workspace / "tools").mkdir(parents=True)
    (workspace / "tools" / "mine.py").write_text(textwrap.dedent(MODULE))
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text(CONFIG)
    (workspace / "notes.txt").write_text("notes")
    return workspace


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
    """Every file of the workspace but the stages, journal and undo records (which the
    worker may be tidying meanwhile)."""
    found = {}
    for folder, folders, names in os.walk(workspace):
        if Path(folder) == workspace / ".lackpy":
            folders[:] = [name for name in folders if name not in ("staging", "journal", "undo")]
        for name in names:
            path = Path(folder, name)
            found[str(path.relative_to(workspace))] = path.read_bytes()
    return dict(sorted(found.items()))


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


@pytest.mark.parametrize(("path", "named"), [
    (".lackpy/config.toml", ".lackpy"),
    ("tools/mine.py", "tool source"),
])
def test_a_stage_forged_by_tool_code_is_refused_at_the_commit(sandbox, workspace, path, named):
    """Tool code may write its own stage behind the file tools' back and record the path as
    written: the worker's commit checks every path again and writes nothing."""
    before = files(workspace)
    result = sandbox.run(f"keep('fine.txt', 'x')\nforge({path!r}, 'import os')", KIT)
    assert result.error_type == "WorkspaceError", result.error
    assert named in result.error and "not written" in result.error
    assert files(workspace) == before


def test_a_staged_copy_with_a_second_name_is_refused_at_the_commit(sandbox, workspace):
    before = files(workspace)
    result = sandbox.run("keep('a.txt', 'one')\nsecond_name('a.txt', 'b.txt')", KIT)
    assert result.error_type == "WorkspaceError", result.error
    assert "not a plain file of its own" in result.error
    assert files(workspace) == before


@needs(WRITE_WALL)
def test_tool_code_cannot_plant_a_file_in_another_programs_stage(sandbox, workspace):
    """Another worker's child, or a held twin, has its stage made before its walls went up;
    a program's process can list the stages but write none but its own."""
    assert sandbox.run("1", KIT).success  # the worker has made the folder of the stages
    other = workspace / ".lackpy" / "staging" / "4000002"
    other.mkdir()
    result = sandbox.run("plant_in_other_stages()", KIT)
    assert result.success, result.error
    assert result.output and set(result.output) == {errno.EACCES}
    assert list(other.iterdir()) == []
