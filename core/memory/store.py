"""Persistent memory (diskcache): profiles, each page's inputs, and the record of handled work.

Every value is JSON text in a versioned envelope (`{"schema": N, "kind": ..., "data": ...}`) kept inside the
database by `JsonOnlyDisk`: nothing is ever unpickled, so a damaged value is one reportable failure and write
access to the store is not code execution. Every write is a read-modify-write inside one diskcache
transaction on one key, so two browser sessions saving at once both keep their answers.

Damage is never silent. On opening: a 0-byte or missing database next to value files, or a database that fails
SQLite's quick check, is renamed aside untouched and everything still readable in it is copied into a fresh
store; a store of an older release (pickled values) is converted once, reading its pickles as plain data only.
While running: a value that cannot be read is written to a file under `unreadable/` and removed. Each case adds
a `StoreNotice` that says what was lost and what was kept. Opening (creating, checking, setting aside) holds a
lock file beside the store (`creation_lock`), so a store another process is still creating is never judged.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import diskcache
from pydantic import BaseModel, ValidationError

from core.memory.jsonstore import (
    INLINE_LIMIT,
    JsonOnlyDisk,
    Unreadable,
    convert_row,
    salvage_rows,
)
from core.memory.profile import (
    AcceptedOutput,
    InputValue,
    PageInputs,
    Profile,
    SavedLaunchKeys,
    WorkflowRecord,
)
from core.memory.workflows import WORKFLOW_BY_ID

SCHEMA_VERSION = 2
# The user's answers must never be evicted (diskcache's default evicts once 1 GB is reached), and every value
# stays inside the database.
_MEMORY_SETTINGS: dict[str, Any] = {"eviction_policy": "none", "disk": JsonOnlyDisk,
                                    "disk_min_file_size": INLINE_LIMIT}
BULK_CACHE_BYTES = 4 * 2**30
ENV_HOME = "SLIME_ASSISTANT_HOME"
OPEN_LOCK_SECONDS = 30.0  # how long opening waits for another process that is creating or checking the store
ACCEPTED_KEPT = 10
_ACTIVE = "active_profile"


class NoPickleDisk(diskcache.Disk):
    """diskcache storage that never unpickles: a row stored as a pickle is refused on read (ValueError), and
    values other than bytes, text and numbers are refused on write. Used for the parsed-log cache (`Store.bulk_cache`), so that
    whoever can write its directory cannot make the app run code."""

    def store(self, value, read, key=diskcache.core.UNKNOWN):
        if not read and not isinstance(value, bytes | str | int | float):
            raise TypeError(f"{type(value).__name__} would be pickled; store bytes or text")
        return super().store(value, read, key=key)

    def fetch(self, mode, filename, value, read):
        if mode == diskcache.core.MODE_PICKLE:
            raise ValueError("a pickled cache entry was refused")
        return super().fetch(mode, filename, value, read)


def default_store_dir() -> Path:
    """$SLIME_ASSISTANT_HOME, else $XDG_CACHE_HOME/slime-assistant, else ~/.cache/slime-assistant."""
    if os.environ.get(ENV_HOME):
        return Path(os.environ[ENV_HOME]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "slime-assistant"


class StoreNotice(BaseModel):
    """Something the user should be told about the store (e.g. it was unreadable and set aside)."""

    level: str
    message: str


class Store:
    """The app's memory: versioned JSON envelopes in a diskcache database."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory else default_store_dir()
        self.notices: list[StoreNotice] = []
        self._cache = self._open_locked()
        self._bulk: diskcache.Cache | None = None

    def _open_locked(self) -> diskcache.Cache:
        """Open the store while holding the store's lock file, so that one process's half-created database
        is never seen (and set aside as damaged) by another opening it at the same moment."""
        try:
            with creation_lock(self.directory, OPEN_LOCK_SECONDS):
                return self._open()
        except StoreBusy:
            return self._temporary(f"another process has been creating or checking {self.directory} for over "
                                   f"{OPEN_LOCK_SECONDS:g} s", self.directory)

    # -- opening, and recovering from a damaged store -------------------------------------------
    def _open(self) -> diskcache.Cache:
        """Open the store; only a damaged database is moved aside, nothing else is touched."""
        if self.directory.exists() and not self.directory.is_dir():
            return self._temporary(f"{self.directory} is not a directory (it was left untouched)", None)
        db = self.directory / "cache.db"
        try:
            if db.is_file() and db.stat().st_size == 0:
                return self._set_aside("its database file is empty (0 bytes)", salvage=False)
            if self.directory.is_dir() and not db.exists() and _has_value_files(self.directory):
                return self._set_aside("its database file is missing, although saved values are there",
                                       salvage=False)
            problem = _integrity_problem(db) if db.is_file() else None
            if problem:
                return self._set_aside(f"its database file is damaged (SQLite: {problem})", salvage=True)
            cache = diskcache.Cache(str(self.directory), **_MEMORY_SETTINGS)
            self._convert_old_values(cache, self.directory)
        except sqlite3.OperationalError as exc:  # locked, read-only, cannot open: not corruption
            return self._temporary(f"{self.directory} cannot be opened for writing ({exc})", self.directory)
        except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed": corruption
            return self._set_aside(f"its database file is damaged (SQLite: {exc})", salvage=True)
        except (OSError, ValueError) as exc:
            return self._temporary(f"{self.directory} cannot be used ({exc})", self.directory)
        return cache

    def _set_aside(self, why: str, *, salvage: bool) -> diskcache.Cache:
        """Rename the damaged store aside untouched, start a fresh one, copy in whatever can still be read."""
        aside = self.directory.with_name(f"{self.directory.name}.unreadable-{int(time.time())}")
        n = 2
        while aside.exists():
            aside, n = aside.with_name(f"{self.directory.name}.unreadable-{int(time.time())}-{n}"), n + 1
        try:
            self.directory.rename(aside)
            cache = diskcache.Cache(str(self.directory), **_MEMORY_SETTINGS)
        except (OSError, sqlite3.Error) as exc2:
            return self._temporary(f"{self.directory} is damaged ({why}) and could not be set aside ({exc2})",
                                   None)
        recovered: list[str] = []
        lost: list[str] = []
        unreadable_rows = 0
        if salvage:
            found = salvage_rows(aside / "cache.db")
            unreadable_rows = max(0, found.unreadable_rows - len(found.lost_keys))
            lost += found.lost_keys
            for key, mode, filename, value in found.rows:
                text = convert_row(mode, filename, value, aside)
                if isinstance(text, Unreadable):
                    lost.append(key)
                elif text is not None:
                    cache.set(key, text)
                    recovered.append(key)
        parts = [f"Your saved answers at {self.directory} could not be read: {why}.",
                 f"The damaged store is kept, unchanged, at {aside}; a fresh store was started."]
        parts.append(f"Recovered into it: {describe_keys(recovered)}." if recovered
                     else "Nothing could be recovered from it.")
        if lost:
            parts.append(f"Lost: {describe_keys(lost)}.")
        if unreadable_rows:
            parts.append(f"About {unreadable_rows} more stored item(s) sat in the damaged part; not even their "
                         "names could be read.")
        if not salvage:
            parts.append("Everything saved in it is lost unless you restore it from that copy.")
        elif recovered and (lost or unreadable_rows):
            parts.append("Check your profile on the Profile page and the record on What's done.")
        self.notices.append(StoreNotice(level="warning", message=" ".join(parts)))
        return cache

    def _temporary(self, why: str, copy_from: Path | None) -> diskcache.Cache:
        """A store for this server process only; a readable copy of the real one is shown where possible."""
        tmp = Path(tempfile.mkdtemp(prefix="slime-assistant-")) / "store"
        shown = "Answers start empty"
        if copy_from is not None and copy_from.is_dir():
            try:
                shutil.copytree(copy_from, tmp, ignore=_broken_sidecars)
                cache = diskcache.Cache(str(tmp), **_MEMORY_SETTINGS)
                cache.get("__probe__")
                self._convert_old_values(cache, tmp)
                shown = "A copy of your saved answers is shown"
            except (OSError, shutil.Error, sqlite3.Error):
                shutil.rmtree(tmp, ignore_errors=True)
                cache = diskcache.Cache(str(tmp), **_MEMORY_SETTINGS)
        else:
            cache = diskcache.Cache(str(tmp), **_MEMORY_SETTINGS)
        self.notices.append(StoreNotice(
            level="error",
            message=(f"The store cannot be used: {why}. {shown}, in a temporary store ({tmp}) that lasts until "
                     f"the server stops; nothing was moved or deleted. Fix the directory or set {ENV_HOME} to "
                     "a writable one to keep new answers."),
        ))
        return cache

    def _convert_old_values(self, cache: diskcache.Cache, directory: Path) -> None:
        """Rewrite an older release's values (pickles, value files) as JSON text, once; report what failed."""
        con = sqlite3.connect(str(directory / "cache.db"))
        try:
            rows = con.execute("SELECT rowid, key, raw, mode, filename, value FROM Cache "
                               "WHERE raw = 0 OR mode != 1").fetchall()
        finally:
            con.close()
        if not rows:
            return
        lost: list[str] = []
        kept: list[str] = []
        for rowid, key, raw, mode, filename, value in rows:
            if not raw or not isinstance(key, str):
                with cache.transact():
                    cache._sql("DELETE FROM Cache WHERE rowid = ?", (rowid,))  # noqa: SLF001
                lost.append("an entry with a key this app never writes")
                continue
            text = convert_row(mode, filename, value, directory)
            if isinstance(text, Unreadable):
                kept_at = self._keep_unreadable(key, value if isinstance(value, (bytes, str)) else None, directory)
                cache.delete(key)
                lost.append(f"{describe_key(key)} ({text.reason})")
                if kept_at:
                    kept.append(str(kept_at))
            elif text is None:
                cache.delete(key)
            else:
                cache.set(key, text)
        if lost:
            where = f" What was left of it is kept in {', '.join(kept)}." if kept else ""
            self.notices.append(StoreNotice(
                level="warning",
                message=(f"Your saved answers were converted to this release's format. These could not be read "
                         f"and are no longer shown: {'; '.join(lost)}.{where} Everything else was kept.")))

    def close(self) -> None:
        self._cache.close()
        if self._bulk is not None:
            self._bulk.close()

    # -- reading and writing one value ------------------------------------------------------------
    def _get(self, key: str) -> Any:
        try:
            return self._cache.get(key)
        except sqlite3.DatabaseError as exc:
            self._notice_once("warning", f"Part of the store could not be read while the app was running ({exc}). "
                                         "Restart the app: it sets a damaged store aside and recovers what it can.")
            return None

    def _keys(self, prefix: str) -> list[str]:
        try:
            return [k for k in self._cache.iterkeys() if isinstance(k, str) and k.startswith(prefix)]
        except sqlite3.DatabaseError as exc:
            self._notice_once("warning", f"The list of saved items could not be read ({exc}). Restart the app: it "
                                         "sets a damaged store aside and recovers what it can.")
            return []

    def _notice_once(self, level: str, message: str) -> None:
        if not any(n.message == message for n in self.notices):
            self.notices.append(StoreNotice(level=level, message=message))

    @staticmethod
    def _wrap(model: BaseModel) -> str:
        return json.dumps({"schema": SCHEMA_VERSION, "kind": type(model).__name__,
                           "data": model.model_dump(mode="json")}, ensure_ascii=False)

    def _read(self, key: str, model: type[BaseModel]) -> Any:
        return self._unwrap(key, self._get(key), model)

    def _unwrap(self, key: str, raw: Any, model: type[BaseModel]) -> Any:
        if raw is None:
            return None
        try:
            if isinstance(raw, Unreadable):
                raise ValueError(raw.reason)
            if not isinstance(raw, str):
                raise ValueError("it is not text")
            try:
                envelope = json.loads(raw)
            except ValueError:
                raise ValueError("it is damaged (not complete JSON)") from None
            if not isinstance(envelope, dict) or "schema" not in envelope or "data" not in envelope:
                raise ValueError("it is not a saved record of this app")
            data = migrate(envelope["schema"], envelope["data"], model.__name__)
            try:
                return model.model_validate(data)
            except ValidationError:
                raise ValueError("its fields are not what this release expects") from None
        except (ValueError, TypeError, RecursionError) as exc:
            kept_at = self._keep_unreadable(key, raw if isinstance(raw, (str, bytes)) else None)
            try:
                self._cache.delete(key)
            except sqlite3.DatabaseError:
                pass
            where = (f" Its text is kept in {kept_at}." if kept_at
                     else " Nothing of it could be kept.")
            self.notices.append(StoreNotice(
                level="warning",
                message=(f"Saved {describe_key(key)} could not be read: {exc}. It is no longer shown.{where} "
                         "Everything else was kept."),
            ))
            return None

    def _keep_unreadable(self, key: str, raw: str | bytes | None, base: Path | None = None) -> Path | None:
        """Write what is left of an unreadable value to <store>/unreadable/, for the user to inspect."""
        if raw is None:
            return None
        folder = (base or Path(self._cache.directory)) / "unreadable"
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", key)[:120] + f"-{int(time.time())}-{secrets.token_hex(3)}.txt"
        try:
            folder.mkdir(exist_ok=True)
            (folder / name).write_bytes(raw.encode("utf-8", "replace") if isinstance(raw, str) else raw)
        except OSError:
            return None
        return folder / name

    # -- profiles ---------------------------------------------------------------------------------
    def list_profiles(self) -> list[str]:
        return sorted(k.split(":", 1)[1] for k in self._keys("profile:"))

    def get_profile(self, name: str) -> Profile | None:
        return self._read(f"profile:{name}", Profile)

    def save_profile(self, profile: Profile) -> Profile:
        """Save a whole profile, replacing any of the same name (tests, imports)."""
        with self._cache.transact():
            self._cache.set(f"profile:{profile.name}", self._wrap(profile))
            if self._cache.get(_ACTIVE) is None:
                self._cache.set(_ACTIVE, profile.name)
        return profile

    def create_profile(self, profile: Profile) -> Profile:
        """Save a new profile without ever replacing one: a taken name gets a numeric suffix.

        Two first visits saving at once therefore keep both answers, as two profiles.
        """
        with self._cache.transact():
            name, n = profile.name, 2
            while self._cache.get(f"profile:{name}") is not None:
                name, n = f"{profile.name}-{n}", n + 1
            saved = profile.model_copy(update={"name": name})
            self._cache.set(f"profile:{name}", self._wrap(saved))
            if self._cache.get(_ACTIVE) is None:
                self._cache.set(_ACTIVE, name)
        return saved

    def update_profile(self, name: str, **changes: Any) -> Profile:
        """Change only the given fields, re-reading the stored profile inside the transaction."""
        with self._cache.transact():
            current = self.get_profile(name)
            if current is None:
                raise KeyError(f"no profile named {name!r}")
            updated = Profile.model_validate({**current.model_dump(), **changes, "name": name})
            self._cache.set(f"profile:{name}", self._wrap(updated))
        return updated

    def delete_profile(self, name: str) -> None:
        """Delete a profile with its inputs, its record of work and its accepted outputs."""
        owned = (f"record:{name}:", f"inputs:{name}:", f"accepted:{name}:")
        with self._cache.transact():
            self._cache.delete(f"profile:{name}")
            self._cache.delete(f"launch_keys:{name}")
            for key in self._keys(""):
                if key.startswith(owned):
                    self._cache.delete(key)
            if self._get(_ACTIVE) == name:
                rest = self.list_profiles()
                if rest:
                    self._cache.set(_ACTIVE, rest[0])
                else:
                    self._cache.delete(_ACTIVE)

    def active_profile_name(self) -> str | None:
        name = self._get(_ACTIVE)
        if isinstance(name, str) and name and self._get(f"profile:{name}") is not None:
            return name
        names = self.list_profiles()
        return names[0] if names else None

    def set_active(self, name: str) -> None:
        if self._get(f"profile:{name}") is None:
            raise KeyError(f"no profile named {name!r}")
        self._cache.set(_ACTIVE, name)

    def active_profile(self) -> Profile | None:
        name = self.active_profile_name()
        profile = self.get_profile(name) if name else None
        if profile is None and name:  # that one was unreadable and set aside: the next readable one
            return next((p for p in map(self.get_profile, self.list_profiles()) if p is not None), None)
        return profile

    # -- each page's inputs -----------------------------------------------------------------------
    def inputs(self, profile: str, page: str) -> PageInputs | None:
        return self._read(f"inputs:{profile}:{page}", PageInputs)

    def update_inputs(self, profile: str, page: str, changes: dict[str, InputValue]) -> PageInputs:
        """Merge the changed fields into the page's saved inputs, re-read inside the transaction."""
        key = f"inputs:{profile}:{page}"
        with self._cache.transact():
            current = self.inputs(profile, page)
            values = {**(current.values if current else {}), **changes}
            saved = PageInputs(page=page, values=values, updated_at=time.time())
            self._cache.set(key, self._wrap(saved))
        return saved

    def replace_inputs(self, profile: str, page: str, values: dict[str, InputValue]) -> PageInputs:
        """Put back a whole set of inputs (an accepted output re-opened with the answers that made it)."""
        saved = PageInputs(page=page, values=dict(values), updated_at=time.time())
        self._cache.set(f"inputs:{profile}:{page}", self._wrap(saved))
        return saved

    def pages_with_inputs(self, profile: str) -> set[str]:
        prefix = f"inputs:{profile}:"
        return {k[len(prefix):] for k in self._keys(prefix)}

    # -- record of handled work: progress (what is done and missing) and accepted outputs ----------
    def record(self, profile: str, record: WorkflowRecord) -> WorkflowRecord:
        with self._cache.transact():
            self._cache.set(f"record:{profile}:{record.workflow}", self._wrap(record))
        return record

    def get_record(self, profile: str, workflow: str) -> WorkflowRecord | None:
        return self._read(f"record:{profile}:{workflow}", WorkflowRecord)

    def records(self, profile: str) -> dict[str, WorkflowRecord]:
        out: dict[str, WorkflowRecord] = {}
        prefix = f"record:{profile}:"
        for key in self._keys(prefix):
            rec = self.get_record(profile, key[len(prefix):])
            if rec is not None:
                out[rec.workflow] = rec
        return out

    def accept(self, profile: str, output: AcceptedOutput) -> AcceptedOutput:
        """Add an accepted output to the workflow's history; keep the newest ACCEPTED_KEPT.

        Accepting the same output again (a second download) adds nothing: the entry already there is kept.
        """
        with self._cache.transact():
            history = self.accepted(profile, output.workflow)
            if history and (history[0].output, history[0].summary) == (output.output, output.summary):
                return history[0]
            self._cache.set(f"accepted:{profile}:{output.workflow}:{output.id}", self._wrap(output))
            for old in history[ACCEPTED_KEPT - 1:]:
                self._cache.delete(f"accepted:{profile}:{output.workflow}:{old.id}")
        return output

    def accepted(self, profile: str, workflow: str) -> list[AcceptedOutput]:
        """The workflow's accepted outputs, newest first."""
        prefix = f"accepted:{profile}:{workflow}:"
        found = [self._read(k, AcceptedOutput) for k in self._keys(prefix)]
        return sorted((a for a in found if a is not None), key=lambda a: (a.accepted_at, a.id), reverse=True)

    def delete_accepted(self, profile: str, workflow: str, output_id: str) -> None:
        self._cache.delete(f"accepted:{profile}:{workflow}:{output_id}")

    # -- launch keys shared between pages ----------------------------------------------------------
    def save_launch_keys(self, profile: str, saved: SavedLaunchKeys) -> SavedLaunchKeys:
        self._cache.set(f"launch_keys:{profile}", self._wrap(saved))
        return saved

    def launch_keys(self, profile: str) -> SavedLaunchKeys | None:
        return self._read(f"launch_keys:{profile}", SavedLaunchKeys)

    # -- the memory itself, and a separate evictable cache for bulky derived data -----------------
    @property
    def cache(self) -> diskcache.Cache:
        """The answers and records: never evicted."""
        return self._cache

    @property
    def bulk_cache(self) -> diskcache.Cache:
        """A size-limited cache for re-derivable data (parsed logs); evicting from it loses nothing saved."""
        if self._bulk is None:
            directory = Path(self._cache.directory) / "bulk"
            with contextlib.suppress(StoreBusy), creation_lock(directory):  # never remove another's new cache
                try:
                    self._bulk = diskcache.Cache(str(directory), disk=NoPickleDisk, size_limit=BULK_CACHE_BYTES,
                                                 eviction_policy="least-recently-used")
                except (sqlite3.DatabaseError, OSError):
                    shutil.rmtree(directory, ignore_errors=True)  # only re-derivable data lives here
            if self._bulk is None:
                self._bulk = diskcache.Cache(str(directory), disk=NoPickleDisk, size_limit=BULK_CACHE_BYTES,
                                             eviction_policy="least-recently-used")
        return self._bulk


class StoreBusy(Exception):
    """Another process held the store's lock file for longer than OPEN_LOCK_SECONDS."""


@contextlib.contextmanager
def creation_lock(directory: Path, timeout: float = OPEN_LOCK_SECONDS) -> Iterator[None]:
    """Hold an exclusive lock (fcntl.flock) on a lock file beside `directory` (`.<name>.lock` in its parent)
    while a store there is opened, created, checked or set aside.

    When the parent cannot hold a lock file (a read-only parent), the lock file is made inside the directory
    instead, and the lock is taken again when that file was renamed away meanwhile (a store set aside). Where
    no lock file can be made at all, the store cannot be created either, and opening goes on without one.
    Raises StoreBusy after `timeout` seconds of waiting.
    """
    try:
        import fcntl
    except ImportError:  # not a POSIX system: no lock
        yield
        return
    deadline = time.monotonic() + timeout
    candidates = (directory.with_name(f".{directory.name}.lock"), directory / ".open.lock")
    fd = None
    while fd is None:
        for lock_path in candidates:
            try:
                lock_path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                break
            except OSError:
                continue
        if fd is None:
            yield
            return
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise StoreBusy(str(directory)) from None
                    time.sleep(0.01)
            if os.fstat(fd).st_ino != _inode(lock_path):  # renamed away while we waited: take the lock again
                os.close(fd)
                fd = None
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
    try:
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path, follow_symlinks=False).st_ino
    except OSError:
        return None


def new_output_id() -> str:
    return f"{time.time_ns():x}{secrets.token_hex(2)}"


def describe_key(key: str) -> str:
    """A stored key in words: 'the profile default', 'the inputs of GRPO setup (profile default)'."""
    kind, _, rest = key.partition(":")
    profile, _, what = rest.partition(":")
    workflow_id = what.split(":")[0]
    title = WORKFLOW_BY_ID[workflow_id].title if workflow_id in WORKFLOW_BY_ID else workflow_id
    if kind == "profile":
        return f"the profile {rest}"
    if kind == "record":
        return f"the progress of {title} (profile {profile})"
    if kind == "inputs":
        return f"the inputs of {title} (profile {profile})"
    if kind == "accepted":
        return f"an accepted output of {title} (profile {profile})"
    if kind == "launch_keys":
        return f"the saved data keys (profile {rest})"
    if key == _ACTIVE:
        return "which profile was active"
    return f"the item {key[:80]}"


def describe_keys(keys: list[str]) -> str:
    """Many keys in one short sentence: profiles by name, the rest counted by kind."""
    profiles = sorted(k.split(":", 1)[1] for k in keys if k.startswith("profile:"))
    counts = {"record": 0, "inputs": 0, "accepted": 0, "launch_keys": 0}
    other = []
    for k in keys:
        kind = k.partition(":")[0]
        if kind in counts:
            counts[kind] += 1
        elif kind != "profile" and k != _ACTIVE and not k.startswith("unreadable"):
            other.append(k)
    parts = []
    if profiles:
        parts.append(("the profile " if len(profiles) == 1 else "the profiles ") + ", ".join(profiles))
    labels = {"record": "workflow progress record(s)", "inputs": "page input set(s)",
              "accepted": "accepted output(s)", "launch_keys": "saved data key set(s)"}
    parts += [f"{n} {labels[kind]}" for kind, n in counts.items() if n]
    if len(keys) == 1 and not parts:
        return describe_key(keys[0])
    if other:
        parts.append(f"{len(other)} other item(s)")
    if _ACTIVE in keys:
        parts.append("which profile was active")
    return "; ".join(parts) or "nothing"


def _integrity_problem(db: Path) -> str | None:
    """SQLite's quick check of the whole database file, before diskcache writes to it: None when sound."""
    con = sqlite3.connect(str(db))
    try:
        rows = con.execute("PRAGMA quick_check").fetchall()
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        con.close()
    messages = [str(r[0]) for r in rows]
    return None if messages == ["ok"] else "; ".join(messages[:2])


def _has_value_files(directory: Path) -> bool:
    return any(p.suffix == ".val" for sub in directory.iterdir() if sub.is_dir() and len(sub.name) == 2
               for p in sub.rglob("*.val"))


def _broken_sidecars(directory: str, names: list[str]) -> list[str]:
    """SQLite's -wal/-shm sidecars that are not regular files: copying them would copy the fault."""
    return [n for n in names if n.endswith(("-wal", "-shm")) and not (Path(directory) / n).is_file()]


def migrate(schema: int, data: dict[str, Any], kind: str) -> dict[str, Any]:
    """Bring a stored record written by an older release up to SCHEMA_VERSION.

    Schema 1 held the same fields, pickled; the conversion to JSON text happens when the store opens.
    """
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise ValueError(f"unknown schema version {schema!r}")
    if schema > SCHEMA_VERSION:
        raise ValueError(f"written by a newer release (schema {schema}, this one reads up to {SCHEMA_VERSION})")
    if not isinstance(data, dict):
        raise ValueError("it is not a saved record of this app")
    return data
