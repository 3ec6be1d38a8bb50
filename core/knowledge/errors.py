"""slime's error messages: every `assert` (with its message, or none) and every `raise` of a literal or
f-string message, read from the source with `ast` (never imported or run), and matched against what a user
pastes.

The index (knowledge/catalog/errors.json, written by tools/build_error_index.py at the pinned commit) keeps
per message its template (f-string holes shown as `{expression}`), the condition that fails, the function,
and `path:line`. A pasted error line or traceback is matched on the traceback's slime file and line when it
points into slime, and otherwise on the template's fixed words, since the values in the holes (numbers,
paths) differ in every run. Pasted text is data: it is only searched, never run or rendered as HTML.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import orjson
from pydantic import BaseModel, Field

from core.knowledge.traceback import (
    MAX_PASTE_CHARS as MAX_PASTE_CHARS,  # re-exported: the pages import it here
)
from core.knowledge.traceback import RaisedError, ReadPaste, read_paste
from core.paths import SkippedFile, TreeReader
from core.pins import MEGATRON_SHORT, SGLANG_VERSION, SLIME_SHORT
from core.resources import knowledge_path

KNOWLEDGE_DIR = knowledge_path()
ERRORS_PATH = KNOWLEDGE_DIR / "catalog" / "errors.json"
ERROR_RULES_PATH = KNOWLEDGE_DIR / "catalog" / "error_rules.json"

# What is read from a checkout: Python files outside tests, at most this many, this large each and in all.
# slime at the pin has 221 such files, 2.04 MB in all, the largest 139 KB: the limits leave a fork room to
# grow (about 9x, 3.6x and 1.5x) and keep the index of a hostile tree within a few seconds and a few
# hundred MB (`ast` takes up to ~2 s and ~330 MB per MB of dense code; see benchmarks/bench_hostile.py).
SOURCE_DIRS = ("slime", "slime_plugins", "tools", "examples")
TOP_LEVEL_FILES = ("train.py", "train_async.py")
MAX_FILES = 2000
MAX_FILE_BYTES = 500_000
MAX_TOTAL_BYTES = 3_000_000
HOLE = "{…}"


class ErrorEntry(BaseModel):
    """One assert or raise in slime with a message a user would see."""

    kind: str = Field(description="assert | raise | log (a log line: `exception` holds its level)")
    exception: str = Field(description="AssertionError, or the raised class as written")
    template: str = Field(description="the message, f-string holes as {expression}; empty for a bare assert")
    condition: str | None = Field(default=None, description="the assert's test, or the if-test guarding the raise")
    function: str = Field(description="qualified name of the enclosing function, or <module>")
    path: str
    line: int
    end_line: int
    commit: str = SLIME_SHORT
    normal: bool | None = Field(default=None, description="for a log line: whether a healthy run prints it")

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def source(self) -> str:
        return f"{self.path}:{self.line}@{self.commit}"

    @property
    def fixed_words(self) -> str:
        """The template without its holes: the words every occurrence of this message shares."""
        return re.sub(r"\s+", " ", _HOLE_RE.sub(" ", self.template)).strip()


class ErrorIndex(BaseModel):
    commit: str
    files: int
    entries: list[ErrorEntry]
    skipped: list[SkippedFile] = Field(default_factory=list, description="files of a checkout not read, and why")


class RuleLink(BaseModel):
    """A hand-made link from a message in slime to the rules that catch the same condition before launch."""

    path: str
    contains: str = Field(default="", description="a piece of the message template that identifies it")
    line: int | None = Field(default=None, description="or the line, for an assert without a message")
    rules: list[str] = Field(default_factory=list)
    card: str | None = None
    note: str | None = None


class ErrorMatch(BaseModel):
    entry: ErrorEntry
    how: str = Field(description="message | chain-message | traceback-line | words")
    frame: str | None = Field(default=None, description="the traceback frame that pointed at it, as pasted")
    confidence: str = Field(default="exact", description="exact | likely (see match_error)")


# --------------------------------------------------------------------------------------------------
# Reading the source
# --------------------------------------------------------------------------------------------------
_HOLE_RE = re.compile(r"\{[^{}]*\}")


def _template(node: ast.AST) -> str | None:
    """The message of a literal, f-string, `%`/`+` of literals or `.format` call; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                parts.append("{" + _short(ast.unparse(value.value), 60) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        if left is not None or right is not None:
            return (left if left is not None else "{" + _short(ast.unparse(node.left), 60) + "}") + \
                   (right if right is not None else "{" + _short(ast.unparse(node.right), 60) + "}")
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _template(node.left)
        return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdifrx]", "{…}", left) if left is not None else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):
        return node.func.value.value
    return None


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _exception_name(node: ast.AST) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return _short(ast.unparse(target), 60)


class _Collector(ast.NodeVisitor):
    def __init__(self, path: str, commit: str) -> None:
        self.path = path
        self.commit = commit
        self.scope: list[str] = []
        self.guards: list[str] = []
        self.entries: list[ErrorEntry] = []

    def _visit_scope(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        saved, self.guards = self.guards, []
        self.generic_visit(node)
        self.guards = saved
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_scope(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_scope(node, node.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._visit_scope(node, node.name)

    def visit_If(self, node: ast.If) -> None:
        """An if/elif/.../else chain: each branch is guarded by its own test, and the final `else` by every
        test of the chain negated (`not (a) and not (b)`), since it runs only when all of them failed."""
        negated: list[str] = []
        branch: ast.If | None = node
        while branch is not None:
            self.visit(branch.test)
            test = _short(ast.unparse(branch.test), 300)
            self.guards.append(test)
            for child in branch.body:
                self.visit(child)
            self.guards.pop()
            negated.append(f"not ({test})")
            orelse = branch.orelse
            branch = orelse[0] if len(orelse) == 1 and isinstance(orelse[0], ast.If) else None
            if branch is None and orelse:
                self.guards.append(_short(" and ".join(negated), 600))
                for child in orelse:
                    self.visit(child)
                self.guards.pop()

    def _add(self, node: ast.stmt, kind: str, exception: str, template: str, condition: str | None) -> None:
        self.entries.append(ErrorEntry(
            kind=kind, exception=exception, template=_short(template, 600), condition=condition,
            function=".".join(self.scope) or "<module>", path=self.path, line=node.lineno,
            end_line=getattr(node, "end_lineno", None) or node.lineno, commit=self.commit))

    def visit_Assert(self, node: ast.Assert) -> None:
        """An assert with a message, or without one (template ""): a bare `AssertionError` in a traceback is
        found by the frame's line or the assert's code it shows."""
        template = _template(node.msg) if node.msg is not None else ""
        if template is not None and (template.strip() or node.msg is None):
            self._add(node, "assert", "AssertionError", template, _short(ast.unparse(node.test), 300))
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            template = _template(exc.args[0])
            if template and template.strip():
                self._add(node, "raise", _exception_name(exc), template, self.guards[-1] if self.guards else None)
        self.generic_visit(node)


def errors_in_source(text: str, path: str, commit: str = SLIME_SHORT) -> list[ErrorEntry]:
    """Every assert (with its message, or none) and every raise with a literal or f-string message in one
    Python file (nothing for a file that does not parse)."""
    return read_source_errors(text, path, commit)[0]


def read_source_errors(text: str, path: str, commit: str = SLIME_SHORT) -> tuple[list[ErrorEntry], str | None]:
    """The entries of one Python file, and why it could not be read (None when it could): a syntax error, NUL
    bytes, or code nested deeper than `ast` (or the collector) can follow, such as a 10,000-term `a+a+...`."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        return [], f"not valid Python (line {exc.lineno})" if exc.lineno else "not valid Python"
    except ValueError:
        return [], "not valid Python (NUL bytes)"
    except (RecursionError, MemoryError):
        return [], "nested too deeply to parse"
    collector = _Collector(path, commit)
    try:
        collector.visit(tree)
    except (RecursionError, MemoryError):
        return [], "nested too deeply to read"
    return collector.entries, None


def checkout_reader(root: Path) -> TreeReader:
    """The guarded reader of a checkout, with the error index's limits (core.paths.TreeReader)."""
    return TreeReader(root, max_file_bytes=MAX_FILE_BYTES, max_total_bytes=MAX_TOTAL_BYTES, max_files=MAX_FILES)


def source_files(root: Path, reader: TreeReader | None = None) -> list[Path]:
    """The Python files of a slime checkout that the index reads (tests excluded), sorted; only regular files,
    never through a link that leads outside the checkout."""
    reader = reader if reader is not None else checkout_reader(root)
    found: list[Path] = []
    for name in TOP_LEVEL_FILES:
        found += reader.files(name)
    for sub in SOURCE_DIRS:
        found += reader.files(sub, skip_parts=frozenset({"tests"}), limit=MAX_FILES - len(found))
        if len(found) >= MAX_FILES:
            break
    return found[:MAX_FILES]


def build_error_index(root: Path, commit: str = SLIME_SHORT) -> ErrorIndex:
    """Read a slime checkout with `ast` (nothing is imported or run) and index its error messages. Files that
    are not regular, lead outside the checkout, are too large (or past the bytes read in all) or do not
    parse are left out and named in `skipped`."""
    root = Path(root)
    reader = checkout_reader(root)
    entries: list[ErrorEntry] = []
    files = source_files(root, reader)
    for path in files:
        text = reader.read_text(path)
        if text is None:
            continue
        found, why = read_source_errors(text, reader.rel(path), commit)
        if why is not None:
            reader.skip(path, "unparsable", why)
        entries += found
    return ErrorIndex(commit=commit, files=len(files), entries=entries, skipped=reader.skipped)


def index_to_json(index: ErrorIndex) -> bytes:
    return orjson.dumps(index.model_dump(mode="json", exclude={"skipped"} if not index.skipped else None),
                        option=orjson.OPT_INDENT_2) + b"\n"


@lru_cache(maxsize=2)
def _load(path_text: str, mtime_ns: int) -> ErrorIndex:
    return ErrorIndex.model_validate(orjson.loads(Path(path_text).read_bytes()))


def load_error_index(path: Path = ERRORS_PATH) -> ErrorIndex:
    """The committed index (or the one at `path`); an empty index when the file is missing."""
    try:
        stat = Path(path).stat()
    except OSError:
        return ErrorIndex(commit=SLIME_SHORT, files=0, entries=[])
    return _load(str(path), stat.st_mtime_ns)


@lru_cache(maxsize=1)
def load_rule_links(path: Path = ERROR_RULES_PATH) -> tuple[RuleLink, ...]:
    """The hand-made table linking messages of slime, Megatron-LM and SGLang to our rules
    (knowledge/catalog/error_rules.json)."""
    try:
        raw = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return ()
    return tuple(RuleLink.model_validate(item) for item in raw.get("links", []))


def links_for(entry: ErrorEntry, links: tuple[RuleLink, ...] | None = None) -> list[RuleLink]:
    """The table rows that name this message (same file, and the template containing the row's text, or the
    row's line for a bare assert)."""
    links = load_rule_links() if links is None else links
    return [link for link in links if link.path == entry.path and (
        (link.line is not None and link.line == entry.line) or (link.contains and link.contains in entry.template))]


# --------------------------------------------------------------------------------------------------
# Matching what a user pastes
# --------------------------------------------------------------------------------------------------
def traceback_frames(text: str) -> list[tuple[str, int]]:
    """The (file, line) pairs of a pasted Python traceback, innermost last (noise such as Ray's prefixes
    removed first)."""
    return [(f.path, f.line) for f in reversed(read_paste(text).frames)]


_PACKAGES = ("slime", "slime_plugins")
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_.\-/]{1,300}$")  # a file name slime could have; anything else is ignored


def slime_frames(text: str) -> list[tuple[str, int]]:
    """The frames of a pasted traceback that point into slime, innermost first, as (repo path, line).

    The repo path is the shortest tail of the frame's file that starts at a `slime/` or `slime_plugins/`
    directory, so a checkout at /root/slime/slime/... and an installed package at site-packages/slime/...
    both give slime/.... Only plain file names are kept (they are shown as citations).
    """
    out: list[tuple[str, int]] = []
    for frame_path, line in reversed(traceback_frames(text)):
        parts = frame_path.replace("\\", "/").split("/")
        starts = [i for i, part in enumerate(parts[:-1]) if part in _PACKAGES]
        if not starts or not parts[-1].endswith(".py"):
            continue
        if parts[-1] in TOP_LEVEL_FILES and starts[-1] == len(parts) - 2:
            rel = parts[-1]  # the checkout's own train.py, in a directory that happens to be named slime
        else:
            rel = "/".join(parts[starts[-1]:])
        if _SAFE_PATH.match(rel) and (rel, line) not in out:
            out.append((rel, line))
    return out


def error_message_of(text: str) -> str:
    """The message of a pasted error: the final exception's message (Ray's prefixes and other per-run noise
    removed), else the last non-empty line."""
    final = read_paste(text).final
    return final.message if final else ""


def _template_pieces(template: str) -> tuple[str, ...] | None:
    """The template's fixed pieces (whitespace collapsed), in order; None when too little is fixed to match."""
    pieces = tuple(p for p in (" ".join(x.split()) for x in _HOLE_RE.split(template)) if p)
    return pieces if sum(map(len, pieces)) >= 8 else None


def _pieces_in_order(pieces: tuple[str, ...], message: str) -> bool:
    """Whether every fixed piece appears in the message, in order (the holes may hold anything)."""
    pos = 0
    for piece in pieces:
        found = message.find(piece, pos)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


_TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _key_word(pieces: tuple[str, ...]) -> str | None:
    """The longest word (4+ characters) of the pieces that stands whole: not touching a piece's edge, where
    a hole could extend it (`{name}_size`)."""
    best = None
    for piece in pieces:
        for m in _TOKEN_RE.finditer(piece):
            if m.start() == 0 or m.end() == len(piece) or len(m.group()) < 4:
                continue
            if best is None or len(m.group()) > len(best):
                best = m.group()
    return best


_WORD_RE = re.compile(r"[a-z][a-z0-9_]{2,}")
_COMMON = frozenset("the and for not but with this that must are can has have was were should when than you "
                    "your use using please got set".split())
FUZZY_MIN_WORDS, FUZZY_MIN_SHARE = 4, 0.8


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD_RE.findall(text.lower()) if w not in _COMMON)


class _Prepared:
    """An index made ready for matching: templates' fixed pieces, their distinctive words, entries by file."""

    def __init__(self, index: ErrorIndex, parts: list[EntryParts] | None = None) -> None:
        """`parts`: what `entry_parts` computed for the same entries (a saved search index keeps them), so
        that a process starts matching without computing them again."""
        self.index = index
        parts = parts if parts is not None and len(parts) == len(index.entries) else entry_parts(index)
        self.templates = [(e, e.id, part[0]) for e, part in zip(index.entries, parts, strict=True)
                          if part[0] is not None]
        # A prefilter: each template under its longest whole word (one the message must hold as a token of its
        # own); templates with no such word are always tried.
        self.by_key_word: dict[str, list[tuple[ErrorEntry, str, tuple[str, ...]]]] = {}
        self.unkeyed: list[tuple[ErrorEntry, str, tuple[str, ...]]] = []
        key_words = [part[1] for part in parts if part[0] is not None]
        for item, word in zip(self.templates, key_words, strict=True):
            (self.by_key_word.setdefault(word, []) if word else self.unkeyed).append(item)
        self.by_path: dict[str, list[ErrorEntry]] = {}
        self.by_id: dict[str, ErrorEntry] = {}
        self.by_test: dict[tuple[str, str], list[ErrorEntry]] = {}  # (path, an assert's test) -> its entries
        self.by_name: dict[str, list[str]] = {}  # a file's base name -> the index paths with it
        self.words: dict[str, frozenset[str]] = {}
        self.by_word: dict[str, list[ErrorEntry]] = {}
        for e, part in zip(index.entries, parts, strict=True):
            if e.path not in self.by_path:
                self.by_name.setdefault(e.path.rsplit("/", 1)[-1], []).append(e.path)
            self.by_path.setdefault(e.path, []).append(e)
            self.by_id.setdefault(e.id, e)
            if e.kind == "assert" and e.condition:
                self.by_test.setdefault((e.path, e.condition), []).append(e)
            words = part[2]
            if len(words) >= FUZZY_MIN_WORDS:
                self.words[e.id] = words
                for w in words:
                    self.by_word.setdefault(w, []).append(e)
        self.paths = set(self.by_path)
        self.order = {key: n for n, (_, key, _) in enumerate(self.templates)}

    def candidates(self, message: str) -> list[tuple[ErrorEntry, str, tuple[str, ...]]]:
        """The templates that may fit a message: those keyed by a word the message holds, and the unkeyed;
        in index order, so ties rank as without the prefilter."""
        found = list(self.unkeyed)
        for token in set(_TOKEN_RE.findall(message)):
            found += self.by_key_word.get(token, ())
        order = self.order
        return sorted(found, key=lambda item: order[item[1]])

    def repo_relative(self, frame_path: str) -> str | None:
        """The index path a traceback's file names (the checkout may live anywhere on the user's machine;
        SGLang's `python/` prefix is absent from an installed package)."""
        norm = frame_path.replace("\\", "/")
        best = None
        for rel in self.by_name.get(norm.rsplit("/", 1)[-1], ()):
            bare = rel.removeprefix("python/")
            if (norm in (rel, bare) or norm.endswith("/" + bare)) and (best is None or len(rel) > len(best)):
                best = rel
        return best


# Per entry: its template's fixed pieces (None: too little fixed to match), the pieces' key word, and the
# distinctive words of its fixed text.
EntryParts = tuple[tuple[str, ...] | None, str | None, frozenset[str]]


def entry_parts(index: ErrorIndex) -> list[EntryParts]:
    """What matching computes from each entry before the first match (the costly part of preparing)."""
    out: list[EntryParts] = []
    for e in index.entries:
        pieces = _template_pieces(e.template)
        out.append((pieces, _key_word(pieces) if pieces is not None else None, _words(e.fixed_words)))
    return out


_PREPARED: dict[int, _Prepared] = {}


def _prepared(index: ErrorIndex | _Prepared, parts: list[EntryParts] | None = None) -> _Prepared:
    """Kept per index object (the index itself is kept alive with it); an index already prepared (the saved
    tables of a search index's image, core.knowledge.saved_messages) is used as it is."""
    if isinstance(index, _Prepared):
        return index
    cached = _PREPARED.get(id(index))
    if cached is None or cached.index is not index:
        if len(_PREPARED) > 4:
            _PREPARED.clear()
        cached = _PREPARED[id(index)] = _Prepared(index, parts)
    return cached


def prepare_matching(index: ErrorIndex, parts: list[EntryParts] | None = None) -> None:
    """Make the index ready for `match_error` now, from `entry_parts` saved earlier when given."""
    _prepared(index, parts)


def _type_agrees(entry: ErrorEntry, raised: RaisedError) -> bool:
    """The pasted exception class is the entry's (or none was pasted, or the entry is a log line)."""
    pasted = raised.short_type
    return pasted is None or entry.kind == "log" or entry.exception.rsplit(".", 1)[-1] == pasted


def _fuzzy(prepared: _Prepared, message: str, seen: set[str]) -> list[ErrorEntry]:
    """Messages worded a little differently (another version) or pasted in part: most of the template's
    distinctive words, at least FUZZY_MIN_WORDS of them, appear in the pasted message; or every distinctive
    word of a pasted piece (at least three, one of them an identifier such as `rollout_data`) is in the
    template. Best share first."""
    counts: dict[str, int] = {}
    entries: dict[str, ErrorEntry] = {}
    pasted = _words(message)
    for w in pasted:
        for e in prepared.by_word.get(w, ()):
            counts[e.id] = counts.get(e.id, 0) + 1
            entries[e.id] = e
    part = len(pasted) >= 3 and any("_" in w or any(c.isdigit() for c in w) for w in pasted)
    scored = []
    for key, n in counts.items():
        share = n / len(prepared.words[key])
        if key in seen:
            continue
        if n >= FUZZY_MIN_WORDS and share >= FUZZY_MIN_SHARE:
            scored.append((-share, -n, key))
        elif part and n == len(pasted):
            scored.append((-share, -n, key))
    return [entries[key] for *_, key in sorted(scored)]


def match_error(text: str, index: ErrorIndex | _Prepared | None = None, limit: int = 5) -> list[ErrorMatch]:
    """Where a pasted error comes from, best first, each with how sure the match is.

    The paste is read as an engineer reads it (`core.knowledge.traceback.read_paste`): per-run noise
    stripped, the final exception first, then the rest of its chain, frames innermost first. A frame
    locates a message by its line, or by the assert it shows (the same test in the same file: line numbers
    move between versions, the code less so).
    exact:  the final exception's message has every fixed piece of the template, in order, its class is
            the template's, and a frame locates it or the template is specific (`_specific`); first when a
            frame also locates it; a bare `AssertionError` located on a bare assert; then the same for an
            earlier exception of the chain.
    likely: a frame locates it but the message differs (another version, or a message built at run time);
            the message fits but the class differs or the template is generic; or the message has most of
            the template's distinctive words (worded a little differently, or pasted in part).
    Within a group, messages in a file (then a function) the frames name go first, then those of the layer
    the frames point into, then the longer templates; an exact match far vaguer than the best one is only
    likely.
    """
    index = index if index is not None else load_error_index()
    read = read_paste(text or "")
    prepared = _prepared(index)
    located_at = _located(read, prepared)
    scored: list[tuple[tuple, ErrorMatch]] = []
    seen: set[str] = set()
    layer = read.layer
    frame_files = {rel for f in read.frames if (rel := prepared.repo_relative(f.path))}
    frame_functions = {f.function for f in read.frames if f.function}

    def add(group: int, e: ErrorEntry, how: str, confidence: str) -> None:
        seen.add(e.id)
        # the same text raised in several places: the file and function the frames name decide
        key = (group, e.path not in frame_files, e.function.rsplit(".", 1)[-1] not in frame_functions,
               _layer_rank(e, layer), -len(e.fixed_words))
        frame = located_at.get(e.id)
        scored.append((key, ErrorMatch(entry=e, how=how, frame=frame[0] if frame else None, confidence=confidence)))

    reached = bool(frame_files)
    for k, raised in enumerate(read.messages[:4]):
        message = " ".join(raised.message.split())
        if not message:
            continue
        for e, key, pieces in prepared.candidates(message):
            if key not in seen and _pieces_in_order(pieces, message):
                in_frames = e.path in frame_files
                if reached and not in_frames and _generic(e):
                    continue  # the frames are elsewhere and the template fits many messages: not this one
                agrees = _type_agrees(e, raised)
                group = (0 if key in located_at else 1) if k == 0 else 2
                by_function = in_frames and e.function.rsplit(".", 1)[-1] in frame_functions
                sure = agrees and (key in located_at or by_function
                                   or (_specific(e, pieces, message) and not _generic(e)))
                add(group if agrees else 4, e, "message" if k == 0 else "chain-message",
                    "exact" if sure else "likely")
    bare_final = read.final is not None and read.final.short_type == "AssertionError" and not read.final.message
    for key, (_, how) in located_at.items():
        if key not in seen:
            e = prepared.by_id[key]
            if bare_final and not e.template:
                add(0, e, how, "exact")
            else:
                add(3, e, how, "likely")
    if read.final and not any(c.confidence == "exact" for _, c in scored):
        fuzzy = [e for e in _fuzzy(prepared, read.final.message, seen) if (not reached or e.path in frame_files)
                 and not (read.final.type and e.kind == "log")]  # a raised exception is no log line
        for e in fuzzy[:limit]:  # words alone do not outweigh frames that point elsewhere
            add(5, e, "words", "likely")
    scored.sort(key=lambda t: t[0])
    _demote_vaguer(scored)
    return [m for _, m in scored[:limit]]


# Words of Python's own messages and of messages every library words alike: a template made of these alone
# (`'{x}' object has no attribute '{y}'`, `{} is not divisible by {}`, `Unsupported {x}`) fits messages of
# any code, so it never names the place a paste comes from by its text alone.
_GENERIC_WORDS = frozenset("object attribute key index out range not supported unsupported invalid value values "
                           "type types expected got must divisible argument arguments missing required positional "
                           "keyword unexpected none int str list dict tuple found error errors name names given "
                           "takes one two only either should equal does exist exists unknown".split())


def _generic(entry: ErrorEntry) -> bool:
    """Whether a template's fixed words are fewer than two distinctive ones besides Python's own wording."""
    return len(_words(entry.fixed_words) - _GENERIC_WORDS) < 2


def _specific(entry: ErrorEntry, pieces: tuple[str, ...], message: str) -> bool:
    """Whether a template that fits is specific enough to call the match exact: its fixed words make up
    half the pasted message, or it starts with fixed text and has at least three distinctive words (a
    generic `{} is not divisible by {}` or `Unsupported {x}` fits many messages of other libraries)."""
    if len(entry.fixed_words) >= 0.5 * len(message):
        return True
    starts_fixed = bool(entry.template) and entry.template.lstrip().startswith(pieces[0][:8])
    return starts_fixed and len(_words(entry.fixed_words)) >= 3


def _located(read: ReadPaste, prepared: _Prepared) -> dict[str, tuple[str, str]]:
    """Entry id -> (the frame as pasted, traceback-line | traceback-code) for the entries the frames point
    at: the frame's line inside the entry's statement, or the assert the frame shows (same file, same test)."""
    out: dict[str, tuple[str, str]] = {}
    for frame in read.frames:
        rel = prepared.repo_relative(frame.path)
        if rel is None:
            continue
        where = f"{frame.path}, line {frame.line}"
        for e in prepared.by_path[rel]:
            if e.line <= frame.line <= e.end_line and e.id not in out:
                out[e.id] = (where, "traceback-line")
        test = _assert_test(frame.code) if frame.code else None
        for e in prepared.by_test.get((rel, test), ()) if test else ():
            out.setdefault(e.id, (where, "traceback-code"))
    return out


def _assert_test(code: str) -> str | None:
    """The test of the `assert` a traceback shows, as `ast` prints it (the text is only parsed, never run);
    a multi-line assert shows its first line only, so the part before the message is tried too."""
    if not code.startswith("assert ") or len(code) > 300:
        return None
    for candidate in (code, code.split(",", 1)[0]):
        try:
            node = ast.parse(candidate).body[0]
        except (SyntaxError, ValueError, IndexError, RecursionError, MemoryError):
            continue
        if isinstance(node, ast.Assert):
            return _short(ast.unparse(node.test), 300)
    return None


def _demote_vaguer(scored: list[tuple[tuple, ErrorMatch]]) -> None:
    """A template that fits the message but fixes far fewer of its words than the best exact match (a
    generic `{} is not divisible by {}` beside the specific message) is only `likely`."""
    best = max((len(m.entry.fixed_words) for key, m in scored if m.confidence == "exact" and key[0] <= 1), default=0)
    for key, m in scored:
        if m.confidence == "exact" and key[0] <= 1 and len(m.entry.fixed_words) < 0.6 * best:
            m.confidence = "likely"


def _layer_rank(entry: ErrorEntry, located: str | None) -> int:
    """0 for the layer the traceback's frames point into, 1 for slime otherwise, 2 for the rest."""
    layer = {MEGATRON_SHORT: "megatron", SGLANG_VERSION: "sglang"}.get(entry.commit, "slime")
    return 0 if layer == located else 1 if layer == "slime" else 2


CHECKOUT_COMMIT = "your-checkout"


@lru_cache(maxsize=2)
def _checkout_index(root_text: str, stamp: tuple[int, int, int]) -> ErrorIndex:
    return build_error_index(Path(root_text), CHECKOUT_COMMIT)


def checkout_error_index(root: Path) -> ErrorIndex:
    """The index of a user's own slime checkout (a path the caller has already allowed), read again only
    when one of its Python files changes, appears or goes. Read with the guarded reader (`checkout_reader`):
    the index's `skipped` names what was left out and why."""
    newest = size = 0
    files = source_files(Path(root))
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        newest, size = max(newest, st.st_mtime_ns), size + st.st_size
    return _checkout_index(str(Path(root).resolve()), (len(files), newest, size))
