"""ACP benchmark: a template-answered prompt through ``lackpy acp`` beside the same intent
through ``lackpy delegate``, in one run.

    PYTHONPATH=. python benchmarks/bench_acp.py [--quick]

One temporary workspace holds ``notes.txt`` and a template matching "what should I
remember" (``read_file('notes.txt')``), so every answer below costs zero model calls and
runs one traced tool call in the sandbox. Measured alternately (the order flips every
round), so that load on the machine falls on each alike:

1. Cold, one answer from nothing, as a person's first prompt or one command costs:
   - ACP: spawn ``python -m lackpy_kernel acp``, ``initialize``, ``session/new``, then
     ``session/prompt`` until its response, then close stdin and wait for the exit;
   - CLI: ``python -m lackpy_kernel delegate --workspace WS "what should I remember"`` until
     it exits (its output checked).
2. Warm, the second and later prompts of a session: ``session/prompt`` to its response on a
   running agent (the SDK's own client over stdio; the session's sandbox worker warm),
   beside ``LackpySession.delegate(intent, run=True)`` on a warm session in this process
   (the same session and service code without the protocol): the difference is what ACP
   adds (JSON-RPC over pipes, the session updates, the session's record saved).
3. Cancel: ``session/cancel`` sent while a template's endless program runs in the sandbox,
   to the prompt's ``cancelled`` response (the issue's goal: within a second).

Times are medians and p90 in milliseconds; the ratio is ACP / peer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession

INTENT = "what should I remember"
ANSWER = "remember the milk"
SPIN = "spin the wheel"


class QuietClient:
    """A client that keeps the agent's messages and grants nothing."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.running = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "status", None) == "in_progress":
            self.running.set()
        content = getattr(update, "content", None)
        if getattr(update, "session_update", "") == "agent_message_chunk" and content:
            self.text.append(content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a template that reads asks nothing")

    def on_connect(self, conn: Any) -> None:
        pass


def make_workspace(root: Path) -> Path:
    (root / "notes.txt").write_text(f"{ANSWER}\n")
    templates = root / ".lackpy" / "templates"
    templates.mkdir(parents=True)
    (templates / "remember.tmpl").write_text(
        f"---\nname: remember\npattern: {INTENT}\n---\nread_file('notes.txt')\n")
    (templates / "spin.tmpl").write_text(
        f"---\nname: spin\npattern: {SPIN}\n---\nsum(range(1000000000000))\n")
    return root


async def acp_cold(workspace: Path) -> float:
    client = QuietClient()
    started = time.perf_counter()
    async with spawn_agent_process(client, sys.executable, "-m", "lackpy_kernel", "acp",
                                   cwd=workspace, env=os.environ) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block(INTENT)])
    elapsed = time.perf_counter() - started
    await asyncio.sleep(0.05)  # the last message's notification
    assert ANSWER in "".join(client.text), client.text
    return elapsed


def cli_cold(workspace: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "lackpy_kernel", "delegate", "--workspace",
                           str(workspace), INTENT], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - started
    assert ANSWER in done.stdout, done.stdout
    return elapsed


async def warm(workspace: Path, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"acp": [], "session": []}
    client = QuietClient()
    service = LackpyService(workspace)
    local = LackpySession(service)
    async with spawn_agent_process(client, sys.executable, "-m", "lackpy_kernel", "acp",
                                   cwd=workspace, env=os.environ) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])

        async def through_acp() -> None:
            await conn.prompt(session_id=session.session_id, prompt=[text_block(INTENT)])

        async def in_process() -> None:
            delegation = await local.delegate(INTENT, run=True)
            assert delegation.result is not None and delegation.result.success

        for warm_up in (through_acp, in_process):
            await warm_up()
        for index in range(rounds):
            pair = [("acp", through_acp), ("session", in_process)]
            for name, run in pair if index % 2 == 0 else pair[::-1]:
                started = time.perf_counter()
                await run()
                times[name].append(time.perf_counter() - started)
    local.close()
    service.close()
    return times


async def cancels(workspace: Path, rounds: int) -> list[float]:
    """Seconds from ``session/cancel`` to the cancelled prompt's response, one a round."""
    times = []
    client = QuietClient()
    async with spawn_agent_process(client, sys.executable, "-m", "lackpy_kernel", "acp",
                                   cwd=workspace, env=os.environ) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        for _ in range(rounds):
            client.running.clear()
            spinning = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[text_block(SPIN)]))
            await client.running.wait()
            await asyncio.sleep(0.2)  # the program is in the sandbox by now
            started = time.perf_counter()
            await conn.cancel(session_id=session.session_id)
            response = await spinning
            times.append(time.perf_counter() - started)
            assert response.stop_reason == "cancelled", response
    return times


def summary(name: str, samples: list[float]) -> str:
    ms = sorted(1000 * s for s in samples)
    p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
    return f"{name:<34} median {statistics.median(ms):8.1f} ms   p90 {p90:8.1f} ms   (n={len(ms)})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    cold_rounds, warm_rounds = (3, 20) if args.quick else (10, 100)
    with tempfile.TemporaryDirectory() as folder:
        workspace = make_workspace(Path(folder))
        cold: dict[str, list[float]] = {"acp": [], "cli": []}
        for index in range(cold_rounds):
            order = ["acp", "cli"] if index % 2 == 0 else ["cli", "acp"]
            for name in order:
                cold[name].append(await acp_cold(workspace) if name == "acp"
                                  else cli_cold(workspace))
        hot = await warm(workspace, warm_rounds)
        cancelled = await cancels(workspace, cold_rounds)
    print(f"a template-answered prompt ({INTENT!r}: zero model calls, one read in the sandbox)")
    print("cold: from nothing to the answer")
    print(summary("  lackpy acp (spawn..prompt..exit)", cold["acp"]))
    print(summary("  lackpy delegate (spawn..exit)", cold["cli"]))
    ratio = statistics.median(cold["acp"]) / statistics.median(cold["cli"])
    print(f"  ratio acp / delegate: {ratio:.2f}")
    print("warm: a later prompt in a running session")
    print(summary("  session/prompt over ACP", hot["acp"]))
    print(summary("  LackpySession.delegate here", hot["session"]))
    ratio = statistics.median(hot["acp"]) / statistics.median(hot["session"])
    print(f"  ratio acp / in-process: {ratio:.2f}")
    print("cancel: session/cancel while the sandboxed program runs, to the response")
    print(summary("  session/cancel (goal: < 1000 ms)", cancelled))


if __name__ == "__main__":
    asyncio.run(main())
