"""README.md is true as written: its command-line walkthrough runs, in order, in an empty folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
WALKTHROUGH = "### The ratchet, from the command line"
README_FOLDER = "/tmp/demo"  # where the README's session ran
_TIMING = re.compile(r"\d+(?:\.\d+)? ms")


def walkthrough() -> list[tuple[str, list[str]]]:
    """Each ``$ command`` of the walkthrough's console block, with the lines it shows."""
    section = README.read_text(encoding="utf-8").split(WALKTHROUGH, 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def shown(lines: list[str], folder: Path) -> list[str]:
    """Lines as the README prints them: timings and the folder masked."""
    return [_TIMING.sub("N ms", line.replace(str(folder), README_FOLDER)) for line in lines]


def test_the_walkthrough_has_its_steps():
    commands = [command for command, _ in walkthrough()]
    assert commands[0].startswith("printf") and any(c.startswith("lackpy create") for c in commands)


def test_the_command_line_walkthrough_runs_as_written_in_an_empty_folder(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command, expected in walkthrough():
        done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        assert done.returncode == 0, f"$ {command}\n{done.stdout}"
        got = shown(done.stdout.splitlines(), folder.resolve())
        want = shown(expected, folder.resolve())
        if want[-1:] == ["..."]:  # the README shows the start of this output
            want, got = want[:-1], got[:len(want) - 1]
        assert got == want, f"$ {command}"


def test_lackpy_mcp_without_the_mcp_extra_names_the_extra(tmp_path):
    without_mcp = ("import sys; sys.modules['mcp'] = sys.modules['pydantic'] = None; "
                   "from lackpy_kernel.cli import main; sys.exit(main(['mcp']))")
    done = subprocess.run([sys.executable, "-c", without_mcp], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "pip install 'lackpy-kernel[mcp]'" in done.stderr
