"""The effects recorder the runner uses to fill a trace's files_read/files_modified."""

from __future__ import annotations

import asyncio
import contextvars

from lackpy_kernel.kit import record_read, record_write, recording


def test_recording_collects_unique_paths_in_order():
    with recording() as effects:
        for path in ["b.txt", "a.txt", "b.txt"]:
            record_read(path)
        record_write("out.txt")
        record_write("out.txt")
    assert effects.files_read == ["b.txt", "a.txt"]
    assert effects.files_modified == ["out.txt"]


def test_no_recording_is_a_no_op():
    record_read("x")
    record_write("y")
    with recording() as effects:
        pass
    assert effects.files_read == [] and effects.files_modified == []


def test_recording_stops_after_the_block():
    with recording() as effects:
        record_read("inside")
    record_read("after")
    assert effects.files_read == ["inside"]


def test_nested_recordings_are_separate():
    with recording() as outer:
        record_read("one")
        with recording() as inner:
            record_read("two")
        record_read("three")
    assert outer.files_read == ["one", "three"]
    assert inner.files_read == ["two"]


def test_recording_is_per_context():
    seen = []

    def other_context():
        record_read("elsewhere")
        seen.append("ran")

    with recording() as effects:
        contextvars.Context().run(other_context)
    assert seen == ["ran"] and effects.files_read == []


def test_recording_follows_async_tasks():
    async def tool():
        record_write("from-task")

    async def main():
        with recording() as effects:
            await asyncio.gather(tool(), tool())
        return effects

    assert asyncio.run(main()).files_modified == ["from-task"]
