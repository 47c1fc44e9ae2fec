"""What a cell sends to the front end, and the error that ends a cell."""

from __future__ import annotations

from typing import Any

from lackpy_kernel.display import ErrorReport, output_bundle, program_error, trace_bundle
from lackpy_kernel.run import ExecutionResult


class CellError(Exception):
    """Ends a cell with an error reply: ``ename``, ``evalue`` and the traceback lines."""

    def __init__(self, ename: str, evalue: str, traceback: list[str] | None = None) -> None:
        super().__init__(evalue)
        self.ename, self.evalue = ename, evalue
        self.traceback = traceback or [f"{ename}: {evalue}"]

    @classmethod
    def of(cls, report: ErrorReport) -> CellError:
        """The CellError that shows ``report``."""
        return cls(report.ename, report.evalue, report.traceback)


class CellOutput:
    """Streams, displays, the result and payloads of the cell that is running.

    ``kernel`` is the ipykernel ``Kernel`` whose IOPub socket carries them; nothing is
    sent for a silent cell.
    """

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self.silent = False
        self.payload: list[dict[str, Any]] = []
        self.last_output = ""  # the text of the cell's result, kept in the history

    def start(self, *, silent: bool) -> None:
        """Begin a new cell."""
        self.silent = silent
        self.payload = []
        self.last_output = ""

    def stream(self, name: str, text: str) -> None:
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
            self._send("execute_result", {"execution_count": self._kernel.execution_count,
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
        self._kernel.send_response(self._kernel.iopub_socket, msg_type, content)


def show_result(output: CellOutput, result: ExecutionResult, program: str) -> None:
    """Show what a program printed, its notes, its trace and its result; raises CellError
    when it failed."""
    output.stream("stdout", result.stdout)
    for note in result.notes:
        output.stream("stderr", f"lackpy: {note}\n")
    if result.trace.entries:
        output.display(trace_bundle(result.trace, compact=True))
    if not result.success:
        raise CellError.of(program_error(result, program))
    if result.output is not None:
        output.result(output_bundle(result.output))
