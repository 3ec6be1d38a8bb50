"""Re-opening runs fast: scans of event files kept in diskcache, keyed by the file's identity, as data.

The key is (path, size, modification time). When a file has only grown since it was cached (a run still
being written), only the appended bytes are read and joined to the cached scan. Entries written here carry
the prefix `monitor:` and are trimmed to a byte budget so that they never crowd out the app's own records.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import diskcache

from core.monitor import blob
from core.monitor.events import FileScan, merge_appended, scan_event_bytes
from core.paths import open_regular

PREFIX = "monitor:"
SCHEMA = 3
BUDGET_BYTES = 400 * 1024 * 1024
TAIL_CHECK = 4096  # bytes before the cached end that must be unchanged for an append-only re-read
_INDEX_KEY = f"{PREFIX}index"


def path_id(path: str) -> str:
    """A key-safe name for a path: any file name (even bytes that are not UTF-8) gives a plain ASCII key."""
    return hashlib.blake2b(os.fsencode(path), digest_size=16).hexdigest()


def scan_key(path: str, size: int, mtime_ns: int) -> str:
    return f"{PREFIX}scan:v{SCHEMA}:{path_id(path)}:{size}:{mtime_ns}"


def _latest_key(path: str) -> str:
    return f"{PREFIX}latest:v{SCHEMA}:{path_id(path)}"


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_scan(path: str | Path, cache: diskcache.Cache | None = None, *, on_progress=None) -> tuple[FileScan, str]:
    """The scan of one event file and how it was obtained: "cached", "appended" or "read"."""
    p = Path(path)
    with open_regular(p) as fh:  # regular files only, opened without blocking
        st = os.fstat(fh.fileno())
        key = scan_key(str(p), st.st_size, st.st_mtime_ns)
        if cache is not None:
            hit = _load(cache, key)
            if hit is not None:
                return hit, "cached"
        data = fh.read()
    how = "read"
    scan: FileScan | None = None
    if cache is not None:
        latest = get_json(cache, _latest_key(str(p)))
        if isinstance(latest, dict) and latest.get("size", 0) < len(data):
            old = _load(cache, latest.get("key", ""))
            end = old.clean_end if old is not None else 0
            lo = max(0, end - TAIL_CHECK)
            if old is not None and 0 < end <= len(data) and _digest(data[lo:end]) == latest.get("tail_digest"):
                tail = scan_event_bytes(data, path=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns, start=end,
                                        on_progress=on_progress)
                scan = merge_appended(old, tail)
                how = "appended"
    if scan is None:
        scan = scan_event_bytes(data, path=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns, on_progress=on_progress)
    if cache is not None:
        _store(cache, key, scan)
        lo = max(0, scan.clean_end - TAIL_CHECK)
        set_json(cache, _latest_key(str(p)), {"key": key, "size": st.st_size,
                                              "tail_digest": _digest(data[lo:scan.clean_end])})
    return scan, how


def _load(cache: diskcache.Cache, key: str) -> FileScan | None:
    return load_blob(cache, key, FileScan)


def _store(cache: diskcache.Cache, key: str, scan: FileScan) -> None:
    store_blob(cache, key, scan)


def run_key(identities: list[tuple[str, int, int]]) -> str:
    """Key of a whole run's stitched result: the identities (path, size, mtime) of all its files."""
    digest = hashlib.blake2b(repr(sorted(identities)).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{PREFIX}run:v{SCHEMA}:{digest}"


def load_blob(cache: diskcache.Cache, key: str, kind: type):
    """An object written by `store_blob`, or None when missing, damaged, unsafe or of another kind.

    Blobs are data (core.monitor.blob), never pickles: write access to the cache is not code execution."""
    try:
        raw = cache.get(key)
    except Exception:  # noqa: BLE001 - a damaged or refused cache entry is simply a miss
        return None
    if not isinstance(raw, bytes):
        return None
    try:
        obj = blob.loads(raw)
    except Exception:  # noqa: BLE001 - not a blob we wrote: a miss
        return None
    return obj if isinstance(obj, kind) else None


def store_blob(cache: diskcache.Cache, key: str, obj) -> None:
    """Store an object as a blob, then trim this module's entries (oldest first) to the byte budget."""
    try:
        data = blob.dumps(obj)
    except blob.BlobError:
        return  # not plain data: simply not cached
    cache.set(key, data)
    with cache.transact():
        index = get_json(cache, _INDEX_KEY)
        index = [(k, n) for k, n in (index if isinstance(index, list) else []) if k != key] + [(key, len(data))]
        total = sum(n for _, n in index)
        while index and total > BUDGET_BYTES:
            old_key, n = index.pop(0)
            cache.delete(old_key)
            total -= n
        set_json(cache, _INDEX_KEY, index)


def get_json(cache: diskcache.Cache, key: str):
    """A value written by `set_json` (None when missing or not JSON); diskcache stores it as text."""
    try:
        raw = cache.get(key)
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def set_json(cache: diskcache.Cache, key: str, value) -> None:
    """Store a small JSON value as text (a dict or list given to diskcache would be pickled)."""
    cache.set(key, json.dumps(value))
