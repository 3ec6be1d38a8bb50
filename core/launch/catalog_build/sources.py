"""Upstream source files as the static reader sees them: parsed modules of each package root, with the
unified diffs slime's Dockerfile applies to Megatron and SGLang patched in memory."""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from core.launch.catalog import CatalogError
from core.paths import PathRefused, containing_roots, decode_text, read_within

# Limits on what one build reads (see values.py for the interpreter's own limits).
MAX_SOURCE_BYTES = 4_000_000  # one Python file
MAX_TREE_SOURCE_BYTES = 20_000_000  # every Python file read for one build


@dataclass
class SourceFile:
    """One parsed upstream file. Line numbers of the (patched) text map back to upstream citations."""

    dotted: str
    cite_path: str
    pin: str
    owner: str
    tree: ast.Module
    original_line: dict[int, int] | None = None
    added_lines: dict[int, str] = field(default_factory=dict)

    def cite(self, line: int) -> tuple[str, bool]:
        """The citation of a line, and whether that line was added by a patch."""
        if line in self.added_lines:
            return self.added_lines[line], True
        if self.original_line is not None:
            line = self.original_line.get(line, line)
        return f"{self.cite_path}:{line}@{self.pin}", False


@dataclass
class FilePatch:
    """The hunks one unified diff applies to one file."""

    patch_cite: str
    pin: str
    hunks: list[tuple[int, list[tuple[str, str, int]]]]  # (old start, [(kind, text, patch line)])


def parse_unified_diff(text: str, patch_cite: str, pin: str) -> dict[str, FilePatch]:
    """Split a git-style unified diff into per-file hunks keyed by the target path (b/...)."""
    out: dict[str, FilePatch] = {}
    current: FilePatch | None = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("+++ "):
            target = line[4:].strip()
            target = target[2:] if target.startswith("b/") else target
            current = out.setdefault(target, FilePatch(patch_cite=patch_cite, pin=pin, hunks=[]))
        elif line.startswith("@@ ") and current is not None:
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@", line)
            if not m:
                raise ValueError(f"{patch_cite}:{i + 1}: unreadable hunk header")
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(3)) if m.group(3) is not None else 1
            body: list[tuple[str, str, int]] = []
            i += 1
            while i < len(lines) and (old_left > 0 or new_left > 0):
                row = lines[i]
                if row.startswith("\\"):
                    i += 1
                    continue
                kind = row[0] if row and row[0] in "+- " else " "
                body.append((kind, row[1:], i + 1))
                old_left -= kind in " -"
                new_left -= kind in " +"
                i += 1
            current.hunks.append((int(m.group(1)), body))
            continue
        i += 1
    return out


def apply_patch(text: str, patch: FilePatch) -> tuple[str, dict[int, int], dict[int, str]]:
    """Apply hunks to text (searching near the stated position, as `patch` does).

    Returns the new text, a map new line -> original line for untouched lines, and a map new line ->
    patch citation for added lines. Raises ValueError when a hunk's context is not found.
    """
    old = text.split("\n")
    origin: list[int | str] = list(range(1, len(old) + 1))
    rows: list[str] = list(old)
    shift = 0
    for start, body in patch.hunks:
        before = [t for k, t, _ in body if k in " -"]
        guess = start - 1 + shift
        pos = _find_block(rows, before, guess)
        if pos is None:
            raise ValueError(f"hunk at line {start} of {patch.patch_cite} does not apply")
        new_rows: list[str] = []
        new_origin: list[int | str] = []
        j = pos
        for kind, row, patch_line in body:
            if kind == " ":
                new_rows.append(rows[j])
                new_origin.append(origin[j])
                j += 1
            elif kind == "-":
                j += 1
            else:
                new_rows.append(row)
                new_origin.append(f"{patch.patch_cite}:{patch_line}@{patch.pin}")
        rows[pos:j] = new_rows
        origin[pos:j] = new_origin
        shift += len(new_rows) - (j - pos)
    original_line = {n: o for n, o in enumerate(origin, start=1) if isinstance(o, int)}
    added = {n: o for n, o in enumerate(origin, start=1) if isinstance(o, str)}
    return "\n".join(rows), original_line, added


def already_applied(text: str, patch: FilePatch) -> bool:
    """Whether every hunk's result (its context and added lines) is already in the text: the file was patched."""
    rows = text.split("\n")
    for start, body in patch.hunks:
        after = [t for k, t, _ in body if k in " +"]
        if _find_block(rows, after, start - 1) is None:
            return False
    return True


def _find_block(rows: list[str], block: list[str], guess: int) -> int | None:
    if not block:
        return max(0, min(guess, len(rows)))
    for delta in range(0, len(rows) + 1):
        for pos in (guess - delta, guess + delta):
            if 0 <= pos <= len(rows) - len(block) and rows[pos:pos + len(block)] == block:
                return pos
    return None


def allowed_roots(directories: list[Path]) -> list[Path]:
    """Where files read through these source directories may lie: see core.paths.containing_roots."""
    out: list[Path] = []
    for directory in directories:
        out.extend(r for r in containing_roots(directory) if r not in out)
    return out


def read_source_text(path: Path, allowed: list[Path], limit: int, cite_path: str) -> str:
    """The text of one upstream file, read only inside `allowed` (links and swaps included); CatalogError when
    it leads outside them or is larger than `limit` bytes."""
    try:
        data = read_within(path, allowed, limit=limit)
    except PathRefused as exc:
        raise CatalogError(f"{cite_path} is not read: {exc}") from None
    if len(data) > limit:
        raise CatalogError(f"{cite_path} is larger than {limit:,} bytes.")
    return decode_text(data)


@dataclass
class PackageRoot:
    package: str
    directory: Path
    cite_prefix: str
    pin: str
    owner: str


class SourceTree:
    """Finds and parses modules of the four upstream packages by dotted name."""

    def __init__(self, roots: list[PackageRoot], patches: dict[str, list[FilePatch]] | None = None,
                 allowed: list[Path] | None = None) -> None:
        self.roots = roots
        self.allowed = allowed if allowed is not None else allowed_roots([r.directory for r in roots])
        self.patches = patches or {}
        self._cache: dict[str, SourceFile | None] = {}
        self.patch_notes: list[str] = []
        self.bytes_read = 0

    def root_for(self, dotted: str) -> PackageRoot | None:
        head = dotted.split(".")[0]
        return next((r for r in self.roots if r.package == head), None)

    def module(self, dotted: str) -> SourceFile | None:
        if dotted in self._cache:
            return self._cache[dotted]
        self._cache[dotted] = None
        root = self.root_for(dotted)
        result = None
        if root is not None:
            rel = Path(*dotted.split("."))
            for candidate in (rel.with_suffix(".py"), rel / "__init__.py"):
                path = root.directory / candidate
                if path.is_file():
                    result = self._parse(dotted, root, candidate.as_posix(), path)
                    break
        self._cache[dotted] = result
        return result

    def _parse(self, dotted: str, root: PackageRoot, rel: str, path: Path) -> SourceFile:
        """Read and parse one file; CatalogError naming the file when it is too large, unreadable or not Python."""
        cite_path = f"{root.cite_prefix}{rel}"
        try:
            size = path.stat().st_size
            if size > MAX_SOURCE_BYTES:
                raise CatalogError(f"{cite_path} is {size:,} bytes; the static reader takes files of at most "
                                   f"{MAX_SOURCE_BYTES:,} bytes.")
            self.bytes_read += size
            if self.bytes_read > MAX_TREE_SOURCE_BYTES:
                raise CatalogError(f"reading {cite_path} takes the sources read past {MAX_TREE_SOURCE_BYTES:,} "
                                   "bytes, the static reader's limit for one build.")
            text = read_source_text(path, self.allowed, MAX_SOURCE_BYTES, cite_path)
        except OSError as exc:
            raise CatalogError(f"{cite_path} cannot be read: {exc.strerror or exc}.") from None
        original_line: dict[int, int] | None = None
        added: dict[int, str] = {}
        for patch in self.patches.get(cite_path, []):
            try:
                text, original_line_step, added_step = apply_patch(text, patch)
            except ValueError as exc:
                if not already_applied(text, patch):  # an installed, already patched package reads as it is
                    self.patch_notes.append(str(exc))
                continue
            # compose with earlier patches
            if original_line is None:
                original_line = original_line_step
                added = added_step
            else:
                prev_orig, prev_added = original_line, added
                original_line, added = {}, dict(added_step)
                for new_line, mid_line in original_line_step.items():
                    if mid_line in prev_orig:
                        original_line[new_line] = prev_orig[mid_line]
                    elif mid_line in prev_added:
                        added[new_line] = prev_added[mid_line]
        try:
            with warnings.catch_warnings():  # old upstream code warns about escape sequences: not the user's concern
                warnings.simplefilter("ignore")
                tree = ast.parse(text, filename=cite_path)
        except SyntaxError as exc:  # also NUL bytes on Python 3.12+
            where = f"{cite_path}:{exc.lineno}" if exc.lineno else cite_path
            raise CatalogError(f"{where} is not valid Python ({exc.msg}).") from None
        except ValueError as exc:  # NUL bytes on Python 3.11
            raise CatalogError(f"{cite_path} is not valid Python ({exc}).") from None
        except (RecursionError, MemoryError):
            raise CatalogError(f"{cite_path} nests its code too deeply for the static reader to parse it.") from None
        return SourceFile(dotted=dotted, cite_path=cite_path, pin=root.pin, owner=root.owner, tree=tree,
                          original_line=original_line, added_lines=added)
