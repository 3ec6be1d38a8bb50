"""Re-opening runs fast: scans of log files kept in diskcache, keyed by the file's identity, as data.

The key is (path, size, modification time). When a file has only grown since it was cached (a run still
being written), its reader (core.monitor.tensorboard.run, core.monitor.wandb.run) reads only the appended
bytes and joins them to the cached scan. Entries written here carry
the prefix `monitor:` and are trimmed to a byte budget so that they never crowd out the app's own records.
"""

from __future__ import annotations

import hashlib
import json
import os

import diskcache

from core.monitor import blob

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


def latest_key(path: str) -> str:
    return f"{PREFIX}latest:v{SCHEMA}:{path_id(path)}"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


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
