"""jupyter_kernel_test's conformance suite against the installed lackpy kernelspec."""

from __future__ import annotations

import tempfile
from pathlib import Path

import jupyter_kernel_test
from jupyter_client.manager import start_new_kernel

from tests.support.kernel import KERNEL_NAME, make_workspace

IOPUB_PATIENCE_S = 30


class LackpyKernelConformance(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL_NAME
    language_name = "lackpy"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    # code_stderr is left unset: a lackpy program cannot write to stderr (no sys, no files).

    completion_samples = [
        {"text": "read_f", "matches": {"read_file"}},
        {"text": "sor", "matches": {"sort_by", "sorted"}},
    ]
    complete_code_samples = ["x = 1", "%kit", "print('done')"]
    incomplete_code_samples = ["for x in range(3):", "x = [1,", "if x:"]
    invalid_code_samples = ["x = )", "for for"]

    # code_page_something is left unset: lackpy has no help syntax that opens a pager.

    code_generate_error = "1 / 0"

    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "'abc'.upper()", "result": "ABC"},
        {"code": "[1, 2]", "result": "[1, 2]"},
        {"code": "{str(g): [{'i': i} for i in range(20)] for g in range(3)}",
         "mime": "application/json"},
        {"code": "[{'a': 1}]", "mime": "text/html"},
    ]
    code_display_data = [
        {"code": "%kit", "mime": "text/plain"},
        {"code": "len(read_file('notes.txt'))", "mime": "text/html"},  # the trace
    ]

    code_history_pattern = "1 + *"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "read_file"

    # code_clear_output is left unset: a lackpy program cannot clear its output.

    @classmethod
    def setUpClass(cls) -> None:
        cls._workspace = tempfile.TemporaryDirectory()
        workspace = make_workspace(Path(cls._workspace.name))
        cls.km, cls.kc = start_new_kernel(kernel_name=cls.kernel_name, cwd=str(workspace))

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls._workspace.cleanup()

    def execute_helper(self, *args, **kwargs):
        """The suite's own helper, with iopub waits a busy machine can meet: it waits 1 s for
        the busy status and 0.1 s for each later message, and on a machine whose cores are busy
        iopub can trail the shell reply by more (the suite then failed with queue.Empty)."""
        channel = self.kc.iopub_channel
        quick = channel.get_msg
        channel.get_msg = lambda timeout=None: quick(timeout=IOPUB_PATIENCE_S)
        try:
            return super().execute_helper(*args, **kwargs)
        finally:
            channel.get_msg = quick
