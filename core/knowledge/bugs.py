"""Known slime bugs that upstream fixed or worked around, from knowledge/known_bugs.yaml: the symptom or
message, the affected range, the fixing commit and pull request, the workaround, and the threads.

Whether a user's own slime checkout has a fix is read from its code, never from git: each entry names a
file and a code marker the fix introduced (`added`) or removed (`removed`), or a file the fix created
(`file_added`) or deleted (`file_removed`). The file is read through core.paths.read_within, inside the roots
the checkout lies in, at most MAX_SOURCE_BYTES.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from core.knowledge.cards import KNOWLEDGE_DIR, SOURCE_RE
from core.knowledge.runtime import normalise
from core.knowledge.table_file import parse_table

BUGS_PATH = KNOWLEDGE_DIR / "known_bugs.yaml"
MAX_SOURCE_BYTES = 4_000_000
MAX_MATCH_CHARS = 200_000
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PR = re.compile(r"^#\d+$")


class Detect(BaseModel):
    """How to tell from a checkout's code whether it has the fix."""

    file: str = Field(min_length=1, description="path inside a slime checkout")
    kind: Literal["added", "removed", "file_added", "file_removed"]
    markers: list[str] = Field(default_factory=list, description="code text the fix added (any one present means "
                               "fixed: later refactors may rename it) or removed (all absent means fixed)")

    @model_validator(mode="after")
    def _markers_for_kind(self) -> Detect:
        if self.kind in ("added", "removed") and not [m for m in self.markers if m.strip()]:
            raise ValueError(f"detect.kind {self.kind!r} needs at least one marker")
        return self

    @field_validator("file")
    @classmethod
    def _relative(cls, v: str) -> str:
        p = PurePosixPath(v)
        if p.is_absolute() or ".." in p.parts or "\\" in v:
            raise ValueError(f"detect.file must be a plain relative path: {v!r}")
        return v


BugKind = Literal["fix", "revert", "default", "removal"]
Layer = Literal["slime", "sglang", "megatron"]
LAYER_NAMES = {"slime": "slime", "sglang": "SGLang", "megatron": "Megatron-LM"}


class KnownBug(BaseModel):
    id: str
    layer: Layer = Field("slime", description="whose code has the bug: slime's (fixed by a slime commit, told from a "
                                              "checkout's code) or an upstream layer's (keyed by its versions)")
    kind: BugKind = Field("fix", description="a fixed bug, a reverted change, a changed default or a removed flag "
                                              "or backend")
    title: str = Field(min_length=1)
    symptom: str = Field(min_length=1, description="what users see, in our words")
    error: str = Field("", description="the message the old code printed, as it formats it ({expr} for a field)")
    markers: list[str] = Field(default_factory=list, description="phrases of the message that identify it")
    affected: str = Field(min_length=1, description="which versions or dates have the bug")
    introduced_commit: str = Field("", description="the commit that brought the old behaviour in, when known")
    introduced_pr: str = Field("", description="its pull request, e.g. '#394'")
    introduced_date: str = Field("", description="its date, YYYY-MM-DD")
    fix_commit: str = Field("", description="the slime commit that fixed it (required for layer slime)")
    fix_pr: str = Field("", description="the pull request, e.g. '#1632'; empty for a commit pushed without one")
    also_fixes: list[str] = Field(default_factory=list, description="other commits this entry stands for (the "
                                                                   "rest of a series of reverts, a restore)")
    fix_date: str = ""
    versions: list[str] = Field(default_factory=list, description="upstream layer: the versions (as slime's images "
                                                                  "shipped them) that have the bug")
    fixed_in: str = Field("", description="upstream layer: the first version with the fix; empty when open at the pin")
    upstream: list[str] = Field(default_factory=list, description="upstream layer: its issue, PR or release URLs")
    workaround: str = Field(min_length=1)
    cause: str = Field(min_length=1)
    detect: Detect | None = None
    threads: list[str] = Field(min_length=1, description="issue and pull-request URLs read")
    sources: list[str] = Field(default_factory=list)
    cards: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"id must be lower-case words joined by '-': {v!r}")
        return v

    @field_validator("fix_commit", "introduced_commit")
    @classmethod
    def _commit_ok(cls, v: str, info) -> str:  # noqa: ANN001
        if v:
            if not _COMMIT.match(v):
                raise ValueError(f"{info.field_name} must be a hex commit id: {v!r}")
        return v

    @field_validator("also_fixes")
    @classmethod
    def _also_ok(cls, v: list[str]) -> list[str]:
        bad = [c for c in v if not _COMMIT.match(c)]
        if bad:
            raise ValueError(f"also_fixes must be hex commit ids; not: {bad}")
        return v

    @field_validator("fix_pr", "introduced_pr")
    @classmethod
    def _pr_ok(cls, v: str, info) -> str:  # noqa: ANN001
        if v and not _PR.match(v):
            raise ValueError(f"{info.field_name} must be '#' and a number: {v!r}")
        return v

    @field_validator("fix_date", "introduced_date", mode="before")
    @classmethod
    def _date_ok(cls, v: object, info) -> str:  # noqa: ANN001
        v = str(v) if v is not None else ""
        if v and not _DATE.match(v):
            raise ValueError(f"{info.field_name} must be YYYY-MM-DD: {v!r}")
        return v

    @field_validator("markers")
    @classmethod
    def _markers_ok(cls, v: list[str]) -> list[str]:
        out = [normalise(m) for m in v]
        if any(len(m) < 8 for m in out):
            raise ValueError(f"markers must be at least 8 characters: {v}")
        return out

    @field_validator("threads")
    @classmethod
    def _threads_ok(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not s.startswith("https://github.com/")]
        if bad:
            raise ValueError(f"threads must be GitHub URLs; not: {bad}")
        return v

    @field_validator("sources")
    @classmethod
    def _sources_ok(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not SOURCE_RE.match(s)]
        if bad:
            raise ValueError(f"sources must be path:line@pin or URLs; not: {bad}")
        return v

    @model_validator(mode="after")
    def _layer_fields(self) -> KnownBug:
        if self.layer == "slime":
            missing = [n for n in ("fix_commit", "fix_date") if not getattr(self, n)]
            if missing or self.detect is None:
                raise ValueError(f"a slime bug needs fix_commit, fix_date and detect (missing: "
                                 f"{', '.join(missing + ([] if self.detect else ['detect']))})")
        elif not self.versions or not self.upstream:
            raise ValueError("an upstream layer's bug needs its versions and upstream URLs")
        bad = [u for u in self.upstream if not u.startswith("https://")]
        if bad:
            raise ValueError(f"upstream must be https URLs; not: {bad}")
        return self

    @property
    def fixed_upstream(self) -> str:
        """`fixed upstream in <commit> (<PR>, <date>)`."""
        if self.layer != "slime":
            name = LAYER_NAMES[self.layer]
            return (f"fixed upstream in {name} {self.fixed_in}" if self.fixed_in else
                    f"not fixed in the {name} of slime's image at the pin") + f" ({name} {', '.join(self.versions)})"
        return f"fixed upstream in {self.fix_commit[:9]} ({self.fix_pr or 'no PR'}, {self.fix_date})"

    @property
    def fix_url(self) -> str:
        if self.layer != "slime":
            return self.upstream[0]
        return f"https://github.com/THUDM/slime/commit/{self.fix_commit}"

    def text(self) -> str:
        return (f"{self.title} {self.error} {self.symptom} {self.cause} {self.workaround} {self.affected} "
                f"{LAYER_NAMES[self.layer]} {' '.join(self.versions)}")


class BugsTableError(ValueError):
    pass


def parse_bugs(text: str) -> tuple[KnownBug, ...]:
    return parse_table(text, "bugs", KnownBug, "known bugs", BugsTableError)


@lru_cache(maxsize=4)
def load_bugs(path: Path = BUGS_PATH) -> tuple[KnownBug, ...]:
    return parse_bugs(Path(path).read_text(encoding="utf-8"))


def match_bugs(text: str, bugs: tuple[KnownBug, ...] | None = None, limit: int = 3) -> list[KnownBug]:
    """Entries with a marker in the pasted text, the longest marker first."""
    bugs = load_bugs() if bugs is None else bugs
    hay = normalise((text or "")[:MAX_MATCH_CHARS])
    scored = []
    for order, bug in enumerate(bugs):
        found = [len(m) for m in bug.markers if m in hay]
        if found:
            scored.append((-max(found), order, bug))
    return [b for *_, b in sorted(scored, key=lambda t: t[:2])][:limit]


class FixStatus(BaseModel):
    """Whether one checkout has one fix: True, False, or None when it cannot be told (with the reason)."""

    bug: str
    has_fix: bool | None
    detail: str


def checkout_has_fix(bug: KnownBug, checkout: Path | str) -> FixStatus:
    """Read the entry's file in the checkout (inside the roots the checkout lies in) and look for the
    marker. Never runs git; never reads outside those roots; reads at most MAX_SOURCE_BYTES."""
    from core.paths import PathRefused, containing_roots, decode_text, read_within

    if bug.detect is None:
        return FixStatus(bug=bug.id, has_fix=None, detail=f"this is a bug of {LAYER_NAMES[bug.layer]}, not of slime's "
                                                          f"code: compare your image's {LAYER_NAMES[bug.layer]} version "
                                                          f"with {', '.join(bug.versions)}")
    root = Path(checkout)
    target = root / bug.detect.file
    kind = bug.detect.kind
    try:
        roots = containing_roots(root)
        data = read_within(target, roots, limit=MAX_SOURCE_BYTES)
    except FileNotFoundError:
        if kind == "file_removed":
            return FixStatus(bug=bug.id, has_fix=True, detail=f"{bug.detect.file} is gone, as the fix made it")
        if kind == "file_added":
            return FixStatus(bug=bug.id, has_fix=False, detail=f"{bug.detect.file} is missing; the fix added it")
        return FixStatus(bug=bug.id, has_fix=None, detail=f"{bug.detect.file} is not in this checkout (moved or "
                                                          "renamed since), so it cannot be told")
    except (PathRefused, OSError, ValueError):
        return FixStatus(bug=bug.id, has_fix=None, detail=f"{bug.detect.file} could not be read")
    if kind == "file_added":
        return FixStatus(bug=bug.id, has_fix=True, detail=f"{bug.detect.file} exists, as the fix made it")
    if kind == "file_removed":
        return FixStatus(bug=bug.id, has_fix=False, detail=f"{bug.detect.file} is still there; the fix removed it")
    if len(data) > MAX_SOURCE_BYTES:
        return FixStatus(bug=bug.id, has_fix=None, detail=f"{bug.detect.file} is too large to read")
    text = decode_text(data)
    present = any(m in text for m in bug.detect.markers)
    fixed = present if kind == "added" else not present
    what = "has the code the fix added" if kind == "added" else "no longer has the code the fix removed"
    if not fixed:
        what = "lacks the code the fix added" if kind == "added" else "still has the code the fix removed"
    return FixStatus(bug=bug.id, has_fix=fixed, detail=f"{bug.detect.file} {what}")
