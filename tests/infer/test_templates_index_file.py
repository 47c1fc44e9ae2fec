"""Tier 0's index file: the next process starts from it, and never trusts one that does not
match the folder. A fresh ``TemplateIndex`` stands for that next process (each process
builds its own); one test starts a real one."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lackpy_kernel.infer.tiers import (
    TemplateIndex,
    TemplatesProvider,
    _templates,
    format_template,
    update_counts,
)
from lackpy_kernel.kit.atomic import atomic_write_text
from tests.support.audit import opened_paths, recorded_events

COUNT = 30


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A workspace's templates folder of COUNT templates, made a minute ago; any folder of
    them gets an index file."""
    monkeypatch.setattr(_templates, "INDEX_MIN_TEMPLATES", 1)
    folder = tmp_path / ".lackpy" / "templates"
    folder.mkdir(parents=True)
    for index in range(COUNT):
        write(folder, f"t{index:03d}", f"task {index} reads {{path}}", f"read_file('{{path}}') + '{index}'")
    (folder / "broken.tmpl").write_text("---\npattern: never {x} {x}\n---\n'x'\n")
    settle(folder)
    return folder


def write(folder, name, pattern, body):
    path = folder / f"{name}.tmpl"
    path.write_text(format_template(name, pattern, body))
    return path


def settle(folder):
    past = time.time_ns() - 60 * 10**9
    for path in [*folder.iterdir(), folder]:
        os.utime(path, ns=(past, past))


def index_file(folder: Path) -> Path:
    return folder.parent / "templates.index"


def next_process(folder: Path) -> TemplateIndex:
    return TemplateIndex(folder, index_file(folder))


def answer(index: TemplateIndex, intent: str) -> str | None:
    found = index.find(intent)
    return None if found is None else found[0].render(found[1])


def test_the_next_process_reads_the_index_file_and_no_template(folder):
    assert answer(next_process(folder), "task 3 reads a.txt") == "read_file('a.txt') + '3'"
    assert index_file(folder).is_file()
    index = next_process(folder)
    with recorded_events("open", "os.scandir", "os.listdir") as events:
        assert answer(index, "task 29 reads b.txt") == "read_file('b.txt') + '29'"
        assert answer(index, "no such task") is None
    assert opened_paths(events) == [str(index_file(folder))]
    assert "placeholder {x} appears twice" in index.problems[folder / "broken.tmpl"]
    assert [t.name for t in index.templates()] == [f"t{index:03d}" for index in range(COUNT)]


def test_templates_added_removed_and_changed_since_are_seen(folder):
    answer(next_process(folder), "task 3 reads a.txt")
    write(folder, "a-new", "task 7 reads {path}", "'new'")  # comes first in name order
    (folder / "t003.tmpl").unlink()
    atomic_write_text(folder / "t004.tmpl", format_template("t004", "other {path}", "'four'"))
    index = next_process(folder)
    assert answer(index, "task 7 reads x") == "'new'"
    assert answer(index, "task 3 reads x") is None
    assert answer(index, "task 4 reads x") is None
    assert answer(index, "other x") == "'four'"


def test_a_template_rewritten_in_place_is_seen_when_it_answers(folder):
    answer(next_process(folder), "task 3 reads a.txt")
    with open(folder / "t005.tmpl", "r+") as handle:  # the folder's time stays
        handle.write(format_template("t005", "task 5 reads {path}", "'five'"))
        handle.truncate()
    assert answer(next_process(folder), "task 5 reads x") == "'five'"


def test_a_count_update_elsewhere_reads_only_that_template_again(folder):
    answer(next_process(folder), "task 3 reads a.txt")
    update_counts(folder / "t008.tmpl", success=True)
    index = next_process(folder)
    with recorded_events("open") as events:
        assert answer(index, "task 8 reads x") == "read_file('x') + '8'"
    templates_read = [path for path in opened_paths(events) if path.endswith(".tmpl")]
    assert set(templates_read) == {str(folder / "t008.tmpl")}
    assert next(t for t in index.templates() if t.name == "t008").success_count == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty", "other version"])
def test_a_damaged_index_file_is_ignored_and_rebuilt(folder, damage):
    answer(next_process(folder), "task 3 reads a.txt")
    path = index_file(folder)
    data = path.read_bytes()
    damaged = {
        "garbage": b"\x00garbage" * 100,
        "truncated": data[: len(data) // 2],
        "flipped": data[:-10] + bytes([data[-10] ^ 0x20]) + data[-9:],
        "empty": b"",
        "other version": data.replace(b"index 1,", b"index 0,", 1),
    }[damage]
    path.write_bytes(damaged)
    index = next_process(folder)
    assert answer(index, "task 12 reads y") == "read_file('y') + '12'"
    assert answer(index, "no such task") is None
    assert path.read_bytes() == data  # written again, as it was
    with recorded_events("open") as events:
        assert answer(next_process(folder), "task 13 reads y") == "read_file('y') + '13'"
    assert opened_paths(events) == [str(path)]


def test_an_index_file_of_another_folder_is_ignored(folder, tmp_path):
    answer(next_process(folder), "task 3 reads a.txt")
    other = tmp_path / "copy" / ".lackpy" / "templates"
    other.mkdir(parents=True)
    write(other, "only", "task 3 reads {path}", "'other'")
    settle(other)
    index_file(other).write_bytes(index_file(folder).read_bytes())
    assert answer(next_process(other), "task 3 reads a.txt") == "'other'"
    assert answer(next_process(other), "task 4 reads a.txt") is None


def test_a_small_folder_or_one_outside_lackpy_gets_no_index_file(tmp_path, monkeypatch):
    monkeypatch.setattr(_templates, "INDEX_MIN_TEMPLATES", 2)
    small = tmp_path / "ws" / ".lackpy" / "templates"
    small.mkdir(parents=True)
    write(small, "a", "hello {name}", "'hi'")
    elsewhere = tmp_path / "templates"
    elsewhere.mkdir()
    for name in ("a", "b", "c"):
        write(elsewhere, name, f"hello {name}", "'hi'")
    for templates in (small, elsewhere):
        settle(templates)
        assert TemplatesProvider(templates).find("hello a") is not None
    assert sorted(os.listdir(small.parent)) == ["templates"]
    assert sorted(os.listdir(tmp_path)) == ["templates", "ws"]


def test_another_process_answers_from_the_index_file(folder):
    answer(next_process(folder), "task 3 reads a.txt")
    script = (
        "import sys\n"
        "from lackpy_kernel.infer.tiers import TemplatesProvider\n"
        "opened = []\n"
        "sys.addaudithook(lambda event, args: event == 'open' and opened.append(str(args[0])))\n"
        f"found = TemplatesProvider({str(folder)!r}).find('task 21 reads z')\n"
        "print(found[0].render(found[1]))\n"
        "print(sum(path.endswith('.tmpl') for path in opened))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines() == ["read_file('z') + '21'", "0"]
