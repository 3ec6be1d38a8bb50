"""Reading one large JSON Lines file in parts, one process per core, with the very report of one pass.

The file is cut at line starts near equal byte offsets. Each part is read by a checker of its own (the first
part in this process, the others in forked children, all through os.pread so nobody moves the file's
position), and the parts' results are folded in file order into the checker of the whole file
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
MAX_PARTS = 8
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


def plan_parts(stream: IO[bytes], size: int | None, parts: int | None) -> tuple[int, list[int]] | None:
    """(file descriptor, cuts) when this file can be read in parts, else None. `parts` None: one per core."""
    parts = min(usable_cores() if parts is None else parts, MAX_PARTS)
    if parts < 2 or size is None or size < max(PARALLEL_MIN_BYTES, 2) or threading.active_count() != 1:
        return None
    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    try:
        fd = stream.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        cuts = line_starts(fd, size, parts)
        head = os.pread(fd, min(_SEARCH_BYTES, cuts[0]), 0) if cuts else b""
    except (AttributeError, OSError, ValueError):
        return None
    first = _PRINTABLE.search(head)
    if not cuts or first is None:
        return None
    return fd, cuts


def scan_in_parts(whole: _RowJudge, make_checker: Callable[[], Any], scan_part: ScanPart, fd: int,
                  cuts: list[int], progress: ProgressFn | None) -> bool:
    """Read the parts between `cuts` (the first here, the others in children) and fold them into `whole`.

    Returns False, with `whole` untouched, when a part could not be read to the end or the parts' keys
    cannot be folded exactly; the caller then reads the file in one pass.
    """
    bounds = list(zip([0, *cuts], [*cuts, None], strict=True))
    context = multiprocessing.get_context("fork")
    children: list[tuple[Any, Connection]] = []
    received = False
    try:
        for start, end in bounds[1:]:
            receiver, sender = context.Pipe(duplex=False)
            child = context.Process(target=_read_part, args=(sender, make_checker, scan_part, fd, start, end),
                                    daemon=True)
            try:
                child.start()
            except (AssertionError, OSError):  # a daemonic process may not fork; no process left to fork
                receiver.close()
                return False
            finally:
                sender.close()
            children.append((child, receiver))
        first = make_checker()
        first.progress = progress
        scan_part(first, PartReader(fd, 0, cuts[0]), 0, cuts[0])
        results = [first]
        for _, receiver in children:
            try:
                results.append(receiver.recv())
            except (EOFError, OSError):
                return False
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
    if any(part is None for part in results) or not _keys_fold_exactly(results):
        return False
    lines_before = 0
    for part in results:
        whole.absorb(part, lines_before)
        lines_before += part.summary.lines
        if not part.summary.complete:  # one pass stops at a read error too
            break
    return True


def _read_part(sender: Connection, make_checker: Callable[[], Any], scan_part: ScanPart, fd: int, start: int,
               end: int | None) -> None:
    """A child's work: read one part and send its checker back (None when reading failed). Ctrl-C is the
    parent's to handle (it stops the children), so a child never prints a traceback for it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        checker = make_checker()
        checker.at_file_start = False
        scan_part(checker, PartReader(fd, start, end), start, end)
    except Exception:  # noqa: BLE001 - any failure: the parent reads the file in one pass
        checker = None
    try:
        sender.send(checker)
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
