"""The sandbox worker: a single-threaded process that runs each program in a fresh forked child.

Run as ``python -m lackpy_kernel.run.worker`` (``spawn``). It reads requests from stdin and
writes replies to stdout (frames, see ``wire`` and ``protocol``); its first frame says it is
ready. It holds the session's variables. While it waits for a request it already holds the
next child (``child``), forked with the session as it is and waiting on its own pipe, so a
program only has to be sent. The child runs it under a memory limit and is killed at its
deadline (``_watch``), so a program that fails or is stopped leaves the session as it was,
and the files too (its writes were staged; the worker commits them only for a program that
succeeded); a program that succeeds sends back only the variables it may have changed (see
``commit``).
After a program that changed nothing a held twin takes over; in a run of programs back to
back the worker forks it while the program before runs (unless the last one changed the
session), so none of them waits for a fork; after one that changed the session the next
child is forked, after the reply. A child warms up (``child``) only when no request comes at once, and the
rest waits for a quiet moment (``Worker.tidy``). The worker ignores SIGINT and exits when
its parent closes stdin, taking its children with it.

Requests (``protocol``): a ``RunRequest`` (replied with a ``Reply``, after a ``Question``
when its file changes wait for a person's ``Verdict``), ``Cancel`` (stops the running
program; ignored between programs), ``Describe`` (replied with an ``Ack`` that holds the
description), ``Reset`` and ``Restore`` (replied with an ``Ack``). While a program runs, the
worker passes each ``ToolCall`` of a tool that runs in the kernel up and the kernel's
``Answer`` down to the child (``_calls``); a late answer is dropped.

Modules: ``_serve`` (the loop and the session), ``_children`` (forking, releasing, reaping
a child), ``_watch`` (a running child's frames, deadline and cancel), ``_calls`` (its
forwarded calls).
"""

from ..child import QUIET
from ._serve import MAX_TWINS, Worker, main

__all__ = ["MAX_TWINS", "QUIET", "Worker", "main"]
