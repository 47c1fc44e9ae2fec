"""Load for the benchmarks that measure under it: a CPU burner on each core."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def burning(cores: int) -> Iterator[None]:
    """A process spinning on each of ``cores`` cores for the block."""
    burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(cores)]
    for burner in burners:
        burner.start()
    try:
        time.sleep(0.5)
        yield
    finally:
        for burner in burners:
            burner.terminate()
            burner.join()


def under_load(measure: Callable[[], T], indent: str = "") -> T:
    """What ``measure()`` returns, measured again with a CPU burner on each core (a line
    says so, with the load average)."""
    cores = os.cpu_count() or 1
    with burning(cores):
        print(f"{indent}... again with a CPU burner on each of {cores} cores ({load_average()})")
        return measure()


def _burn() -> None:
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))  # not a real-time one (chrt)
    while True:
        pass


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"
