"""Record the conversations the agent notebook replays.

    PYTHONPATH=. python notebooks/agent/record.py

A scripted model (a loopback server speaking the Anthropic protocol, played through the
real ``anthropic`` client; ``tests/support/loopback.py``) answers each run of the notebook
with the turns below, in a scratch copy of this folder whose config says ``[inference]
record = true``. Each run's conversation is appended to the scratch folder's
``.lackpy/conversations.jsonl`` by the agent itself, the same way a run on a real model is
recorded, and the file is copied here. Run it again after changing a turn below, or
anything that changes what a model is sent (a tool's description, the planner's prompt).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from lackpy_kernel.notebook.turns import notebook_agent, notebook_replan
from lackpy_kernel.service import LackpyService
from tests.support.loopback import LoopbackServer, tool_turn

HERE = Path(__file__).resolve().parent
CONVERSATIONS = Path(".lackpy") / "conversations.jsonl"

# (intent, kit, turns); a turn is (text, [(tool, arguments), ...]).
AGENT_RUNS = [
    ("how many lines does each note have?", "debug", [
        ("I'll list the notes first.", [("find_files", {"pattern": "notes/*.txt"})]),
        ("Now I'll read the three of them.", [
            ("read_file", {"path": "notes/monday.txt"}),
            ("read_file", {"path": "notes/tuesday.txt"}),
            ("read_file", {"path": "notes/wednesday.txt"})]),
        ("monday.txt has 3 lines, tuesday.txt has 2 and wednesday.txt has 4.", []),
    ]),
    ("count the words in all the notes", "debug,lackpy", [
        ("A program can count them in one go.", [
            ("lackpy", {"program": "total = 0\nfor i in range(1000000000000):\n    total += i\n"
                                   "total"})]),
        ("That program never ended. Counting per file instead.", [
            ("lackpy", {"program": "words = [len(read_file(path).split()) for path in "
                                   "find_files('notes/*.txt')]\nsum(words)"})]),
        ("The notes hold 31 words.", []),
    ]),
    ("fix the typo reveiw in notes/monday.txt", "read_file,edit_file", [
        ("", [("read_file", {"path": "notes/monday.txt"})]),
        ("It says 'reveiw'; I'll correct it.", [
            ("edit_file", {"path": "notes/monday.txt", "old": "reveiw", "new": "review"})]),
        ("I could not fix it: edit_file needs your approval. Run %agent --allow-writes to let "
         "me edit files.", []),
    ]),
]
REPLAN_INTENT = "which note has the most words?"
PLANNER_ROUNDS = [
    {"tasks": [{"tool": "find_files", "kwargs": {"pattern": "notes/*.txt"}}]},
    {"tasks": [{"tool": "lackpy", "parallel": True, "kwargs": {
        "program": f"len(read_file('notes/{day}.txt').split())"}}
        for day in ("monday", "tuesday", "wednesday")]},
    {"done": True, "answer": {"note": "notes/wednesday.txt", "words": 12}},
]


def record(scratch: Path, server: LoopbackServer) -> None:
    (scratch / ".lackpy" / "config.toml").write_text(
        f'[inference]\nrecord = true\n\n[inference.providers.scripted]\nplugin = "anthropic"\n'
        f'base_url = "{server.url}"\n\n[agent]\nprovider = "scripted"\n\n[sandbox]\ntimeout = 2\n')
    with LackpyService(scratch) as service:
        for intent, kit, turns in AGENT_RUNS:
            server.script(*[tool_turn("anthropic", text, calls) for text, calls in turns])
            envelope = notebook_agent(service, kit).run(intent)
            assert envelope.ok, envelope.error
        server.script(*[tool_turn("anthropic", json.dumps(answer)) for answer in PLANNER_ROUNDS])
        envelope = notebook_replan(service, "debug").run(REPLAN_INTENT)
        assert envelope.ok, envelope.error


def main() -> None:
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-recording-only")
    with tempfile.TemporaryDirectory() as folder, LoopbackServer() as server:
        scratch = Path(folder)
        shutil.copytree(HERE / "notes", scratch / "notes")
        (scratch / ".lackpy").mkdir()
        record(scratch, server)
        shutil.copyfile(scratch / CONVERSATIONS, HERE / CONVERSATIONS)
    print(f"wrote {(HERE / CONVERSATIONS).relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    main()
