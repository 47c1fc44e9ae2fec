"""Commits: a program sends back only the variables it may have changed, sharing kept."""

import pickle

import pytest

from lackpy_kernel.run import wire
from lackpy_kernel.run.commit import UnitLog, changed_names, load_unit, make_commit
from lackpy_kernel.run.protocol import Commit
from lackpy_kernel.run.runner import names_in


def _log_of(*units):
    log = UnitLog(keep_blobs=True)
    for names in units:
        log.add(names, b"x" * 10)
    return log


def test_a_program_that_names_nothing_changes_nothing():
    before = {"big": "x" * 1000, "rows": [[1], [2]]}
    changed, deleted = changed_names(before, dict(before), set(), _log_of(["big"], ["rows"]))
    assert changed == set() and deleted == []


def test_a_named_scalar_is_unchanged_but_a_named_container_may_have_changed():
    before = {"text": "abc", "items": [1]}
    changed, _ = changed_names(before, dict(before), {"text", "items"},
                               _log_of(["text"], ["items"]))
    assert changed == {"items"}


def test_a_named_container_brings_the_containers_of_its_unit():
    shared = [1]
    before = {"a": shared, "b": {"a": shared}, "n": 1, "other": [2]}
    log = _log_of(["a", "b", "n"], ["other"])
    changed, _ = changed_names(before, dict(before), {"b"}, log)
    assert changed == {"a", "b"}


def test_new_rebound_and_deleted_variables():
    before = {"kept": [1], "rebound": 1, "gone": 2}
    after = {"kept": before["kept"], "rebound": 2, "new": 3}
    changed, deleted = changed_names(before, after, set(), _log_of(["kept"], ["rebound", "gone"]))
    assert changed == {"rebound", "new"}
    assert deleted == ["gone"]


def test_names_in_reads_identifiers_as_python_does():
    assert {"x", "append"} <= names_in("ｘ.append(1)")


def test_make_commit_pickles_scalars_alone_and_containers_together():
    shared = [1]
    commit = make_commit({"a": shared, "b": {"a": shared}, "s": "text"}, ["gone"])
    assert sorted(names for names, _ in commit.units) == [["a", "b"], ["s"]]
    blobs = {tuple(names): blob for names, blob in commit.units}
    values = load_unit(["a", "b"], blobs[("a", "b")])
    assert values["b"]["a"] is values["a"]
    assert load_unit(["s"], blobs[("s",)]) == {"s": "text"}
    assert commit.types == {"a": "list", "b": "dict", "s": "str"}
    assert Commit.from_frame(commit.to_frame()) == commit


def test_the_log_drops_a_unit_when_its_last_name_is_replaced():
    log = UnitLog(keep_blobs=True)
    log.apply(make_commit({"a": [1], "b": [2], "s": "x" * 100}, []))
    assert sorted(log.mates("a")) == ["a", "b"]
    replace_a = make_commit({"a": 1}, [])
    assert log.size_after(replace_a) == log.total_size + replace_a.size
    log.apply(replace_a)
    assert log.mates("b") == {"b"}
    shrink = make_commit({"b": 0}, ["s"])
    before_units = len(log.units)
    log.apply(shrink)
    assert len(log.units) == before_units - 1  # the [a, b] pickle and s's are gone, b's is new
    assert sorted(name for names, _ in log.live_units() for name in names) == ["a", "b"]


def test_a_unit_must_hold_the_names_it_claims():
    blob = pickle.dumps({"a": 1})
    with pytest.raises(wire.WireError, match="does not hold"):
        load_unit(["a", "b"], blob)


def test_a_unit_carrying_code_is_refused():
    blob = pickle.dumps({"a": pickle.PickleError})
    with pytest.raises(wire.WireError, match="plain data only"):
        load_unit(["a"], blob)


def test_a_malformed_commit_is_refused():
    with pytest.raises(wire.WireError):
        Commit.from_frame({"units": [[["a"], "not bytes"]], "deleted": [], "types": {}})
