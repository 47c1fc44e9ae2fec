"""The usage record is written behind the caller: recording opens no file, a reader sees
every row this process recorded, a clean exit loses nothing, a killed process loses at most
about the last second, and a record that cannot be written is said once and fails nobody."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from lackpy_kernel.telemetry import (
    USAGE_FILE,
    ModelCall,
    _store,
    flush_writes,
    record_answer,
    usage_report,
    workspace_usage,
)
from tests.support.audit import recorded_events

CALL = ModelCall("ollama", "local", "tiny", 5, 3, None, 12.0, True)


def recorded_tiers(record: Path) -> list[str]:
    return [str(tier) for (tier,) in _store.query(record, "SELECT tier FROM calls ORDER BY id")]


def test_recording_opens_no_file_in_the_callers_thread(tmp_path):
    record = tmp_path / USAGE_FILE
    with recorded_events("open", "sqlite3.connect") as events:
        for _ in range(20):
            record_answer(record, kind="template", tier="templates")
            _store.record_call(record, CALL)
    assert events == []
    assert usage_report(record).saved == {"template": 20}


def test_lackpy_usage_sees_every_call_this_process_recorded_even_unwritten(tmp_path):
    config_dir = tmp_path / ".lackpy"
    record_answer(config_dir / USAGE_FILE, kind="rules", tier="rules")
    _store.record_call(config_dir / USAGE_FILE, CALL)
    report = workspace_usage(config_dir)
    assert (report.total.calls, report.total.input_tokens, report.saved) == (1, 5, {"rules": 1})


def test_a_record_that_cannot_be_written_is_said_once_and_fails_nobody(tmp_path, caplog):
    record = tmp_path / USAGE_FILE
    record.write_bytes(b"not a database " * 100)
    for _ in range(3):
        record_answer(record, kind="template", tier="templates")
        flush_writes()
    said = [entry for entry in caplog.records if "cannot be used as the usage record" in entry.getMessage()]
    assert len(said) == 1
    assert "usage is not being recorded" in said[0].getMessage()


RECORDS = """
import sys
from pathlib import Path
from lackpy_kernel.telemetry import record_answer
for number in range(int(sys.argv[2])):
    record_answer(Path(sys.argv[1]), kind="template", tier=str(number))
"""


def test_a_clean_exit_loses_nothing(tmp_path):
    record = tmp_path / USAGE_FILE
    subprocess.run([sys.executable, "-c", RECORDS, str(record), "500"], check=True, timeout=120)
    assert recorded_tiers(record) == [str(number) for number in range(500)]


KEEPS_RECORDING = """
import sys, time
from pathlib import Path
from lackpy_kernel.telemetry import record_answer
record, said = Path(sys.argv[1]), open(sys.argv[2], "w", buffering=1)
number = 0
while True:
    record_answer(record, kind="template", tier=str(number))
    said.write(f"{number} {time.time()}\\n")
    number += 1
    time.sleep(0.002)
"""


def test_a_killed_process_loses_at_most_about_the_last_second(tmp_path):
    record, said = tmp_path / USAGE_FILE, tmp_path / "said.txt"
    writer = subprocess.Popen([sys.executable, "-c", KEEPS_RECORDING, str(record), str(said)])
    try:
        deadline = time.monotonic() + 60
        while not (said.exists() and said.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2.5)
    finally:
        killed_at = time.time()
        writer.kill()
        writer.wait(timeout=30)
    whole_lines = said.read_text().split("\n")[:-1]  # the last may have been cut by the kill
    times = {int(number): float(at) for number, at in (line.split() for line in whole_lines)}
    older = {number for number, at in times.items() if at < killed_at - 1.0}
    kept = {int(tier) for tier in recorded_tiers(record)}
    assert len(older) > 100
    assert older <= kept
    assert kept <= set(range(max(times) + 2))  # the one recorded, not yet said, may be there


FORKS = """
import os, sys
from pathlib import Path
from lackpy_kernel.telemetry import record_answer
record = Path(sys.argv[1])
for number in range(3):
    record_answer(record, kind="template", tier=f"parent {number}")
child = os.fork()
if child == 0:
    record_answer(record, kind="template", tier="child")
    sys.exit(0)
os.waitpid(child, 0)
"""


def test_a_forked_child_writes_its_own_rows_not_its_parents_again(tmp_path):
    record = tmp_path / USAGE_FILE
    subprocess.run([sys.executable, "-c", FORKS, str(record)], check=True, timeout=120)
    assert sorted(recorded_tiers(record)) == ["child", "parent 0", "parent 1", "parent 2"]
