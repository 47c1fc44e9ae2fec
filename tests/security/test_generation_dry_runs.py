"""Attacks through generation's dry runs: a model that writes programs which write files.

The dispatcher runs each valid program a model wrote before it returns one (issue 30). That
run is a program run like any other: validated first, under the limits, in the sandbox; and
nothing it writes lands, whether one program is checked or several samples are. Outside the
sandbox a program that could write is not run at all. Real service, real OpenAI client, a
loopback model server, the real sandbox worker.
"""

from __future__ import annotations

import pytest

from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.service import LackpyService
from tests.support import loopback as lb

KIT = ["read_file", "write_file", "edit_file"]
# names every file it touches: the grounding check leaves the program alone
INTENT = "write pwned.txt and notes.txt, edit src/app.py, then read pwned.txt"
WRITER = ("write_file('pwned.txt', 'owned')\nwrite_file('notes.txt', 'changed')\n"
          "edit_file('src/app.py', 'x = 1', 'x = 2')\nlen(read_file('pwned.txt'))")


@pytest.fixture(autouse=True)
def _env(model_env):
    """No proxy or base-URL variable reaches the client."""


def workspace_with(tmp_path, url: str, *, sandbox: bool, samples: int = 1):
    (tmp_path / "notes.txt").write_text("original\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["local"]\n\n[inference.providers.local]\nplugin = "openai"\n'
        f'base_url = "{url}/v1"\nmodel = "m"\nraw = true\nmax_retries = 0\nrequest_timeout = 5\n'
        f"samples = {samples}\ntemperature = 0.5\n\n[sandbox]\nenabled = {str(sandbox).lower()}\n")
    return tmp_path


def untouched(workspace) -> bool:
    return (not (workspace / "pwned.txt").exists()
            and (workspace / "notes.txt").read_text() == "original\n"
            and (workspace / "src" / "app.py").read_text() == "x = 1\n"
            and not any((workspace / ".lackpy").glob("staging/*/*")))


@pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
@pytest.mark.parametrize("samples", [1, 3])
async def test_a_candidate_that_writes_files_is_run_and_nothing_lands(tmp_path, samples):
    with lb.LoopbackServer(default=lb.openai_answer(WRITER)) as server:
        workspace = workspace_with(tmp_path, server.url, sandbox=True, samples=samples)
        with LackpyService(workspace) as service:
            generated = await service.generate(INTENT, kit=KIT)
        assert len(server.requests) == samples
    dry = generated.dry_run
    assert dry is not None and dry.success and dry.output == len("owned")  # it ran, and read its own write
    assert sorted(dry.trace["files_modified"]) == ["notes.txt", "pwned.txt", "src/app.py"]
    assert untouched(workspace)


@pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
async def test_a_candidate_that_writes_then_fails_leaves_nothing_and_its_fix_leaves_nothing(tmp_path):
    failing = "write_file('pwned.txt', 'owned')\nread_file('missing.txt')"
    with lb.LoopbackServer() as server:
        server.script(lb.openai_answer(failing), lb.openai_answer(WRITER))
        workspace = workspace_with(tmp_path, server.url, sandbox=True)
        with LackpyService(workspace) as service:
            generated = await service.generate(INTENT, kit=KIT)
    assert generated.program == WRITER and generated.correction_strategy == "feedback"
    assert untouched(workspace)


async def test_without_the_sandbox_a_program_that_writes_is_not_dry_run(tmp_path):
    with lb.LoopbackServer(default=lb.openai_answer(WRITER)) as server:
        workspace = workspace_with(tmp_path, server.url, sandbox=False)
        with LackpyService(workspace) as service:
            generated = await service.generate(INTENT, kit=KIT)
    assert generated.dry_run is not None and generated.dry_run.skipped is not None
    assert "without the sandbox" in generated.dry_run.skipped
    assert untouched(workspace)


@pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
async def test_a_dry_run_is_validated_and_bounded_like_any_run(tmp_path):
    # a sample that would run forever is stopped by the limit, dropped, and the other chosen
    with lb.LoopbackServer() as server:
        server.script(lb.openai_answer("sum(range(1000000000000))"),
                      lb.openai_answer("len(read_file('notes.txt'))"))
        workspace = workspace_with(tmp_path, server.url, sandbox=True, samples=2)
        (workspace / ".lackpy" / "config.toml").write_text(
            (workspace / ".lackpy" / "config.toml").read_text() + "timeout = 2\n")
        with LackpyService(workspace) as service:
            generated = await service.generate("how long are the notes", kit=KIT)
    assert generated.program == "len(read_file('notes.txt'))"
    stopped = [entry for entry in generated.attempts_log if entry["step"] == "dry run"][0]
    assert "ran longer than the 2 s limit and was stopped" in stopped["did"]
