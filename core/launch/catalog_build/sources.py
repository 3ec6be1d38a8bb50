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

# Limits on what one build reads (see values.py for the interpreter's own limits). A build at the pins reads
# 54 Python files, 1.43 MB in all, the largest 324 KB (SGLang's server_args.py); `ast` takes up to ~2 s and
# ~330 MB per MB of dense code (a long literal list), so these keep a hostile checkout within seconds and
# about a GB while leaving upstream room to grow (3x per file, 2.8x in all).
MAX_SOURCE_BYTES = 1_000_000  # one Python file
MAX_TREE_SOURCE_BYTES = 4_000_000  # every Python file read for one build
# Bytes alone do not bound the parse: a literal list of 0s costs `ast` 20x what upstream code of the same size
# does. `parse_weight` counts the characters that open a syntax node; upstream code weighs 0.1-0.15 per byte
# (the build at the pins: about 190,000 in all, the largest file 40,000), dense code up to 1.
MAX_SOURCE_WEIGHT = 150_000  # one file
MAX_TREE_SOURCE_WEIGHT = 500_000  # every file of one build
_NODE_CHARS = (b",", b"(", b"[", b"{", b"+", b"-", b"*", b"=", b".", b":")


def parse_weight(data: bytes | str) -> int:
    """About how many syntax nodes `ast.parse` builds for this source: separators, brackets, operators and
    three per line (a statement, its target and value); counted in C, a millisecond per MB."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return sum(raw.count(c) for c in _NODE_CHARS) + 3 * raw.count(b"\n")
# Docker patches: the pinned ones are at most 150 KB and a few hundred hunks; each hunk's context is looked
# for near its stated line, and every position tried counts against one budget per build.
MAX_PATCH_BYTES = 2_000_000
MAX_PATCH_HUNKS = 5_000
MAX_PATCH_PROBES = 2_000_000


class PatchTooCostly(ValueError):
    """Applying the Docker patches would take more work than the static reader allows (the message says which)."""


class PatchBudget:
    """The positions still allowed to be tried when looking for hunks' context (one per build)."""

    def __init__(self, probes: int = MAX_PATCH_PROBES) -> None:
        self.left = self.limit = probes

    def spend(self, n: int, what: str) -> None:
        self.left -= n
        if self.left < 0:
            raise PatchTooCostly(f"{what} was not applied: finding its hunks' context took more than "
                                 f"{self.limit:,} tries, the static reader's limit")


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


def apply_patch(text: str, patch: FilePatch, budget: PatchBudget | None = None
                ) -> tuple[str, dict[int, int], dict[int, str]]:
    """Apply hunks to text (searching near the stated position, as `patch` does).

    Returns the new text, a map new line -> original line for untouched lines, and a map new line ->
    patch citation for added lines. Raises ValueError when a hunk's context is not found, PatchTooCostly
    when looking for it spends the budget.
    """
    budget = budget if budget is not None else PatchBudget()
    old = text.split("\n")
    origin: list[int | str] = list(range(1, len(old) + 1))
    rows: list[str] = list(old)
    shift = 0
    for start, body in patch.hunks:
        before = [t for k, t, _ in body if k in " -"]
        guess = start - 1 + shift
        pos = _find_block(rows, before, guess, budget, patch.patch_cite)
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


def already_applied(text: str, patch: FilePatch, budget: PatchBudget | None = None) -> bool:
    """Whether every hunk's result (its context and added lines) is already in the text: the file was patched.
    Raises PatchTooCostly when looking spends the budget."""
    budget = budget if budget is not None else PatchBudget()
    rows = text.split("\n")
    for start, body in patch.hunks:
        after = [t for k, t, _ in body if k in " +"]
        if _find_block(rows, after, start - 1, budget, patch.patch_cite) is None:
            return False
    return True


def _find_block(rows: list[str], block: list[str], guess: int, budget: PatchBudget, what: str) -> int | None:
    """The position of `block` in `rows` nearest to `guess` (as `patch` looks), each position tried spending
    the budget."""
    if not block:
        return max(0, min(guess, len(rows)))
    first, size, last = block[0], len(block), len(rows) - len(block)
    tried = 0
    for delta in range(0, len(rows) + 1):
        tried += 2
        if tried >= 4096:
            budget.spend(tried, what)
            tried = 0
        for pos in (guess - delta, guess + delta):
            if 0 <= pos <= last and rows[pos] == first and rows[pos:pos + size] == block:
                budget.spend(tried, what)
                return pos
        if guess - delta < 0 and guess + delta > last:
            break
    budget.spend(tried, what)
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
        self.weight_read = 0
        self.patch_budget = PatchBudget()

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
        weight = parse_weight(text)
        if weight > MAX_SOURCE_WEIGHT:
            raise CatalogError(f"{cite_path} holds about {weight:,} syntax nodes (long literal lists or dense code); "
                               f"the static reader parses files of at most {MAX_SOURCE_WEIGHT:,}.")
        self.weight_read += weight
        if self.weight_read > MAX_TREE_SOURCE_WEIGHT:
            raise CatalogError(f"parsing {cite_path} takes the sources parsed past about {MAX_TREE_SOURCE_WEIGHT:,} "
                               "syntax nodes, the static reader's limit for one build.")
        original_line: dict[int, int] | None = None
        added: dict[int, str] = {}
        for patch in self.patches.get(cite_path, []):
            try:
                text, original_line_step, added_step = apply_patch(text, patch, self.patch_budget)
            except PatchTooCostly as exc:
                self.patch_notes.append(str(exc))
                continue
            except ValueError as exc:
                try:
                    applied = already_applied(text, patch, self.patch_budget)
                except PatchTooCostly as costly:
                    self.patch_notes.append(f"{exc}; {costly}")
                    continue
                if not applied:  # an installed, already patched package reads as it is
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
