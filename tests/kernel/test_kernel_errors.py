"""What the kernel shows when something fails: an expected failure briefly, a bug as a bug."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.faulty_kernel import BUG
from tests.support.kernel import Kernel, make_workspace

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def faulty_kernel(installed_kernelspec, tmp_path_factory):
    spec_dir = installed_kernelspec / "share" / "jupyter" / "kernels" / "lackpy-faulty"
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "tests.support.faulty_kernel", "-f", "{connection_file}"],
        "display_name": "lackpy (faulty)", "language": "lackpy"}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))}
    running = Kernel(make_workspace(tmp_path_factory.mktemp("faulty")), "lackpy-faulty", env)
    yield running
    running.close()


def test_an_unknown_kit_is_one_short_message_naming_it_and_what_exists(kernel):
    outcome = kernel.execute("%kit nosuchkit")
    error = outcome.error
    assert error["ename"] == "UnknownKitError"
    assert "no kit named 'nosuchkit'" in error["evalue"]
    assert "available kits: debug" in error["evalue"]
    assert error["traceback"] == [f"UnknownKitError: {error['evalue']}"]
    assert kernel.execute("1 + 1").result() == "2"  # the session kept its kit


def test_a_bug_in_a_cell_is_reported_as_a_bug_not_as_a_kit_problem(faulty_kernel):
    outcome = faulty_kernel.execute("1 + 1")
    assert outcome.status == "error"
    assert outcome.error["ename"] == "TypeError"
    assert BUG in outcome.error["evalue"] and "kit" not in outcome.error["evalue"]


def test_a_bug_listing_the_sessions_names_still_answers_the_cell(faulty_kernel):
    outcome = faulty_kernel.execute("1 + 1")  # resolving the kit raises the provider's bug
    assert outcome.status == "error" and "lackpy" not in outcome.reply["metadata"]


def test_a_bug_in_a_magic_is_reported_as_a_bug_not_as_a_kit_problem(faulty_kernel):
    outcome = faulty_kernel.execute("%kit")
    assert outcome.error["ename"] == "TypeError"
    assert BUG in outcome.error["evalue"] and "cannot be used" not in outcome.error["evalue"]
    assert faulty_kernel.execute("%kit debug").status == "ok"  # and the kernel goes on
    assert faulty_kernel.execute("len(read_file('notes.txt'))").result() == "17"
