"""The sandbox worker imports only what a program needs: what a mistake, a config file, a
shown change or a question needs is imported where it is used, so every worker and every
child it forks holds less memory."""

import pytest

from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

LAZY = {"tempfile", "tomllib", "difflib", "hashlib", "concurrent.futures"}


def _imported(stderr: str) -> set[str]:
    """The modules named in ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def test_a_worker_that_ran_a_trivial_program_imported_none_of_the_lazy_modules(
        tmp_path, monkeypatch, capfd):
    # the worker (spawned as every sandbox spawns it) and its children inherit our stderr
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    with Sandbox(tmp_path, SandboxLimits(timeout=10), approve_writes=False) as box:
        result = box.run("n = 1 + 1\nn", ["read_file"])
    assert result.success, result.error
    assert result.output == 2
    imported = _imported(capfd.readouterr().err)
    assert "lackpy_kernel.run.worker._serve" in imported  # the report did come from the worker
    assert imported & LAZY == set()


def test_a_mistake_still_gets_its_suggestion_from_the_worker(tmp_path):
    with Sandbox(tmp_path, SandboxLimits(timeout=10), approve_writes=False) as box:
        result = box.run("read_fle('a.txt')", ["read_file"])
    assert not result.success
    assert "read_file" in str(result.error)
