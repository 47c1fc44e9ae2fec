"""The sandbox worker: a single-threaded process that forks one child per program.

Run as ``python -m lackpy_kernel.run.worker``. It reads requests from stdin
and writes replies to stdout (frames, see ``wire``). It holds the session's
variables; a child runs each program under a memory limit and is killed at
its deadline, so a program that fails or is stopped leaves the session as it
was. The worker ignores SIGINT and exits when its parent closes stdin.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import resource
import selectors
import signal
import sys
import time
from pathlib import Path
from typing import Any

from lackpy_kernel.kit import builtin_toolbox, resolve_kit

from . import wire
from .plain import display_problem, find_non_plain
from .runner import ExecutionResult, RestrictedRunner
from .trace import summarize

STDIN, STDOUT = 0, 1
READ_CHUNK = 1 << 16
CHILD_FAILED = 3
PR_SET_PDEATHSIG = 1


def main() -> None:
    """Serve requests until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    Worker().serve()


class Worker:
    """The worker's state: the session's variables (the parent keeps the pickled copy)."""

    def __init__(self) -> None:
        self.session: dict[str, Any] = {}
        self.reader = wire.FrameReader()

    def serve(self) -> None:
        while True:
            request = self.next_request()
            if request is None:
                return
            reply = self.handle(request)
            if reply is not None:
                wire.write_frame(STDOUT, reply)

    def next_request(self) -> dict | None:
        while True:
            frame = self.reader.next_frame()
            if frame is not None:
                return frame
            data = os.read(STDIN, READ_CHUNK)
            if not data:
                return None
            self.reader.feed(data)

    def handle(self, request: dict) -> dict | None:
        op = request.get("op")
        if op == "run":
            return self.run(request)
        if op == "reset":
            self.session = {}
            return {"ok": True}
        if op == "restore":
            self.session = wire.loads_body(request["session"])
            return {"ok": True}
        return None  # a late "cancel" for a program that already finished

    def run(self, request: dict) -> dict:
        keep = request.get("keep", True)
        session = self.session if keep else {}
        outcome = run_in_child(request, session, self.reader)
        if outcome.get("exit") == "stdin-closed":
            sys.exit(0)
        blob = outcome.get("session")
        if keep and blob is not None:
            self.session = wire.loads_body(blob)
        return outcome


def run_in_child(request: dict, session: dict[str, Any], requests: wire.FrameReader) -> dict:
    """Fork a child to run the program; wait for its frame, the deadline or a cancel."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child_main(write_end, request, session)
    os.close(write_end)
    try:
        return _await_child(pid, read_end, request, requests)
    finally:
        os.close(read_end)


class _ChildFrames:
    """What the child sent: the files it modified as it went, then its result frame."""

    def __init__(self, request: dict) -> None:
        self.reader = wire.FrameReader(max_body=int(request["max_result_bytes"]) + READ_CHUNK)
        self.modified: list[str] = []
        self.final: dict | None = None

    def feed(self, data: bytes) -> None:
        self.reader.feed(data)
        while (frame := self.reader.next_frame()) is not None:
            if set(frame) == {"modified"}:
                if frame["modified"] not in self.modified:
                    self.modified.append(frame["modified"])
            else:
                self.final = frame

    def failed(self, error_type: str, message: str) -> dict:
        """A failure that still lists the files the program changed before it stopped."""
        outcome = _failure(error_type, message)
        outcome["result"]["trace"]["files_modified"] = list(self.modified)
        return outcome


def _await_child(pid: int, read_end: int, request: dict, requests: wire.FrameReader) -> dict:
    timeout = float(request["timeout"])
    frames = _ChildFrames(request)
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(read_end, selectors.EVENT_READ, "child")
    selector.register(STDIN, selectors.EVENT_READ, "parent")
    child_open = True
    try:
        while child_open:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _stop(pid, frames.failed("TimeoutError", _timeout_message(timeout)))
            for key, _ in selector.select(remaining):
                if key.data == "parent":
                    said = _read_parent(key.fileobj, requests)
                    if said == "closed":
                        return _stop(pid, {"exit": "stdin-closed"})
                    if said == "cancel":
                        return _stop(pid, frames.failed("KeyboardInterrupt", INTERRUPTED))
                    continue
                data = os.read(read_end, READ_CHUNK)
                if not data:
                    child_open = False
                    break
                try:
                    frames.feed(data)
                except wire.FrameTooLarge:
                    return _stop(pid, frames.failed("ResultTooLarge", _too_big_message(request)))
                except wire.WireError as exc:
                    return _stop(pid, frames.failed(
                        "SandboxError", f"the program's process sent a bad reply: {exc}"))
    finally:
        selector.close()
    return _collect(pid, frames, request)


INTERRUPTED = "interrupted: the program was stopped before it finished"


def _read_parent(stdin: int, requests: wire.FrameReader) -> str | None:
    """"closed" when the parent went away, "cancel" when it asked to stop, else None."""
    data = os.read(stdin, READ_CHUNK)
    if not data:
        return "closed"
    requests.feed(data)
    # While a program runs the parent sends nothing but "cancel".
    return "cancel" if requests.next_frame() is not None else None


def _collect(pid: int, frames: _ChildFrames, request: dict) -> dict:
    _, status = os.waitpid(pid, 0)
    if frames.final is not None:
        return frames.final
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV:
        return frames.failed("SandboxError", "the program's process crashed (segmentation "
                             "fault); a value is probably nested too deeply. Flatten it.")
    if os.WIFSIGNALED(status):
        how = f"was killed by signal {os.WTERMSIG(status)}"
    else:
        how = f"exited with status {os.WEXITSTATUS(status)}"
    return frames.failed(
        "SandboxError",
        f"the program's process {how} before it replied; it probably ran out of memory "
        f"(limit {request['memory_mb']} MB). Work on smaller pieces of data.",
    )


def _stop(pid: int, outcome: dict) -> dict:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return outcome


def _failure(error_type: str, message: str) -> dict:
    result = ExecutionResult(False, error=message, error_type=error_type)
    return {"result": result.to_dict(), "session": None}


def _timeout_message(timeout: float) -> str:
    return (f"the program ran longer than the {timeout:g} s limit and was stopped; "
            "work on less data or raise [sandbox] timeout in .lackpy/config.toml")


def _too_big_message(request: dict) -> str:
    limit = int(request["max_result_bytes"]) / 1_000_000
    return (f"the program's result and variables are over the {limit:g} MB limit; "
            "return a smaller value (a slice, a count) or set big variables to None")


# --- the child -------------------------------------------------------------


def _child_main(write_end: int, request: dict, session: dict[str, Any]) -> None:
    """Run one program and write one frame; never returns."""
    code = 0
    try:
        _confine(request)
        frame = _run_request(request, session, lambda path: wire.write_frame(
            write_end, {"modified": path}))
        wire.write_all(write_end, _encode(frame, request))
    except BaseException as exc:
        try:
            message = f"the sandbox could not finish the program: {type(exc).__name__}: {exc}"
            wire.write_all(write_end, wire.dumps(_failure("SandboxError", message)))
        except BaseException:
            code = CHILD_FAILED
    os._exit(code)


def _encode(frame: dict, request: dict) -> bytes:
    """The frame's bytes, or a failure's when it cannot be sent whole."""
    try:
        data = wire.dumps(frame)
    except (RecursionError, MemoryError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "too large"
        message = f"the program's result is {reason} to send back"
    else:
        if len(data) <= int(request["max_result_bytes"]):
            return data
        message = _too_big_message(request)
    failure = _failure("ResultTooLarge", message)
    trace = frame["result"]["trace"]
    failure["result"]["trace"].update(files_read=trace["files_read"],
                                      files_modified=trace["files_modified"])
    return wire.dumps(failure)


def _confine(request: dict) -> None:
    _die_with_parent()
    memory = int(request["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = int(float(request["timeout"])) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    os.chdir(request["workspace"])


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the worker still kills its children at their deadline


def _run_request(request: dict, session: dict[str, Any], on_modified: Any) -> dict:
    workspace = Path(request["workspace"])
    try:
        toolbox = builtin_toolbox(workspace)
        kit = resolve_kit(request["kit"], toolbox, kits_dir=request.get("kits_dir"))
    except Exception as exc:
        failure = ExecutionResult(False, error=f"{type(exc).__name__}: {exc}", error_type="KitError")
        return {"result": failure.to_dict(), "session": None}
    result = RestrictedRunner().run(
        request["program"], kit.callables, request.get("params"), variables=session,
        on_file_modified=on_modified,
    )
    if result.error_type == "MemoryError":
        result.error += (f"; the limit is {request['memory_mb']} MB "
                         "([sandbox] memory_mb in .lackpy/config.toml)")
    return _reply(result, request)


def _reply(result: ExecutionResult, request: dict) -> dict:
    """The child's frame: the result in plain data, and the new session when kept."""
    session_blob, names = None, None
    if result.success:
        kept, dropped = _plain_variables(result.variables)
        if dropped:
            result.notes.append(
                "not kept (only plain data persists; wrap iterators in list(...)): "
                + ", ".join(f"{name} ({kind})" for name, kind in dropped)
            )
        result.variables = _shown(kept) if request.get("return_variables") else {}
        if request.get("keep", True):
            try:
                session_blob = pickle.dumps(kept, protocol=wire.PROTOCOL)
                names = {name: type(value).__name__ for name, value in kept.items()}
            except RecursionError:
                return _failure("RecursionError", "a variable is nested too deeply to keep "
                                "between programs; flatten it or set it to None")
        if find_non_plain(result.output) is not None:
            result.notes.append(f"the output, of type {type(result.output).__name__}, is shown as text")
            result.output = summarize(result.output)
    return {"result": result.to_dict(), "session": session_blob, "names": names}


def _shown(variables: dict[str, Any]) -> dict[str, Any]:
    """The variables, each that cannot be shown in full replaced by its summary."""
    return {name: value if display_problem(value) is None else summarize(value)
            for name, value in variables.items()}


def _plain_variables(variables: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    kept, dropped = {}, []
    for name, value in variables.items():
        bad = find_non_plain(value)
        if bad is None:
            kept[name] = value
        else:
            dropped.append((name, bad.__name__))
    return kept, dropped


if __name__ == "__main__":
    main()
