"""What a user's checkout says about itself, read as files (git is never run): the commit it is at and that
commit's date, the SGLang and Megatron its docker files build with, and a content key of the parser files.

Every read stays inside the checkout's allowed roots (core.paths) and is bounded; whatever cannot be read is
simply unknown (None), never guessed.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import stat
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from core.paths import PathRefused, decode_text, read_within

MAX_GIT_TEXT = 64_000  # HEAD, a ref file, a loose object (compressed)
MAX_PACKED_REFS = 4_000_000
MAX_PACK_INDEX = 64_000_000  # an .idx file (about 28 bytes per object)
MAX_PACKS = 16
MAX_COMMIT_BYTES = 64_000  # a decompressed commit object
MAX_DOCKER_BYTES = 1_000_000
_HEX40 = re.compile(r"^[0-9a-f]{40}$")

# The files whose content decides a checkout's catalog (hashed when the tree is not a git checkout, and
# stat'ed on top of the commit id so that an uncommitted edit is noticed).
PARSER_FILES = (
    "slime/utils/arguments.py",
    "slime/backends/sglang_utils/arguments.py",
    "slime/backends/megatron_utils/arguments.py",
    "slime/backends/megatron_utils/__init__.py",
    "slime/backends/megatron_utils/server/arguments.py",
    "slime/backends/fsdp_utils/arguments.py",
    "docker/Dockerfile",
    "docker/version.txt",
)


@dataclass
class GitInfo:
    commit: str | None = None
    date: str | None = None  # YYYY-MM-DD of the commit (committer date), when the object could be read
    ref: str | None = None  # e.g. refs/heads/main, None when detached
    note: str | None = None  # why the commit is unknown, when it is


def read_bounded(path: Path, allowed: list[Path], limit: int) -> bytes | None:
    try:
        if not path.is_file():
            return None
        data = read_within(path, allowed, limit=limit)
    except (OSError, PathRefused, ValueError):
        return None
    return data if len(data) <= limit else None


def git_dir(checkout: Path, allowed: list[Path]) -> Path | None:
    """The checkout's git directory: `.git` itself, or the directory a `.git` file (a worktree) points to,
    when that lies inside the allowed roots."""
    dot = checkout / ".git"
    if dot.is_dir():
        return dot
    data = read_bounded(dot, allowed, MAX_GIT_TEXT)
    if data is None:
        return None
    m = re.match(r"gitdir:\s*(.+)", decode_text(data).strip())
    if not m:
        return None
    target = Path(m.group(1).strip())
    target = target if target.is_absolute() else checkout / target
    return target if target.is_dir() else None


def read_git(checkout: Path, allowed: list[Path]) -> GitInfo:
    """The commit HEAD names (following one symbolic ref, loose or packed) and, when readable, its date."""
    gdir = git_dir(checkout, allowed)
    if gdir is None:
        return GitInfo(note="not a git checkout (no readable .git)")
    head = read_bounded(gdir / "HEAD", allowed, MAX_GIT_TEXT)
    if head is None:
        return GitInfo(note=".git/HEAD cannot be read inside the checkout")
    text = decode_text(head).strip()
    ref = None
    commit = None
    if text.startswith("ref:"):
        ref = text[4:].strip()
        if not re.fullmatch(r"refs/[A-Za-z0-9._/\-]{1,200}", ref) or ".." in ref:
            return GitInfo(ref=ref, note=f"HEAD names an unusual ref ({ref[:80]})")
        commit = _resolve_ref(gdir, ref, allowed)
    elif _HEX40.match(text):
        commit = text
    if commit is None:
        return GitInfo(ref=ref, note=f"the commit of {ref or 'HEAD'} is not recorded in .git")
    return GitInfo(commit=commit, date=commit_date(gdir, commit, allowed), ref=ref)


def _common_dir(gdir: Path, allowed: list[Path]) -> Path:
    """A worktree's git dir keeps refs and objects in the main repository (its `commondir` file)."""
    data = read_bounded(gdir / "commondir", allowed, MAX_GIT_TEXT)
    if data is None:
        return gdir
    target = Path(decode_text(data).strip())
    target = target if target.is_absolute() else gdir / target
    return target if target.is_dir() else gdir


def _resolve_ref(gdir: Path, ref: str, allowed: list[Path]) -> str | None:
    for base in (gdir, _common_dir(gdir, allowed)):
        data = read_bounded(base / ref, allowed, MAX_GIT_TEXT)
        if data is not None:
            value = decode_text(data).strip()
            if _HEX40.match(value):
                return value
        packed = read_bounded(base / "packed-refs", allowed, MAX_PACKED_REFS)
        if packed is not None:
            for line in decode_text(packed).splitlines():
                parts = line.strip().split(" ")
                if len(parts) == 2 and parts[1] == ref and _HEX40.match(parts[0]):
                    return parts[0]
    return None


def _inflate(data: bytes, limit: int) -> bytes | None:
    try:
        out = zlib.decompressobj().decompress(data, limit)
    except zlib.error:
        return None
    return out


def _date_of_commit_body(body: bytes) -> str | None:
    m = re.search(rb"^committer [^\n]*> (\d{1,12}) [+-]\d{4}$", body, re.M)
    if not m:
        return None
    try:
        return _dt.datetime.fromtimestamp(int(m.group(1)), tz=_dt.UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return None


def commit_date(gdir: Path, commit: str, allowed: list[Path]) -> str | None:
    """The committer date of `commit`: from its loose object, or from a pack when stored whole (not as a delta)."""
    objects = _common_dir(gdir, allowed) / "objects"
    loose = read_bounded(objects / commit[:2] / commit[2:], allowed, MAX_GIT_TEXT)
    if loose is not None:
        raw = _inflate(loose, MAX_COMMIT_BYTES)
        if raw is not None and raw.startswith(b"commit "):
            return _date_of_commit_body(raw.split(b"\0", 1)[-1])
    pack_dir = objects / "pack"
    try:
        indexes = sorted(pack_dir.glob("pack-*.idx"))[:MAX_PACKS] if pack_dir.is_dir() else []
    except OSError:
        return None
    binary = bytes.fromhex(commit)
    for idx in indexes:
        offset = _pack_offset(idx, binary, allowed)
        if offset is None:
            continue
        return _packed_commit_date(idx.with_suffix(".pack"), offset, allowed)
    return None


def _pack_offset(idx: Path, binary: bytes, allowed: list[Path]) -> int | None:
    """The object's offset in its pack, from a version-2 pack index."""
    data = read_bounded(idx, allowed, MAX_PACK_INDEX)
    if data is None or len(data) < 8 + 256 * 4 or data[:4] != b"\xfftOc" or struct.unpack(">I", data[4:8])[0] != 2:
        return None
    fanout = struct.unpack(">256I", data[8:8 + 1024])
    total = fanout[255]
    lo = fanout[binary[0] - 1] if binary[0] else 0
    hi = fanout[binary[0]]
    names = 8 + 1024
    if len(data) < names + total * 28:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        name = data[names + mid * 20:names + mid * 20 + 20]
        if name == binary:
            offsets = names + total * 24
            value = struct.unpack(">I", data[offsets + mid * 4:offsets + mid * 4 + 4])[0]
            if value & 0x80000000:
                large = offsets + total * 4 + (value & 0x7FFFFFFF) * 8
                return struct.unpack(">Q", data[large:large + 8])[0] if len(data) >= large + 8 else None
            return value
        if name < binary:
            lo = mid + 1
        else:
            hi = mid
    return None


def _packed_commit_date(pack: Path, offset: int, allowed: list[Path]) -> str | None:
    try:
        real = pack.resolve(strict=True)
        if not any(real.is_relative_to(Path(root).resolve()) for root in allowed):
            return None  # a pack that leads outside the roots is not read
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            fh.seek(offset)
            chunk = fh.read(MAX_GIT_TEXT)
    except (OSError, RuntimeError, ValueError):
        return None
    if not chunk:
        return None
    kind = (chunk[0] >> 4) & 7
    i = 1
    while chunk[i - 1] & 0x80 and i < len(chunk):
        i += 1
    if kind != 1:  # not a whole commit (a delta): the date is left unknown
        return None
    raw = _inflate(chunk[i:], MAX_COMMIT_BYTES)
    return _date_of_commit_body(raw) if raw else None


@dataclass
class DockerVersions:
    sglang: str | None = None
    sglang_origin: str | None = None
    megatron: str | None = None
    megatron_origin: str | None = None
    image_version: str | None = None  # docker/version.txt: slime's own image tag


def read_docker(checkout: Path, allowed: list[Path]) -> DockerVersions:
    """The SGLang image tag and the Megatron commit slime's docker/Dockerfile builds with, and docker/version.txt."""
    out = DockerVersions()
    data = read_bounded(checkout / "docker" / "Dockerfile", allowed, MAX_DOCKER_BYTES)
    if data is None:
        out.sglang, out.sglang_origin = "a version the checkout does not state", "no docker/Dockerfile"
        out.megatron, out.megatron_origin = "a version the checkout does not state", "no docker/Dockerfile"
    else:
        lines = decode_text(data).splitlines()
        for number, line in enumerate(lines, start=1):
            m = re.match(r"\s*ARG\s+(SGLANG_IMAGE_TAG|SGLANG_VERSION)=(\S+)", line)
            if m and out.sglang is None:
                out.sglang, out.sglang_origin = m.group(2), f"docker/Dockerfile:{number} of your checkout"
            m = re.match(r"\s*ARG\s+MEGATRON_COMMIT=(\S+)", line)
            if m and out.megatron is None:
                out.megatron, out.megatron_origin = m.group(1), f"docker/Dockerfile:{number} of your checkout"
        for number, line in enumerate(lines, start=1):  # an image named without an ARG: FROM lmsysorg/sglang:dev
            m = re.match(r"\s*FROM\s+\S*sglang:([A-Za-z0-9_.\-]+)(?:\s|$)", line)
            if m and out.sglang is None:
                out.sglang, out.sglang_origin = m.group(1), f"docker/Dockerfile:{number} of your checkout"
        if out.sglang is None:
            out.sglang, out.sglang_origin = "a version the Dockerfile does not state", "docker/Dockerfile"
        if out.megatron is None:
            out.megatron, out.megatron_origin = "a commit the Dockerfile does not state", "docker/Dockerfile"
    version = read_bounded(checkout / "docker" / "version.txt", allowed, MAX_GIT_TEXT)
    if version is not None:
        text = decode_text(version).strip().splitlines()
        out.image_version = text[0][:80] if text else None
    return out


def _parser_files(checkout: Path) -> list[str]:
    """PARSER_FILES in this checkout's package (a fork may rename `slime/`)."""
    from core.launch.catalog_build.build import Layout, package_of

    layout = Layout(package_of(checkout))
    return [layout.cite(rel) if rel.startswith("slime/") else rel for rel in PARSER_FILES]


def content_key(checkout: Path, allowed: list[Path]) -> str:
    """A hash of the parser files' contents (a file that is missing or unreadable counts as absent)."""
    digest = hashlib.sha256()
    for rel in _parser_files(checkout):
        data = read_bounded(checkout / rel, allowed, 4_000_000)
        digest.update(rel.encode() + b"\0" + (hashlib.sha256(data).digest() if data is not None else b"-"))
    return digest.hexdigest()


def stat_key(checkout: Path) -> str:
    """Sizes and modification times of the parser files (cheap; catches an uncommitted edit)."""
    parts = []
    for rel in _parser_files(checkout):
        try:
            st = (checkout / rel).stat()
            parts.append(f"{rel}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{rel}:-")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
