"""Store: JSON values in SQLite, with compare-and-swap that holds across threads and processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from lackpy_kernel.engines import Store


def test_values_round_trip_as_json(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.write("a", {"n": 1, "items": [1, "two", None, True]})
    store.write("t", (1, 2))
    assert store.read("a") == {"n": 1, "items": [1, "two", None, True]}
    assert store.read("t") == [1, 2]
    assert store.read("missing") is None and store.read("missing", 0) == 0


def test_a_value_json_cannot_hold_is_refused_and_nothing_is_written():
    store = Store()
    with pytest.raises(TypeError, match="a Store holds JSON data"):
        store.write_many({"ok": 1, "bad": {1, 2}})
    with pytest.raises(TypeError):
        store.write("nan", float("nan"))
    assert store.keys() == []


def test_keys_by_prefix_and_delete():
    store = Store()
    for key in ("plan:1", "plan:2", "planet", "other", "plan%_"):
        store.write(key, 0)
    assert store.keys("plan:") == ["plan:1", "plan:2"]
    assert store.keys("plan%") == ["plan%_"]  # no LIKE wildcards
    store.delete("plan:1")
    store.delete("never")
    assert store.keys("plan") == ["plan%_", "plan:2", "planet"]


def test_a_file_store_is_shared_by_connections_and_uses_a_wal_journal(tmp_path):
    path = tmp_path / "deep" / "s.sqlite"
    Store(path).write("k", "v")
    assert Store(path).read("k") == "v"
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_compare_and_swap_swaps_only_from_the_expected_value():
    store = Store()
    assert store.compare_and_swap("k", None, {"v": 1})
    assert not store.compare_and_swap("k", None, {"v": 2})
    assert not store.compare_and_swap("k", {"v": 9}, {"v": 2})
    assert store.compare_and_swap("k", {"v": 1}, {"v": 2}) and store.read("k") == {"v": 2}


def test_compare_and_swap_compares_values_not_key_order():
    store = Store()
    store.write("k", {"a": 1, "b": 2})
    assert store.compare_and_swap("k", {"b": 2, "a": 1}, "next")


def test_writes_ride_on_a_successful_swap_and_only_then():
    store = Store()
    assert store.compare_and_swap("k", None, 1, writes={"x": "a"})
    assert not store.compare_and_swap("k", None, 2, writes={"y": "b"})
    assert store.keys() == ["k", "x"]


def test_threads_incrementing_through_compare_and_swap_lose_no_update():
    store = Store()
    store.write("n", 0)

    def bump(times: int) -> None:
        for _ in range(times):
            while True:
                seen = store.read("n")
                if store.compare_and_swap("n", seen, seen + 1):
                    break

    threads = [threading.Thread(target=bump, args=(50,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.read("n") == 400


RACE = """
import sys, time
from pathlib import Path
from lackpy_kernel.engines import Store
store = Store(sys.argv[1])
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
print(store.compare_and_swap("key", None, {"winner": sys.argv[3]}))
"""


def test_of_processes_swapping_from_the_same_value_exactly_one_wins(tmp_path):
    path, go = tmp_path / "s.sqlite", tmp_path / "go"
    Store(path).close()
    racers = [subprocess.Popen([sys.executable, "-c", RACE, str(path), str(go), str(n)],
                               stdout=subprocess.PIPE, text=True) for n in range(4)]
    time.sleep(0.5)  # let them all start polling; the race holds however late one is
    go.touch()
    answers = [racer.communicate(timeout=60)[0].strip() for racer in racers]
    assert sorted(answers) == ["False", "False", "False", "True"]
    assert Store(path).read("key") == {"winner": str(answers.index("True"))}


COUNTER = """
import sys
from lackpy_kernel.engines import Store
store = Store(sys.argv[1])
for _ in range(30):
    while True:
        seen = store.read("n")
        if store.compare_and_swap("n", seen, seen + 1):
            break
"""


def test_processes_incrementing_through_compare_and_swap_lose_no_update(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(path).write("n", 0)
    workers = [subprocess.Popen([sys.executable, "-c", COUNTER, str(path)]) for _ in range(3)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    assert Store(path).read("n") == 90
