"""Re-opening runs fast: scans of log files kept in diskcache, keyed by the file's identity, as data.

The key is (real path, size, modification time): `medium` and `/abs/medium` are one file and one entry. When a
file has only grown since it was cached (a run still being written), its reader (core.monitor.stream) reads only
the bytes appended since, from the saved offset, and joins them to the cached scan. Entries written here carry
the prefix `monitor:` and are trimmed to a byte budget so that they never crowd out the app's own records.

Writes are gathered in a `CacheBatch` (see `batched`) and made in one transaction with one update of the
budget's index, so reading 10,000 small files costs 10,000 entries, not 10,000 rewrites of the index.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import diskcache

from core.monitor import blob

PREFIX = "monitor:"
SCHEMA = 4
BUDGET_BYTES = 400 * 1024 * 1024
TAIL_CHECK = 4096  # bytes before the cached end that must be unchanged for an append-only re-read
BATCH_FLUSH_BYTES = 64 * 1024 * 1024  # a batch writes out once it holds this much
_INDEX_KEY = f"{PREFIX}index"


def real_path(path: str | Path) -> str:
    """The path a file is known by in the cache: absolute, links resolved (however the user spelled it)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.abspath(path)


def path_id(path: str | Path) -> str:
    """A key-safe name for a file: its real path hashed, so any file name (even bytes that are not UTF-8)
    gives a plain ASCII key and every spelling of the path gives the same one."""
    return hashlib.blake2b(os.fsencode(real_path(path)), digest_size=16).hexdigest()


def scan_key(path: str | Path, size: int, mtime_ns: int) -> str:
    return f"{PREFIX}scan:v{SCHEMA}:{path_id(path)}:{size}:{mtime_ns}"


def latest_key(path: str | Path, kind: str = "tensorboard") -> str:
    """Where the last scan of a file is named, to find it again once the file has grown."""
    return f"{PREFIX}latest:v{SCHEMA}:{kind}:{path_id(path)}"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def run_key(identities: list[tuple[str, int, int]]) -> str:
    """Key of a whole run's stitched result: the identities (real path, size, mtime) of all its files."""
    real = sorted((real_path(p), size, mtime) for p, size, mtime in identities)
    digest_ = hashlib.blake2b(repr(real).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{PREFIX}run:v{SCHEMA}:{digest_}"


class CacheBatch:
    """Writes to a cache gathered, then made together: one transaction, one update of the budget's index.

    Reads see the writes not made yet. It flushes on its own past BATCH_FLUSH_BYTES, so that it never holds
    more than that in memory."""

    def __init__(self, cache: diskcache.Cache, flush_bytes: int = BATCH_FLUSH_BYTES) -> None:
        self.cache = cache
        self.flush_bytes = flush_bytes
        self._pending: dict[str, bytes | str] = {}
        self._blobs: dict[str, int] = {}  # key -> size, for the budget's index
        self._bytes = 0

    def get(self, key: str, default=None):
        if key in self._pending:
            return self._pending[key]
        return self.cache.get(key, default)

    def set(self, key: str, value: bytes | str, *, is_blob: bool = False) -> None:
        self._pending[key] = value
        self._bytes += len(value)
        if is_blob:
            self._blobs[key] = len(value)
        if self._bytes >= self.flush_bytes:
            self.flush()

    def delete(self, key: str) -> None:
        self._pending.pop(key, None)
        self._blobs.pop(key, None)
        self.cache.delete(key)

    def flush(self) -> None:
        """Write everything gathered so far (a cache that fails to write only costs speed)."""
        pending, blobs = self._pending, self._blobs
        self._pending, self._blobs, self._bytes = {}, {}, 0
        if not pending:
            return
        try:
            with self.cache.transact():
                for key, value in pending.items():
                    self.cache.set(key, value)
                if blobs:
                    _index_added(self.cache, blobs)
        except Exception:  # noqa: BLE001 - a full disk or a locked cache: the data is simply not cached
            return


@contextlib.contextmanager
def batched(cache) -> Iterator:
    """The cache with its writes gathered until the block ends (None stays None; a batch stays itself)."""
    if cache is None or isinstance(cache, CacheBatch):
        yield cache
        return
    batch = CacheBatch(cache)
    try:
        yield batch
    finally:
        batch.flush()


def load_blob(cache, key: str, kind: type):
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


def store_blob(cache, key: str, obj) -> None:
    """Store an object as a blob, then trim this module's entries (oldest first) to the byte budget."""
    try:
        data = blob.dumps(obj)
    except (blob.BlobError, RecursionError):
        return  # not plain data: simply not cached
    if isinstance(cache, CacheBatch):
        cache.set(key, data, is_blob=True)
        return
    cache.set(key, data)
    with cache.transact():
        _index_added(cache, {key: len(data)})


def _index_added(cache: diskcache.Cache, added: dict[str, int]) -> None:
    """Record new blobs in the budget's index and delete the oldest entries past the budget."""
    index = get_json(cache, _INDEX_KEY)
    index = [(k, n) for k, n in (index if isinstance(index, list) else []) if k not in added]
    index += list(added.items())
    total = sum(n for _, n in index)
    cut = 0
    while cut < len(index) and total > BUDGET_BYTES:
        old_key, n = index[cut]
        cache.delete(old_key)
        total -= n
        cut += 1
    set_json(cache, _INDEX_KEY, index[cut:])


def get_json(cache, key: str):
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


def set_json(cache, key: str, value) -> None:
    """Store a small JSON value as text (a dict or list given to diskcache would be pickled)."""
    cache.set(key, json.dumps(value))
