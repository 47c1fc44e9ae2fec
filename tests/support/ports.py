"""Loopback ports for the servers the tests start, from where the system never picks one itself.

A port the system picks (binding to port 0, as ``jupyter_client`` does for a kernel's five, and as
an outgoing connection's own end does) comes from its ephemeral range. A port taken that way and
let go, then handed to a server that binds it seconds later, can meanwhile be picked by another
process: with the suite on several pytest-xdist workers, a kernel of another worker took a
JupyterLab's port that way, and the test talked to the kernel. ``free_port`` picks below that
range instead, where only a process naming the port binds it.
"""

from __future__ import annotations

import random
import socket

EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
LINUX_EPHEMERAL_START = 32768  # Linux's default, where the range cannot be read
SPAN = 12000  # the ports below the ephemeral range that free_port picks from
LOWEST = 1024  # none of the ports only root may bind


def ephemeral_start() -> int:
    """The first port of the system's ephemeral range."""
    try:
        with open(EPHEMERAL_RANGE) as given:
            return int(given.read().split()[0])
    except (OSError, ValueError, IndexError):
        return LINUX_EPHEMERAL_START


def _nobody_listens(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now, below the ephemeral range (else,
    where that range starts too low to leave room, one the system picks)."""
    top = ephemeral_start() - 8  # room for a server that also binds the ports just above its own
    bottom = max(LOWEST, top - SPAN)
    if top - bottom >= 1000:
        for port in random.sample(range(bottom, top), 100):
            if _nobody_listens(port):
                return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
