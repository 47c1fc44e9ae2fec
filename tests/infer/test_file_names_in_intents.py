"""The file names an intent mentions (``infer.prompt.FILE_NAME``, used to choose examples and
to check that a program reads the file an intent names): found where written, and a long run
of path characters is scanned in one pass (it was quadratic: an intent of ``"../" * 33000``
took minutes, and held ``lackpy acp`` that long)."""

from __future__ import annotations

import concurrent.futures

import pytest

from lackpy_kernel.infer import select_examples
from lackpy_kernel.infer.prompt import FILE_NAME, Example

HANG_GUARD_S = 60  # a linear scan takes milliseconds even on a busy machine


@pytest.mark.parametrize(("intent", "names"), [
    ("count the lines of notes.txt", ["notes.txt"]),
    ("read data/people.csv and ../outside.txt", ["data/people.csv", "../outside.txt"]),
    ("compare a.md with b.md.", ["a.md", "b.md"]),
    ("no file here.", []),
])
def test_file_names_are_found_where_written(intent, names):
    assert FILE_NAME.findall(intent) == names


@pytest.mark.parametrize("run", ["../" * 33_000, "a/" * 50_000, "-." * 50_000, "x" * 99_000 + "."])
def test_a_long_run_of_path_characters_is_scanned_in_one_pass(run):
    pool = [Example("the last line of notes.txt", "read_file('notes.txt').splitlines()[-1]",
                    ["last"])]
    executor = concurrent.futures.ThreadPoolExecutor(1)
    try:
        found = executor.submit(FILE_NAME.findall, "show me " + run)
        chosen = executor.submit(select_examples, "show me the last " + run, pool, 1)
        assert found.result(timeout=HANG_GUARD_S) == []
        assert chosen.result(timeout=HANG_GUARD_S) == pool
    finally:
        executor.shutdown(wait=False, cancel_futures=True)  # a failing scan is not waited for
