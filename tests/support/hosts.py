"""The two notebook hosts of lackpy's magics, driven alike through jupyter_client.

``kernel`` is the lackpy kernel (its installed test kernelspec); ``ipython`` is a Python
kernel (ipykernel) that ran ``%load_ext lackpy_kernel``. A test of a magic takes a
``host`` and asserts on what it showed (:class:`Shown`), so the two cannot drift:

    def test_params(host):
        shown = host.run("%params n=3")
        assert shown.text == "n = 3"

A lackpy program runs as a plain cell in the kernel and as a ``%%lackpy`` cell in Python
(``host.program(code, kit=...)``). Known, documented differences a test must allow for:
IPython keeps its own ``%who``, ``%reset`` and ``%lsmagic``, and a failed program's error
is named by the program's error type in the kernel (``FileNotFoundError``) and by lackpy's
class in Python (``LackpyRuntimeError``); validation and usage errors, and a limit a program
ran past (``ProgramTimeoutError``, ``ProgramMemoryError``, ``ResultTooLargeError``), are
named alike. A text result shows as the text itself in the kernel and as its repr in
Python (``host.shown_text``).
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from tests.support.kernel import KERNEL_NAME, Kernel

HOSTS = ("kernel", "ipython")


@dataclass
class Shown:
    """What one cell showed: its status, streams, displays (with their updates), its
    result's text, its error and the next cell it asked for."""

    status: str
    stdout: str = ""
    stderr: str = ""
    displays: list[dict[str, Any]] = field(default_factory=list)  # display_data bundles
    updates: list[dict[str, Any]] = field(default_factory=list)  # update_display_data bundles
    result: str | None = None  # the execute_result's text/plain
    ename: str | None = None
    evalue: str | None = None
    traceback: list[str] = field(default_factory=list)
    next_input: dict[str, Any] | None = None  # the set_next_input payload: text, replace
    asked: str | None = None  # the prompt of the input request the cell made, if answered

    @property
    def text(self) -> str:
        """The text/plain of every display, joined by newlines."""
        return "\n".join(d.get("text/plain", "") for d in self.displays)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Host:
    """A running host: ``run`` sends a cell, ``program`` a lackpy program."""

    def __init__(self, name: str, kernel: Kernel) -> None:
        self.name, self.kernel = name, kernel

    def run(self, code: str, timeout: float = 60, *,
            answer: str | list[str] | None = None) -> Shown:
        """Execute ``code`` as one cell and collect what it showed; with ``answer``, stdin
        is allowed and the cell's one input request gets that answer (a list: one answer
        for each of its requests, in turn; ``asked`` is then the last prompt)."""
        if answer is None:
            outcome, asked = self.kernel.execute(code, timeout=timeout), None
        else:
            msg_id = self.kernel.client.execute(code, allow_stdin=True, stop_on_error=False)
            for given in [answer] if isinstance(answer, str) else answer:
                request = self.kernel.client.get_stdin_msg(timeout=timeout)
                assert request["msg_type"] == "input_request", request
                self.kernel.client.input(given)
                asked = request["content"]["prompt"]
            outcome = self.kernel.wait(msg_id, timeout)
        content = outcome.reply["content"]
        results = outcome.of("execute_result")
        payload = [p for p in content.get("payload", []) if p.get("source") == "set_next_input"]
        return Shown(
            status=content["status"], stdout=outcome.stream("stdout"),
            stderr=outcome.stream("stderr"),
            displays=[c["data"] for c in outcome.of("display_data")],
            updates=[c["data"] for c in outcome.of("update_display_data")],
            result=results[0]["data"]["text/plain"] if results else None,
            ename=content.get("ename"), evalue=content.get("evalue"),
            traceback=content.get("traceback", []),
            next_input=payload[0] if payload else None, asked=asked)

    def shown_text(self, text: str) -> str:
        """How the host shows a result that is the string ``text``."""
        return text if self.name == "kernel" else repr(text)

    def program(self, code: str, *, kit: str | None = None, timeout: float = 60,
                answer: str | None = None) -> Shown:
        """Run the lackpy program ``code`` (with ``kit``): a plain cell in the kernel (after
        ``%kit``, which stays set), a ``%%lackpy`` cell in Python; ``answer`` as ``run``."""
        if self.name == "kernel":
            return self.run(f"%kit {kit}\n{code}" if kit else code, timeout, answer=answer)
        return self.run(f"%%lackpy{f' --kit {kit}' if kit else ''}\n{code}", timeout,
                        answer=answer)


def run_error(host: Host, error_type: str) -> str:
    """The error name a failed plan or agent run (ended by ``error_type``) shows: that type
    in the kernel, the PlanStepError carrying it in Python (lackpy's class, for
    ``raises-exception`` cells)."""
    return error_type if host.name == "kernel" else "PlanStepError"


def _python_kernel_or_skip() -> None:
    spec = KernelSpecManager().get_kernel_spec("python3")
    if spec.argv[0] not in ("python", sys.executable):
        pytest.skip(f"the python3 kernelspec runs {spec.argv[0]}, not this interpreter")


@contextmanager
def running_host(name: str, workspace: Path, ipython_dir: Path) -> Iterator[Host]:
    """Host ``name`` started in ``workspace`` (the lackpy test kernelspec must be
    installed: take the ``installed_kernelspec`` fixture); closed after."""
    if name == "kernel":
        kernel = Kernel(workspace, KERNEL_NAME)
    else:
        _python_kernel_or_skip()
        kernel = Kernel(workspace, "python3", {**os.environ, "IPYTHONDIR": str(ipython_dir)})
    try:
        host = Host(name, kernel)
        if name == "ipython":
            loaded = host.run("%load_ext lackpy_kernel")
            assert loaded.ok, loaded
        yield host
    finally:
        kernel.close()


def host_with(workspace: Callable[..., Path], *, prefix: str = "ws", unset: Iterable[str] = (),
              env: Mapping[str, str] | None = None, first: str | None = None):
    """A module-scoped ``host`` fixture that runs each test on both :data:`HOSTS`.

    ``workspace(folder, ...)`` fills an empty folder (named ``{prefix}-{host}``) and returns
    the host's workspace; its parameters after the first name fixtures it takes (a module's
    ``server``). The host's process starts without the variables in ``unset`` and with
    ``env``; ``first`` is a cell each host runs, and must pass, before the module's tests::

        host = host_with(lambda folder: make_workspace(folder, CONFIG))
    """
    needs = list(inspect.signature(workspace).parameters)[1:]
    unset, env = tuple(unset), dict(env or {})

    @pytest.fixture(scope="module", params=HOSTS, name="host")
    def host(request, installed_kernelspec, tmp_path_factory) -> Iterator[Host]:
        given = {name: request.getfixturevalue(name) for name in needs}
        folder = workspace(tmp_path_factory.mktemp(f"{prefix}-{request.param}"), **given)
        with pytest.MonkeyPatch.context() as patch:  # what the host's process starts with
            for name in unset:
                patch.delenv(name, raising=False)
            for name, value in env.items():
                patch.setenv(name, value)
            with running_host(request.param, folder, tmp_path_factory.mktemp("ipython")) as running:
                if first is not None:
                    started = running.run(first)
                    assert started.ok, started
                yield running

    return host


__all__ = ["HOSTS", "Host", "Shown", "host_with", "run_error", "running_host"]
