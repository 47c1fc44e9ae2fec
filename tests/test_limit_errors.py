"""A program stopped at a sandbox limit shows the same error on both hosts (the lackpy
kernel and ``%%lackpy`` in Python): lackpy's class for that limit, saying which limit."""

from __future__ import annotations

import pytest

from lackpy_kernel.run import sandbox_supported
from tests.support.hosts import Host, host_with
from tests.support.kernel import make_workspace

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the limits are the sandbox's")

CONFIG = "[sandbox]\ntimeout = 2\nmemory_mb = 256\nmax_result_mb = 8\n"


host = host_with(lambda folder: make_workspace(folder, CONFIG))


@pytest.mark.parametrize(("program", "ename", "says"), [
    ("sum(range(1000000000000))", "ProgramTimeoutError", "the 2 s limit"),
    ("big = 'x' * 100000000000", "ProgramMemoryError", "256 MB"),
    ("'x' * 9000000", "ResultTooLargeError", "the 8 MB limit"),
])
def test_a_limit_is_named_by_lackpys_class_on_both_hosts(host: Host, program, ename, says):
    shown = host.program(program)
    assert shown.status == "error" and shown.ename == ename, shown
    assert says in shown.evalue
    assert any(ename in line for line in shown.traceback)
    assert host.program("1 + 1").result == "2"
