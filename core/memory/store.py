"""Persistent memory (diskcache): profiles and the record of handled work, with a versioned schema.

Every write is a read-modify-write inside one diskcache transaction on one key per profile (or per
profile and workflow), so two browser sessions saving at once both keep their answers.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import diskcache
from pydantic import BaseModel, ValidationError

from core.memory.profile import Profile, SavedLaunchKeys, WorkflowRecord

SCHEMA_VERSION = 1
# The user's answers must never be evicted: diskcache's default evicts once 1 GB is reached.
_MEMORY_SETTINGS = {"eviction_policy": "none"}
BULK_CACHE_BYTES = 4 * 2**30
ENV_HOME = "SLIME_ASSISTANT_HOME"
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
    """The app's memory. Values are stored as JSON-ready dicts in a versioned envelope."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory else default_store_dir()
        self.notices: list[StoreNotice] = []
        self._cache = self._open()
        self._bulk: diskcache.Cache | None = None

    # -- opening, and recovering from a damaged store -------------------------------------------
    def _open(self) -> diskcache.Cache:
        """Open the store; only a store whose database is corrupt is moved aside, nothing else is touched."""
        if self.directory.exists() and not self.directory.is_dir():
            return self._temporary(f"{self.directory} is not a directory (it was left untouched)", None)
        try:
            cache = diskcache.Cache(str(self.directory), **_MEMORY_SETTINGS)
            cache.get("__probe__")  # forces a read of the database
            return cache
        except sqlite3.OperationalError as exc:  # locked, read-only, cannot open: not corruption
            return self._temporary(f"{self.directory} cannot be opened for writing ({exc})", self.directory)
        except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed": corruption
            return self._set_aside(exc)
        except (OSError, ValueError) as exc:
            return self._temporary(f"{self.directory} cannot be used ({exc})", self.directory)

    def _set_aside(self, exc: Exception) -> diskcache.Cache:
        aside = self.directory.with_name(f"{self.directory.name}.unreadable-{int(time.time())}")
        try:
            self.directory.rename(aside)
            cache = diskcache.Cache(str(self.directory), **_MEMORY_SETTINGS)
        except (OSError, sqlite3.Error) as exc2:
            return self._temporary(f"{self.directory} is damaged ({exc}) and could not be set aside ({exc2})",
                                   None)
        self.notices.append(StoreNotice(
            level="warning",
            message=(f"The saved answers at {self.directory} could not be read ({type(exc).__name__}: "
                     f"{exc}). A fresh store was started; the old one is kept at {aside}."),
        ))
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

    def close(self) -> None:
        self._cache.close()
        if self._bulk is not None:
            self._bulk.close()

    # -- envelope ---------------------------------------------------------------------------------
    @staticmethod
    def _wrap(model: BaseModel) -> dict[str, Any]:
        return {"schema": SCHEMA_VERSION, "data": model.model_dump(mode="json")}

    def _unwrap(self, key: str, raw: Any, model: type[BaseModel]) -> BaseModel | None:
        if raw is None:
            return None
        try:
            if not isinstance(raw, dict) or "schema" not in raw:
                raise ValueError("not a versioned record")
            data = migrate(raw["schema"], raw["data"], model.__name__)
            return model.model_validate(data)
        except (ValidationError, ValueError, KeyError, TypeError) as exc:
            aside_key = f"unreadable:{key}:{int(time.time())}"
            self._cache.set(aside_key, raw)
            self._cache.delete(key)
            self.notices.append(StoreNotice(
                level="warning",
                message=f"A saved record ({key}) could not be read ({exc}); it was kept aside as {aside_key}.",
            ))
            return None

    # -- profiles ---------------------------------------------------------------------------------
    def list_profiles(self) -> list[str]:
        return sorted(k.split(":", 1)[1] for k in self._cache.iterkeys() if isinstance(k, str)
                      and k.startswith("profile:"))

    def get_profile(self, name: str) -> Profile | None:
        key = f"profile:{name}"
        return self._unwrap(key, self._cache.get(key), Profile)  # type: ignore[return-value]

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
        with self._cache.transact():
            self._cache.delete(f"profile:{name}")
            for key in list(self._cache.iterkeys()):
                if isinstance(key, str) and (key.startswith(f"record:{name}:") or key == f"launch_keys:{name}"):
                    self._cache.delete(key)
            if self._cache.get(_ACTIVE) == name:
                rest = self.list_profiles()
                self._cache.set(_ACTIVE, rest[0] if rest else None)

    def active_profile_name(self) -> str | None:
        name = self._cache.get(_ACTIVE)
        if name and self._cache.get(f"profile:{name}") is not None:
            return name
        names = self.list_profiles()
        return names[0] if names else None

    def set_active(self, name: str) -> None:
        if self._cache.get(f"profile:{name}") is None:
            raise KeyError(f"no profile named {name!r}")
        self._cache.set(_ACTIVE, name)

    def active_profile(self) -> Profile | None:
        name = self.active_profile_name()
        return self.get_profile(name) if name else None

    # -- record of handled work -------------------------------------------------------------------
    def record(self, profile: str, record: WorkflowRecord) -> WorkflowRecord:
        with self._cache.transact():
            self._cache.set(f"record:{profile}:{record.workflow}", self._wrap(record))
        return record

    def get_record(self, profile: str, workflow: str) -> WorkflowRecord | None:
        key = f"record:{profile}:{workflow}"
        return self._unwrap(key, self._cache.get(key), WorkflowRecord)  # type: ignore[return-value]

    def records(self, profile: str) -> dict[str, WorkflowRecord]:
        out: dict[str, WorkflowRecord] = {}
        prefix = f"record:{profile}:"
        for key in list(self._cache.iterkeys()):
            if isinstance(key, str) and key.startswith(prefix):
                rec = self.get_record(profile, key[len(prefix):])
                if rec is not None:
                    out[rec.workflow] = rec
        return out

    # -- launch keys shared between pages ----------------------------------------------------------
    def save_launch_keys(self, profile: str, saved: SavedLaunchKeys) -> SavedLaunchKeys:
        self._cache.set(f"launch_keys:{profile}", self._wrap(saved))
        return saved

    def launch_keys(self, profile: str) -> SavedLaunchKeys | None:
        key = f"launch_keys:{profile}"
        return self._unwrap(key, self._cache.get(key), SavedLaunchKeys)  # type: ignore[return-value]

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
            try:
                self._bulk = diskcache.Cache(str(directory), disk=NoPickleDisk, size_limit=BULK_CACHE_BYTES,
                                             eviction_policy="least-recently-used")
            except (sqlite3.DatabaseError, OSError):
                shutil.rmtree(directory, ignore_errors=True)  # only re-derivable data lives here
                self._bulk = diskcache.Cache(str(directory), disk=NoPickleDisk, size_limit=BULK_CACHE_BYTES,
                                             eviction_policy="least-recently-used")
        return self._bulk


def _broken_sidecars(directory: str, names: list[str]) -> list[str]:
    """SQLite's -wal/-shm sidecars that are not regular files: copying them would copy the fault."""
    return [n for n in names if n.endswith(("-wal", "-shm")) and not (Path(directory) / n).is_file()]


def migrate(schema: int, data: dict[str, Any], kind: str) -> dict[str, Any]:
    """Bring a stored record written by an older release up to SCHEMA_VERSION."""
    if not isinstance(schema, int) or schema < 1:
        raise ValueError(f"unknown schema version {schema!r}")
    if schema > SCHEMA_VERSION:
        raise ValueError(f"written by a newer release (schema {schema}, this one reads up to {SCHEMA_VERSION})")
    return data
