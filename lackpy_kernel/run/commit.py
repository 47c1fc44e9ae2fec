"""Committing a program's variables: send only what the program may have changed.

A session's values reach the worker as *units*: pickles of a few variables, each
read back on its own. Values read back from one unit may share objects (``b = {'a': a}``);
values from different units never do. So a program that may have changed a
variable (it names it, and the value is a container that could have been changed
in place) commits that variable together with every container of its unit, and
the sharing survives. A program that names nothing costs nothing to commit,
however big the session is.

The parent keeps each unit's pickle, to restore a worker that died; the worker
keeps only the sizes, to bound the session.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import wire
from .plain import SCALARS
from .protocol import Commit

_MISSING = object()


@dataclass
class Unit:
    """One committed pickle: the variables whose current value came from it."""

    names: set[str]
    size: int
    blob: bytes | None = None


class UnitLog:
    """Which unit each session variable's value came from, and how big the units are."""

    def __init__(self, *, keep_blobs: bool) -> None:
        self.keep_blobs = keep_blobs
        self.units: dict[int, Unit] = {}
        self.unit_of: dict[str, int] = {}
        self._next_id = 0

    @property
    def total_size(self) -> int:
        """Bytes of the units that still hold a variable's value."""
        return sum(unit.size for unit in self.units.values())

    def mates(self, name: str) -> set[str]:
        """The variables whose values came from the same unit as ``name``'s."""
        unit_id = self.unit_of.get(name)
        return set() if unit_id is None else set(self.units[unit_id].names)

    def apply(self, commit: Commit) -> None:
        """Record ``commit``: its names now come from its units; deleted names from none."""
        self.forget([*commit.deleted, *(name for names, _ in commit.units for name in names)])
        for names, blob in commit.units:
            self.add(names, blob)

    def add(self, names: Iterable[str], blob: bytes) -> None:
        """Record a unit holding ``names`` (whose earlier units must be forgotten first)."""
        unit_id, self._next_id = self._next_id, self._next_id + 1
        unit = Unit(set(names), len(blob), blob if self.keep_blobs else None)
        self.units[unit_id] = unit
        for name in unit.names:
            self.unit_of[name] = unit_id

    def forget(self, names: Iterable[str]) -> None:
        """Drop ``names``; a unit that holds no name any more is dropped too."""
        for name in names:
            unit_id = self.unit_of.pop(name, None)
            if unit_id is None:
                continue
            unit = self.units[unit_id]
            unit.names.discard(name)
            if not unit.names:
                del self.units[unit_id]

    def size_after(self, commit: Commit) -> int:
        """The total size once ``commit`` is applied."""
        replaced = {*commit.deleted, *(name for names, _ in commit.units for name in names)}
        kept = sum(unit.size for unit in self.units.values() if unit.names - replaced)
        return kept + commit.size

    def clear(self) -> None:
        """Forget every unit."""
        self.units.clear()
        self.unit_of.clear()

    def live_units(self) -> list[tuple[list[str], bytes]]:
        """Every unit still in use, oldest first, with its live names (needs ``keep_blobs``)."""
        return [(sorted(unit.names), unit.blob or b"") for _, unit in sorted(self.units.items())]


def changed_names(before: Mapping[str, Any], after: Mapping[str, Any], named: set[str],
                  log: UnitLog) -> tuple[set[str], list[str]]:
    """The variables a program may have changed, and those it deleted.

    A variable changed if its value is new or rebound, or if the program named it
    (``named``) and it holds a container that could have changed in place; then every
    container of its unit changed too, since they may share objects.
    """
    changed = {name for name, value in after.items() if before.get(name, _MISSING) is not value}
    touched = {name for name in named & before.keys() if type(before[name]) not in SCALARS}
    for name in touched:
        touched_too = (mate for mate in log.mates(name) if type(before[mate]) not in SCALARS)
        changed.update(mate for mate in (name, *touched_too) if mate in after)
    deleted = [name for name in before if name not in after]
    return changed, deleted


def make_commit(values: Mapping[str, Any], deleted: list[str]) -> Commit:
    """Pickle ``values`` into units: each scalar alone, the containers together (they may
    share objects). Raises RecursionError for a value nested too deeply to pickle."""
    scalars = sorted(name for name, value in values.items() if type(value) in SCALARS)
    containers = sorted(name for name in values if type(values[name]) not in SCALARS)
    groups = [[name] for name in scalars] + ([containers] if containers else [])
    units = [(names, pickle.dumps({name: values[name] for name in names}, protocol=wire.PROTOCOL))
             for names in groups]
    types = {name: type(value).__name__ for name, value in values.items()}
    return Commit(units, deleted, types)


def load_unit(names: list[str], blob: bytes) -> dict[str, Any]:
    """The values of ``names`` from a unit's pickle (plain data only). Raises WireError."""
    values = wire.loads_body(blob)
    if type(values) is not dict or not set(names) <= values.keys():
        raise wire.WireError("a commit unit does not hold the variables it names")
    return {name: values[name] for name in names}


def load_units(units: Iterable[tuple[list[str], bytes]]) -> dict[str, Any]:
    """The variables ``units`` hold (read with the plain-data unpickler). Raises WireError."""
    session: dict[str, Any] = {}
    for names, blob in units:
        session.update(load_unit(names, blob))
    return session


def apply_commit(session: dict[str, Any], log: UnitLog, commit: Commit,
                 loaded: Mapping[str, Any]) -> None:
    """Make ``session`` and its ``log`` what they are once ``commit`` (whose units read back
    as ``loaded``) landed."""
    for name in commit.deleted:
        session.pop(name, None)
    session.update(loaded)
    log.apply(commit)
