"""A plan killed with SIGKILL in the middle of a step, then resumed in a new process: every
step's write is applied exactly once and none is lost. Two processes on one key: one wins.

The writes are counted by SQLite itself: a trigger on the Store's table logs every insert
and update, so a write applied twice, or lost, shows in the log.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from lackpy_kernel.engines import Store

ROOT = Path(__file__).resolve().parents[2]
KEY = "nightly"
PATIENCE_S = 120.0


@pytest.fixture
def place(tmp_path):
    """A workspace whose plan Store logs every write."""
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "spin.txt").write_text("0")
    (tmp_path / ".lackpy").mkdir()  # the plan's steps write with no one to ask
    (tmp_path / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    database = tmp_path / "plans.sqlite"
    Store(database).close()
    with sqlite3.connect(database) as raw:
        raw.executescript("""
            CREATE TABLE audit (key TEXT, value TEXT);
            CREATE TRIGGER logged_insert AFTER INSERT ON store
                BEGIN INSERT INTO audit VALUES (new.key, new.value); END;
            CREATE TRIGGER logged_update AFTER UPDATE ON store
                BEGIN INSERT INTO audit VALUES (new.key, new.value); END;
        """)
    return tmp_path


def start(place: Path, shape: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.plan_runner", str(place), KEY, shape, *extra],
        cwd=place, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> tuple[int, dict | None, str]:
    out, err = process.communicate(timeout=PATIENCE_S)
    return process.returncode, json.loads(out) if out.strip() else None, err


def kill_when(process: subprocess.Popen, ready) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not ready():
        assert process.poll() is None, f"the run ended before the kill point: {finish(process)}"
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=PATIENCE_S)  # reaped: its pid is gone, as after a crash


def journal(place: Path) -> Counter:
    path = place / "journal.txt"
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(line.removeprefix("start ") for line in lines)


def logged_writes(place: Path) -> dict[str, list]:
    with sqlite3.connect(place / "plans.sqlite") as raw:
        # the plan's own writes: not its checkpoint, nor the commit records of its steps
        rows = raw.execute("SELECT key, value FROM audit WHERE key != ? AND key NOT LIKE ?",
                           (KEY, "%:commit:%")).fetchall()
    found: dict[str, list] = {}
    for key, value in rows:
        found.setdefault(key, []).append(json.loads(value))
    return found


PIPELINE_WRITES = {
    "fetched": ["alpha\nbeta\ngamma\n"], "count": [3], "upper": ["ALPHA\nBETA\nGAMMA\n"],
    "marked": ["marked 17"], "saved": ["marked 17"],
}


@pytest.mark.parametrize(("kill_in", "ran_twice"), [
    ("count", {"upper"}),   # a program in the sandbox, inside a parallel band: the band reruns
    ("upper", {"upper"}),   # a Python step inside the band
    ("mark", {"mark"}),     # a Python step after the band
])
def test_a_run_killed_in_a_step_and_resumed_applies_every_write_exactly_once(
        place, kill_in, ran_twice):
    if kill_in == "count":
        (place / "spin.txt").write_text("100000000000")

        def ready():  # the program spins in the sandbox (its write staged); its sibling has run
            return (any(place.glob(".lackpy/staging/*/inside-count.txt"))
                    and journal(place)["upper"] >= 1)
    else:
        (place / "block.txt").write_text(kill_in)

        def ready():
            return journal(place)[kill_in] >= 1

    kill_when(start(place, "pipeline"), ready)
    checkpoint = Store(place / "plans.sqlite").read(KEY)
    assert checkpoint["status"] == "running"
    assert checkpoint["next_step"] == {"count": "count", "upper": "count", "mark": "mark"}[kill_in]

    (place / "spin.txt").write_text("0")
    (place / "block.txt").unlink(missing_ok=True)
    code, envelope, err = finish(start(place, "pipeline", "--resume"))
    assert code == 0, err
    assert envelope["payload"] == "marked 17"
    assert [step["name"] for step in envelope["history"]] == [
        "fetch", "count", "upper", "mark", "save"]
    assert logged_writes(place) == PIPELINE_WRITES
    assert journal(place) == Counter({"upper": 1, "mark": 1}) + Counter(ran_twice)
    assert (place / "out.txt").read_text() == "marked 17"
    assert Store(place / "plans.sqlite").read(KEY)["status"] == "done"


@pytest.mark.parametrize("kill_after", [1, 5, 9])
def test_kills_at_arbitrary_points_and_repeated_resumes_lose_and_repeat_no_write(
        place, kill_after):
    kill_when(start(place, "chain"), lambda: sum(journal(place).values()) >= kill_after)
    kill_when(start(place, "chain", "--resume"),
              lambda: sum(journal(place).values()) >= kill_after + 3)
    code, envelope, err = finish(start(place, "chain", "--resume"))
    assert code == 0, err
    totals = [sum(range(1, n + 1)) for n in range(1, 13)]
    assert envelope["payload"] == totals[-1]
    assert logged_writes(place) == {f"w{n}": [totals[n - 1]] for n in range(1, 13)}
    assert all(count <= 2 for count in journal(place).values())  # a step reruns only if killed


def test_two_processes_claiming_one_key_at_once_exactly_one_wins(place):
    (place / "block.txt").write_text("mark")
    first, second = start(place, "pipeline"), start(place, "pipeline")
    deadline = time.monotonic() + PATIENCE_S
    while first.poll() is None and second.poll() is None:
        assert time.monotonic() < deadline, "neither run gave way"
        time.sleep(0.01)
    loser, winner = (first, second) if first.poll() is not None else (second, first)
    code, _, err = finish(loser)
    assert code == 3, err
    assert "ConcurrentPlanRunError" in err and KEY in err
    (place / "release.txt").touch()
    code, envelope, err = finish(winner)
    assert code == 0, err
    assert logged_writes(place) == PIPELINE_WRITES
