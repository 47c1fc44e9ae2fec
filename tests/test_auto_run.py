"""Ask before writing: a generated program runs unseen only within [delegate] auto_run."""

from __future__ import annotations

from pathlib import Path

import pytest

from lackpy_kernel.config import ConfigError, LackpyConfig, load_config
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession

WRITER = "write_file('copy.txt', read_file('notes.txt'))\n'copied'"
KIT = "read_file,write_file"


def template(workspace: Path, name: str, pattern: str, body: str) -> None:
    folder = workspace / ".lackpy" / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.tmpl").write_text(f"---\nname: {name}\npattern: {pattern}\n---\n{body}\n")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    template(tmp_path, "copy", "copy the notes", WRITER)
    return tmp_path


def session_in(workspace: Path, auto_run: str = "read", approve: str = "never"
               ) -> LackpySession:
    """A session whose config has ``auto_run`` and ``approve`` (by default its changes land
    unseen: these tests write with no one to ask)."""
    config = LackpyConfig(kit_default=KIT, delegate_auto_run=auto_run, sandbox_enabled=False,
                          sandbox_approve=approve)
    return LackpySession(LackpyService(workspace, config))


async def test_a_read_only_program_runs_at_once(workspace):
    delegation = await session_in(workspace).delegate("read the file notes.txt", run=True)
    assert delegation.ran and delegation.held is None
    assert delegation.result.output == "alpha\nbeta\n"


async def test_a_program_that_would_write_is_held_and_says_why(workspace):
    delegation = await session_in(workspace).delegate("copy the notes", run=True)
    assert not delegation.ran and not (workspace / "copy.txt").exists()
    assert delegation.held.past == ("write_file",)
    assert "write_file" in delegation.held.reason and '"read"' in delegation.held.reason
    assert delegation.to_dict()["held"] == delegation.held.reason


async def test_approving_one_call_runs_it_and_only_that_call(workspace):
    session = session_in(workspace)
    approved = await session.delegate("copy the notes", run=True, approved=True)
    assert approved.ran and (workspace / "copy.txt").read_text() == "alpha\nbeta\n"
    (workspace / "copy.txt").unlink()
    again = await session.delegate("copy the notes", run=True)
    assert again.held is not None and not (workspace / "copy.txt").exists()


async def test_the_config_can_lower_the_ceiling_to_nothing(workspace):
    delegation = await session_in(workspace, "none").delegate("read the file notes.txt", run=True)
    assert not delegation.ran
    assert delegation.held.reason == '[delegate] auto_run = "none" runs no program unseen'


async def test_the_config_can_let_writes_run(workspace):
    delegation = await session_in(workspace, "write").delegate("copy the notes", run=True)
    assert delegation.ran and (workspace / "copy.txt").exists()


async def test_a_program_auto_run_lets_run_still_asks_before_its_changes_land(workspace):
    session = session_in(workspace, "write", approve="write")
    asked = []
    session.approve = lambda change: asked.append(change.paths) is not None  # declines
    delegation = await session.delegate("copy the notes", run=True)
    assert delegation.ran and asked == [["copy.txt"]]
    assert delegation.result.error_type == "ChangeRefusedError"
    assert not (workspace / "copy.txt").exists()


async def test_the_ceiling_applies_to_the_tools_a_program_calls_not_the_kit(workspace):
    service = LackpyService(workspace, LackpyConfig(sandbox_enabled=False))
    assert service.run_check("read_file('notes.txt')", KIT).allowed
    assert service.run_check("len('x')", KIT).allowed
    assert service.run_check("edit_file('notes.txt', 'a', 'b')", "edit_file").past == ("edit_file",)
    aliased = {"save": "write_file"}  # an alias cannot hide what the tool does
    assert service.run_check("save('x.txt', 'y')", aliased).past == ("save",)


async def test_without_a_run_nothing_is_held(workspace):
    delegation = await session_in(workspace).delegate("copy the notes")
    assert not delegation.ran and delegation.held is None


def write_config(workspace: Path, text: str) -> None:
    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text(text)


def test_auto_run_is_read_unless_the_config_says_otherwise(tmp_path):
    assert load_config(tmp_path).delegate_auto_run == "read"
    write_config(tmp_path, '[delegate]\nauto_run = "none"\n')
    assert load_config(tmp_path).delegate_auto_run == "none"


@pytest.mark.parametrize("value, expected", [
    ('"wirte"', "did you mean 'write'?"),
    ('"everything"', "must be one of none, pure, read, exec, write"),
    ("true", "must be a string"),
])
def test_a_bad_auto_run_is_refused_at_load_naming_the_line(tmp_path, value, expected):
    write_config(tmp_path, f"[sandbox]\ntimeout = 5\n[delegate]\nauto_run = {value}\n")
    with pytest.raises(ConfigError) as error:
        load_config(tmp_path)
    assert "config.toml, line 4" in str(error.value) and expected in str(error.value)
