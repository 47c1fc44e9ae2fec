"""README.md is true as written: its command-line walkthrough runs, in order, in an empty folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from lackpy_kernel.config import SCHEMA, TOOL_SOURCE_KEYS
from lackpy_kernel.infer.models import COMMON_KEYS
from lackpy_kernel.notebook.bundles import CHANGES_MIME
from tests.support import acp_client
from tests.support.kernel import KERNEL_NAME, Kernel

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


def config_blocks(text: str) -> dict[str, set[str]]:
    """The keys of each section the README's ``toml`` blocks set."""
    keys: dict[str, set[str]] = {}
    for block in re.findall(r"```toml\n(.*?)```", text, re.S):
        for section, table in tomllib.loads(block).items():
            keys.setdefault(section, set()).update(table)
    return keys


def test_the_readme_documents_every_config_key_and_no_other():
    text = README.read_text(encoding="utf-8")
    shown = config_blocks(text)
    undocumented = [f"[{section}] {key}" for section, keys in SCHEMA.items() for key in keys
                    if key not in shown.get(section, ()) and f"[{section}] {key}" not in text]
    unparsed = [f"[{section}] {key}" for section, keys in shown.items() for key in keys
                if key not in SCHEMA.get(section, {})]
    assert (undocumented, unparsed) == ([], [])
    source_or_tier = sorted({*TOOL_SOURCE_KEYS, *COMMON_KEYS})
    assert [key for key in source_or_tier
            if not re.search(rf"`{key}[`. ]|^{key} = ", text, re.M)] == []


def test_lackpy_mcp_without_the_mcp_extra_names_the_extra(tmp_path):
    without_mcp = ("import sys; sys.modules['mcp'] = sys.modules['pydantic'] = None; "
                   "from lackpy_kernel.cli import main; sys.exit(main(['mcp']))")
    done = subprocess.run([sys.executable, "-c", without_mcp], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "pip install 'lackpy-kernel[mcp]'" in done.stderr


# -- a template that needs another kit: the error names it ------------------------------

NEEDS_A_KIT = "the error names the\nkit that runs it"


def test_a_template_needing_another_kit_fails_as_the_readme_shows(tmp_path):
    section = README.read_text(encoding="utf-8").split(NEEDS_A_KIT, 1)[1]
    command, *expected = section.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    (tmp_path / "defs.lackpy").write_text("find_definitions('main')\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for step in ("lackpy create defs.lackpy --name defs --pattern 'find the main definition' "
                 "--kit find_definitions", command.removeprefix("$ ")):
        done = subprocess.run(["bash", "-c", step], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert done.returncode == 1 and done.stdout.splitlines() == expected


# -- the chat: the folder the README prepares, the prompt it writes ----------------------

CHAT = "Open a chat there (File > New > Chat) and write `@lackpy "


def chat_example() -> tuple[list[str], str]:
    """The commands that prepare the chat's folder, and the prompt the README writes (less
    the ``@lackpy`` that the persona takes off before it reaches ``lackpy acp``)."""
    before, after = README.read_text(encoding="utf-8").split(CHAT, 1)
    block = before.rsplit("```sh\n", 1)[1].split("```", 1)[0]
    return block.splitlines(), after.split("`", 1)[0]


async def test_the_chat_example_runs_as_written_in_an_empty_folder(tmp_path):
    commands, said = chat_example()
    assert said == "what should I remember"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        assert done.returncode == 0, f"$ {command}\n{done.stdout}"
    async with acp_client.lackpy_acp(tmp_path, client_name="Jupyter AI") as (conn, client, _):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await acp_client.prompt(conn, session.session_id, said)
        assert client.tool_calls()[0].title.startswith("lackpy program (written by templates in ")
        assert client.messages() == (acp_client.block("remember the milk") + "\n\nlackpy: answered by the "
                                     "template remember: no model call")


# -- the kernel tour's write: the change shown, the question, %undo ---------------------

TOUR_WRITE = "[6]: %kit read_file,write_file"
TOUR_NOTES = "alpha\nbeta\ngamma\n"  # the tour's notes.txt (len(text) is 17)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def tour_write_block() -> list[list[str]]:
    """The tour's write cells as the README shows them: one list of lines a cell."""
    text = README.read_text(encoding="utf-8")
    block = text[text.index(TOUR_WRITE):].split("```", 1)[0]
    return [cell.splitlines() for cell in block.strip("\n").split("\n\n")]


def cell_code(lines: list[str]) -> tuple[int, str]:
    """A shown cell's number and code: its first line, and, for a cell that ends in an
    expression (``'written'``), the lines down to it; the rest is output."""
    number, first = lines[0][1:].split("]: ", 1)
    ends = [at for at, line in enumerate(lines) if line.startswith("     '")]
    code = [first, *(line[5:] for line in lines[1:ends[0] + 1])] if ends else [first]
    return int(number), "\n".join(code)


def transcript(number: int, code: str, outcome: Any, asked: str | None) -> list[str]:
    """What the kernel sent for a cell, shown as the README shows it."""
    lines = [f"[{number}]: {code.splitlines()[0]}",
             *(f"     {line}" for line in code.splitlines()[1:])]
    for message in outcome.messages:
        data = message["content"].get("data", {})
        if message["msg_type"] == "display_data":
            lines += [f"     {line}" for line in data["text/plain"].splitlines()]
            if CHANGES_MIME in data and asked is not None:
                lines.append(f"     {asked}y")
        elif message["msg_type"] == "execute_result":
            lines.append(f"Out[{number}]: {data['text/plain']}")
    return lines


def masked(lines: list[str]) -> list[str]:
    """Timings (and the columns they widen) masked."""
    return [" ".join(_NUMBER.sub("N", line).split()) for line in lines]


def test_the_tours_write_runs_as_written_shows_the_change_and_asks(installed_kernelspec,
                                                                     tmp_path):
    (tmp_path / "notes.txt").write_text(TOUR_NOTES)
    kernel = Kernel(tmp_path, KERNEL_NAME)
    try:
        assert kernel.execute("text = read_file('notes.txt')").status == "ok"  # cell [1]
        for shown in tour_write_block():
            number, code = cell_code(shown)
            msg_id = kernel.client.execute(code, allow_stdin=True, stop_on_error=False)
            asked = None
            if "write_file(" in code:
                request = kernel.client.get_stdin_msg(timeout=60)
                asked = request["content"]["prompt"]
                kernel.client.input("y")
            outcome = kernel.wait(msg_id)
            assert outcome.status == "ok", outcome.reply
            assert masked(transcript(number, code, outcome, asked)) == masked(shown)
            if asked is not None:
                assert (tmp_path / "shout.txt").read_text() == "ALPHA\nBETA\nGAMMA\n"
    finally:
        kernel.close()
    assert (tmp_path / "notes.txt").read_text() == TOUR_NOTES  # %undo took it back
    assert not (tmp_path / "shout.txt").exists()
