"""The index of a templates folder: which file's pattern can match an intent, found by the
intent's first (or last) words, however many files there are.

``FolderIndex`` keeps up with the folder (a ``stat`` of it per call; only the files whose
own ``stat`` changed are read again) and keeps the index of a big folder in a file beside
it (``_IndexFile``), so that the next process starts from it rather than reading every
file again. What a file's text means (its pattern, the template it makes) is the
subclass's to say: tier 0's is ``TemplateIndex``.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import marshal
import os
import stat
import sys
import threading
import time
import zlib
from abc import ABC, abstractmethod
from array import array
from collections.abc import Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from lackpy_kernel.errors import TemplateError
from lackpy_kernel.kit.atomic import SUPPORTS_DIR_FD, atomic_write_bytes_at

from ._template_text import IntentPattern, compile_pattern, fold, original_text, squeeze

# A folder listed less than this long after its last change may have changed again within
# the same tick of the file system's clock, unseen by its modification time: list it again.
_RACY_NS = 20_000_000
_COARSE_RACY_NS = 2_000_000_000  # file systems that keep whole seconds (FAT keeps two)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_MAX_TEMPLATE_BYTES = 1 << 20


class Entry(Protocol):
    """What the index hands back for a matching file (a ``Template``)."""

    @property
    def path(self) -> Path: ...

    @property
    def placeholders(self) -> list[str]: ...


T = TypeVar("T", bound=Entry)


@dataclass(slots=True)
class _File(Generic[T]):
    """What the index knows of one file.

    ``stamp`` is its ``stat`` when read, ``settled`` whether that read came safely after
    its last change (so an unchanged stamp proves it unchanged). A file with a usable
    pattern keeps its ``text`` and ``compiled`` pattern; its ``template`` is made from the
    text (and its body checked) the first time it is needed.
    """

    stamp: tuple[int, int, int, int]
    settled: bool
    text: str | None = None
    compiled: IntentPattern | None = None
    template: T | None = None


class FolderIndex(ABC, Generic[T]):
    """The templates of one folder, indexed by the whole words their patterns start (or end) with.

    ``find`` costs one ``stat`` of the folder, a dictionary look-up per distinct number
    of leading (or trailing) words, a linear-time match of each candidate and one ``stat`` of the
    matching template's file: not a pass over every template. When the folder's
    modification time changes, the folder is listed again and only the files whose own
    ``stat`` changed are read again; a count update made by ``update_counts`` in this
    process is applied directly, reading no other file. Two blind spots of modification
    times are covered: a change made within the same tick of the file system's clock as
    the last one seen (until a listing comes safely after the folder's last change, each
    call lists the folder's names again), and a file rewritten in place, which leaves its
    folder's time alone (a matching template's file is checked before its program is
    used).

    ``suffix`` names the files it indexes; ``index_file`` (None: none) is where it is kept
    for the next process once the folder holds ``save_from`` files or more.
    """

    suffix: str

    def __init__(self, folder: Path, index_file: Path | None = None, *, save_from: int) -> None:
        self.folder = folder
        self.save_from = save_from
        self.problems: dict[Path, str] = {}
        self._file = _IndexFile(index_file, folder) if index_file is not None else None
        self._saved_stamp: tuple[int, int, int] | None = None  # the folder's, as the file has it
        self._lock = threading.RLock()
        self._folder_stamp: tuple[int, int, int] | None = None
        self._racy = False  # the folder may have changed unseen since it was last listed
        self._files = _Files[T]()
        self._order: list[str] = []  # the names of the files with a usable pattern, sorted
        # Buckets by the words every match starts or ends with (see _bucket_key): the first
        # place in _order, then each place's next one.
        self._heads: dict[str, int] = {}
        self._next: Sequence[int] = []
        self._word_counts: list[int] = []  # how many words the keys by leading words hold
        self._tail_counts: list[int] = []  # ... and those by trailing words, ascending
        self._stale = False  # a pattern came, went or changed since _order was built

    @abstractmethod
    def pattern_of(self, text: str, path: str) -> IntentPattern:
        """The compiled pattern of the file ``text``; raises TemplateError saying what is wrong."""

    @abstractmethod
    def template_of(self, text: str, path: Path) -> T:
        """What the file ``text`` makes, checked; raises TemplateError saying what is wrong."""

    def find(self, intent: str) -> tuple[T, dict[str, str]] | None:
        """The first template (in file-name order) whose pattern matches all of ``intent``,
        with its captured values; None when none does."""
        with self._lock:
            self._refresh()
            found = self._first_match(intent)
            for _ in range(2):  # a matching template changed meanwhile is read again
                if found is None or self._still_current(found[0]):
                    break
                found = self._first_match(intent)
            self._tidy()
            return found

    def templates(self) -> list[T]:
        """Every usable template in file-name order, each file's ``stat`` checked now."""
        with self._lock:
            self._folder_stamp = None  # compare every file, not only the folder
            self._refresh()
            usable = [t for name in self._order if (t := self._template(name)) is not None]
            self._tidy()
            return usable

    def rewritten(self, name: str, folder_before: tuple[int, int, int] | None) -> None:
        """Take note that this process has just rewritten the file ``name``, atomically.

        ``folder_before`` is the folder's stamp from just before. When the index had seen
        the folder as it was then, only that file is read again: no listing is needed.
        """
        with self._lock:
            if folder_before is None or folder_before != self._folder_stamp:
                return  # the index is behind anyway: the next call lists the folder
            started = time.time_ns()
            info = _stat(self.folder)
            if info is None:
                return
            self._folder_stamp = _folder_stamp(info)
            self._racy = self._racy or started < _settle_time(info.st_mtime_ns)
            self._load(name)
            self._tidy()

    # -- keeping up with the folder ------------------------------------------

    def _refresh(self) -> None:
        started = time.time_ns()
        info = _stat(self.folder)
        if info is None or not stat.S_ISDIR(info.st_mode):
            self._forget_all()
            return
        stamp = _folder_stamp(info)
        if self._file is not None and self._folder_stamp is None and not self._files:
            self._start_from_file(stamp)
        if stamp != self._folder_stamp:
            self._relist()
        elif self._racy:
            self._relist_if_names_changed()
        else:
            return
        self._folder_stamp = stamp
        self._racy = started < _settle_time(info.st_mtime_ns)
        self._tidy()
        self._save_if_behind()

    # -- the index file, for the next process --------------------------------

    def _start_from_file(self, stamp: tuple[int, int, int]) -> None:
        """Take what the index file knows. Were the folder's stamp the file's, nothing was
        added, removed or renamed since, so it is the folder's listing; otherwise each entry
        is kept only while the file's ``stat`` says it is unchanged (``_relist``)."""
        assert self._file is not None
        saved = self._file.load()
        if saved is None:
            return
        self._files = _Files[T](saved)
        self.problems.update((self.folder / name, problem) for name, problem in saved.problems.items())
        self._stale = True
        self._saved_stamp = saved.folder_stamp
        if saved.folder_stamp == stamp:
            self._folder_stamp, self._racy = stamp, False  # written only once settled
            head_keys, head_positions, self._next, self._word_counts, self._tail_counts = saved.buckets
            self._order = saved.order()
            self._heads = dict(zip(head_keys, head_positions, strict=True))
            self._stale = False

    def _save_if_behind(self) -> None:
        """Write the index file when it no longer describes the folder as listed now, the
        listing is safely past the folder's last change, and the folder is big enough."""
        if (self._file is None or self._racy or self._folder_stamp is None
                or self._folder_stamp == self._saved_stamp
                or len(self._files) < self.save_from):
            return
        problems = {path.name: problem for path, problem in self.problems.items()}
        heads = (list(self._heads), array("q", self._heads.values()), array("q", self._next),
                 self._word_counts, self._tail_counts)
        if self._file.save(_Saved.of(self._folder_stamp, self._files, problems, heads)):
            self._saved_stamp = self._folder_stamp

    def _relist(self) -> None:
        """List the folder and read the files that are new or whose ``stat`` changed."""
        started = time.time_ns()
        try:
            with os.scandir(self.folder) as entries:
                listed = {entry.name: entry for entry in entries if entry.name.endswith(self.suffix)}
        except OSError:
            listed = {}
        with _collector_paused():
            for name, entry in listed.items():
                if not _same_file(entry, self._files.stamp(name)):
                    self._load(name, started)
            for name in self._files.keys() - listed.keys():
                self._forget(name)
            self._tidy()

    def _relist_if_names_changed(self) -> None:
        """List the folder's names only (no ``stat``, no file objects): enough to see a file
        added or removed unseen; list it fully when one was."""
        try:
            names = {name for name in os.listdir(self.folder) if name.endswith(self.suffix)}
        except OSError:
            names = set()
        if names != self._files.keys():
            self._relist()

    def _load(self, name: str, started: int | None = None) -> None:
        """Read the file ``name`` (again), noting a problem when it is not a usable template.

        ``started`` is when the reading began (now when not given), to tell whether the
        file's stat can be trusted later on.
        """
        started = time.time_ns() if started is None else started
        location = os.path.join(self.folder, name)
        try:
            stamp, text = _read_regular(location)
        except FileNotFoundError:
            self._forget(name)
            return
        except (OSError, UnicodeDecodeError, TemplateError) as exc:
            path = self.folder / name
            problem = str(exc) if isinstance(exc, TemplateError) else f"template {path} cannot be read: {exc}"
            self._store(name, _File[T](_NO_STAMP, False), problem)
            return
        file = _File[T](stamp, started >= _settle_time(stamp[1]))
        if text is None:  # a folder or a FIFO with a template's name: not a template
            self._store(name, file)
            return
        try:
            file.compiled = self.pattern_of(text, location)
            file.text = text
            self._store(name, file)
        except TemplateError as exc:
            self._store(name, file, str(exc))

    def _store(self, name: str, file: _File[T], problem: str | None = None) -> None:
        old = self._files.get(name)
        if old is not None and old.text is not None and old.text == file.text:
            old.stamp, old.settled = file.stamp, file.settled  # read again, unchanged
            return
        self._files[name] = file
        if problem is not None:
            self.problems[self.folder / name] = problem
        elif self.problems:
            self.problems.pop(self.folder / name, None)
        old_pattern = old.compiled.text if old is not None and old.compiled is not None else None
        if old_pattern != (file.compiled.text if file.compiled is not None else None):
            self._stale = True

    def _forget(self, name: str) -> None:
        old = self._files.pop(name, None)
        if self.problems:
            self.problems.pop(self.folder / name, None)
        if old is not None and old.compiled is not None:
            self._stale = True

    def _forget_all(self) -> None:
        self._files = _Files[T]()
        self.problems.clear()
        self._stale = True
        self._tidy()
        self._folder_stamp = None
        self._racy = False

    def _tidy(self) -> None:
        """Rebuild the order and the buckets when a pattern came, went or changed."""
        if not self._stale:
            return
        self._stale = False
        files = self._files
        self._order = sorted(filter(files.usable, files))
        keys = [files.key(name) or "" for name in self._order]
        self._heads, self._next = {}, [-1] * len(self._order)
        for position in range(len(self._order) - 1, -1, -1):
            key = keys[position]
            self._next[position] = self._heads.get(key, -1)
            self._heads[key] = position
        self._word_counts = sorted({_words_in(key) for key in self._heads if key[0] == _LEADING})
        self._tail_counts = sorted({_words_in(key) for key in self._heads if key[0] == _TRAILING})

    # -- matching ---------------------------------------------------------------

    def _first_match(self, intent: str) -> tuple[T, dict[str, str]] | None:
        squeezed = squeeze(intent)
        folded = fold(squeezed)
        words = folded.split(" ") if folded else []
        candidates: list[int] = []
        for kind, counts in ((_LEADING, self._word_counts), (_TRAILING, self._tail_counts)):
            for count in counts:
                if count > len(words):
                    break
                kept = words[:count] if kind == _LEADING else words[len(words) - count:]
                position = self._heads.get(kind + " ".join(kept), -1)
                while position >= 0:
                    candidates.append(position)
                    position = self._next[position]
        for position in sorted(candidates):
            name = self._order[position]
            compiled = self._files[name].compiled
            spans = compiled.spans(folded) if compiled is not None else None
            template = self._template(name) if spans is not None else None
            if spans is not None and template is not None:
                values = {placeholder: original_text(intent, squeezed, *span)
                          for placeholder, span in zip(template.placeholders, spans, strict=True)}
                return template, values
        return None

    def _template(self, name: str) -> T | None:
        """The file's template, made (and its body checked) on first use; None when unusable."""
        file = self._files.get(name)
        if file is None or file.text is None:
            return None
        if file.template is None:
            path = self.folder / name
            try:
                template = self.template_of(file.text, path)
            except TemplateError as exc:
                self._store(name, _File[T](file.stamp, file.settled), str(exc))
                return None
            file.template = template
        return file.template

    def _still_current(self, template: T) -> bool:
        """Whether the template's file is as it was read; if not, it is read again."""
        name = template.path.name
        known = self._files.get(name)
        info = _stat(template.path)
        if known is None or info is None or _file_stamp(info) != known.stamp or not known.settled:
            self._load(name)
            self._tidy()
        known = self._files.get(name)
        return known is not None and known.template is template



_NO_STAMP = (-1, -1, -1, -1)


def _same_file(entry: os.DirEntry[str], known: tuple[tuple[int, int, int, int], bool] | None) -> bool:
    """Whether ``known`` (a file's stamp and whether it was settled) proves ``entry`` unchanged."""
    try:
        return known is not None and known[1] and _file_stamp(entry.stat()) == known[0]
    except OSError:
        return False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: indexing thousands of templates makes many small
    objects at once (none in cycles), and the collector would walk them again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def folder_stamp_now(folder: Path) -> tuple[int, int, int] | None:
    """The folder's stamp now, as ``FolderIndex.rewritten`` takes it; None when it cannot be read."""
    info = _stat(folder)
    return None if info is None else _folder_stamp(info)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _folder_stamp(info: os.stat_result) -> tuple[int, int, int]:
    return info.st_dev, info.st_ino, info.st_mtime_ns


def _file_stamp(info: os.stat_result) -> tuple[int, int, int, int]:
    return info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size


def _settle_time(mtime_ns: int) -> int:
    """When a change made at ``mtime_ns`` is safely past: a later change in the same tick of
    the file system's clock would leave the same time, so until then the time proves nothing."""
    coarse = mtime_ns % 1_000_000_000 == 0
    return mtime_ns + (_COARSE_RACY_NS if coarse else _RACY_NS)


def _read_regular(path: str) -> tuple[tuple[int, int, int, int], str | None]:
    """The file's stamp and text; text None when it is not a regular file (a FIFO, a folder).

    Opened without blocking, so a FIFO named like a template cannot hang the caller.
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _file_stamp(info), None
        if info.st_size > _MAX_TEMPLATE_BYTES:
            raise TemplateError(f"template {path} is {info.st_size} bytes; a template holds "
                                f"at most {_MAX_TEMPLATE_BYTES} bytes")
        data = os.read(fd, info.st_size + 1)
        while len(data) > info.st_size and (more := os.read(fd, 1 << 16)):  # it grew meanwhile
            data += more
            if len(data) > _MAX_TEMPLATE_BYTES:
                raise TemplateError(f"template {path} holds more than {_MAX_TEMPLATE_BYTES} bytes")
    finally:
        os.close(fd)
    return _file_stamp(info), data.decode("utf-8")


_LEADING, _TRAILING = "^", "$"


def _bucket_key(compiled: IntentPattern) -> str:
    """The index's key for a pattern: the whole words every intent it matches starts with,
    or those it ends with when they are more, joined by spaces after ``_LEADING`` or
    ``_TRAILING``. (The last piece's first word may be the end of a capture: not whole.)"""
    leading = compiled.leading_words
    trailing = compiled.pieces[-1].split(" ")[1:] if len(compiled.pieces) > 1 else []
    if len(trailing) > len(leading):
        return _TRAILING + " ".join(trailing)
    return _LEADING + " ".join(leading)


def _words_in(key: str) -> int:
    return key.count(" ") + 1 if len(key) > 1 else 0


class _Saved:
    """An index as its file keeps it: one entry per template file, in name order, in a few
    flat columns that load without making an object per template.

    Entry ``i`` is ``names[i]``; its ``stat`` stamp, ``stamps[4 * i:4 * i + 4]``;
    ``flags[i]`` (``_SETTLED``, ``_HAS_TEXT``, ``_USABLE``); its text and its pattern, UTF-8
    in ``texts`` and ``patterns`` up to ``text_ends[i]`` and ``pattern_ends[i]``; its
    index's bucket key (``_bucket_key``), the ``i``-th of ``keys`` split at NULs.
    ``buckets`` are ``TemplateIndex``'s buckets (the heads' keys and positions, the next
    positions, the word counts), so that loading them builds little.
    """

    def __init__(self, folder_stamp: tuple[int, int, int], names: list[str], stamps: array[int],
                 flags: bytes, texts: bytes, text_ends: array[int], patterns: bytes,
                 pattern_ends: array[int], keys: str, problems: dict[str, str],
                 buckets: _Buckets) -> None:
        self.folder_stamp = folder_stamp
        self.names, self.stamps, self.flags = names, stamps, flags
        self.texts, self.text_ends = texts, text_ends
        self.patterns, self.pattern_ends = patterns, pattern_ends
        self.problems, self.buckets = problems, buckets
        self._keys, self._keys_split = keys, list[str]()
        count = len(names)
        head_keys, head_positions, next_positions, _, _ = buckets
        if not (len(stamps) == 4 * count and len(flags) == len(text_ends) == len(pattern_ends)
                == count and len(head_keys) == len(head_positions)
                and len(next_positions) == flags.translate(_USABLE_ONLY).count(1)
                and names == sorted(names)):
            raise ValueError("the columns of a templates index do not fit together")

    @classmethod
    def of(cls, folder_stamp: tuple[int, int, int], files: _Files[Any],
           problems: dict[str, str], buckets: _Buckets) -> _Saved:
        """The columns of ``files``."""
        names = sorted(files)
        stamps, text_ends, pattern_ends = array("q"), array("q"), array("q")
        flags, texts, patterns, keys = bytearray(), bytearray(), bytearray(), []
        for name in names:
            stamp, settled, text, pattern, key = files.entry(name)
            stamps.extend(stamp)
            flags.append((_SETTLED if settled else 0) | (_HAS_TEXT if text is not None else 0)
                         | (_USABLE if pattern is not None else 0))
            texts += (text or "").encode("utf-8", "surrogatepass")
            patterns += (pattern or "").encode("utf-8", "surrogatepass")
            text_ends.append(len(texts))
            pattern_ends.append(len(patterns))
            keys.append(key or "")
        return cls(folder_stamp, names, stamps, bytes(flags), bytes(texts), text_ends,
                   bytes(patterns), pattern_ends, "\0".join(keys), problems, buckets)

    def to_payload(self) -> tuple[Any, ...]:
        """What ``marshal`` writes; ``from_payload`` reads it back."""
        head_keys, head_positions, next_positions, word_counts, tail_counts = self.buckets
        return (self.folder_stamp, "\0".join(self.names), self.stamps.tobytes(), self.flags,
                self.texts, self.text_ends.tobytes(), self.patterns, self.pattern_ends.tobytes(),
                self._keys, self.problems, "\0".join(head_keys), head_positions.tobytes(),
                next_positions.tobytes(), word_counts, tail_counts)

    @classmethod
    def from_payload(cls, payload: tuple[Any, ...]) -> _Saved:
        """Raises ValueError or TypeError when the payload is not one ``to_payload`` made."""
        (folder_stamp, names, stamps, flags, texts, text_ends, patterns, pattern_ends,
         keys, problems, head_keys, head_positions, next_positions, word_counts,
         tail_counts) = payload
        buckets = (head_keys.split("\0") if head_positions else [], _longs(head_positions),
                   _longs(next_positions), [int(count) for count in word_counts],
                   [int(count) for count in tail_counts])
        return cls(tuple(folder_stamp), names.split("\0") if names else [], _longs(stamps),
                   bytes(flags), bytes(texts), _longs(text_ends), bytes(patterns),
                   _longs(pattern_ends), str(keys), dict(problems), buckets)

    def order(self) -> list[str]:
        """The names of the usable entries, in order."""
        return list(itertools.compress(self.names, self.flags.translate(_USABLE_ONLY)))

    def row(self, name: str) -> int | None:
        """The entry of the file ``name``, None when there is none."""
        row = bisect.bisect_left(self.names, name)
        return row if row < len(self.names) and self.names[row] == name else None

    def stamp(self, row: int) -> tuple[tuple[int, int, int, int], bool]:
        """Entry ``row``'s stat stamp and whether it was settled."""
        stamp = self.stamps[4 * row:4 * row + 4]
        return (stamp[0], stamp[1], stamp[2], stamp[3]), bool(self.flags[row] & _SETTLED)

    def key(self, row: int) -> str | None:
        """Entry ``row``'s bucket key; None when it is not usable."""
        if not self.flags[row] & _USABLE:
            return None
        if not self._keys_split:
            self._keys_split = self._keys.split("\0")
        return self._keys_split[row]

    def entry(self, row: int) -> tuple[tuple[int, int, int, int], bool, str | None, str | None, str | None]:
        """(stamp, settled, text, pattern, bucket key) of entry ``row``."""
        stamp, settled = self.stamp(row)
        flags = self.flags[row]
        text = _text(self.texts, self.text_ends, row) if flags & _HAS_TEXT else None
        usable = bool(flags & _USABLE)
        pattern = _text(self.patterns, self.pattern_ends, row) if usable else None
        return stamp, settled, text, pattern, self.key(row)



_SETTLED, _HAS_TEXT, _USABLE = 1, 2, 4
_USABLE_ONLY = bytes(1 if flag & _USABLE else 0 for flag in range(256))  # for bytes.translate
_Buckets = tuple[list[str], "array[int]", "array[int]", list[int], list[int]]


def _text(column: bytes, ends: array[int], row: int) -> str:
    return column[ends[row - 1] if row else 0:ends[row]].decode("utf-8", "surrogatepass")


def _longs(data: bytes) -> array[int]:
    column = array("q")
    column.frombytes(data)
    return column


class _Files(MutableMapping[str, _File[T]]):
    """The index's files by name: those read in this process, and those its index file
    describes (``_Saved``), each made a ``_File`` only when it is first needed."""

    def __init__(self, saved: _Saved | None = None) -> None:
        self._read: dict[str, _File[T]] = {}
        self._saved = saved
        self._taken: set[int] = set()  # the saved entries made files (in _read) or removed

    def __getitem__(self, name: str) -> _File[T]:
        """The file ``name``, made from its saved entry on first use. Raises KeyError, and
        TemplateError for a saved pattern that does not compile (the index file is not one
        this version wrote)."""
        file = self._read.get(name)
        if file is None:
            row = self._saved_row(name)
            if row is None:
                raise KeyError(name)
            assert self._saved is not None
            stamp, settled, text, pattern, _ = self._saved.entry(row)
            compiled = None if pattern is None else compile_pattern(pattern)
            file = self._read[name] = _File(stamp, settled, text, compiled)
            self._taken.add(row)
        return file

    def __setitem__(self, name: str, file: _File[T]) -> None:
        row = self._saved_row(name)
        if row is not None:
            self._taken.add(row)
        self._read[name] = file

    def __delitem__(self, name: str) -> None:
        row = self._saved_row(name)
        if row is not None:
            self._taken.add(row)
        elif self._read.pop(name, None) is None:
            raise KeyError(name)
        self._read.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self._read
        if self._saved is not None:
            taken = self._taken
            yield from (name for row, name in enumerate(self._saved.names) if row not in taken)

    def __len__(self) -> int:
        saved = 0 if self._saved is None else len(self._saved.names) - len(self._taken)
        return len(self._read) + saved

    def __contains__(self, name: object) -> bool:
        return name in self._read or (isinstance(name, str) and self._saved_row(name) is not None)

    def stamp(self, name: str) -> tuple[tuple[int, int, int, int], bool] | None:
        """The file's stamp and whether it was settled, None when unknown."""
        file = self._read.get(name)
        if file is not None:
            return file.stamp, file.settled
        row = self._saved_row(name)
        return None if row is None or self._saved is None else self._saved.stamp(row)

    def usable(self, name: str) -> bool:
        """Whether the file has a usable pattern."""
        return self.key(name) is not None

    def key(self, name: str) -> str | None:
        """The file's bucket key (``_bucket_key``); None when unusable."""
        file = self._read.get(name)
        if file is not None:
            return None if file.compiled is None else _bucket_key(file.compiled)
        row = self._saved_row(name)
        return None if row is None or self._saved is None else self._saved.key(row)

    def entry(self, name: str) -> tuple[tuple[int, int, int, int], bool, str | None, str | None, str | None]:
        """(stamp, settled, text, pattern, bucket key) of the file, without making it a
        ``_File`` first."""
        file = self._read.get(name)
        row = self._saved_row(name) if file is None else None
        if row is not None and self._saved is not None:
            return self._saved.entry(row)
        file = self[name]
        compiled = file.compiled
        return (file.stamp, file.settled, file.text, None if compiled is None else compiled.text,
                None if compiled is None else _bucket_key(compiled))

    def _saved_row(self, name: str) -> int | None:
        """The saved entry of ``name`` not yet taken, or None."""
        if self._saved is None:
            return None
        row = self._saved.row(name)
        return None if row is None or row in self._taken else row


class _IndexFile:
    """A ``TemplateIndex`` saved for the next process (``_Saved``): what each template file
    held when read, with its ``stat``, and the folder's stamp then.

    Written atomically, and only once the folder's listing was safely past its last change.
    A file that is damaged, from another version of Python or lackpy, or about another
    folder is ignored (and replaced at the next save): its bytes are checked against their
    checksum before they are decoded.
    """

    def __init__(self, path: Path, folder: Path) -> None:
        self.path = path
        self._folder = os.path.abspath(folder)
        self._broken = False  # a save failed: this file cannot be written, stop trying

    def load(self) -> _Saved | None:
        """The saved index, or None when there is none that can be used."""
        try:
            data = _read_whole(str(self.path))
            if data is None or not data.startswith(_INDEX_MAGIC):
                return None
            checked = memoryview(data)[len(_INDEX_MAGIC):]
            payload = checked[4:]
            if int.from_bytes(checked[:4], "little") != zlib.crc32(payload):
                return None
            folder, saved = marshal.loads(payload)
            return _Saved.from_payload(saved) if folder == self._folder else None
        except (OSError, ValueError, TypeError, EOFError, IndexError, AssertionError):
            return None

    def save(self, saved: _Saved) -> bool:
        """Write the index; False when it cannot be written."""
        if self._broken:
            return False
        payload = marshal.dumps((self._folder, saved.to_payload()))
        data = _INDEX_MAGIC + zlib.crc32(payload).to_bytes(4, "little") + payload
        try:
            if SUPPORTS_DIR_FD:
                dir_fd = os.open(self.path.parent, _DIR_FLAGS)
                try:
                    atomic_write_bytes_at(dir_fd, self.path.name, data, durable=False)
                finally:
                    os.close(dir_fd)
            else:
                self.path.write_bytes(data)
        except OSError:
            self._broken = True
            return False
        return True


_INDEX_MAGIC = f"lackpy templates index 2, python {sys.version_info[0]}.{sys.version_info[1]}\n".encode()
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _read_whole(path: str) -> bytes | None:
    """The bytes of the regular file ``path``; None when it is missing or no regular file."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        data = os.read(fd, info.st_size + 1)
        if len(data) <= info.st_size:
            return data
        chunks = [data]
        while chunks[-1]:  # it grew meanwhile (a writer replaces it whole, so rarely)
            chunks.append(os.read(fd, 1 << 20))
        return b"".join(chunks)
    finally:
        os.close(fd)


