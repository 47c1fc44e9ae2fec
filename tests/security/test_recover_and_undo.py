"""Recovering a killed commit never writes over a person's later change, and undo restores
only what lackpy itself recorded, never where a program may not write, and says what to do.

- ``recover()`` after a commit killed between its files: a file changed, made or deleted
  since is left as it is, the program's version is written beside it
  (``NAME.lackpy-recovered``) and a note names both; the rest of the commit is finished.
- Undo: a file over 64 MB keeps its place in the record as "cannot be undone" (named before
  the commit, in the commit's notes and in the refusal) and older records stay; a record
  that came with a copied or cloned workspace, or is malformed (nested 100,000 deep), is
  refused by name with what to do, nothing written; a record never restores into
  ``.lackpy/`` or a tool source's code; a commit whose file changed since can be taken back
  in part (``skip_changed``) or dropped (``drop_last``), so undo never gets stuck.

The commits are real (``commit_stage``), killed for real: the committing process is sent
SIGKILL by an audit hook as it is about to replace a given file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lackpy_kernel.errors import WorkspaceError
from lackpy_kernel.kit import Workspace
from lackpy_kernel.kit.journal import RECOVERED_SUFFIX, Landed, commit_stage, recover
from lackpy_kernel.kit.staging import discard_stage
from lackpy_kernel.kit.undo import (
    MAX_UNDO_BYTES,
    cannot_undo,
    drop_last,
    undo_last,
)
from lackpy_kernel.kit.undo_record import KEY_ENV, key_path, undo_key
from lackpy_kernel.service import LackpyService
from tests.support.staging import staged

KILLED_BEFORE = textwrap.dedent("""
    import os, signal, sys
    from lackpy_kernel.kit import Workspace
    from lackpy_kernel.kit.journal import commit_stage
    ws, folder, last, *paths = sys.argv[1:]

    def kill_before(event, args):  # os.replace is audited as os.rename
        if event == "os.rename" and args[1] == last:
            os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(kill_before)
    commit_stage(Workspace(ws), folder, paths).finish()
""")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This user's undo key lives here, outside the workspace."""
    folder = tmp_path / "state"
    monkeypatch.setenv(KEY_ENV, str(folder))
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("old a")
    (folder / "b.txt").write_text("old b")
    return folder


def commit(ws: Path, files: dict[str, str]) -> Landed:
    """Stage ``files`` through the file tools and commit them, as the worker does."""
    stage = staged(ws, files)
    try:
        landed = commit_stage(Workspace(ws), stage.folder, list(files))
        landed.finish()
    finally:
        discard_stage(stage.folder)
    return landed


def killed_commit(ws: Path, files: dict[str, str], before: str) -> None:
    """Commit ``files`` (in order) in another process, killed as it is about to replace
    ``before``: the files ahead of it landed, it and those after it did not."""
    stage = staged(ws, files)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        done = subprocess.run([sys.executable, "-c", KILLED_BEFORE, str(ws), stage.folder,
                               before, *files], env=env, timeout=60, capture_output=True)
    finally:
        discard_stage(stage.folder)
    assert done.returncode == -signal.SIGKILL, done.stderr
    journals = list((ws / ".lackpy" / "journal").iterdir())
    assert [path.suffix for path in journals] == [".journal"]


def journals(ws: Path) -> list[Path]:
    return list((ws / ".lackpy" / "journal").iterdir())


def records(ws: Path) -> list[str]:
    return sorted(os.listdir(ws / ".lackpy" / "undo"))


# -- recover: a killed commit is finished, never over a change made since ---------------------

def test_a_commit_killed_after_its_first_file_is_finished_by_recover(ws):
    killed_commit(ws, {"a.txt": "new a", "b.txt": "new b"}, before="b.txt")
    assert (ws / "a.txt").read_text() == "new a" and (ws / "b.txt").read_text() == "old b"
    recovery = recover(ws)
    assert recovery.written == ["b.txt"] and recovery.notes == [] and recovery.kept == {}
    assert (ws / "a.txt").read_text() == "new a" and (ws / "b.txt").read_text() == "new b"
    assert journals(ws) == []


def test_recover_keeps_a_persons_edit_of_the_file_that_landed_and_writes_the_programs_beside(ws):
    killed_commit(ws, {"a.txt": "new a", "b.txt": "new b"}, before="b.txt")
    (ws / "a.txt").write_text("the person's edit")
    recovery = recover(ws)
    assert (ws / "a.txt").read_text() == "the person's edit"
    assert (ws / f"a.txt{RECOVERED_SUFFIX}").read_text() == "new a"
    assert (ws / "b.txt").read_text() == "new b"  # the rest of the commit is finished
    assert recovery.written == ["b.txt"]
    assert recovery.kept == {"a.txt": f"a.txt{RECOVERED_SUFFIX}"}
    [note] = recovery.notes
    assert note.startswith("a.txt was changed after a program's commit that wrote it was "
                           "interrupted, so lackpy left it as it is")
    assert f"as a.txt{RECOVERED_SUFFIX}: compare the two, keep what you want" in note
    assert journals(ws) == []
    assert recover(ws).written == []  # once


def test_recover_keeps_an_edit_of_a_file_the_commit_had_not_reached(ws):
    killed_commit(ws, {"a.txt": "new a", "b.txt": "new b"}, before="b.txt")
    (ws / "b.txt").write_text("edited b")
    recovery = recover(ws)
    assert (ws / "b.txt").read_text() == "edited b"
    assert (ws / f"b.txt{RECOVERED_SUFFIX}").read_text() == "new b"
    assert recovery.written == [] and list(recovery.kept) == ["b.txt"]


def test_recover_does_not_bring_back_a_file_deleted_since(ws):
    killed_commit(ws, {"a.txt": "new a", "b.txt": "new b"}, before="b.txt")
    (ws / "a.txt").unlink()
    recovery = recover(ws)
    assert not (ws / "a.txt").exists()
    assert (ws / f"a.txt{RECOVERED_SUFFIX}").read_text() == "new a"
    assert recovery.notes[0].startswith("a.txt was deleted after a program's commit")


def test_recover_does_not_bring_back_a_new_file_deleted_since(ws):
    files = {"n1.txt": "new 1", "n2.txt": "new 2", "a.txt": "new a"}
    killed_commit(ws, files, before="a.txt")
    (ws / "n1.txt").unlink()  # the program made it, the commit landed it, the person removed it
    recovery = recover(ws)
    assert not (ws / "n1.txt").exists() and (ws / "a.txt").read_text() == "new a"
    assert (ws / f"n1.txt{RECOVERED_SUFFIX}").read_text() == "new 1"
    assert recovery.written == ["a.txt"] and list(recovery.kept) == ["n1.txt"]


def test_recover_keeps_a_file_made_since_where_the_commit_would_make_one(ws):
    killed_commit(ws, {"a.txt": "new a", "c.txt": "new c"}, before="c.txt")
    (ws / "c.txt").write_text("made by the person")
    recover(ws)
    assert (ws / "c.txt").read_text() == "made by the person"
    assert (ws / f"c.txt{RECOVERED_SUFFIX}").read_text() == "new c"


def test_recover_finds_a_free_name_beside_and_never_writes_over_one(ws):
    (ws / f"a.txt{RECOVERED_SUFFIX}").write_text("an earlier recovery")
    killed_commit(ws, {"a.txt": "new a", "b.txt": "new b"}, before="b.txt")
    (ws / "a.txt").write_text("edited")
    recovery = recover(ws)
    assert (ws / f"a.txt{RECOVERED_SUFFIX}").read_text() == "an earlier recovery"
    assert (ws / f"a.txt{RECOVERED_SUFFIX}-2").read_text() == "new a"
    assert recovery.kept == {"a.txt": f"a.txt{RECOVERED_SUFFIX}-2"}


def test_an_older_lackpys_journal_never_writes_over_a_file_it_cannot_vouch_for(ws):
    """A version 1 journal does not say what its files were before: only a file that holds
    the new content already counts as done; every other keeps its content."""
    header = "\0".join(["5 a.txt", "5 b.txt"]).encode()
    body = b"".join([b"lackpy-journal 1\n", b"%d\n" % len(header), header, b"new a", b"new b"])
    import zlib

    journal = ws / ".lackpy" / "journal"
    journal.mkdir(parents=True)
    (journal / "1-old.journal").write_bytes(body + b"%08x\n" % zlib.crc32(body))
    (ws / "a.txt").write_text("new a")
    recovery = recover(ws)
    assert (ws / "a.txt").read_text() == "new a" and (ws / "b.txt").read_text() == "old b"
    assert (ws / f"b.txt{RECOVERED_SUFFIX}").read_text() == "new b"
    assert recovery.written == [] and list(recovery.kept) == ["b.txt"]


def test_a_worker_starting_on_the_workspace_recovers_without_writing_over_the_edit(ws):
    killed_commit(ws, {"a.txt": "new a", "b.txt": "new b"}, before="b.txt")
    (ws / "a.txt").write_text("the person's edit")
    with LackpyService(ws) as service:
        import asyncio

        result = asyncio.run(service.run_program("read_file('a.txt')", ["read_file"],
                                                 sandbox=True))
    assert result.success and result.output == "the person's edit"
    assert (ws / "a.txt").read_text() == "the person's edit"
    assert (ws / f"a.txt{RECOVERED_SUFFIX}").read_text() == "new a"
    assert (ws / "b.txt").read_text() == "new b" and journals(ws) == []


# -- undo: a file over the bound is named, and older records stay -----------------------------

def test_a_file_over_64_mb_is_named_as_undoable_never_and_older_records_stay(ws):
    commit(ws, {"a.txt": "first"})
    (ws / "big.bin").write_bytes(b"\0" * (MAX_UNDO_BYTES + 1))
    assert cannot_undo(Workspace(ws), ["b.txt", "big.bin", "new.txt"]) == {
        "big.bin": "it is 67,108,865 bytes, over the 64 MB an undo record keeps"}
    landed = commit(ws, {"b.txt": "second", "big.bin": "small now"})
    assert landed.notes == [
        "big.bin cannot be undone: it is 67,108,865 bytes, over the 64 MB an undo record keeps"]
    assert len(records(ws)) == 2  # the older record is still there
    with pytest.raises(WorkspaceError) as refused:
        undo_last(Workspace(ws))
    message = str(refused.value)
    assert "'big.bin' cannot be undone: it is 67,108,865 bytes" in message
    assert "nothing was undone" in message and "--skip-changed" in message and "--drop" in message
    assert (ws / "b.txt").read_text() == "second" and (ws / "big.bin").read_text() == "small now"
    assert undo_last(Workspace(ws), skip_changed=True) == [
        "restored b.txt",
        "left big.bin as it is: it cannot be undone: it is 67,108,865 bytes, over the 64 MB an "
        "undo record keeps"]
    assert (ws / "b.txt").read_text() == "old b"
    assert undo_last(Workspace(ws)) == ["restored a.txt"]  # the commit before, still kept
    assert (ws / "a.txt").read_text() == "old a"


def test_files_that_together_pass_the_bound_keep_what_fits_and_name_the_rest(ws, monkeypatch):
    from lackpy_kernel.kit import undo as undo_module

    monkeypatch.setattr(undo_module, "MAX_UNDO_BYTES", 1000)
    (ws / "a.txt").write_text("a" * 600)
    (ws / "b.txt").write_text("b" * 600)
    assert cannot_undo(Workspace(ws), ["a.txt", "b.txt"]) == {
        "b.txt": "it is 600 bytes, over (with the commit's other files) the 1,000 bytes an undo "
                 "record keeps"}
    landed = commit(ws, {"a.txt": "new a", "b.txt": "new b"})
    assert [note.partition(":")[0] for note in landed.notes] == ["b.txt cannot be undone"]
    assert undo_last(Workspace(ws), skip_changed=True)[0] == "restored a.txt"
    assert (ws / "a.txt").read_text() == "a" * 600 and (ws / "b.txt").read_text() == "new b"


# -- undo: only records lackpy wrote, for this user and this workspace ------------------------

def test_a_record_that_came_with_a_cloned_workspace_is_refused_and_nothing_is_written(
        ws, tmp_path, monkeypatch):
    commit(ws, {"a.txt": "the author's change"})  # the author's machine, the author's key
    clone = tmp_path / "clone"
    shutil.copytree(ws, clone)  # what a clone of a repository that ships .lackpy/ holds
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "another user"))
    (clone / "a.txt").write_text("the author's change")
    with pytest.raises(WorkspaceError) as refused:
        undo_last(Workspace(clone))
    [name] = records(clone)
    assert str(refused.value).startswith(
        f"the undo record .lackpy/undo/{name} was not written by lackpy for this user")
    assert "nothing was undone. Drop it with %undo --drop" in str(refused.value)
    assert (clone / "a.txt").read_text() == "the author's change"
    assert drop_last(Workspace(clone)) == [
        f"dropped the undo record .lackpy/undo/{name}, which could not be used; the next "
        "undo takes back the commit before it"]
    assert undo_last(Workspace(clone)) == []


def test_a_record_copied_from_another_workspace_of_the_same_user_is_refused(ws, tmp_path):
    commit(ws, {"a.txt": "new a"})
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("new a")
    shutil.copytree(ws / ".lackpy", other / ".lackpy")
    with pytest.raises(WorkspaceError, match="was not written by lackpy for this user and "
                                             "this workspace"):
        undo_last(Workspace(other))
    assert (other / "a.txt").read_text() == "new a"


def test_a_hand_written_record_in_the_old_unsigned_format_is_refused(ws):
    folder = ws / ".lackpy" / "undo"
    folder.mkdir(parents=True)
    after = hashlib.sha256(b"old a").hexdigest()
    header = json.dumps([["a.txt", 7, after]]).encode()
    record = b"".join([b"lackpy-undo 1\n", b"%d\n" % len(header), header, b"planted"])
    (folder / "99999999999999999999-1.undo").write_bytes(record)
    with pytest.raises(WorkspaceError, match=r"99999999999999999999-1.undo was not written by "
                                             "lackpy"):
        undo_last(Workspace(ws))
    assert (ws / "a.txt").read_text() == "old a"


def test_a_planted_record_named_in_the_future_does_not_hide_the_next_commit(ws):
    folder = ws / ".lackpy" / "undo"
    folder.mkdir(parents=True)
    (folder / "99999999999999999999-1.undo").write_bytes(b"lackpy-undo 2\nplanted")
    commit(ws, {"a.txt": "new a"})
    assert len(records(ws)) == 1 and not records(ws)[0].startswith("9999")
    assert undo_last(Workspace(ws)) == ["restored a.txt"]


def test_a_record_signed_with_another_key_is_refused(ws, tmp_path, monkeypatch):
    commit(ws, {"a.txt": "new a"})
    key_path_now = Path(key_path())
    key_path_now.write_bytes(os.urandom(32))  # this user's key replaced: another machine's
    with pytest.raises(WorkspaceError, match="was not written by lackpy"):
        undo_last(Workspace(ws))
    assert (ws / "a.txt").read_text() == "new a"


def test_a_key_others_can_read_is_refused_and_said_so(ws, state):
    commit(ws, {"a.txt": "new a"})
    os.chmod(key_path(), 0o644)
    with pytest.raises(WorkspaceError, match="only its owner, this user, can read; remove it"):
        undo_last(Workspace(ws))
    landed = commit(ws, {"b.txt": "new b"})
    assert landed.notes and landed.notes[0].startswith(
        "the undo record of this commit could not be kept")


def test_the_key_lives_outside_the_workspace_readable_by_its_owner_alone(ws, state):
    commit(ws, {"a.txt": "new a"})
    key = Path(key_path())
    assert key.parent == state and not key.is_relative_to(ws)
    assert key.stat().st_mode & 0o077 == 0 and len(key.read_bytes()) == 32
    assert undo_key(make=False) == key.read_bytes()


# -- undo: never into .lackpy/ or a tool source's code ----------------------------------------

def test_undo_never_restores_a_tool_sources_code(ws):
    (ws / "tools").mkdir()
    (ws / "tools" / "mine.py").write_text("def hello():\n    return 'safe'\n")
    commit(ws, {"tools/mine.py": "def hello():\n    return 'changed'\n"})
    (ws / ".lackpy" / "config.toml").write_text(  # the file became a tool source since
        '[tools.providers.mine]\nplugin = "python"\npath = "tools/mine.py"\n')
    with pytest.raises(WorkspaceError, match=r"'tools/mine.py' may not be restored \(.*is the "
                                             "code of a tool source"):
        undo_last(Workspace(ws))
    assert "'changed'" in (ws / "tools" / "mine.py").read_text()
    assert undo_last(Workspace(ws), skip_changed=True)[0].startswith(
        "left tools/mine.py as it is: it may not be restored")
    assert "'changed'" in (ws / "tools" / "mine.py").read_text()


def signed(ws: Path, name: str, body: bytes) -> None:
    """Write ``body`` as the record ``name``, signed as lackpy signs one for ``ws``: what
    lackpy itself could have written, so that only the record's content is judged."""
    key = undo_key(make=True)
    bound = b"\0".join([os.fsencode(os.path.realpath(ws)), name.encode(), b""])
    mac = hmac.new(key, bound + body, hashlib.sha256).hexdigest().encode()
    folder = ws / ".lackpy" / "undo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(body + mac + b"\n")


def record_body(entries: object, contents: bytes = b"") -> bytes:
    header = json.dumps(entries).encode()
    return b"".join([b"lackpy-undo 2\n", b"%d\n" % len(header), header, contents])


@pytest.mark.parametrize("path", [".lackpy/config.toml", ".lackpy/undo/x.undo"])
def test_a_record_never_restores_into_lackpys_own_folder(ws, path):
    (ws / ".lackpy").mkdir()
    (ws / ".lackpy" / "config.toml").write_text("")
    after = hashlib.sha256(b"").hexdigest()
    signed(ws, "00000000000000000001-1.undo", record_body([[path, 6, after, None]], b"pwned!"))
    with pytest.raises(WorkspaceError, match=f"'{path}' may not be restored"):
        undo_last(Workspace(ws))
    assert (ws / ".lackpy" / "config.toml").read_text() == ""


# -- undo: a malformed record is a clear error, nothing written -------------------------------

MALFORMED = {
    "nested 100,000 deep": b"lackpy-undo 2\n200001\n" + b"[" * 100_000 + b"]" * 100_000 + b"x",
    "a path out of the workspace": record_body([["../out.txt", 1, "0" * 64, None]], b"x"),
    "an absolute path": record_body([["/etc/passwd", 1, "0" * 64, None]], b"x"),
    "a negative size": record_body([["a.txt", -1, "0" * 64, None]], b"x"),
    "a size past the end": record_body([["a.txt", 10, "0" * 64, None]], b"x"),
    "contents left over": record_body([["a.txt", None, "0" * 64, None]], b"x"),
    "a header that is not a list": record_body({"a.txt": 1}),
    "a short entry": record_body([["a.txt", 1]], b"x"),
    "a digest that is not one": record_body([["a.txt", 1, "no", None]], b"x"),
    "a header size past the end": b"lackpy-undo 2\n99999\n[]",
    "a header size that is no number": b"lackpy-undo 2\nten\n[]",
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_record_is_a_clear_error_and_nothing_is_written(ws, body):
    commit(ws, {"a.txt": "new a"})  # an older, good record
    name = "99999999999999999990-1.undo"
    signed(ws, name, body)
    for undo in (undo_last, lambda workspace: undo_last(workspace, skip_changed=True)):
        with pytest.raises(WorkspaceError) as refused:
            undo(Workspace(ws))
        assert str(refused.value).startswith(f"the undo record .lackpy/undo/{name} is malformed")
        assert "nothing was undone. Drop it with %undo --drop" in str(refused.value)
    assert (ws / "a.txt").read_text() == "new a" and not (ws.parent / "out.txt").exists()
    assert drop_last(Workspace(ws))[0].startswith(f"dropped the undo record .lackpy/undo/{name}")
    assert undo_last(Workspace(ws)) == ["restored a.txt"]


def test_a_record_nested_100000_deep_without_a_signature_is_refused_too(ws):
    folder = ws / ".lackpy" / "undo"
    folder.mkdir(parents=True)
    (folder / "00000000000000000001-1.undo").write_bytes(MALFORMED["nested 100,000 deep"])
    with pytest.raises(WorkspaceError, match="was not written by lackpy"):
        undo_last(Workspace(ws))


def test_a_record_file_too_large_to_be_lackpys_is_refused_unread(ws, monkeypatch):
    from lackpy_kernel.kit import undo as undo_module

    monkeypatch.setattr(undo_module, "MAX_RECORD_BYTES", 100)
    signed(ws, "00000000000000000001-1.undo", b"x" * 200)
    with pytest.raises(WorkspaceError, match="is larger than any record lackpy writes"):
        undo_last(Workspace(ws))


# -- undo never gets stuck: take back the rest, or drop the record ----------------------------

def test_a_file_changed_since_names_the_ways_past_and_each_works(ws):
    commit(ws, {"a.txt": "first a"})
    commit(ws, {"a.txt": "second a", "b.txt": "second b"})
    (ws / "b.txt").unlink()
    with pytest.raises(WorkspaceError) as refused:
        undo_last(Workspace(ws))
    message = str(refused.value)
    assert "'b.txt' changed since the last commit of a program (it is gone)" in message
    assert "%undo --skip-changed (lackpy undo --skip-changed) takes back the rest" in message
    assert "%undo --drop (lackpy undo --drop) forgets that commit's record" in message
    with pytest.raises(WorkspaceError):  # still refused: nothing was changed
        undo_last(Workspace(ws))
    assert undo_last(Workspace(ws), skip_changed=True) == [
        "restored a.txt",
        "left b.txt as it is: it changed since the last commit of a program (it is gone)"]
    assert (ws / "a.txt").read_text() == "first a" and not (ws / "b.txt").exists()
    assert undo_last(Workspace(ws)) == ["restored a.txt"]
    assert (ws / "a.txt").read_text() == "old a"


def test_dropping_the_last_record_reaches_the_commit_before_it(ws):
    commit(ws, {"a.txt": "first a"})
    commit(ws, {"b.txt": "second b"})
    (ws / "b.txt").write_text("edited")
    assert drop_last(Workspace(ws)) == [
        "dropped the undo record of the last commit (b.txt); its changes stay; the next undo "
        "takes back the commit before it"]
    assert (ws / "b.txt").read_text() == "edited"
    assert undo_last(Workspace(ws)) == ["restored a.txt"]
    assert drop_last(Workspace(ws)) == [] and undo_last(Workspace(ws)) == []


def test_lackpy_undo_refuses_a_cloned_record_with_a_clear_message(ws, tmp_path, monkeypatch):
    commit(ws, {"a.txt": "the author's change"})
    clone = tmp_path / "clone"
    shutil.copytree(ws, clone)
    env = {**os.environ, KEY_ENV: str(tmp_path / "the person who cloned it"),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "lackpy_kernel", "undo"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("lackpy: the undo record .lackpy/undo/")
    assert "was not written by lackpy for this user" in done.stderr
    assert "Traceback" not in done.stderr
    assert (clone / "a.txt").read_text() == "the author's change"
