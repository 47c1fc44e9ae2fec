"""The kernel and its sandbox worker: started with the kernel, cheap cells, nothing left behind."""

from __future__ import annotations

from pathlib import Path

from tests.support.kernel import Kernel, make_workspace, wait_for_exit
from tests.support.processes import children_of, gone, workers_of


def test_the_kernel_starts_its_worker_at_start_up_and_the_first_cell_uses_it(tmp_path):
    kernel = Kernel(make_workspace(tmp_path))
    try:
        started = workers_of(kernel.pid)
        assert len(started) == 1, "the kernel should start one worker as it starts"
        assert kernel.execute("len(read_file('notes.txt'))").result() == "17"
        assert workers_of(kernel.pid) == started
    finally:
        kernel.close()


def test_a_cell_sent_while_the_kernel_starts_waits_for_its_worker(tmp_path):
    kernel = Kernel(make_workspace(tmp_path), wait=False)
    try:
        msg_id = kernel.client.execute("x = 20")  # queued before the kernel is up
        reply = kernel.client.get_shell_msg(timeout=60)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "ok", reply["content"]
        kernel.client.wait_for_ready(timeout=60)  # IOPub too, for the next cell's result
        assert len(workers_of(kernel.pid)) == 1
        assert kernel.execute("x * 2").result() == "40"
    finally:
        kernel.close()


def test_a_session_holding_a_large_value_sends_it_once(tmp_path):
    kernel = Kernel(make_workspace(tmp_path))
    try:
        assert kernel.execute("big = 'x' * 50000000\nlen(big)").result() == "50000000"
        (worker,) = workers_of(kernel.pid)
        written = _bytes_written(worker)
        for _ in range(5):
            assert kernel.execute("1 + 1").result() == "2"
        assert _bytes_written(worker) - written < 1_000_000
        assert kernel.execute("big[:3]").result() == "xxx"
    finally:
        kernel.close()


def test_a_polite_shutdown_leaves_no_process(tmp_path):
    kernel = Kernel(make_workspace(tmp_path))
    try:
        kernel.execute("x = 1")
        (worker,) = workers_of(kernel.pid)
        processes = [worker, *children_of(worker)]
        kernel.client.shutdown()
        assert wait_for_exit(kernel), "the kernel did not exit on the shutdown request"
        for pid in processes:
            assert gone(pid), f"process {pid} outlived the kernel"
    finally:
        kernel.close()


def _bytes_written(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/PID/io")


def test_a_cell_is_atomic_for_files(tmp_path):
    workspace = make_workspace(tmp_path, '[sandbox]\napprove = "never"\n')  # no one to ask
    kernel = Kernel(workspace)
    try:
        assert kernel.execute("%kit read_file,write_file").status == "ok"
        failed = kernel.execute("write_file('one.txt', '1')\nwrite_file('sub/two.txt', '2')\n"
                                "read_file('missing.txt')")
        assert failed.status == "error"
        assert not (workspace / "one.txt").exists() and not (workspace / "sub").exists()
        done = kernel.execute("write_file('one.txt', '1')\nwrite_file('sub/two.txt', '2')\n"
                              "read_file('sub/two.txt')")
        assert done.result() == "2"
        assert (workspace / "one.txt").read_text() == "1"
        assert (workspace / "sub" / "two.txt").read_text() == "2"
    finally:
        kernel.close()
