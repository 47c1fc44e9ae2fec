"""The worker's loop: it holds the session and the next child, hands each request to a child
or answers it itself, keeps what a program changed, and tidies up in a quiet moment."""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import time
from collections.abc import Callable
from typing import Any, NoReturn

from lackpy_kernel.errors import WriteBudgetError
from lackpy_kernel.kit import Workspace
from lackpy_kernel.kit.changes import Change, changed_since, describe_changes, snapshot
from lackpy_kernel.kit.effects import WRITE_BUDGET_FILES
from lackpy_kernel.kit.journal import Landed, commit_changes, commit_stage, recover, staged_changes
from lackpy_kernel.kit.staging import empty_folder

from .. import wire
from ..child import QUIET, PythonTools, Snapshot, preresolve, wall_plan
from ..commit import UnitLog, apply_commit, load_units
from ..context import describe_variables
from ..failures import (
    ASK_INTERRUPTED,
    changed_meanwhile,
    dropped_note,
    failure,
    not_kept,
    refused_message,
)
from ..path_guard import allows
from ..protocol import (
    LATE,
    Ack,
    Cancel,
    Closed,
    Describe,
    Next,
    Question,
    Ready,
    Reply,
    Request,
    Reset,
    Restore,
    RunRequest,
    Started,
    Units,
    Verdict,
    read_request,
)
from ..runner import CHANGE_REFUSED
from ..walls import WallPlan
from ._children import Child, resident_mb, stage_is_empty, widen_pipe
from ._watch import watch

STDIN, STDOUT = 0, 1
# QUIET: seconds without a request before the worker tidies up after a program (``child``)
# The most twins held at once. A fork right after a reply competes with the kernel and the
# front end for the cores while they handle that reply, so in a run of programs back to
# back the twin for the next one is forked while a program runs (the kernel then only
# waits), and the run goes from twin to twin without waiting for a fork; one is enough for
# that (each costs a process of about 3 MB).
MAX_TWINS = 1
# A kept child whose resident memory grew by more than this share of its limit since its
# first program is replaced (what a program left in memory stays there)
MEMORY_GROWTH = 0.25
# Asks the person about a change: None when it is to land, else why not
Asker = Callable[[Change], tuple[str, str] | None]


def main() -> None:
    """Serve requests until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    widen_pipe(STDIN)
    widen_pipe(STDOUT)
    Worker().serve()


class Worker:
    """The worker's state: the session's variables, their units, and the waiting child.

    While the worker waits, its child reads the parent's next request itself (one
    process less to wake on the critical path) and tells the worker what it took:
    a program it starts (the worker then watches it), or another request it hands
    back. While a program runs the worker reads stdin, where only ``cancel`` comes.
    """

    def __init__(self) -> None:
        self.session: dict[str, Any] = {}
        self.log = UnitLog(keep_blobs=False)
        self.requests = wire.FrameReader(trusted=True)  # stdin, while no child is reading it
        self.spare: Child | None = None
        self.live: Child | None = None  # ran programs of a key and waits for the next of it
        self.twins: list[Child] = []  # held, with the same session: the next spares while it stays
        self.wants_twin = False  # a program ran since the last twin was used or let go
        self.changed = False  # whether the last program changed the session
        self.replied = 0.0  # when the last reply went (time.monotonic())
        self.killed: list[Child] = []  # not yet reaped
        self.walls: WallPlan | None = None
        self.walls_key: tuple[str, list[str]] | None = None
        self.python_tools = PythonTools()  # the tool modules the children inherit
        # the last program's request, less its program: the next warm-up's
        self.like = RunRequest(program="", workspace=os.getcwd())
        self.recovered: set[str] = set()  # the workspaces whose interrupted commits it finished
        self.recovery_notes: list[str] = []  # what finishing them left for the next reply

    def serve(self) -> NoReturn:
        """Fork the first child, say so, then answer requests until the parent goes."""
        # What the imports made lives as long as this process: collections here never walk
        # it, so they write none of the pages the children share with it.
        gc.freeze()
        self.spare = self.fork_spare()
        try:
            wire.write_frame(STDOUT, Ready(os.getpid()).to_frame())
            while True:
                self.next_event()
        except BrokenPipeError:
            pass  # the parent went away while we answered
        self.exit()

    def fork_spare(self, *, held: bool = False) -> Child:
        """A child with the session as it is now, and the Python tools of programs like the
        last; it reads stdin from where we stopped, or, when ``held``, once it is released
        (``Child.release``)."""
        pending = b""
        if not held:
            pending, self.requests = bytes(self.requests.buffer), wire.FrameReader(trusted=True)
        if self.like.workspace not in self.recovered:  # before any child of it reads a file
            self.recovered.add(self.like.workspace)
            with contextlib.suppress(OSError):  # a workspace it cannot write: nothing to finish
                self.recovery_notes += recover(os.path.realpath(self.like.workspace)).notes
        self.python_tools.load(self.like)
        preresolve(self.like)
        walls = self.walls_for(self.like)
        assert self.walls_key is not None
        return Child.fork(Snapshot(self.session, self.log, self.like, pending, walls,
                                   self.walls_key, self.python_tools, held=held))

    def release(self, child: Child) -> Child:
        """``child`` (held) as the spare: it reads stdin from where we stopped. A child that
        died meanwhile is replaced."""
        try:
            child.release(bytes(self.requests.buffer))
        except OSError:
            child.kill()
            return self.fork_spare()
        self.requests = wire.FrameReader(trusted=True)
        return child

    def walls_for(self, like: RunRequest) -> WallPlan:
        """The walls for programs like ``like``, built once per workspace and kits folder."""
        key = like.walled_for()
        if self.walls_key != key:
            if self.walls is not None:
                self.walls.close()
            self.walls, self.walls_key = wall_plan(like), key
        assert self.walls is not None
        return self.walls

    def next_event(self) -> None:
        """Wait for the child to take a request from stdin (or, with a child kept for the
        next program of its key, read it here), and act on it."""
        if self.live is not None:
            self.next_for_live(self.live)
            return
        child = self.spare
        assert child is not None
        self.killed = [each for each in self.killed if not each.ended()]
        if (self.killed or self.wants_twin) and not wire.readable_within(child.from_child, QUIET):
            self.tidy()
        taken = child.first_frame()
        if taken is None:  # it died before it took a request (it was killed, or ran out of memory)
            child.reap()
            self.spare = self.fork_spare()
            return
        self.spare = None
        self.requests.feed(taken.leftover)
        if isinstance(taken, Closed):
            child.kill()
            self.exit()
        if isinstance(taken, Started):
            self.go_on(child, taken.request)
        else:
            child.kill()
            if self.handle(taken.request):
                self.drop_twins()
            self.spare = self.fork_spare()

    def go_on(self, child: Child, request: RunRequest) -> None:
        """Run ``request`` in ``child``; then keep the child for the next program of its key
        (``live``), or let it go and make the next spare ready."""
        child.runs += 1
        if child.runs >= request.reuse:  # its last: the next program needs another process
            self.fork_twin(request)
        self.changed, went_well = self.run(child, request)
        child.like = request.without_program()
        if went_well and self.keeps(child, request):
            self.live = child
            self.wants_twin = child.runs + 1 >= request.reuse  # its spare, ahead of its last
            return
        self.let_go(child)
        self.ready_spare()
        self.wants_twin = True

    def keeps(self, child: Child, request: RunRequest) -> bool:
        """Whether ``child``, whose program went well, may run the next of its key: it ran
        fewer than ``request.reuse``, sent nothing after its reply, and its memory did not
        grow past ``MEMORY_GROWTH`` of the limit since its first program."""
        if child.runs >= request.reuse or child.reaped or child.frames.buffer:
            return False
        size = resident_mb(child.pid)
        if child.runs == 1:
            child.first_size = size
        return size - child.first_size <= MEMORY_GROWTH * request.memory_mb

    def ready_spare(self) -> None:
        """The next spare: the held twin when the session and the kind of program stayed as
        they were when it was forked, else a fork."""
        if self.twins and not self.changed and self.twins[0].like == self.like:
            self.spare = self.release(self.twins.pop(0))
        else:
            self.spare = self.fork_spare()
            self.drop_twins()

    def next_for_live(self, child: Child) -> None:
        """Read the next request here while ``child`` waits for the next program of its key:
        hand such a program to it, answer a description, and for anything else (or an idle
        ``reuse_idle`` seconds, or a child that sent something meanwhile) let it go and let a spare
        take the request."""
        frame = self.wait_request(child)
        request = None if frame is None else read_request(frame)
        if isinstance(request, RunRequest) and self.fits(child, request):
            self.live = None
            child.nonce = int.from_bytes(os.urandom(8)) | 1  # never a first program's 0
            try:
                wire.write_frame(child.to_child, Next(request, child.nonce).to_frame())
            except OSError:  # it died meanwhile
                self.requests.buffer[0:0] = wire.dumps(frame)
                self.retire(child)
                return
            self.go_on(child, request)
        elif isinstance(request, Describe):
            self.handle(request)
        elif not isinstance(request, LATE):
            if frame is not None:
                self.requests.buffer[0:0] = wire.dumps(frame)
            self.retire(child)

    def fits(self, child: Child, request: RunRequest) -> bool:
        """Whether the live ``child`` runs ``request``: a program of the key it ran (every
        field of the request but the program's, the session as the child left it), below
        its ``reuse``, its Python tools imported, and its stage left empty."""
        return (request.same_key(child.like) and child.runs < request.reuse
                and self.python_tools.has_tried(request) and stage_is_empty(child.stage))

    def wait_request(self, child: Child) -> Any:
        """The next request's frame from stdin; None once ``child``'s ``reuse_idle`` seconds
        passed since the last reply, or when it sent something or died meanwhile."""
        while (frame := self.requests.next_frame()) is None:
            if (self.killed or self.wants_twin) and not wire.readable_within(STDIN, QUIET):
                self.tidy()
            remaining = self.replied + child.like.reuse_idle - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([STDIN, child.from_child], [], [], remaining)
            if child.from_child in ready:
                return None
            if ready:
                data = os.read(STDIN, wire.READ_CHUNK)
                if not data:
                    self.exit()
                self.requests.feed(data)
        return frame

    def retire(self, child: Child) -> None:
        """Let the live ``child`` go; a spare takes the next request."""
        self.live = None
        self.let_go(child)
        self.ready_spare()

    def fork_twin(self, request: RunRequest) -> None:
        """In a run of programs back to back (``request`` came within ``QUIET`` of the last
        reply), fork the twin that is to run the next one while this one runs (the kernel only
        waits meanwhile), unless one for such programs is held: when the session cannot change
        (``keep`` False), or did not change with the program before (a program that changes
        it lets the twin go, its fork wasted). (It does not warm up before its go: the program
        it runs would then wait for the rest of the warm-up, longer than a cold run takes.)
        Out of a run, ``tidy`` forks it after the reply, which then need not wait for the
        fork."""
        if time.monotonic() - self.replied > QUIET:
            return
        like = request.without_program()  # a copy: a forwarded call may add to its protected
        if self.twins and self.twins[0].like != like:
            self.drop_twins()
        if not self.twins and not (request.keep and self.changed):
            self.like = like
            self.twins.append(self.fork_spare(held=True))

    def drop_twins(self) -> None:
        """Let the held twins go: the session or the kind of program changed."""
        for twin in self.twins:
            self.let_go(twin)
        self.twins = []

    def let_go(self, child: Child) -> None:
        """Kill ``child``; it is reaped when the worker is next idle."""
        child.kill(wait=False)
        self.killed.append(child)

    def tidy(self) -> None:
        """What follows a program: reaping the children let go, and forking the twins.
        It waits until no request has come for a moment (``QUIET``): on a machine with few
        cores, a fork and a warm-up competing with the cells of a run of them would slow
        each down more than a held twin saves."""
        for child in self.killed:
            child.reap()
        self.killed.clear()
        if self.wants_twin:
            while len(self.twins) < MAX_TWINS:
                self.twins.append(self.fork_spare(held=True))
        self.wants_twin = False

    def handle(self, request: Request) -> bool:
        """Answer a request a child handed back; returns whether a child forked before it
        could no longer run the next program (the session or the kind of program changed)."""
        if isinstance(request, RunRequest):
            # for a child walled for its workspace: the next one reads it again
            self.like = request.without_program()
            self.requests.buffer[0:0] = wire.dumps(request.to_frame())
            return True
        if isinstance(request, Describe):
            # for a prompt: described here, so the caller never loads them
            text = describe_variables(self.session, previews=request.previews)
            wire.write_frame(STDOUT, Ack(text).to_frame())
            return False
        if isinstance(request, Reset):
            self.replace_session({}, [])
        elif isinstance(request, Restore):
            self.replace_session(load_units(request.units), request.units)
        else:  # late, for a program that ended (a child reads past them): nothing to answer
            return False
        wire.write_frame(STDOUT, Ack().to_frame())
        return True

    def run(self, child: Child, request: RunRequest) -> tuple[bool, bool]:
        """Watch the child run its program; reply, and keep what it changed. Returns whether
        the session changed, and whether the program went well (its commit, if any, kept)."""
        self.like = request
        reply = watch(child, request, self.requests)
        if reply is None:  # stdin closed
            self.exit()
        commit, reply.commit = (reply.commit if request.keep else None), None
        staged = list(reply.result.trace.files_modified)
        loaded: dict[str, Any] = {}
        if commit is not None:
            try:  # read back before anyone relies on it
                loaded, reply.commit = load_units(commit.units), commit
            except wire.WireError as exc:
                reply = failure("SandboxError", f"the program's process sent a bad reply: {exc}")
                commit = None
        folder = child.stage  # the workspace's, as the child's walls were built for it
        if staged and request.dry:  # a dry run (a candidate a model wrote): nothing lands
            reply.result.notes.append("nothing was written: a dry run's file changes are dropped")
            empty_folder(folder)
            staged = []
        landed = None
        if staged:
            reply, landed = settle_files(reply, request, folder, staged, self.ask)
            commit = commit if reply.result.success else None
        reply.result.notes += [*self.recovery_notes, *(landed.notes if landed else [])]
        self.recovery_notes = []
        if commit is not None and not commit.empty:
            self.drop_twins()  # forked with the session as it was: before anyone sees the reply
        wire.write_frame(STDOUT, reply.to_frame())
        self.replied = time.monotonic()
        if staged:  # after the reply: the disk, and a stage nothing reads any more
            if landed is not None:
                landed.finish()
            empty_folder(folder)  # kept: the child's walls let it write that folder only
        went_well = reply.result.success
        if commit is None or commit.empty:
            return False, went_well
        apply_commit(self.session, self.log, commit, loaded)
        return True, went_well

    def ask(self, change: Change) -> tuple[str, str] | None:
        """Send ``change`` up and wait, with no deadline, for the kernel's answer: None to
        let it land, else the error type and why not (a ``cancel`` refuses it)."""
        wire.write_frame(STDOUT, Question(change).to_frame())
        while True:
            frame = self.requests.next_frame()
            if frame is None:
                data = os.read(STDIN, wire.READ_CHUNK)
                if not data:
                    self.exit()
                self.requests.feed(data)
                continue
            try:
                message = read_request(frame)
            except wire.WireError as exc:
                return CHANGE_REFUSED, f"the kernel's answer was not understood ({exc})"
            if isinstance(message, Cancel):
                return "KeyboardInterrupt", ASK_INTERRUPTED
            if isinstance(message, Verdict):
                return None if message.apply else (CHANGE_REFUSED, message.reason[:2000])
            # else a late answer of a tool call: dropped

    def replace_session(self, session: dict[str, Any], units: Units) -> None:
        self.session = session
        self.log.clear()
        for names, blob in units:
            self.log.add(names, blob)

    def exit(self) -> NoReturn:
        for child in (self.spare, self.live, *self.twins, *self.killed):
            if child is not None:
                child.kill()
        os._exit(0)


def settle_files(reply: Reply, request: RunRequest, folder: str, paths: list[str],
                 ask: Asker) -> tuple[Reply, Landed | None]:
    """Commit the files the program staged in ``folder`` when it ended well (once ``ask``
    let them, when the request asks and its ``path_guard`` does not allow them all), else
    note that they were dropped; the reply (a failure when the commit was refused: nothing
    written then) and what landed."""
    if not reply.result.success:
        reply.result.notes.append(dropped_note(paths))
        return reply, None
    try:
        if len(paths) > WRITE_BUDGET_FILES:  # a child past its budget forged them
            raise WriteBudgetError(f"{len(paths)} files is over the {WRITE_BUDGET_FILES} "
                                   "a program may write")
        workspace = Workspace(request.workspace, frozenset(request.protected))
        if not request.approve or (request.path_guard is not None
                                   and allows(request.path_guard, request.workspace, paths)):
            return reply, commit_stage(workspace, folder, paths)
        changes = staged_changes(workspace, folder, paths)  # what is shown is what lands
        before = snapshot(workspace, paths)
        refused = ask(describe_changes(workspace, changes))
        moved = changed_since(workspace, before) if refused is None else []
        if moved:
            refused = CHANGE_REFUSED, changed_meanwhile(moved)
        if refused is not None:
            error_type, why = refused
            return Reply(not_kept(reply.result, error_type, refused_message(paths, why))), None
        return reply, commit_changes(workspace, changes)
    except OSError as exc:
        return Reply(not_kept(reply.result, type(exc).__name__,
                              f"the program's file changes were not written: {exc}")), None
