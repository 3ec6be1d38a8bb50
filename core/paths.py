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
