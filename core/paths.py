"""Server-side paths the app may read: only inside roots the user configured.

Roots come from $SLIME_ASSISTANT_ROOTS (os.pathsep-separated directories). With none configured the app
reads no server-side path at all; uploads still work. Files read *through* an accepted directory (a slime
checkout's model scripts and sources) go through `read_within`, which holds every one of them to the same
roots, safe against links and files swapped for links.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel

ENV_ROOTS = "SLIME_ASSISTANT_ROOTS"
MAX_PATH_CHARS = 4096


class PathRefused(ValueError):
    """The path is outside the configured roots, or not usable; the message says which and why."""


class AllowedPath(BaseModel):
    path: Path
    root: Path


def configured_roots(env: dict[str, str] | None = None) -> list[Path]:
    """The resolved, existing directories named in $SLIME_ASSISTANT_ROOTS."""
    raw = (env if env is not None else os.environ).get(ENV_ROOTS, "")
    roots = []
    for part in raw.split(os.pathsep):
        part = part.strip()
        if not part:
            continue
        p = Path(part).expanduser()
        try:
            p = p.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if p.is_dir():
            roots.append(p)
    return roots


def resolve_allowed(raw: str, *, want: str = "file", roots: list[Path] | None = None) -> AllowedPath:
    """Resolve a user-typed path (following links) and accept it only inside a configured root.

    `want` is "file" or "dir". Raises PathRefused with a specific message otherwise.
    """
    roots = configured_roots() if roots is None else roots
    text = (raw or "").strip()
    if not text:
        raise PathRefused("No path given.")
    if len(text) > MAX_PATH_CHARS or "\0" in text:
        raise PathRefused("That path is too long or contains a NUL byte.")
    if not roots:
        raise PathRefused(f"Reading files on this machine is off: no roots are configured. Set {ENV_ROOTS} "
                          "to the directories the app may read (see README), or upload the file instead.")
    try:
        resolved = Path(text).expanduser().resolve(strict=False)
    except (OSError, RuntimeError) as exc:
        raise PathRefused(f"That path cannot be resolved: {exc}.") from None
    # Containment first, so that a refusal says nothing about what exists outside the roots, and the
    # message names the path as typed, never where a link leads.
    root = next((r for r in roots if resolved == r or resolved.is_relative_to(r)), None)
    if root is None:
        shown = ", ".join(str(r) for r in roots)
        raise PathRefused(f"{text} is outside the directories this app may read ({shown}).")
    if not resolved.exists():
        raise PathRefused(no_such_file(text) + ".")
    if want == "file" and not resolved.is_file():
        raise PathRefused(f"{resolved} is {'a directory' if resolved.is_dir() else 'not a regular file'}; "
                          "give a file.")
    if want == "dir" and not resolved.is_dir():
        raise PathRefused(f"{resolved} is not a directory.")
    return AllowedPath(path=resolved, root=root)


def _within(path: Path, roots: Sequence[Path]) -> Path | None:
    return next((r for r in roots if path == r or path.is_relative_to(r)), None)


def _opened_real_path(fd: int, fallback: Path) -> Path | None:
    """Where the open file really is: its /proc/self/fd link (Linux), F_GETPATH (macOS), else `fallback` when
    it still names the very file that is open (same device and inode), else None."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    try:
        import fcntl

        get_path = getattr(fcntl, "F_GETPATH", None)
        if get_path is not None:
            raw = fcntl.fcntl(fd, get_path, b"\0" * 1024)
            return Path(os.fsdecode(raw.rstrip(b"\0")))
    except (ImportError, OSError):
        pass
    try:
        opened, named = os.fstat(fd), os.stat(fallback, follow_symlinks=False)
    except OSError:
        return None
    return fallback if (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino) else None


def read_within(path: Path | str, roots: Sequence[Path], *, limit: int) -> bytes:
    """Read a regular file only if it lies inside `roots`, safe against links and swaps.

    The path is resolved and checked against the roots; the resolved path is then opened without following
    a final symbolic link (O_NOFOLLOW) and without blocking, and the *opened* file's real path is checked
    against the roots again, so a file or directory swapped for a link between the check and the open is
    refused too. Reads at most `limit` + 1 bytes from that handle (so the caller can tell oversize input).
    Raises PathRefused (outside the roots, not a regular file, a link swapped in) or OSError (missing,
    unreadable); messages name the path as given, never where a link leads.
    """
    shown = str(path)
    resolved_roots = [Path(r) for r in roots]
    try:
        resolved = Path(path).resolve(strict=True)
    except (OSError, RuntimeError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise PathRefused(f"{shown} cannot be resolved.") from None
    if _within(resolved, resolved_roots) is None:
        raise PathRefused(f"{shown} leads outside the directories that may be read.")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(resolved, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathRefused(f"{shown} was replaced by a link while it was being read.") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PathRefused(f"{shown} is not a regular file.")
        real = _opened_real_path(fd, resolved)
        if real is None or _within(real, resolved_roots) is None:
            raise PathRefused(f"{shown} leads outside the directories that may be read.")
        return fh.read(limit + 1)


def containing_roots(directory: Path | str) -> list[Path]:
    """The roots that files read through `directory` must stay in: the configured roots when the directory lies
    inside one of them (how the pages accept a checkout), else the directory itself (a checkout named on the
    command line, or the pinned sources a tool reads)."""
    resolved = Path(directory).resolve()
    roots = configured_roots()
    if _within(resolved, roots) is not None:
        return roots
    return [resolved]


def decode_text(data: bytes) -> str:
    """Bytes read from a source file as text, as `Path.read_text(errors="replace")` gives it (newlines unified)."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


# -- one rule for every file a command or page reads, and for every name it is given ----------------------

NAME_MAX_BYTES = 255  # one path component, on every common Linux and macOS file system


def expand_user(text: str) -> Path:
    """`Path(text).expanduser()`, with a clear PathRefused for `~name` when no such user exists."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        head = text.split("/", 1)[0]
        raise PathRefused(f"{head}: no such user on this machine, so '{head}' cannot be expanded; "
                          "write the directory out in full.") from None


def name_length_problem(path: str | Path) -> str | None:
    """Why the file system would refuse this name as too long (None when it is fine)."""
    raw = os.fsencode(path)
    if len(raw) >= MAX_PATH_CHARS:
        return f"the path is {len(raw)} bytes long; the limit is {MAX_PATH_CHARS - 1}"
    longest = max(raw.split(b"/"), key=len, default=b"")
    if len(longest) > NAME_MAX_BYTES:
        return (f"one name in it is {len(longest)} bytes long; file systems allow at most {NAME_MAX_BYTES} "
                "per name")
    return None


def no_such_file(path: str | Path) -> str:
    """The one wording, in every front-end, of a path where nothing exists."""
    return f"{path}: no such file or folder"


class NotRegularFile(OSError):
    """The path is a directory, device, pipe or socket: only regular files are read."""


def file_kind(mode: int) -> str:
    """What an st_mode describes, in words ('a regular file', 'a directory', 'a named pipe', ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


KERNEL_FILE_SYSTEMS = ("/proc/", "/sys/", "/dev/")
SHARED_MEMORY = "/dev/shm/"  # a tmpfs of ordinary files: data may well live there


def open_regular(path: str | Path) -> BinaryIO:
    """Open a file for reading only if it is a regular file, without ever blocking.

    The rule for every command and page: the open uses O_NONBLOCK (a FIFO or a device cannot stall it), the
    opened handle is checked with fstat (a path swapped for something else between a look and the open is
    refused too), files of the kernel's pseudo file systems are refused (procfs files such as /proc/kmsg
    call themselves regular yet block or never end), and the handle stays non-blocking. Raises
    NotRegularFile (an OSError) saying what the path is, or the open's own OSError.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"{file_kind(mode)}, not a regular file; nothing was read from it")
        real = os.path.realpath(path)
        if isinstance(real, bytes):
            real = os.fsdecode(real)
        if real.startswith(KERNEL_FILE_SYSTEMS) and not real.startswith(SHARED_MEMORY):
            raise NotRegularFile(errno.EINVAL, "a file of the kernel's pseudo file systems (/proc, /sys, /dev), "
                                               "which can block or never end; nothing was read from it")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most `limit`), read under `open_regular`'s rule; a read that would
    block raises NotRegularFile instead of waiting."""
    with open_regular(path) as fh:
        try:
            data = fh.read() if limit is None else fh.read(limit)
        except BlockingIOError:
            data = None
    if data is None:
        raise NotRegularFile(errno.EAGAIN, "a file whose read would block; nothing was read from it")
    return data


# -- the one reader of a directory tree the user named (their slime checkout) -----------------------------


class SkippedFile(BaseModel):
    """A file of the user's tree that was not read, and why (`kind` groups them: not-regular, outside,
    too-large, budget, unreadable, unparsable, limit)."""

    path: str
    kind: str
    why: str


SKIP_TITLES = {
    "not-regular": "not a regular file (a named pipe, device or socket), never opened",
    "outside": "a link leading outside the checkout, not followed",
    "too-large": "larger than the limit per file",
    "budget": "past the limit on bytes read in all",
    "unreadable": "could not be read",
    "unparsable": "not Python the reader can parse (a syntax error, or nesting too deep)",
    "limit": "the listing stopped at the limit on files or directory entries",
}


def describe_skipped(skipped: Sequence[SkippedFile], shown: int = 3) -> list[str]:
    """One line per kind of skip, with a count and the first few paths: `2 not regular files (...): a.py, b.py`."""
    groups: dict[str, list[SkippedFile]] = {}
    for item in skipped:
        groups.setdefault(item.kind, []).append(item)
    lines = []
    for kind, items in groups.items():
        names = ", ".join(f"{i.path} ({i.why})" if kind in ("too-large", "unreadable", "unparsable") else i.path
                          for i in items[:shown])
        more = f" and {len(items) - shown} more" if len(items) > shown else ""
        count = f"{len(items)} file" + ("s" if len(items) != 1 else "")
        lines.append(f"{count}, {SKIP_TITLES.get(kind, kind)}: {names}{more}")
    return lines


class TreeReader:
    """Lists and reads the files of a tree the user named (their slime checkout), for every place that does.

    The rule: a link (to a file or a folder) is followed only when it leads to a place inside `roots` (by
    default the tree itself), each folder is entered once (no link loops); only regular files are listed (a
    named pipe, device or socket is never opened); a read goes through `read_within` (the opened file itself
    is checked again, without blocking); each file is read only up to `max_file_bytes`, and all of them
    together up to `max_total_bytes`. Whatever is left out is recorded in `skipped` with the reason.
    """

    def __init__(self, root: Path | str, *, max_file_bytes: int, max_total_bytes: int, max_files: int,
                 max_entries: int = 100_000, roots: Sequence[Path] | None = None) -> None:
        self.root = Path(root).resolve()
        self.roots = [self.root] if roots is None else [Path(r).resolve() for r in roots]
        self.max_file_bytes, self.max_total_bytes = max_file_bytes, max_total_bytes
        self.max_files, self.max_entries = max_files, max_entries
        self.bytes_read = 0
        self.entries_seen = 0
        self.skipped: list[SkippedFile] = []
        self._skipped_paths: set[tuple[str, str]] = set()

    def rel(self, path: Path) -> str:
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def skip(self, path: Path | str, kind: str, why: str) -> None:
        rel = self.rel(Path(path)) if isinstance(path, Path) else path
        if (rel, kind) not in self._skipped_paths and len(self.skipped) < 10_000:
            self._skipped_paths.add((rel, kind))
            self.skipped.append(SkippedFile(path=rel, kind=kind, why=why))

    def _inside(self, path: Path) -> Path | None:
        """Where `path` really is when that is inside the roots, else None (a broken link: None too)."""
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        return real if _within(real, self.roots) is not None else None

    def files(self, sub: str = "", *, suffix: str = ".py", skip_parts: frozenset[str] = frozenset(),
              limit: int | None = None) -> list[Path]:
        """The regular files named `*suffix` under `root/sub` (or `root/sub` itself when it is such a file),
        sorted, at most `limit` (default `max_files`); paths are as under the root, never where a link leads."""
        limit = self.max_files if limit is None else limit
        base = self.root / sub if sub else self.root
        if not os.path.lexists(base):
            return []
        real = self._inside(base)
        if real is None:
            if os.path.islink(base):
                self._skip_link(base)
            return []
        if not real.is_dir():
            return [base] if self._regular(base) and base.name.endswith(suffix) else []
        out: list[Path] = []
        seen: set[tuple[int, int]] = set()
        stack = [base]
        while stack:
            folder = stack.pop()
            try:
                st = os.stat(folder)
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                self.skip(folder, "unreadable", "a folder that cannot be listed")
                continue
            subfolders = []
            for entry in entries:
                self.entries_seen += 1
                if self.entries_seen > self.max_entries:
                    self.skip(folder, "limit", f"past {self.max_entries:,} directory entries")
                    return sorted(out)
                path = Path(entry.path)
                if skip_parts and skip_parts & set(path.relative_to(self.root).parts):
                    continue
                try:
                    is_link = entry.is_symlink()
                    if is_link:
                        if self._inside(path) is None:
                            self._skip_link(path)
                            continue
                        is_dir = entry.is_dir()
                    else:
                        is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    subfolders.append(path)
                elif entry.name.endswith(suffix) and self._regular(path):
                    out.append(path)
                    if len(out) >= limit:
                        self.skip(folder, "limit", f"past {limit:,} files")
                        return sorted(out)
            stack.extend(reversed(subfolders))
        return sorted(out)

    def _skip_link(self, path: Path) -> None:
        if os.path.exists(path):
            self.skip(path, "outside", "a link leading outside the checkout")
        else:
            self.skip(path, "unreadable", "a link to nothing")

    def _regular(self, path: Path) -> bool:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return False
        if not stat.S_ISREG(mode):
            self.skip(path, "not-regular", file_kind(mode))
            return False
        return True

    def read(self, path: Path) -> bytes | None:
        """The bytes of one file of the tree within the limits, else None (recorded in `skipped`)."""
        try:
            size = os.stat(path).st_size
        except OSError as exc:
            self.skip(path, "unreadable", exc.strerror or "cannot be read")
            return None
        if size > self.max_file_bytes:
            self.skip(path, "too-large", f"{size:,} bytes; at most {self.max_file_bytes:,} are read per file")
            return None
        if self.bytes_read + size > self.max_total_bytes:
            self.skip(path, "budget", f"past {self.max_total_bytes:,} bytes in all")
            return None
        try:
            data = read_within(path, self.roots, limit=self.max_file_bytes)
        except PathRefused as exc:
            kind = "not-regular" if "regular" in str(exc) else "outside"
            self.skip(path, kind, "not a regular file" if kind == "not-regular" else "leads outside the checkout")
            return None
        except OSError as exc:
            self.skip(path, "unreadable", exc.strerror or "cannot be read")
            return None
        if len(data) > self.max_file_bytes:
            self.skip(path, "too-large", f"over {self.max_file_bytes:,} bytes; at most that is read per file")
            return None
        self.bytes_read += len(data)
        return data

    def read_text(self, path: Path) -> str | None:
        data = self.read(path)
        return decode_text(data) if data is not None else None
