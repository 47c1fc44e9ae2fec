"""The second wall: the Linux kernel confines a program's process, where it can.

The forked child that runs a program puts these up before it takes its program,
and can never take them down:

- ``no_new_privs``: nothing it runs can gain privileges (needed for the others);
- Landlock, filesystem: the workspace, the Python installation and this package
  read-only, nothing else at all; TCP bind and connect refused (ABI 4); no signal to a
  process outside the sandbox and no abstract Unix socket (ABI 6);
- Landlock, writes: a second layer, put up by each child for itself, lets it write its
  own staging folder (``<workspace>/.lackpy/staging/<pid>/``, made before the walls go
  up) and nothing else: not the workspace, ``.lackpy/``, a tool's code, another child's
  stage or anything outside. The first layer, shared by the children, lets them write
  the folder of the stages only (Landlock rules name folders that exist when the ruleset
  is built, and a child's pid is known only once it is forked);
- seccomp: ``execve``, ``ptrace``, new sockets, new processes and the other system
  calls a lackpy program never needs fail with ``EPERM``.

Where the kernel lacks a feature the child runs without that wall; ``os_walls()``
says which walls are up on this machine. A small ctypes layer: the PyPI packages
(``landlock``, a development release; ``pyseccomp``, last released in 2021 and
needing libseccomp) are less kept than the three system calls they wrap.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import struct
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# prctl, seccomp
PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
SECCOMP_MODE_FILTER = 2
SECCOMP_GET_ACTION_AVAIL = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000

# Landlock (include/uapi/linux/landlock.h)
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ_ONLY = FS_READ_FILE | FS_READ_DIR
READ_WRITE = (READ_ONLY | FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR
              | FS_MAKE_REG | FS_REFER | FS_TRUNCATE)

# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH, _ARG1 = 0, 4, 24
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C  # ioctls that type into, or control, a terminal
WRITE_WALL = "landlock write"  # the name of the wall that keeps a child to its stage


@dataclass(frozen=True)
class _Arch:
    audit: int
    ioctl: int
    refused: dict[str, int]
    x32_bit: int = 0  # syscall numbers at or above this (x86_64's x32 ABI) are refused


_COMMON_NAMES = (
    "execve execveat ptrace process_vm_readv process_vm_writev kcmp "
    "socket socketpair bind listen accept accept4 connect "
    "clone clone3 unshare setns mount umount2 pivot_root chroot "
    "kexec_load kexec_file_load init_module finit_module delete_module "
    "bpf perf_event_open userfaultfd io_uring_setup io_uring_enter io_uring_register "
    "keyctl add_key request_key acct swapon swapoff reboot settimeofday clock_settime adjtimex "
    "personality open_by_handle_at name_to_handle_at mknodat "
    "pidfd_open pidfd_getfd pidfd_send_signal kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo "
    "landlock_create_ruleset landlock_add_rule landlock_restrict_self seccomp prctl"
).split()
_ARCHES = {
    "x86_64": _Arch(0xC000003E, 16, {
        "execve": 59, "execveat": 322, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "kcmp": 312, "socket": 41, "socketpair": 53, "bind": 49,
        "listen": 50, "accept": 43, "accept4": 288, "connect": 42, "clone": 56, "clone3": 435,
        "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
        "chroot": 161, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "keyctl": 250, "add_key": 248, "request_key": 249,
        "acct": 163, "swapon": 167, "swapoff": 168, "reboot": 169, "settimeofday": 164,
        "clock_settime": 227, "adjtimex": 159, "personality": 135, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "mknodat": 259, "pidfd_open": 434, "pidfd_getfd": 438,
        "pidfd_send_signal": 424, "kill": 62, "tkill": 200, "tgkill": 234,
        "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        "fork": 57, "vfork": 58, "mknod": 133, "landlock_create_ruleset": 444,
        "landlock_add_rule": 445, "landlock_restrict_self": 446, "seccomp": 317, "prctl": 157,
    }, x32_bit=0x40000000),
    "aarch64": _Arch(0xC00000B7, 29, {
        "execve": 221, "execveat": 281, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "kcmp": 272, "socket": 198, "socketpair": 199, "bind": 200,
        "listen": 201, "accept": 202, "accept4": 242, "connect": 203, "clone": 220,
        "clone3": 435, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
        "pivot_root": 41, "chroot": 51, "kexec_load": 104, "kexec_file_load": 294,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 219, "add_key": 217,
        "request_key": 218, "acct": 89, "swapon": 224, "swapoff": 225, "reboot": 142,
        "settimeofday": 170, "clock_settime": 112, "adjtimex": 171, "personality": 92,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "mknodat": 33,
        "pidfd_open": 434, "pidfd_getfd": 438, "pidfd_send_signal": 424, "kill": 129,
        "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
        "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446,
        "seccomp": 277, "prctl": 167,
    }),
}
assert all(set(_COMMON_NAMES) <= arch.refused.keys() for arch in _ARCHES.values())


@dataclass(frozen=True)
class Wall:
    """One OS-level wall around a program's process: whether it is up here, and what it does
    (or why it is not up)."""

    name: str
    up: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for JSON."""
        return asdict(self)


def os_walls() -> list[Wall]:
    """The OS walls the sandbox puts around each program on this machine (probed: nothing
    is applied to this process)."""
    if not sys.platform.startswith("linux"):
        return [Wall("os walls", False, f"only on Linux, not {sys.platform}")]
    abi = landlock_abi()
    lacking = "this kernel has no Landlock (Linux 5.13+, with landlock in the boot's lsm= list)"
    return [
        Wall("no_new_privs", _prctl(PR_GET_NO_NEW_PRIVS) >= 0,
             "the program cannot gain privileges (setuid files, capabilities)"),
        Wall("landlock filesystem", abi >= 1,
             f"Landlock ABI {abi}: the workspace, Python, the system's libraries and lackpy "
             "read-only, nothing else" if abi >= 1 else lacking),
        _write_wall(abi, lacking),
        Wall("landlock network", abi >= 4, "no TCP bind or connect" if abi >= 4 else
             f"needs Landlock ABI 4 (Linux 6.7); this kernel has {abi or 'none'}"),
        Wall("landlock scope", abi >= 6,
             "no signal to a process outside the sandbox, no abstract Unix socket"
             if abi >= 6 else f"needs Landlock ABI 6 (Linux 6.12); this kernel has {abi or 'none'}"),
        _seccomp_wall(),
    ]


def _write_wall(abi: int, lacking: str) -> Wall:
    """The write wall, probed: put up in a forked process for a scratch folder."""
    if abi < 1:
        return Wall(WRITE_WALL, False, f"{lacking}: a program's process may write the whole "
                    "workspace, and only the file tools' own checks keep .lackpy/ and the "
                    "tool sources' code from it")
    problem = _probe_writes()
    if problem is not None:
        return Wall(WRITE_WALL, False, f"Landlock ABI {abi}, but in a walled process {problem}")
    return Wall(WRITE_WALL, True, "a program's process writes only its own staging folder "
                "(.lackpy/staging/<pid>/), which the worker commits after checking each path: "
                "not the workspace, .lackpy/, a tool's code, another program's stage or "
                "anything outside")


_PROBE_PROBLEMS = {1: "the write layer did not go up", 2: "its own stage could not be written",
                   3: "a file outside its stage could be written"}


def _probe_writes() -> str | None:
    """Put the walls up in a forked process for a scratch folder and try a write inside its
    stage, then beside the stages and in another's: None when only the first worked, else
    what went wrong."""
    import tempfile  # here: the worker, which imports this module, never probes

    with tempfile.TemporaryDirectory(prefix="lackpy-walls-") as scratch:
        stages = os.path.join(scratch, "stages")
        os.makedirs(os.path.join(stages, "other"))
        plan = WallPlan.prepare(scratch, [], stages)
        try:
            pid = os.fork()
        except OSError as error:
            plan.close()
            return f"the probe could not start ({error.strerror})"
        if pid == 0:  # pragma: no cover - the probe
            os._exit(_probe_in_child(plan, scratch, stages))
        plan.close()
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return None if code == 0 else _PROBE_PROBLEMS.get(code, f"the probe failed ({code})")


def _probe_in_child(plan: WallPlan, scratch: str, stages: str) -> int:
    """The probe's exit status: 0 when the walls let it write its stage and nothing else."""
    try:
        stage = os.path.join(stages, "own")
        os.mkdir(stage)
        if WRITE_WALL not in plan.put_up(stage):
            return 1
        if not _can_create(os.path.join(stage, "staged")):
            return 2
        if _can_create(os.path.join(scratch, "beside")) or \
                _can_create(os.path.join(stages, "other", "planted")):
            return 3
        return 0
    except BaseException:
        return 4


def _can_create(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        return False
    return True


@dataclass
class WallPlan:
    """The walls for one workspace, built ahead (the Landlock ruleset, the seccomp filter) so
    that putting them up in a program's child is a few system calls."""

    ruleset: int  # a Landlock ruleset fd, -1 without Landlock
    abi: int
    seccomp_filter: bytes | None
    stages: str | None = None  # the one folder the ruleset lets children write, if any
    built_for: tuple[str, tuple[str, ...]] = ("", ())  # workspace, read_only: to build again
    _stages_id: tuple[int, int] | None = None  # the stages folder the ruleset names

    @classmethod
    def prepare(cls, workspace: str | os.PathLike[str],
                read_only: Iterable[str | os.PathLike[str]],
                stages: str | None = None) -> WallPlan:
        """Build the walls for ``workspace`` and ``read_only`` (and Python's own files),
        readable, and ``stages`` (a folder that exists), writable by the children's own
        stages below it; nothing is applied to this process."""
        if not sys.platform.startswith("linux"):
            return cls(-1, 0, None)
        abi = landlock_abi()
        readable = tuple(os.fspath(path) for path in read_only)
        writable = [stages] if stages is not None else []
        ruleset = _landlock_ruleset(abi, [os.fspath(workspace), *readable, *python_paths()],
                                    writable)
        arch = _ARCHES.get(_MACHINE)
        return cls(ruleset, abi if ruleset >= 0 else 0,
                   _seccomp_filter(arch) if arch is not None else None, stages,
                   (os.fspath(workspace), readable), _identity(stages))

    def put_up(self, stage: str | None = None) -> list[str]:
        """Confine this process for good (call it in a program's child only); the names of
        the walls put up. ``stage``, a folder below ``stages``, is the only one it may write
        then (none: it writes nothing). The ruleset's fd is closed here: no program can
        widen it."""
        if not sys.platform.startswith("linux") or _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
            return []
        up = ["no_new_privs"]
        if self.ruleset >= 0:
            ruleset = self._current_ruleset()
            restricted = _syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) == 0
            os.close(ruleset)
            if restricted:
                up += ["landlock filesystem", *(["landlock network"] if self.abi >= 4 else []),
                       *(["landlock scope"] if self.abi >= 6 else [])]
                if _restrict_writes(self.abi, stage):
                    up.append(WRITE_WALL)
        if self.seccomp_filter is not None and _seccomp(self.seccomp_filter):
            up.append("seccomp")
        return up

    def close(self) -> None:
        """Let go of the ruleset (in the process that prepared it)."""
        if self.ruleset >= 0:
            os.close(self.ruleset)
            self.ruleset = -1

    def _current_ruleset(self) -> int:
        """The prepared ruleset, or, when the stages folder was replaced since it was built
        (its rule names the folder that was there), one built afresh for the new one."""
        if self.stages is None or _identity(self.stages) == self._stages_id:
            return self.ruleset
        os.close(self.ruleset)
        workspace, read_only = self.built_for
        self.ruleset = WallPlan.prepare(workspace, read_only, self.stages).ruleset
        return self.ruleset


def build_walls(workspace: str | os.PathLike[str], read_only: Iterable[str | os.PathLike[str]]
                ) -> list[str]:
    """Confine this process for good (call it in a program's child only): ``workspace``,
    ``read_only`` and Python's own files readable, nothing writable, the rest as the module
    says. Returns the names of the walls put up; a wall the kernel lacks is skipped."""
    return WallPlan.prepare(workspace, read_only).put_up()


def die_with_parent() -> bool:
    """Have Linux kill this process (SIGKILL) when its parent ends; whether it will."""
    return _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) == 0


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return max(version, 0)


# Where the system keeps the shared libraries that Python's own extension modules load
# when they are first imported (OpenSSL for hashlib and ssl, SQLite, liblzma, ...).
SYSTEM_LIBRARIES = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")


def python_paths() -> list[str]:
    """What Python needs to read to go on running: its installation, its import path and the
    system's shared libraries."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path,
             str(Path(__file__).resolve().parents[2]), *SYSTEM_LIBRARIES}
    return sorted(path for path in roots if path and os.path.exists(path))


# -- internals -----------------------------------------------------------------------


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
if _libc is not None:  # looked up here, in the worker, rather than in each child it forks
    _libc.syscall.restype = ctypes.c_long
    _libc.prctl.restype = ctypes.c_int
_MACHINE = os.uname().machine if hasattr(os, "uname") else ""  # platform.machine(), lighter


def _syscall(number: int, *args: Any) -> int:
    assert _libc is not None
    result: int = _libc.syscall(ctypes.c_long(number), *args)
    return result


def _prctl(option: int, *args: Any) -> int:
    if _libc is None:
        return -1
    values = [ctypes.c_ulong(arg) if isinstance(arg, int) else arg for arg in args]
    values += [ctypes.c_ulong(0)] * (4 - len(values))
    result: int = _libc.prctl(ctypes.c_int(option), *values)
    return result


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock_ruleset(abi: int, read_only: Iterable[str], writable: Iterable[str]) -> int:
    """A Landlock ruleset fd allowing ``read_only`` to be read and ``writable`` written;
    -1 without Landlock."""
    if abi < 1:
        return -1
    handled = _handled(abi)
    attr = _RulesetAttr(handled, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        return -1
    try:
        rules = [(path, READ_ONLY) for path in read_only] + \
            [(path, READ_WRITE) for path in writable]
        for path, rights in rules:
            _allow(ruleset, path, rights & handled)
    except BaseException:
        os.close(ruleset)
        raise
    os.set_inheritable(ruleset, False)  # forked children have it; programs it starts would not
    return ruleset


def _handled(abi: int) -> int:
    """The filesystem rights Landlock ABI ``abi`` can refuse."""
    return _FS_BY_ABI[max(version for version in _FS_BY_ABI if version <= abi)]


def _restrict_writes(abi: int, folder: str | None) -> bool:
    """Put up a second Landlock layer on this process, which refuses every right but reading
    anywhere except below ``folder``; whether it is up."""
    handled = _handled(abi) & ~READ_ONLY
    ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(_RulesetAttr(handled, 0, 0)),
                       ctypes.c_size_t(8), 0)
    if ruleset < 0:
        return False
    try:
        if folder is not None:
            _allow(ruleset, folder, READ_WRITE & handled)
        return _syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) == 0
    finally:
        os.close(ruleset)


def _identity(path: str | None) -> tuple[int, int] | None:
    """The device and inode of the folder ``path`` (None: none, or gone)."""
    try:
        info = os.stat(path) if path is not None else None
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if info is not None else None


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone, or unreadable: nothing to allow
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = _PathBeneathAttr(rights, fd)
        if _syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH,
                    ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule({path!r})")
    finally:
        os.close(fd)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def _seccomp_program(arch: _Arch) -> list[tuple[int, int, int, int]]:
    """A BPF program: refuse (EPERM) the listed calls, the terminal ioctls, other ABIs."""
    deny = SECCOMP_RET_ERRNO | errno.EPERM
    numbers = sorted(set(arch.refused.values()))
    program = [(_BPF_LD_W_ABS, 0, 0, _ARCH), (_BPF_JEQ_K, 1, 0, arch.audit), (_BPF_RET_K, 0, 0, deny),
               (_BPF_LD_W_ABS, 0, 0, _NR)]
    if arch.x32_bit:
        program += [(_BPF_JGE_K, 0, 1, arch.x32_bit), (_BPF_RET_K, 0, 0, deny)]
    for number in numbers:
        program += [(_BPF_JEQ_K, 0, 1, number), (_BPF_RET_K, 0, 0, deny)]
    program += [(_BPF_JEQ_K, 0, 4, arch.ioctl), (_BPF_LD_W_ABS, 0, 0, _ARG1),
                (_BPF_JEQ_K, 1, 0, _TIOCSTI), (_BPF_JEQ_K, 0, 1, _TIOCLINUX),
                (_BPF_RET_K, 0, 0, deny), (_BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    return program


def _seccomp_filter(arch: _Arch) -> bytes:
    return b"".join(struct.pack("HBBI", *instruction) for instruction in _seccomp_program(arch))


def _seccomp(code: bytes) -> bool:
    fprog = _SockFprog(len(code) // 8, code)
    return _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog)) == 0


def _seccomp_wall() -> Wall:
    arch = _ARCHES.get(_MACHINE)
    if arch is None:
        return Wall("seccomp", False, f"no filter written for {_MACHINE}")
    action = ctypes.c_uint32(SECCOMP_RET_ERRNO)
    available = _syscall(317 if _MACHINE == "x86_64" else 277,
                         SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(action)) == 0
    if not available:
        return Wall("seccomp", False, "this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)")
    return Wall("seccomp", True, f"{len(set(arch.refused.values()))} system calls refused: "
                "exec, ptrace, sockets, new processes, mounts, kernel modules, signals, "
                "and terminal input")
