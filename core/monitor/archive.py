"""Uploaded event files and zipped run directories, unpacked only into a private temporary directory.

A zip member is refused when its name is absolute, climbs out with '..', is a link or a device, or when the
archive is a bomb (too many members, too much uncompressed data, or a compression ratio no event file
has). Nothing is ever written outside the temporary directory, and what was refused is reported.

Each upload gets its own `UploadWorkdir`; `UploadSlots` (one per browser session, one upload per box of the
page) removes it as soon as the upload is replaced or cleared, its finalizer removes it when the browser session is dropped (or the server exits), and directories left
behind by a server that was killed are swept once they are a day old.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
import weakref
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

MAX_MEMBERS = 2000
MAX_TOTAL_BYTES = 2 * 1024 ** 3
MAX_MEMBER_BYTES = 1024 ** 3
MAX_RATIO = 200  # event files compress ~3-10x; far beyond that is a bomb
MAX_UPLOAD_FILES = 200
SAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


class UnpackNotice(BaseModel):
    level: str  # "warning" | "error"
    message: str


class Unpacked(BaseModel):
    """Where the uploads landed, and what was refused or renamed on the way."""

    directory: str
    files: list[str] = []
    notices: list[UnpackNotice] = []


def safe_name(name: str) -> str:
    """A plain file name (no directories, no odd characters) that still says it is an event file."""
    base = PurePosixPath(str(name).replace("\\", "/")).name or "upload"
    cleaned = SAFE_CHARS.sub("_", base).strip("._") or "upload"
    return cleaned[:200]


WORKDIR_PREFIX = "slime-monitor-"
STALE_WORKDIR_SECONDS = 24 * 3600


def new_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))


def _is_our_workdir(path: Path) -> bool:
    """Only directories this module made (directly in the temporary directory, with our prefix) are removed."""
    return (path.name.startswith(WORKDIR_PREFIX) and path.parent.resolve() == Path(tempfile.gettempdir()).resolve()
            and path.is_dir() and not path.is_symlink())


def remove_workdir(path: str | Path) -> None:
    p = Path(path)
    if _is_our_workdir(p):
        shutil.rmtree(p, ignore_errors=True)


class UploadWorkdir:
    """A private temporary directory for one upload; removed by `remove()`, or when garbage-collected."""

    def __init__(self) -> None:
        self.path = new_workdir()
        self._finalizer = weakref.finalize(self, remove_workdir, str(self.path))

    def remove(self) -> None:
        self._finalizer()

    def touch(self) -> None:
        """Mark the directory as in use, so that the stale sweep leaves it alone."""
        try:
            os.utime(self.path)
        except OSError:
            pass

    @property
    def exists(self) -> bool:
        return self.path.is_dir()


def sweep_stale_workdirs(max_age_s: float = STALE_WORKDIR_SECONDS, now: float | None = None) -> int:
    """Remove our workdirs (owned by this user) untouched for longer than max_age_s; returns how many."""
    now = time.time() if now is None else now
    root = Path(tempfile.gettempdir())
    removed = 0
    try:
        entries = list(root.glob(WORKDIR_PREFIX + "*"))
    except OSError:
        return 0
    for p in entries:
        try:
            info = p.lstat()
        except OSError:
            continue
        if (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and now - info.st_mtime > max_age_s
                and _is_our_workdir(p)):
            shutil.rmtree(p, ignore_errors=True)
            removed += 1
    return removed


def content_digest(files: list[tuple[str, bytes]]) -> str:
    """One hash of the names and bytes of a set of uploads (same name and size but other bytes differ)."""
    h = hashlib.sha256()
    for name, data in files:
        encoded = name.encode("utf-8", "surrogatepass")
        h.update(len(encoded).to_bytes(8, "little") + encoded)
        h.update(len(data).to_bytes(8, "little"))
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def save_uploads(uploads: list[tuple[str, bytes]], workdir: Path, run_name: str = "uploaded") -> Unpacked:
    """Write uploaded event files into workdir/<run_name>; names are flattened and made unique (W&B run
    files, `*.wandb`, keep their name, each in a folder of its own)."""
    run_dir = workdir / safe_name(run_name)
    run_dir.mkdir(parents=True, exist_ok=True)
    out = Unpacked(directory=str(run_dir))
    for i, (name, data) in enumerate(uploads):
        if i >= MAX_UPLOAD_FILES:
            out.notices.append(UnpackNotice(level="warning", message=f"Only the first {MAX_UPLOAD_FILES} files "
                                                                     "were read."))
            break
        clean = safe_name(name)
        if clean.endswith(".wandb"):
            # W&B run files of one run share a name: each goes into a folder of its own, the name kept
            target = run_dir / f"wandb-file-{i:03d}" / clean
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            out.files.append(str(target))
            continue
        if "tfevents" not in clean:
            out.notices.append(UnpackNotice(level="warning", message=(
                f"{clean}: the name lacks 'tfevents', which TensorBoard requires of event files; read it as "
                "one anyway.")))
            clean = f"events.out.tfevents.{clean}"
        target = run_dir / clean
        n = 1
        while target.exists():
            target = run_dir / f"{clean}.{n}"
            n += 1
        target.write_bytes(data)
        out.files.append(str(target))
    return out


def unpack_zip(zip_bytes_path: Path, workdir: Path) -> Unpacked:
    """Extract a zip of run directories into workdir/unzipped, refusing unsafe members."""
    dest = (workdir / "unzipped").resolve()
    dest.mkdir(parents=True, exist_ok=True)
    out = Unpacked(directory=str(dest))
    try:
        zf = zipfile.ZipFile(zip_bytes_path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        out.notices.append(UnpackNotice(level="error", message=f"That is not a readable zip file ({exc})."))
        return out
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            out.notices.append(UnpackNotice(level="error", message=(
                f"The zip has {len(infos)} members; at most {MAX_MEMBERS} are read. Nothing was extracted.")))
            return out
        declared = sum(max(0, i.file_size) for i in infos)
        if declared > MAX_TOTAL_BYTES:
            out.notices.append(UnpackNotice(level="error", message=(
                f"The zip would unpack to {declared / 1024 ** 2:.0f} MiB, over the {MAX_TOTAL_BYTES // 1024 ** 3} GiB "
                "limit. Nothing was extracted.")))
            return out
        written = 0
        for info in infos:
            reason = _refusal(info, dest)
            if reason:
                out.notices.append(UnpackNotice(level="warning", message=f"Skipped {_shown_member(info.filename)}: {reason}."))
                continue
            if info.is_dir():
                continue
            target = dest / _member_path(info.filename)
            reason = _clash(target, dest)
            if reason:
                out.notices.append(UnpackNotice(level="warning", message=f"Skipped {_shown_member(info.filename)}: {reason}."))
                continue
            size = 0
            created = False
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "xb") as dst:
                    created = True
                    while True:
                        chunk = src.read(1 << 20)
                        if not chunk:
                            break
                        size += len(chunk)
                        written += len(chunk)
                        if size > info.file_size or size > MAX_MEMBER_BYTES or written > MAX_TOTAL_BYTES:
                            raise ValueError("it unpacks to more than the archive declares or the limit allows")
                        dst.write(chunk)
            except (ValueError, zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError) as exc:
                if created:
                    _discard(target)
                why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
                out.notices.append(UnpackNotice(level="warning", message=f"Skipped {_shown_member(info.filename)}: {why}."))
                continue
            out.files.append(str(target))
    return out


def _shown_member(name: str, limit: int = 120) -> str:
    """A member name for a message: quoted, and shortened in the middle when long."""
    if len(name) > limit:
        name = f"{name[:limit // 2]}...{name[-limit // 2:]}"
    return repr(name)


def _clash(target: Path, dest: Path) -> str | None:
    """Why `target` cannot be written without replacing something extracted before (None when it can)."""
    for parent in reversed(target.relative_to(dest).parents[:-1]):
        where = dest / parent
        if where.exists() and not where.is_dir():
            return f"an earlier member is a file named {parent.as_posix()!r}, where this one needs a folder"
    if target.is_dir():
        return "an earlier member made a folder of the same name"
    if target.exists():
        return "an earlier member has the same name (only the first is extracted)"
    return None


def _discard(target: Path) -> None:
    """Remove a partly written member file; never a directory, and never raising."""
    try:
        if target.is_file() and not target.is_symlink():
            target.unlink()
    except OSError:
        pass


MAX_MEMBER_DEPTH = 32
MAX_MEMBER_NAME = 200
MAX_MEMBER_PATH = 1024


def _member_path(name: str) -> PurePosixPath:
    """The member's path with odd characters replaced and '.' parts dropped (may be empty)."""
    parts = [SAFE_CHARS.sub("_", p) for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".")]
    return PurePosixPath(*parts)


def _refusal(info: zipfile.ZipInfo, dest: Path) -> str | None:
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "absolute paths are not extracted"
    if any(p == ".." for p in parts):
        return "'..' in the path would leave the extraction directory"
    clean = _member_path(name)
    if not clean.parts:
        return None if info.is_dir() else "it names no file (only '.' or '/')"
    if len(clean.parts) > MAX_MEMBER_DEPTH:
        return f"its path is {len(clean.parts)} folders deep; at most {MAX_MEMBER_DEPTH} are extracted"
    longest = max(len(p) for p in clean.parts)
    if longest > MAX_MEMBER_NAME:
        return f"a name in its path is {longest} characters long; at most {MAX_MEMBER_NAME} are extracted"
    if len(str(clean)) > MAX_MEMBER_PATH:
        return f"its path is {len(str(clean))} characters long; at most {MAX_MEMBER_PATH} are extracted"
    mode = info.external_attr >> 16
    if mode and (stat.S_ISLNK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)
                 or stat.S_ISSOCK(mode)):
        return "links and special files are not extracted"
    if info.flag_bits & 0x1:
        return "encrypted members are not read"
    if not info.is_dir():
        if info.file_size > MAX_MEMBER_BYTES:
            return f"it unpacks to more than {MAX_MEMBER_BYTES // 1024 ** 2} MiB"
        if info.compress_size and info.file_size / max(1, info.compress_size) > MAX_RATIO and info.file_size > 1 << 20:
            return f"its compression ratio ({info.file_size // max(1, info.compress_size)}:1) looks like a zip bomb"
    target = (dest / _member_path(info.filename)).resolve()
    if target != dest and not str(target).startswith(str(dest) + os.sep):
        return "it resolves outside the extraction directory"
    return None


# -- the upload boxes of a page: one current upload per box --------------------------------------------------

class HeldUpload:
    """What one upload box holds now: its content hash, its private directory, the runs found in it."""

    def __init__(self, digest: str, workdir: UploadWorkdir, found: list[dict], notices: list[dict],
                 label: str | None = None, root: str | None = None) -> None:
        self.digest, self.workdir, self.found, self.notices = digest, workdir, found, notices
        self.label, self.root = label, root  # a zip's name (without .zip) and where it was unpacked


class UploadSlots:
    """The uploads of one browser session, one per box ("files": event or W&B run files of one run, "zip": a zip
    of run folders). A box's content is hashed once per upload (by the front-end's file ids); when it changes or
    is cleared, the old directory is deleted before the new upload is unpacked."""

    def __init__(self) -> None:
        self.held: dict[str, HeldUpload] = {}
        self._digests: dict[str, tuple[tuple, str]] = {}

    def _digest(self, slot: str, ids: tuple, contents: Callable[[], list[tuple[str, bytes]]]) -> str | None:
        if not ids:
            return None
        cached = self._digests.get(slot)
        if cached and cached[0] == ids:
            return cached[1]
        digest = content_digest(contents())
        self._digests[slot] = (ids, digest)
        return digest

    def keep(self, slot: str, ids: tuple, contents: Callable[[], list[tuple[str, bytes]]],
             zip_name: str | None = None) -> bool:
        """Hold the box's current upload (`ids` identify it, `contents` gives its (name, bytes) pairs); a zip
        box names its file. True when a new upload was unpacked: the user's own input."""
        digest = self._digest(slot, ids, contents)
        entry = self.held.get(slot)
        if entry is not None and entry.digest == digest and entry.workdir.exists:
            entry.workdir.touch()
            return False
        if entry is not None:
            entry.workdir.remove()
            del self.held[slot]
        if digest is None:
            return False
        sweep_stale_workdirs()
        workdir = UploadWorkdir()
        self.held[slot] = (_unpack_zipped(zip_name, contents()[0][1], workdir, digest) if zip_name is not None
                           else _unpack_files(contents(), workdir, digest))
        return True

    def sources(self, files_label: str) -> tuple[list[dict], list[dict]]:
        """The runs the uploads hold (as FoundRun data, labelled: the files box by `files_label`, a zip by its
        name) and the notices to show (what was refused or renamed; an upload that holds no run)."""
        sources, notices = [], []
        for slot, entry in self.held.items():
            notices.extend(entry.notices)
            base_label = (files_label.strip() or "uploaded") if slot == "files" else entry.label
            for found in entry.found:
                label = base_label if len(entry.found) == 1 else f"{base_label}/{found['label']}"
                sources.append({**found, "label": label})
            if not entry.found:
                where = f"{entry.label}.zip holds" if entry.root is not None else "The uploaded files hold"
                notices.append({"level": "error", "message": f"{where} no TensorBoard event files and no W&B run "
                                                             "files."})
        return sources, notices


def _unpack_files(files: list[tuple[str, bytes]], workdir: UploadWorkdir, digest: str) -> HeldUpload:
    from core.monitor.sources import find_runs

    unpacked = save_uploads(files, workdir.path, "uploaded")
    return HeldUpload(digest, workdir, [f.model_dump() for f in find_runs(Path(unpacked.directory))],
                      [n.model_dump() for n in unpacked.notices])


def _unpack_zipped(name: str, data: bytes, workdir: UploadWorkdir, digest: str) -> HeldUpload:
    from core.monitor.sources import find_runs

    zpath = workdir.path / "upload.zip"
    zpath.write_bytes(data)
    unpacked = unpack_zip(zpath, workdir.path)
    zpath.unlink(missing_ok=True)
    root = Path(unpacked.directory)
    return HeldUpload(digest, workdir, [f.model_dump() for f in find_runs(root)],
                      [n.model_dump() for n in unpacked.notices], label=Path(name).stem, root=str(root))
