"""The user's own versions: a catalog built from their slime checkout (and their SGLang and Megatron sources
when given), cached per checkout, and the versions every report shows it was checked against.

Sources come from the caller (a CLI option, the profile) or from the environment variables below, so that a
pre-commit hook can use them. Nothing is run: the git commit is read from `.git` as files
(core.launch.catalog_build.checkout), the docker files of the checkout as text.

The cache lives in the app's store directory (SLIME_ASSISTANT_HOME), one JSON file per key; the key is the
checkout's git commit (plus the size and time of its parser files, so an uncommitted edit is noticed), else a
hash of the parser files' contents, together with the builder's own code and the SGLang/Megatron sources.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from core.launch.catalog import (
    CATALOG_PATH,
    Catalog,
    CatalogError,
    LayerVersion,
    catalog_from_json,
    catalog_to_json,
)
from core.model_scripts import ModelScript
from core.pins import MEGATRON_SHORT, SGLANG_VERSION, SLIME_DATE, SLIME_SHORT

ENV_SLIME = "SLIME_ASSISTANT_SLIME_CHECKOUT"
ENV_SGLANG = "SLIME_ASSISTANT_SGLANG_SOURCE"
ENV_MEGATRON = "SLIME_ASSISTANT_MEGATRON_SOURCE"
CACHE_DIR_NAME = "catalogs"
MAX_CACHED_CATALOGS = 24  # files kept in the cache directory; the oldest go first
MAX_CACHED_BYTES = 20_000_000  # a cached catalog larger than this is not read
_BUILDER_PACKAGE = "core.launch.catalog_build"  # its code is part of the cache key (read as package files)


class SourceError(ValueError):
    """A directory given as a slime checkout, an SGLang source or a Megatron source is not one (says why)."""


@dataclass(frozen=True)
class UserSources:
    """Where the user's own code lives; None means the bundled pin."""

    slime: Path | None = None
    sglang: Path | None = None
    megatron: Path | None = None

    @property
    def any(self) -> bool:
        return any(p is not None for p in (self.slime, self.sglang, self.megatron))


def sources_from_env(env: Mapping[str, str] | None = None, **given: Path | str | None) -> UserSources:
    """The sources given explicitly (keyword slime, sglang, megatron), else from the environment variables."""
    env = os.environ if env is None else env
    out: dict[str, Path | None] = {}
    for key, var in (("slime", ENV_SLIME), ("sglang", ENV_SGLANG), ("megatron", ENV_MEGATRON)):
        value = given.get(key)
        if value is None or value == "":
            value = env.get(var) or None
        out[key] = Path(str(value)).expanduser() if value else None
    return UserSources(**out)


# -- recognising the directories ----------------------------------------------------------------------------
def slime_problem(directory: Path) -> str | None:
    """Why `directory` is not a slime checkout (or a fork keeping its layout), or None when it is one."""
    from core.launch.catalog_build.build import Layout, package_of

    try:
        if not directory.is_dir():
            return f"{directory} is not a directory"
        if not (directory / Layout(package_of(directory)).cite("slime/utils/arguments.py")).is_file():
            return f"{directory} is not a slime checkout (no slime/utils/arguments.py)"
    except OSError as exc:
        return f"{directory} cannot be read ({exc.strerror or exc})"
    return None


def sglang_root(directory: Path) -> Path:
    """The directory holding the `sglang` package: DIR itself when it is the package (an installed
    site-packages/sglang), DIR for an unpacked wheel, DIR/python for a checkout. SourceError otherwise."""
    directory = Path(directory)
    for package, root in ((directory, directory.parent), (directory / "sglang", directory),
                          (directory / "python" / "sglang", directory / "python")):
        try:
            if (package / "srt" / "server_args.py").is_file():
                return root
        except OSError:
            continue
    raise SourceError(f"{directory} is neither an installed sglang package nor an SGLang checkout "
                      "(no sglang/srt/server_args.py)")


def megatron_root(directory: Path) -> Path:
    """The directory holding the `megatron` package (a checkout, or DIR when DIR is the package itself)."""
    directory = Path(directory)
    for package, root in ((directory / "megatron", directory), (directory, directory.parent)):
        try:
            if (package / "training" / "arguments.py").is_file():
                return root
        except OSError:
            continue
    raise SourceError(f"{directory} is not a Megatron-LM checkout (no megatron/training/arguments.py)")


def _sglang_version(root: Path, allowed: list[Path]) -> str:
    from core.launch.catalog_build.checkout import read_bounded

    found = None
    for name in ("_version.py", "version.py"):  # _version.py: written by the build; version.py: older releases
        data = read_bounded(root / "sglang" / name, allowed, 100_000)
        m = re.search(r"__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]{1,60})['\"]",
                      data.decode("utf-8", "replace")) if data is not None else None
        if m:
            found = m.group(1)
            break
    if found is None or found.startswith("0.0.0"):  # a placeholder: the installed wheel's metadata knows better
        try:
            infos = sorted(root.glob("sglang-*.dist-info"))[:4]
        except OSError:
            infos = []
        for info in infos:
            m = re.fullmatch(r"sglang-([0-9][A-Za-z0-9.+]{0,40})\.dist-info", info.name)
            if m:
                found = m.group(1)
                break
    if found is None:
        return "unknown"
    return found if found.startswith("v") else f"v{found}"


def _megatron_version(root: Path, allowed: list[Path]) -> tuple[str, str | None]:
    from core.launch.catalog_build.checkout import read_bounded, read_git

    git = read_git(root, allowed)
    if git.commit:
        return git.commit[:8], git.date
    data = read_bounded(root / "megatron" / "core" / "package_info.py", allowed, 100_000)
    if data is not None:
        text = data.decode("utf-8", "replace")
        parts = [re.search(rf"^{k}\s*=\s*(\d+)", text, re.M) for k in ("MAJOR", "MINOR", "PATCH")]
        if all(parts):
            return "core_v" + ".".join(p.group(1) for p in parts if p), None
    return "unknown", None


# -- the versions shown on every report ---------------------------------------------------------------------
def bundled_versions() -> list[LayerVersion]:
    """The versions of the bundled catalog (the pins)."""
    return [LayerVersion(layer="slime", version=SLIME_SHORT, date=SLIME_DATE, origin="bundled pin"),
            LayerVersion(layer="megatron", version=MEGATRON_SHORT, origin="bundled pin"),
            LayerVersion(layer="sglang", version=SGLANG_VERSION, origin="bundled pin")]


def versions_of(catalog: Catalog | None) -> list[LayerVersion]:
    """The versions a catalog was read from: its own record, else the bundled pins."""
    if catalog is not None and catalog.versions:
        return list(catalog.versions)
    return bundled_versions()


def versions_line(versions: list[dict]) -> str:
    """`checked against: slime ... (origin); Megatron ...; SGLang ...` from a report's summary["versions"]."""
    parts = []
    for raw in versions:
        try:
            parts.append(LayerVersion.model_validate({k: v for k, v in raw.items() if k != "differs"}).describe())
        except ValueError:
            continue
    return ("checked against: " + "; ".join(parts)) if parts else ""


def _short(version: str) -> str:
    text = version.strip()
    return text[:8] if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else text


# -- building and caching -----------------------------------------------------------------------------------
_MEMORY: dict[str, Catalog | CatalogError] = {}


def _builder_id() -> str:
    digest = hashlib.sha256()
    parts = [p for p in files(_BUILDER_PACKAGE).iterdir() if p.name.endswith(".py")]
    for part in sorted(parts, key=lambda p: p.name):
        digest.update(part.name.encode() + b"\0" + part.read_bytes())
    try:
        st = CATALOG_PATH.stat()
        digest.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    except OSError:
        pass
    digest.update(files("core.launch").joinpath("versions.py").read_bytes())
    return digest.hexdigest()


_BUILDER_ID: str | None = None


def cache_key(sources: UserSources) -> str:
    """The key of a checkout's catalog: the commit id (or parser files' content), the sources, the builder."""
    from core.launch.catalog_build.checkout import content_key, read_git, stat_key
    from core.launch.catalog_build.sources import allowed_roots

    global _BUILDER_ID
    if _BUILDER_ID is None:
        _BUILDER_ID = _builder_id()
    assert sources.slime is not None
    slime = sources.slime.resolve()
    quick = (str(slime), stat_key(slime), _git_stamp(slime), str(sources.sglang), str(sources.megatron))
    if quick in _KEYS:  # nothing the key depends on moved: skip re-reading git and hashing the parser files
        return _KEYS[quick]
    allowed = allowed_roots([slime])
    git = read_git(slime, allowed)
    parts = [_BUILDER_ID, str(slime), f"commit:{git.commit}:{stat_key(slime)}" if git.commit
             else f"content:{content_key(slime, allowed)}"]
    for label, directory, rel in (("sglang", sources.sglang, "sglang/srt/server_args.py"),
                                  ("megatron", sources.megatron, "megatron/training/arguments.py")):
        if directory is None:
            parts.append(f"{label}:-")
            continue
        root = sglang_root(directory) if label == "sglang" else megatron_root(directory)
        try:
            st = (root / rel).stat()
            parts.append(f"{label}:{root.resolve()}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{label}:{root}:-")
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]
    if len(_KEYS) > 64:
        _KEYS.clear()
    _KEYS[quick] = key
    return key


_KEYS: dict[tuple[str, ...], str] = {}


def _git_stamp(slime: Path) -> str:
    """Sizes and times of what names the commit: .git/HEAD, the ref it names, packed-refs (no content read but
    HEAD's own few bytes)."""
    from core.launch.catalog_build.checkout import read_bounded
    from core.launch.catalog_build.sources import allowed_roots

    git = slime / ".git"
    parts = [_stamp(git / "HEAD"), _stamp(git / "packed-refs"), _stamp(git)]
    data = read_bounded(git / "HEAD", allowed_roots([slime]), 512)  # inside the tree only, like read_git
    head = data.decode("utf-8", "replace").strip() if data is not None else ""
    if head.startswith("ref:") and ".." not in head:
        parts.append(_stamp(git / head[4:].strip()))
    return "|".join(parts)


def _stamp(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}"


def cache_dir(store_dir: Path | None = None) -> Path:
    from core.memory import default_store_dir

    return (store_dir or default_store_dir()) / CACHE_DIR_NAME


def checkout_catalog(sources: UserSources, *, store_dir: Path | None = None, use_disk: bool = True) -> Catalog:
    """The catalog of the user's slime checkout (with their SGLang/Megatron when given), from the cache when
    this exact checkout was read before, else built and cached. Raises SourceError for a directory that is not
    what it is given as, CatalogError when the checkout cannot be read into a catalog (the message says why)."""
    if sources.slime is None:
        raise SourceError("no slime checkout given")
    problem = slime_problem(sources.slime)
    if problem:
        raise SourceError(problem)
    key = cache_key(sources)
    cached = _MEMORY.get(key)
    if isinstance(cached, CatalogError):
        raise CatalogError(str(cached))  # a fresh error: re-raising the stored one would grow its traceback
    if cached is not None:
        return cached
    catalog = _read_cached(cache_dir(store_dir) / f"{key}.json") if use_disk else None
    if catalog is None:
        try:
            catalog = build_user_catalog(sources)
        except CatalogError as exc:
            if len(_MEMORY) > 8:
                _MEMORY.clear()
            _MEMORY[key] = exc
            raise
        if use_disk:
            _write_cached(cache_dir(store_dir), key, catalog)
    if len(_MEMORY) > 8:
        _MEMORY.clear()
    _MEMORY[key] = catalog
    return catalog


def clear_memory() -> None:
    """Forget the catalogs and keys held in this process (the disk cache stays)."""
    _MEMORY.clear()
    _KEYS.clear()


def _read_cached(path: Path) -> Catalog | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_CACHED_BYTES:
            return None
        return catalog_from_json(path.read_bytes())
    except (OSError, CatalogError):
        return None  # a damaged or unreadable cache entry is rebuilt


def _write_cached(directory: Path, key: str, catalog: Catalog) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{key}.{os.getpid()}.tmp"
        tmp.write_bytes(catalog_to_json(catalog, full=True))
        os.replace(tmp, directory / f"{key}.json")
        entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-MAX_CACHED_CATALOGS]:
            old.unlink(missing_ok=True)
    except OSError:
        return  # a read-only store: the catalog is still used, just not kept


def build_user_catalog(sources: UserSources) -> Catalog:
    """Build the catalog of the user's checkout and record which versions it was read from."""
    from core.launch.catalog_build import build_catalog
    from core.launch.catalog_build.checkout import read_docker, read_git
    from core.launch.catalog_build.sources import allowed_roots

    assert sources.slime is not None
    slime = Path(sources.slime)
    allowed = allowed_roots([slime])
    git = read_git(slime, allowed)
    docker = read_docker(slime, allowed)
    short = git.commit[:8] if git.commit else None
    sglang_dir = sglang_root(sources.sglang) if sources.sglang is not None else None
    megatron_dir = megatron_root(sources.megatron) if sources.megatron is not None else None
    all_allowed = allowed_roots([d for d in (slime, sources.sglang, sources.megatron) if d is not None])
    pins = {"slime": short or "checkout", "slime_label": f"{short or 'unknown commit'} (your checkout)"}
    versions = [LayerVersion(layer="slime", version=short or "(commit unknown)", date=git.date,
                             origin=f"your checkout {slime}" + ("" if git.commit else f"; {git.note}"))]
    if megatron_dir is not None:
        version, date = _megatron_version(megatron_dir, all_allowed)
        pins["megatron"] = version
        versions.append(LayerVersion(layer="megatron", version=version, date=date,
                                     origin=f"your Megatron source {sources.megatron}"))
    else:
        versions.append(LayerVersion(layer="megatron", version=MEGATRON_SHORT, origin="bundled pin",
                                     runs=_short(docker.megatron) if docker.megatron else None,
                                     runs_origin=docker.megatron_origin))
    if sglang_dir is not None:
        version = _sglang_version(sglang_dir, all_allowed)
        pins["sglang"] = version
        versions.append(LayerVersion(layer="sglang", version=version, origin=f"your SGLang source {sources.sglang}"))
    else:
        versions.append(LayerVersion(layer="sglang", version=SGLANG_VERSION, origin="bundled pin",
                                     runs=docker.sglang, runs_origin=docker.sglang_origin))
    started = time.perf_counter()
    catalog = build_catalog(slime, megatron_dir, sglang_dir, None, pins=pins, allowed=all_allowed)
    notes = list(catalog.build_notes)
    notes.append(f"built from the checkout in {time.perf_counter() - started:.2f} s")
    if docker.image_version:
        notes.append(f"docker/version.txt of the checkout: {docker.image_version}")
    return catalog.model_copy(update={"versions": versions, "build_notes": notes})



# -- the model-script picker -------------------------------------------------------------------------------
MAX_MODEL_SCRIPTS = 400
MAX_MODEL_SCRIPT_BYTES = 200_000


def checkout_model_scripts(checkout: Path) -> tuple[ModelScript, ...]:
    """The model scripts of the user's checkout (scripts/models/*.sh), read like the bundled ones: MODEL_ARGS
    after the script's own variables and the sibling scripts it sources; nothing is run. Files that lead out
    of the checkout, or are too large, are left out. Citations are `scripts/models/X.sh@<their commit>`."""
    from core.launch.catalog_build.checkout import read_bounded, read_git
    from core.launch.catalog_build.sources import allowed_roots
    from core.launch.script import read_launch_script

    models = Path(checkout) / "scripts" / "models"
    allowed = allowed_roots([Path(checkout)])
    try:
        files = sorted(models.glob("*.sh"))[:MAX_MODEL_SCRIPTS] if models.is_dir() else []
    except OSError:
        return ()
    git = read_git(Path(checkout), allowed)
    pin = git.commit[:8] if git.commit else "checkout"

    def text_of(path: Path) -> str | None:
        data = read_bounded(path, allowed, MAX_MODEL_SCRIPT_BYTES)
        return data.decode("utf-8", "replace") if data is not None else None

    def sibling(path_text: str) -> str | None:
        m = re.search(r"([^/\s]+\.sh)$", path_text.strip())
        return text_of(models / m.group(1)) if m else None

    out = []
    for path in files:
        text = text_of(path)
        if text is None:
            continue
        words = read_launch_script(text, sibling).arrays.get("MODEL_ARGS") or []
        values: dict[str, str | None] = {}
        for i, w in enumerate(words):
            if w.resolved and w.text.startswith("--"):
                nxt = words[i + 1] if i + 1 < len(words) else None
                takes = nxt is not None and not (nxt.resolved and nxt.text.startswith("--"))
                values[w.text[2:]] = (nxt.text if nxt.resolved else None) if takes and nxt is not None else None
        rel = f"scripts/models/{path.name}"
        out.append(ModelScript(name=path.stem, path=rel, source=f"{rel}@{pin}", model_args=[w.text for w in words],
                               values=values))
    return tuple(out)
