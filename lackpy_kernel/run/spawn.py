"""Starting the sandbox worker process, cheaply enough to do first thing in a kernel.

This module imports nothing else of ours, so ``python -m lackpy_kernel`` can start
the worker before it imports Jupyter: the worker then boots while the kernel does,
and the kernel's first ``Sandbox`` adopts it (``start_early``, ``adopt_early``).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from pathlib import Path

WORKER_MODULE = "lackpy_kernel.run.worker"
_early: dict[str, subprocess.Popen[bytes]] = {}


def spawn_worker(workspace: str | os.PathLike[str]) -> subprocess.Popen[bytes]:
    """A new worker process in ``workspace``, its stdin and stdout our pipes to it."""
    return subprocess.Popen(
        # -S: the worker needs the standard library and this package only (PYTHONPATH)
        [sys.executable, "-S", "-m", WORKER_MODULE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,  # Ctrl-C in a terminal reaches us, not the worker
        cwd=workspace,
        env=_worker_env(),
    )


def start_early(workspace: str | os.PathLike[str]) -> None:
    """Start a worker for ``workspace`` now, for this process's first sandbox there to adopt.

    One nobody adopts is stopped when this process exits.
    """
    key = os.path.realpath(workspace)
    if key not in _early:
        if not _early:
            atexit.register(discard_early)
        _early[key] = spawn_worker(key)


def adopt_early(workspace: str | os.PathLike[str]) -> subprocess.Popen[bytes] | None:
    """The worker ``start_early`` started for ``workspace``, if it still runs (once)."""
    process = _early.pop(os.path.realpath(workspace), None)
    if process is not None and process.poll() is not None:
        stop_worker(process)
        return None
    return process


def discard_early() -> None:
    """Stop the workers started early that no sandbox adopted."""
    while _early:
        stop_worker(_early.popitem()[1])


def stop_worker(process: subprocess.Popen[bytes], *, timeout: float = 5.0) -> None:
    """Close the worker's stdin (it then stops its child and exits) and wait for it;
    kill it if it has not gone within ``timeout`` seconds."""
    if process.stdin:
        try:
            process.stdin.close()
        except OSError:
            pass  # a broken pipe: it is gone already
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout:
        process.stdout.close()


def _worker_env() -> dict[str, str]:
    """The environment for the worker: ours, with our package importable."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env["PYTHONSAFEPATH"] = "1"
    return env
