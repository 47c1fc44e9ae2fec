"""Kibitzer judges a program's staged writes by path at the commit, whatever tool staged
them (issue 39 item 8): a Python tool that writes README.md through lackpy's workspace API
is refused in ``implement`` mode, in the sandbox and in this process, with or without a
person to ask; a write inside the mode's paths lands; and Kibitzer's safety floor, which
holds in every mode, refuses a staged file as its per-call check would."""

from __future__ import annotations

import pytest

from lackpy_kernel.kit.changes import Change
from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.service import LackpyService
from tests.support.kernel import make_workspace

pytestmark = pytest.mark.asyncio

MODULE = '''
from lackpy_kernel.kit import write_text


def keep(path: str, text: str) -> str:
    """Write a file through lackpy's workspace API."""
    return write_text(path, text)
'''
SOURCE = '\n[tools.providers.mine]\nplugin = "python"\npath = "tools/mine.py"\ngrade = "read"\n'
FLOOR = '[floor]\ndeny = ["*/secrets/"]\n'  # Kibitzer's config: its floor refuses secrets/
WHERE = [False, pytest.param(True, marks=pytest.mark.skipif(
    not sandbox_supported(), reason="the worker needs Linux"))]


def workspace_in(tmp_path, approve: str):
    make_workspace(tmp_path, f'[kibitzer]\nmode = "implement"\n\n[sandbox]\napprove = "{approve}"'
                             f'\ntimeout = 30\n{SOURCE}')
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "mine.py").write_text(MODULE)
    (tmp_path / "README.md").write_text("the real readme\n")
    return tmp_path


@pytest.mark.parametrize("sandbox", WHERE)
@pytest.mark.parametrize("approve", ["never", "write"])
async def test_a_tools_own_staged_write_outside_the_mode_is_refused(tmp_path, sandbox, approve):
    workspace = workspace_in(tmp_path, approve)
    asked: list[Change] = []

    def yes(change: Change) -> bool:
        asked.append(change)
        return True

    with LackpyService(workspace) as service:
        refused = await service.run_program("keep('README.md', 'pwned')", ["keep"],
                                            sandbox=sandbox, approve=yes)
        landed = await service.run_program("keep('src/a.py', 'x = 1')", ["keep"],
                                           sandbox=sandbox, approve=yes)
    assert refused.error_type == "ChangeRefusedError", refused.error
    assert "Kibitzer (implement mode) refused the program's file changes" in refused.error
    assert (workspace / "README.md").read_text() == "the real readme\n"
    assert landed.success, landed.error
    assert (workspace / "src" / "a.py").read_text() == "x = 1"
    # the person is asked only where the config says so, and never about a refused change
    assert [change.paths for change in asked] == ([] if approve == "never" else [["src/a.py"]])


def free_with_a_floor(tmp_path):
    """A workspace in Kibitzer's ``free`` mode whose floor also refuses ``secrets/``, with
    the ``keep`` tool."""
    make_workspace(tmp_path, f'[kibitzer]\nmode = "free"\n\n[sandbox]\napprove = "never"\n'
                             f'timeout = 30\n{SOURCE}')
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "mine.py").write_text(MODULE)
    (tmp_path / ".kibitzer").mkdir()
    (tmp_path / ".kibitzer" / "config.toml").write_text(FLOOR)


@pytest.mark.parametrize("sandbox", WHERE)
@pytest.mark.parametrize("program", ["keep('secrets/' + 'key.txt', 'x')",
                                     "write_file('secrets/' + 'key.txt', 'x')"],
                         ids=["a tool's own write", "write_file"])
async def test_kibitzers_safety_floor_holds_at_the_commit_in_free_mode(tmp_path, sandbox, program):
    """Kibitzer's floor (mode-independent: here a deny pattern of its config) refuses a
    staged file whatever tool staged it, even in ``free`` mode, which allows every path."""
    free_with_a_floor(tmp_path)
    with LackpyService(tmp_path) as service:
        refused = await service.run_program(program, ["keep", "write_file"], sandbox=sandbox)
        landed = await service.run_program(program.replace("secrets/", "src/"),
                                           ["keep", "write_file"], sandbox=sandbox)
    assert refused.error_type == "ChangeRefusedError", refused.error
    assert "Kibitzer (free mode) refused the program's file changes" in refused.error
    assert "secrets/key.txt" in refused.error and not (tmp_path / "secrets").exists()
    assert landed.success, landed.error
    assert (tmp_path / "src" / "key.txt").read_text() == "x"


@pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
@pytest.mark.parametrize(("kibitzer_config", "program", "lands", "asked"), [
    ("", "write_file('src/' + 'a.py', 'x')", True, []),
    ("", "write_file('src/' + 'a.py', 'x')\nwrite_file('doc' + '.txt', 'x')", False,
     ["src/a.py", "doc.txt"]),
    ('[floor]\ndeny = ["*/secrets/"]\n\n[modes.implement]\nwritable = ["secrets/"]\n',
     "write_file('secrets/' + 'key.txt', 'x')", True, ["secrets/key.txt"]),
], ids=["allowed by the worker's guard", "refused: the kernel asked", "a floor override"])
async def test_the_workers_guard_stands_in_for_kibitzer_only_where_it_allows(
        tmp_path, kibitzer_config, program, lands, asked):
    """With no person to ask, the worker lets a commit land unasked only when Kibitzer's
    guard allows each path; any other is put to Kibitzer itself, which has the last word:
    it refuses (its reason, nothing written) or allows what the guard could not (an
    explicit writable path outranks its floor)."""
    make_workspace(tmp_path, '[kibitzer]\nmode = "implement"\n\n[sandbox]\napprove = "never"\n'
                             'timeout = 30\n')
    (tmp_path / ".kibitzer").mkdir()
    (tmp_path / ".kibitzer" / "config.toml").write_text(kibitzer_config)
    with LackpyService(tmp_path) as service:
        questions: list[str] = []
        session = service.kibitzer.session
        before = session.before_call
        session.before_call = lambda tool, given: questions.append(given["file_path"]) or before(
            tool, given)
        result = await service.run_program(program, ["write_file"], sandbox=True)
    assert result.success is lands, result.error
    assert questions == asked
    written = [path for path in ("src/a.py", "doc.txt", "secrets/key.txt")
               if (tmp_path / path).exists()]
    assert written == ([asked[-1] if asked else "src/a.py"] if lands else [])
    if not lands:
        assert "Kibitzer (implement mode) refused the program's file changes" in result.error


@pytest.mark.parametrize("sandbox", WHERE)
@pytest.mark.parametrize("program", [
    "keep('.kibitzer/' + 'config.toml', '[floor]\\nenabled = false\\n')",
    "write_file('.kibitzer/' + 'config.toml', '[floor]\\nenabled = false\\n')",
    "write_file('.KIBITZER/state.json', '{}')",
], ids=["a tool's own write", "write_file", "another case"])
async def test_no_program_changes_kibitzers_folder_even_in_free_mode(tmp_path, sandbox, program):
    """Kibitzer's config decides what later programs may write (its floor, its modes' paths)
    and its state their mode: a program in ``free`` mode, which may write anywhere else,
    cannot loosen them for the sessions after it."""
    free_with_a_floor(tmp_path)
    with LackpyService(tmp_path) as service:
        result = await service.run_program(program, ["keep", "write_file"], sandbox=sandbox)
    assert result.error_type == "WorkspaceError", result.error
    assert ".kibitzer/ folder" in result.error and "programs may not change" in result.error
    assert (tmp_path / ".kibitzer" / "config.toml").read_text() == FLOOR
    state = tmp_path / ".kibitzer" / "state.json"  # Kibitzer's own save, if any, not '{}'
    assert not state.exists() or state.read_text() != "{}"


@pytest.mark.parametrize("sandbox", WHERE)
async def test_no_program_changes_kibitzers_folder_through_where_its_link_leads(tmp_path, sandbox):
    """Where ``.kibitzer`` is a link to a folder of the workspace, that folder is Kibitzer's
    (it reads its config through the link): a program may not write it under its own name."""
    free_with_a_floor(tmp_path)
    (tmp_path / ".kibitzer").rename(tmp_path / "kb")
    (tmp_path / ".kibitzer").symlink_to("kb")
    with LackpyService(tmp_path) as service:
        result = await service.run_program("write_file('kb/' + 'config.toml', 'x')",
                                           ["write_file"], sandbox=sandbox)
    assert result.error_type == "WorkspaceError", result.error
    assert ".kibitzer/ folder" in result.error
    assert (tmp_path / "kb" / "config.toml").read_text() == FLOOR
