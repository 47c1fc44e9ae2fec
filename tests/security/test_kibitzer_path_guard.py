"""The worker's copy of Kibitzer's path guard (``lackpy_kernel.run.path_guard``), a new
surface: the worker loads the module a request names, so it never loads one from inside
the workspace (which programs write); a malformed or failing guard allows nothing (the
kernel is asked); and it is at least as strict as Kibitzer's own ``before_call``."""

from __future__ import annotations

import pytest
from kibitzer.guards import path_guard as kibitzers

from lackpy_kernel.kibitzer import Watch
from lackpy_kernel.run.path_guard import allows

SOURCE = kibitzers.__file__
FLOOR = {"enabled": True, "deny": ["*/secrets/"], "allow": []}
PATHS = ["w.txt", "src/a.py", "tests/t.py", "docs/x.md", "README.md", "secrets/k.txt", ".env",
         "id_rsa", ".git/HEAD", ".git/objects/ab", "src/../README.md", "./src/b.py"]


@pytest.mark.parametrize(("writable", "floor", "paths", "allowed"), [
    (["*"], FLOOR, ["w.txt", "src/a.py"], True),
    (["src/"], FLOOR, ["src/a.py"], True),
    (["src/"], FLOOR, ["src/a.py", "doc.txt"], False),
    ([], FLOOR, ["w.txt"], False),
    (["*"], FLOOR, ["secrets/key.txt"], False),
    (["*"], {**FLOOR, "enabled": False}, ["secrets/key.txt"], True),
], ids=["free", "in the mode's paths", "one outside them", "read-only", "the floor",
        "the floor off"])
def test_the_guard_judges_as_kibitzer_does(tmp_path, writable, floor, paths, allowed):
    (tmp_path / ".git").mkdir()  # a repository: Kibitzer's floor refuses writes outside it
    guard = {"writable": writable, "floor": floor, "source": SOURCE}
    assert allows(guard, str(tmp_path), paths) is allowed


def test_a_guard_module_inside_the_workspace_is_never_loaded(tmp_path):
    planted = tmp_path / "path_guard.py"
    planted.write_text(
        "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n"
        "class Yes:\n    allowed = True\n"
        "def check_floor(*args, **kwargs):\n    return Yes()\n"
        "def check_path(*args, **kwargs):\n    return Yes()\n")
    guard = {"writable": ["*"], "floor": FLOOR, "source": str(planted)}
    assert not allows(guard, str(tmp_path), ["w.txt"])
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("guard", [
    {},
    {"writable": "*", "floor": FLOOR, "source": SOURCE},
    {"writable": ["*"], "floor": None, "source": SOURCE},
    {"writable": ["*"], "floor": FLOOR},
    {"writable": ["*"], "floor": FLOOR, "source": "/nowhere/path_guard.py"},
    {"writable": [1], "floor": FLOOR, "source": SOURCE},
], ids=["empty", "writable not a list", "no floor", "no source", "no such module",
        "writable not strings"])
def test_a_malformed_guard_allows_nothing(tmp_path, guard):
    assert not allows(guard, str(tmp_path), ["w.txt"])


@pytest.mark.parametrize("mode", ["free", "implement", "test", "docs", "explore", "review"])
@pytest.mark.parametrize("repository", [True, False], ids=["in a repository", "no repository"])
def test_what_the_guard_allows_kibitzer_allows(tmp_path, mode, repository):
    """For each of Kibitzer's modes, with a floor setting of its config: every path the
    guard (as the kernel's watch gives it) lets land unasked, Kibitzer's ``before_call``
    allows too."""
    if repository:
        (tmp_path / ".git").mkdir()
    (tmp_path / ".kibitzer").mkdir()
    (tmp_path / ".kibitzer" / "config.toml").write_text('[floor]\ndeny = ["*/secrets/"]\n')
    watch = Watch.open(tmp_path, enabled=True, mode=mode)
    try:
        guard = watch.path_guard()
        allowed = [path for path in PATHS if allows(guard, str(tmp_path), [path])]
        for path in allowed:
            answer = watch.session.before_call("Write", {"file_path": path})
            assert answer is None or not answer.denied, (path, answer.reason)
    finally:
        watch.close()
    assert bool(allowed) is (mode not in ("explore", "review")), allowed


def test_a_module_loaded_for_one_workspace_is_not_used_for_one_it_lies_in(tmp_path):
    """The worker keeps the module it loaded; a later workspace that holds that file (which
    its programs could write) is refused it all the same."""
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    planted = outer / "path_guard.py"
    planted.write_text("import pathlib\nfrom kibitzer.guards.path_guard import *  # noqa\n")
    guard = {"writable": ["*"], "floor": {**FLOOR, "enabled": False}, "source": str(planted)}
    assert allows(guard, str(inner), ["w.txt"])  # the file is outside this workspace
    assert not allows(guard, str(outer), ["w.txt"])  # and inside this one
