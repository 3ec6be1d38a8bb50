"""Reading one large JSON Lines file in parts, one process per core, with the very report of one pass.

The file is cut at line starts near equal byte offsets, into several parts a process. Each process (this
one and forked children) takes the next part nobody has taken yet, so a process slowed by other work on the
machine reads fewer parts; each part is read by a checker of its own, through os.pread so nobody moves the
file's position. The parts' results are folded in file order into the checker of the whole file
(`_RowJudge.absorb`: line numbers shifted by the lines before, the listed findings the first of each code,
the first rows and first lines kept). A line never straddles a cut, so every line is read whole by exactly
one part.

Parts are used only where the folded result is the one pass's by construction: no row slice (its verdicts
depend on the total row count), no tokenizer (prompts are rendered in file order by one worker), a regular
file of at least PARALLEL_MIN_BYTES, a printable character before the first cut (slime's json-array and
byte-order-mark wording look at the file's first lines), and a process with a single thread (forking is
then safe; the Streamlit server has many, so the page reads in one pass). When a part cannot finish (a child
killed) or more distinct keys turn up than the summary keeps, the file is read again in one pass.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import stat
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import IO, Any

from core.data.judge import MAX_KEYS, ProgressFn, _RowJudge

PARALLEL_MIN_BYTES = 32 * 1024 * 1024  # below this, starting a process costs more than it saves
MAX_PROCESSES = 8
PARTS_PER_PROCESS = 8
MIN_PART_BYTES = 4 * 1024 * 1024
MAX_SEARCH_BYTES = 64 * 1024 * 1024  # how far past a nominal cut a line start is looked for
_SEARCH_BYTES = 64 * 1024
_PRINTABLE = re.compile(rb"[\x21-\x7e]")  # a byte that is a character no str.strip() removes

ScanPart = Callable[[Any, "PartReader", int, "int | None"], None]  # (checker, reader, first byte, end byte)


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class PartReader:
    """Bytes [start, end) of an open file (to its end when `end` is None), read with os.pread."""

    def __init__(self, fd: int, start: int, end: int | None) -> None:
        self.fd, self.position, self.end = fd, start, end

    def read(self, size: int) -> bytes:
        if self.end is not None:
            size = min(size, self.end - self.position)
        if size <= 0:
            return b""
        data = os.pread(self.fd, size, self.position)
        self.position += len(data)
        return data


def line_starts(fd: int, size: int, parts: int) -> list[int]:
    """Where to cut a file of `size` bytes into `parts` parts: for each nominal offset size*k/parts, the
    start of the first line that begins at or after it. Cuts are strictly increasing and inside the file;
    a cut that would fall past the file's end (one long last line), or more than MAX_SEARCH_BYTES on, is
    left out (that part joins the one before)."""
    cuts: list[int] = []
    for k in range(1, parts):
        position = max(size * k // parts, cuts[-1] + 1 if cuts else 1) - 1  # a line starts after b"\n"
        give_up = min(size, position + MAX_SEARCH_BYTES)
        cut = None
        while position < give_up:
            chunk = os.pread(fd, min(_SEARCH_BYTES, give_up - position), position)
            if not chunk:
                break
            found = chunk.find(b"\n")
            if found >= 0:
                cut = position + found + 1
                break
            position += len(chunk)
        if cut is not None and cut < size:
            cuts.append(cut)
    return cuts


def plan_parts(stream: IO[bytes], size: int | None, processes: int | None) -> tuple[int, list[int], int] | None:
    """(file descriptor, cuts, processes) when this file can be read in parts, else None. `processes` None:
    one per core. There are PARTS_PER_PROCESS parts a process (fewer where parts would be under
    MIN_PART_BYTES), so that a process slowed by other work on the machine reads fewer of them."""
    processes = min(usable_cores() if processes is None else processes, MAX_PROCESSES)
    if processes < 2 or size is None or size < max(PARALLEL_MIN_BYTES, 2) or threading.active_count() != 1:
        return None
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    parts = min(processes * PARTS_PER_PROCESS, max(size // MIN_PART_BYTES, processes))
    try:
        fd = stream.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        cuts = line_starts(fd, size, parts)
        head = os.pread(fd, min(_SEARCH_BYTES, cuts[0]), 0) if cuts else b""
    except (AttributeError, OSError, ValueError):
        return None
    if not cuts or _PRINTABLE.search(head) is None:
        return None
    return fd, cuts, processes


def scan_in_parts(whole: _RowJudge, make_checker: Callable[[], Any], scan_part: ScanPart, fd: int,
                  cuts: list[int], processes: int, progress: ProgressFn | None) -> bool:
    """Read the parts between `cuts` in `processes` processes (this one and forked children, each taking the
    next part not yet taken) and fold them, in file order, into `whole`.

    Returns False, with `whole` untouched, when a part could not be read to the end or the parts' keys
    cannot be folded exactly; the caller then reads the file in one pass.
    """
    bounds = list(zip([0, *cuts], [*cuts, None], strict=True))
    context = multiprocessing.get_context("fork")
    next_part = context.Value("q", 0)  # the index of the next part to take, shared by the processes
    children: list[tuple[Any, Connection]] = []
    received = False
    try:
        for _ in range(processes - 1):
            receiver, sender = context.Pipe(duplex=False)
            child = context.Process(target=_read_parts_in_child, daemon=True,
                                    args=(sender, next_part, bounds, make_checker, scan_part, fd))
            try:
                child.start()
            except (AssertionError, OSError):  # a daemonic process may not fork; no process left to fork
                receiver.close()
                return False
            finally:
                sender.close()
            children.append((child, receiver))
        read = _read_parts(next_part, bounds, make_checker, scan_part, fd, progress)
        for _, receiver in children:
            try:
                theirs = receiver.recv()
            except (EOFError, OSError):
                return False
            if theirs is None:
                return False
            read.update(theirs)
        received = True
    finally:
        for child, receiver in children:
            receiver.close()
            if not received:  # stopped early (a failed part, Ctrl-C): the others' work is not wanted
                child.kill()
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
                child.join()
    parts = [read.get(index) for index in range(len(bounds))]
    if any(part is None for part in parts) or not _keys_fold_exactly(parts):
        return False
    lines_before = 0
    for part in parts:
        whole.absorb(part, lines_before)
        lines_before += part.summary.lines
        if not part.summary.complete:  # one pass stops at a read error too
            break
    return True


def _read_parts(next_part: Any, bounds: list[tuple[int, int | None]], make_checker: Callable[[], Any],
                scan_part: ScanPart, fd: int, progress: ProgressFn | None) -> dict[int, Any]:
    """Take parts until none is left; each is read by a checker of its own. Returns them by index."""
    read: dict[int, Any] = {}
    while True:
        with next_part.get_lock():
            index = next_part.value
            next_part.value = index + 1
        if index >= len(bounds):
            return read
        start, end = bounds[index]
        checker = make_checker()
        checker.at_file_start = index == 0
        scan_part(checker, PartReader(fd, start, end), start, end)
        read[index] = checker
        if progress is not None:
            progress(min((index + 1) / len(bounds), 1.0), f"part {index + 1} of {len(bounds)}")


def _read_parts_in_child(sender: Connection, next_part: Any, bounds: list[tuple[int, int | None]],
                         make_checker: Callable[[], Any], scan_part: ScanPart, fd: int) -> None:
    """A child's work: read parts and send their checkers back (None when reading failed). Ctrl-C is the
    parent's to handle (it stops the children), so a child never prints a traceback for it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        read: dict[int, Any] | None = _read_parts(next_part, bounds, make_checker, scan_part, fd, None)
    except Exception:  # noqa: BLE001 - any failure: the parent reads the file in one pass
        read = None
    try:
        sender.send(read)
    except Exception:  # noqa: BLE001 - nothing sent: the parent sees the end of the pipe, reads in one pass
        pass
    finally:
        sender.close()


def _keys_fold_exactly(parts: list[Any]) -> bool:
    """The key counts of parts add up to one pass's while no part dropped a key and all of them together
    have no more distinct keys than the summary keeps (which keys one pass keeps beyond that depends on
    the order it met them)."""
    names: set[str] = set()
    for part in parts:
        if part.summary.other_keys:
            return False
        names.update(part.key_counts)
        for shape in part.key_shapes:
            names.update(map(str, shape))
        if len(names) > MAX_KEYS:
            return False
    return True
