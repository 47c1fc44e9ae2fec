"""What a cell sends to the front end: the notebook port over IOPub."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import zmq

from lackpy_kernel.errors import UsageError
from lackpy_kernel.notebook import Bundle, NotebookError, ProgramCell, StreamName, no_input
from lackpy_kernel.notebook.bundles import output_bundle

if TYPE_CHECKING:
    from ipykernel.kernelbase import Kernel

    from lackpy_kernel.session import LackpySession

CellError = NotebookError  # the kernel's name for the error that ends a cell
# its cells are lackpy already; its session's programs run where the first one ran
KERNEL_LACKS = frozenset({"lackpy", "delegate --no-sandbox"})
ASK_POLL_MS = 10  # how often a question checks whether its cell was stopped
IOPUB_FLUSH_S = 5.0  # the most a question waits for the output before it to go out


class CellOutput:
    """Streams, displays, the result and payloads of the cell that is running.

    ``kernel`` is the ipykernel ``Kernel`` whose IOPub socket carries them; nothing is
    sent for a silent cell.
    """

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.silent = False
        self.payload: list[dict[str, Any]] = []
        self.last_output = ""  # the text of the cell's result, kept in the history
        self.cell_over = threading.Event()  # set when the cell that is running ends
        self._asking = threading.Lock()  # one question on the stdin channel at a time

    def start(self, *, silent: bool) -> None:
        """Begin a new cell."""
        self.silent = silent
        self.payload = []
        self.last_output = ""
        self.cell_over = threading.Event()

    def end(self) -> None:
        """The cell ended (its reply is sent): a question it left unanswered is abandoned."""
        self.cell_over.set()

    def ask(self, prompt: str, *, password: bool = False) -> str:
        """The front end's answer to ``prompt``: an ``input_request`` on the stdin channel,
        asked from any thread of the cell. A cell that ends before the answer (the stop
        button) abandons the question: KeyboardInterrupt. EOFError for end of input (the
        answer ``\\x04``). Unlike ipykernel's ``raw_input``, a question never outlives its
        cell, so an abandoned one cannot take the next question's answer; and a reply is
        taken only for the question it answers (``_answers``): one naming another question
        as its parent (a late answer, a double click) is dropped, as is one that came while
        no question was asked."""
        kernel, cell_over = self.kernel, self.cell_over
        session = kernel.session
        assert session is not None  # a running kernel has its session
        with self._asking:
            ident = kernel._get_shell_context_var(kernel._shell_parent_ident)
            parent = kernel.get_parent("shell")
            _drop_stale_replies(kernel.stdin_socket)
            _iopub_sent(kernel)
            request = session.send(kernel.stdin_socket, "input_request",
                                   {"prompt": prompt, "password": password}, parent,
                                   ident=ident)
            assert request is not None  # None only when sent from a forked process
            while not cell_over.is_set():
                if kernel.stdin_socket.poll(ASK_POLL_MS):
                    _, reply = session.recv(kernel.stdin_socket)
                    if reply is not None and _answers(reply, request):
                        return _answer(reply)
        raise KeyboardInterrupt("the cell was stopped before the question was answered")

    def stream(self, name: StreamName, text: str) -> None:
        """Write ``text`` to the cell's stdout or stderr."""
        if text and not self.silent:
            self._send("stream", {"name": name, "text": text})

    def display(self, data: dict[str, Any], display_id: str | None = None) -> None:
        """Show a display bundle under the cell; one with ``display_id`` can be updated."""
        if not self.silent:
            transient = {"transient": {"display_id": display_id}} if display_id else {}
            self._send("display_data", {"data": data, "metadata": {}, **transient})

    def update_display(self, data: dict[str, Any], display_id: str) -> None:
        """Replace what the display ``display_id`` shows."""
        if not self.silent:
            self._send("update_display_data", {"data": data, "metadata": {},
                                               "transient": {"display_id": display_id}})

    def result(self, data: dict[str, Any]) -> None:
        """Show the cell's result (``Out[n]``)."""
        self.last_output = data.get("text/plain", "")
        if not self.silent:
            self._send("execute_result", {"execution_count": self.kernel.execution_count,
                                          "data": data, "metadata": {}})

    def error(self, error: CellError) -> dict[str, Any]:
        """Show ``error``; returns the content of the error reply."""
        content = {"ename": error.ename, "evalue": error.evalue, "traceback": error.traceback}
        if not self.silent:
            self._send("error", content)
        return content

    def next_input(self, text: str, *, replace: bool = False) -> None:
        """Ask the front end to put ``text`` in the next cell (or this one, with ``replace``)."""
        self.payload.append({"source": "set_next_input", "text": text, "replace": replace})

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self.kernel.send_response(self.kernel.iopub_socket, msg_type, content)


class KernelPort:
    """The notebook port over the kernel's cell output; the notebook's variables are the
    session's."""

    def __init__(self, output: CellOutput, session: LackpySession) -> None:
        self.output, self.session = output, session

    def stream(self, name: StreamName, text: str) -> None:
        self.output.stream(name, text)

    def display(self, bundle: Bundle, display_id: str | None = None) -> None:
        self.output.display(bundle, display_id)

    def update_display(self, bundle: Bundle, display_id: str) -> None:
        self.output.update_display(bundle, display_id)

    def live(self) -> bool:
        return True

    def result(self, value: Any, *, shown: bool = False) -> None:
        if value is not None and not shown:
            self.output.result(output_bundle(value))

    def next_input(self, text: str, *, replace: bool = False) -> None:
        self.output.next_input(text, replace=replace)

    def ask(self, prompt: str, *, password: bool = False) -> str:
        if not getattr(self.output.kernel, "_allow_stdin", False):
            raise no_input(prompt)
        if self.output.silent:  # it would ask about what it never showed
            raise no_input(prompt, "a silent request shows no output")
        return self.output.ask(prompt, password=password)

    def program_cell(self, cell: ProgramCell) -> str:
        return cell.lackpy_cell()

    async def variable(self, name: str) -> Any:
        if name not in self.session.variable_types and name not in self.session.params:
            raise UsageError(f"no variable {name!r}: make a list first, e.g. {name} = "
                             f"['a.txt', 'b.txt']")
        result = await self.session.run(name)
        return result.raise_for_error().output

    def assign(self, name: str, value: Any) -> None:
        raise UsageError(f"the lackpy kernel has no Python namespace to bind {name!r} in")

    def offers(self, magic: str) -> bool:
        return magic not in KERNEL_LACKS

    def notebook_values(self, names: set[str] | frozenset[str] | None = None
                        ) -> Mapping[str, Any] | None:
        return None


def _iopub_sent(kernel: Kernel) -> None:
    """Return once what the cell sent on IOPub (the diff a question is about) is on its
    socket: IOPub goes out through ipykernel's IO thread, and a busy machine otherwise
    delivered the question before the diff (``jupyter console`` then asked first)."""
    thread = getattr(kernel.iopub_socket, "io_thread", None)
    if thread is None:
        return
    sent = threading.Event()
    thread.schedule(sent.set)
    sent.wait(IOPUB_FLUSH_S)


def _drop_stale_replies(socket: zmq.Socket[Any]) -> None:
    """Read away answers to questions no one waits for any more."""
    while True:
        try:
            socket.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return


def _answers(reply: dict[str, Any], request: dict[str, Any]) -> bool:
    """Whether ``reply`` answers the input_request ``request``: an input_reply whose parent
    is that request, or that names no parent (``jupyter_client``'s ``input``, which ``jupyter
    console`` sends, binds none; JupyterLab's stdin box names the request it answers)."""
    parent = (reply.get("parent_header") or {}).get("msg_id")
    return reply.get("msg_type") == "input_reply" and parent in (None, "",
                                                                 request["header"]["msg_id"])


def _answer(reply: dict[str, Any]) -> str:
    value = reply.get("content", {}).get("value", "")
    if value == "\x04":
        raise EOFError("the front end ended the input")
    return str(value)
