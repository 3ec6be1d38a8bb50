"""Verify every `path:line@pin` citation against the pinned upstream checkouts.

    python tools/check_citations.py                      # defaults: /work/src/slime, /work/src/megatron,
                                                         #           /work/src/sglang_whl
    python tools/check_citations.py --slime DIR --megatron DIR --sglang DIR [--verbose]

Where citations are found:
- knowledge/cards/*.md: the front matter's `sources` and every citation in the body, including short
  follow-ups (`:135`, `file.py:16`, backticked or not) that reuse the path of the last full citation (of that
  file, for `file.py:16`) in the same card;
- the launch checker's and the data checker's rules: each rule's source (RULES of core.launch.rules and
  core.data.rules), with the rule's title and check docstring as context;
- Python under core/: string constants (docstrings and messages) that carry `path:line@pin`, and calls of
  the citation helpers (`slime_source`, `megatron_source`, `sglang_source` and the rules' `src`/`msrc`);
- the curated tables knowledge/runtime_messages.yaml, framework_terms.yaml and known_bugs.yaml: every
  citation in an entry's text, anchored by the flags and identifiers of its sentence; and each of its
  `sources`, anchored by the code its detection marker names (a known bug's source of the fixed file must show
  the fix) or else by the entry's `flags`.

What is checked, for each citation: the file exists in the checkout of its pin (slime 624b824a, Megatron
1dcf0daf, SGLang v0.5.15.post1); the line or range exists; and the cited lines contain the citation's anchor.

Anchors: the anchor is the flag or identifier the fact is about. By default it is taken from the citation's
own sentence: in a card, the backticked flags and identifiers before the citation (nearest first), then the
ones after it; in Python, the flags (`--x`) and identifiers in the same statement or string sentence, then the
enclosing function's docstring. A flag `--foo-bar` also matches `foo_bar` (its argparse dest); `a/b_c` also
matches `b_c`; `x.y()` also matches `y`. The citation passes when the cited lines contain any candidate.
Front-matter sources list the files a card draws on and need no anchor; file-only citations (`path@pin`) and
web links are not anchored either. A cited line of Python is widened to the statement it belongs to (a
compound statement's header only, at most 25 lines), so one line of a multi-line call sees the whole call.
tools/citation_anchors.yaml gives an anchor explicitly where the sentence names none or names the user's flag
while the line tests an internal name (`anchors:`, keyed by citation), and lists the citations accepted
although they fail (`exceptions:`), each with the reason it was reviewed. A citation whose sentence names no
flag or identifier at all is checked for its file and lines only and counted as range-only (`--strict` makes
those fail too).

Prints counts; exits 1 when a citation fails, 2 when a checkout is missing.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from core.pins import MEGATRON_SHORT, SGLANG_VERSION, SLIME_SHORT, pinned_source_dir  # noqa: E402
from core.resources import knowledge_path  # noqa: E402

CARDS_DIR = knowledge_path("cards")
CORE_DIR = ROOT / "core"
ANCHORS_FILE = ROOT / "tools" / "citation_anchors.yaml"
DEFAULT_ROOTS = {"slime": pinned_source_dir("slime"), "megatron": pinned_source_dir("megatron"),
                 "sglang": pinned_source_dir("sglang")}
PIN_REPO = {SLIME_SHORT: "slime", MEGATRON_SHORT: "megatron", SGLANG_VERSION: "sglang"}

CITE_RE = re.compile(r"(?<![\w/.\-])([A-Za-z0-9_.\-/]+\.[A-Za-z0-9]+|[A-Za-z0-9_.\-/]+/)(?::(\d+)(?:-(\d+))?)?"
                     r"@(" + "|".join(re.escape(p) for p in PIN_REPO) + r")(?![\w.])")
SHORT_RE = re.compile(r"`(?:([A-Za-z0-9_.\-]+\.[A-Za-z0-9]+))?:(\d+)(?:-(\d+))?`")
BARE_SHORT_RE = re.compile(r"(?<![\w/.\-`])([A-Za-z0-9_\-]+\.(?:py|sh|md|yaml|json)):(\d+)(?:-(\d+))?(?![\w@`.\-])")
BACKTICK_RE = re.compile(r"`([^`\n]+)`")
FLAG_RE = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")
IDENT_RE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
SENTENCE_END = re.compile(r"(?:[.?!](?=\s)|\n\s*\n|\n\s*[-*] |\n\s*\d+\. |\|)")
MAX_STATEMENT_LINES = 25  # a cited line is widened to its statement only when that statement is this short
HELPERS = {"slime_source": SLIME_SHORT, "megatron_source": MEGATRON_SHORT, "sglang_source": SGLANG_VERSION}


@dataclass
class Citation:
    where: str  # file:line of the citation in this repository
    origin: str  # "card sources", "card body", "rule", "core", "table sources", "table"
    path: str
    start: int | None
    end: int | None
    pin: str
    candidates: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        lines = "" if self.start is None else f":{self.start}" + (f"-{self.end}" if self.end != self.start else "")
        return f"{self.path}{lines}@{self.pin}"


@dataclass
class Outcome:
    citation: Citation
    status: str  # "ok", "range-only", "excepted" pass; "file", "lines", "anchor" (and "range-only" with --strict) fail
    detail: str = ""


# --------------------------------------------------------------------------------------------------
# Anchors
# --------------------------------------------------------------------------------------------------
def anchor_variants(anchor: str) -> list[str]:
    """The spellings under which an anchor may appear in source code: each word of it; a flag also as its
    argparse dest (and without slime's `--sglang-` prefix, for SGLang's own parser); `a/b` also as `b`;
    `x.y()` also as `y`; a pattern such as `drop_*` or `metadata["key"]` also as the names inside it."""
    out: list[str] = []
    for raw in anchor.strip().strip("'\"").split():
        word = raw.split("=", 1)[0].rstrip(",.:;")
        if not word:
            continue
        out.append(word)
        if word.startswith("--"):
            dest = word[2:].replace("-", "_")
            out += [dest, dest[3:]] if dest.startswith("no_") else [dest]
            out.append(word[2:])
            if word.startswith("--sglang-"):
                out += ["--" + word[len("--sglang-"):], dest[len("sglang_"):]]
        if "/" in word.rstrip("/"):
            out.append(word.rstrip("/").rsplit("/", 1)[1])
        if word.endswith("()"):
            out.append(word[:-2])
        if "." in word and not word.startswith("."):
            tail = word.rstrip("()").rsplit(".", 1)[1]
            if tail and not tail.isdigit() and tail not in ("py", "sh", "md", "json", "yaml"):
                out.append(tail)
        if not re.fullmatch(r"--?[\w-]+|[\w.]+(?:\(\))?", word):
            out += [m for m in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", word)]
    return [v for v in dict.fromkeys(out) if len(v) >= 2]


PATH_LIKE = re.compile(r"^(?:slime|megatron|sglang|python|examples|scripts|tools|docs|tests|docker|train)[\w.\-]*/|/$"
                       r"|\.(?:py|sh|md|json|jsonl|txt|yaml|yml|toml|parquet|patch)$")
NOT_ANCHORS = {"slime_source", "megatron_source", "sglang_source", "src", "msrc", "_src", "_msrc", "ctx", "hit",
               "fix", "flag", "source", "severity", "message", "line", "none", "true", "false"}


def usable_anchor(token: str) -> bool:
    """A token that can name a fact: not a citation, a file path, a bare number or a helper's name."""
    t = token.strip()
    word = t.split()[0] if t else ""
    if not word or "@" in t or SHORT_RE.fullmatch(f"`{t}`") or re.fullmatch(r"[\d.,x* /+\-]+", t):
        return False
    if PATH_LIKE.search(word) or word.lower() in NOT_ANCHORS or word.startswith(("http", ":")):
        return False
    return len(t) <= 80


def sentence_bounds(text: str, pos: int, end: int) -> tuple[int, int]:
    """The start and end of the sentence (or table cell, or list item) around text[pos:end]."""
    starts = [m.end() for m in SENTENCE_END.finditer(text, 0, pos)]
    start = starts[-1] if starts else 0
    m = SENTENCE_END.search(text, end)
    return start, m.start() if m else len(text)


def card_candidates(body: str, pos: int, end: int) -> list[str]:
    """Backticked flags/identifiers of the citation's sentence: before it (nearest first), then after it."""
    s, e = sentence_bounds(body, pos, end)
    before = [m.group(1) for m in BACKTICK_RE.finditer(body, s, pos) if usable_anchor(m.group(1))]
    after = [m.group(1) for m in BACKTICK_RE.finditer(body, end, e) if usable_anchor(m.group(1))]
    plain = text_candidates(BACKTICK_RE.sub(" ", body[s:e]))
    row: list[str] = []
    line_start = body.rfind("\n", 0, pos) + 1
    line_end = body.find("\n", end)
    line = body[line_start:line_end if line_end >= 0 else len(body)]
    if line.lstrip().startswith("|"):  # a table row: the flag it is about usually heads the row
        row = [m.group(1) for m in BACKTICK_RE.finditer(line) if usable_anchor(m.group(1))]
    return list(dict.fromkeys([*reversed(before), *after, *plain, *row]))


def text_candidates(text: str) -> list[str]:
    """Flags and snake_case identifiers named in a piece of plain text (a message, a docstring)."""
    text = re.sub(r"[\"']?[\w.\-]*/[\w./\-]*(?::\d+(?:-\d+)?)?(?:@[\w.\-]+)?[\"']?", " ", text)  # paths, citations
    text = re.sub(r"[\w\-]+\.(?:py|sh|md|yaml|json)(?::\d+(?:-\d+)?)?", " ", text)  # file names, short citations
    found = FLAG_RE.findall(text) + [m.group(0) for m in IDENT_RE.finditer(text)]
    return [f for f in dict.fromkeys(found) if usable_anchor(f)]


# --------------------------------------------------------------------------------------------------
# Finding citations
# --------------------------------------------------------------------------------------------------
def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def cards_citations(cards_dir: Path) -> list[Citation]:
    out: list[Citation] = []
    for card in sorted(cards_dir.glob("*.md")):
        raw = card.read_text(encoding="utf-8").replace("\r\n", "\n")
        rel = card.relative_to(ROOT).as_posix() if card.is_relative_to(ROOT) else card.name
        body_at = 0
        front_paths: dict[str, set[tuple[str, str]]] = {}  # basename -> the files of that name the card lists
        m = re.match(r"\A---\n(.*?)\n---\n?", raw, re.S)
        if m:
            body_at = m.end()
            try:
                front = yaml.safe_load(m.group(1)) or {}
            except yaml.YAMLError:
                front = {}
            sources = front.get("sources") if isinstance(front, dict) else None
            for src in sources if isinstance(sources, list) else []:
                c = CITE_RE.fullmatch(str(src).strip())
                if c:
                    out.append(_citation(f"{rel}:sources", "card sources", c, []))
                    front_paths.setdefault(c.group(1).rsplit("/", 1)[-1], set()).add((c.group(1), c.group(4)))
        body = raw[body_at:]
        offset = _line_of(raw, body_at) - 1
        last: dict[str, tuple[str, str] | None] = {  # basename -> (path, pin), None when ambiguous; "" -> last
            base: next(iter(paths)) if len(paths) == 1 else None for base, paths in front_paths.items()}
        events = sorted([(c.start(), "full", c) for c in CITE_RE.finditer(body)]
                        + [(s.start(), "short", s) for s in SHORT_RE.finditer(body)]
                        + [(s.start(), "short", s) for s in BARE_SHORT_RE.finditer(body)], key=lambda e: e[0])
        for pos, kind, mt in events:
            where = f"{rel}:{offset + _line_of(body, pos)}"
            cands = card_candidates(body, pos, mt.end())
            if kind == "full":
                cit = _citation(where, "card body", mt, cands)
                last[""] = (cit.path, cit.pin)
                base = cit.path.rsplit("/", 1)[-1]
                last[base] = (cit.path, cit.pin) if last.get(base, (cit.path, cit.pin)) == (cit.path, cit.pin) \
                    else None  # two files of that name cited: a bare `name.py:N` is ambiguous
                out.append(cit)
                continue
            base, a, b = mt.group(1), mt.group(2), mt.group(3)
            ref = last.get(base or "")
            if ref is None:
                continue
            start = int(a)
            out.append(Citation(where, "card body", ref[0], start, int(b) if b else start, ref[1], cands))
    return out


def _citation(where: str, origin: str, m: re.Match, candidates: list[str]) -> Citation:
    path, a, b, pin = m.group(1), m.group(2), m.group(3), m.group(4)
    start = int(a) if a else None
    end = int(b) if b else start
    return Citation(where, origin, path, start, end, pin, candidates)


def rules_citations() -> list[Citation]:
    """Each registered rule's source, with its title and check docstring as anchor context."""
    out: list[Citation] = []
    from core.data import rules as data_rules
    from core.launch import rules as launch_rules

    for code, info in launch_rules.RULES.items():
        doc = (info.check.__doc__ or "") if info.check else ""
        out += _from_text(info.source, f"core/launch/rules: {code}", "rule", text_candidates(info.title + " " + doc))
    for code, rule in data_rules.RULES.items():
        context = " ".join(str(getattr(rule, k, "")) for k in ("name", "fix"))
        out += _from_text(rule.source, f"core/data/rules: {code}", "rule", text_candidates(context))
    return out


def _from_text(text: str, where: str, origin: str, context: list[str]) -> list[Citation]:
    out = []
    for m in CITE_RE.finditer(text or ""):
        s, e = sentence_bounds(text, m.start(), m.end())
        local = text_candidates(text[s:m.start()])[::-1] + text_candidates(text[m.end():e])
        out.append(_citation(where, origin, m, list(dict.fromkeys(local + context))))
    return out


TABLE_FILES = ("runtime_messages.yaml", "framework_terms.yaml", "known_bugs.yaml")


def table_citations(knowledge_dir: Path) -> list[Citation]:
    """Citations in the curated tables: an entry's `sources` are checked for file and lines, like a card's
    front matter; a citation inside a text field is anchored by the flags and identifiers of its sentence."""
    out: list[Citation] = []
    for name in TABLE_FILES:
        path = knowledge_dir / name
        if not path.is_file():
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for rows in data.values():
            for row in rows if isinstance(rows, list) else []:
                where = f"knowledge/{name}: {row.get('id', '?')}"
                for text in _strings({k: v for k, v in row.items() if k != "sources"}):
                    out += _from_text(text, where, "table", [])
                for source in row.get("sources") or []:
                    for m in CITE_RE.finditer(str(source)):
                        c = _citation(where, "table sources", m, [])
                        c.candidates = _named_in_row(row, c.path)
                        out.append(c)
    return out


def _named_in_row(row: dict, path: str) -> list[str]:
    """What a table entry's source citation must show: the code its detection marker names when the citation
    is of the marker's file (the fix that is there at the pin), else the flags the entry is about. Empty when
    the entry names neither: the citation is then checked for its file and lines only, like front matter."""
    detect = row.get("detect") or {}
    if isinstance(detect, dict) and detect.get("file") == path and detect.get("kind", "added") == "added":
        markers = [str(m) for m in detect.get("markers") or [] if str(m).strip()]
        if markers:
            return markers
    return [str(f) for f in row.get("flags") or [] if str(f).startswith("--")]


def _strings(value) -> list[str]:  # noqa: ANN001
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k != "detect" for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def core_citations(core_dir: Path) -> list[Citation]:
    """Citations in Python string constants and citation-helper calls under core/."""
    out: list[Citation] = []
    for py in sorted(core_dir.rglob("*.py")):
        rel = py.relative_to(ROOT).as_posix()
        source = py.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "@" in node.value:
                context = _statement_context(node, parents, source)
                out += _from_text(node.value, f"{rel}:{node.lineno}", "core", context)
            elif isinstance(node, ast.Call):
                cit = _helper_call(node)
                if cit is not None:
                    path, line, pin = cit
                    context = _statement_context(node, parents, source)
                    out.append(Citation(f"{rel}:{node.lineno}", "core", path, line, line, pin, context))
    return out


def _helper_call(node: ast.Call) -> tuple[str, int | None, str] | None:
    name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(
        node.func, ast.Attribute) else None
    args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
    if name in HELPERS and args and isinstance(args[0], str):
        line = args[1] if len(args) > 1 and isinstance(args[1], int) else None
        if len(node.args) > 1 and line is None:
            return None  # a computed line: cannot be checked statically
        return args[0], line, HELPERS[name]
    if name in ("src", "_src") and args and isinstance(args[0], int):
        path = args[1] if len(args) > 1 and isinstance(args[1], str) else "slime/utils/arguments.py"
        return path, args[0], SLIME_SHORT
    if name in ("msrc", "_msrc") and args and isinstance(args[0], int):
        return "megatron/training/arguments.py", args[0], MEGATRON_SHORT
    return None


def _code_title(node: ast.AST) -> str:
    """The title of the launch finding code a `@rule("CODE", ...)` or `register("CODE", ...)` names (titles
    live in core/launch/rules/codes.py, not at the call), as context for the call's citation; else ''."""
    from core.launch.rules.codes import CODES

    call = node.value if isinstance(node, ast.Expr) else node
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id not in ("rule",
                                                                                                     "register"):
        return ""
    first = call.args[0] if call.args else None
    code = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
    return CODES[code].title if code in CODES else ""


def _statement_context(node: ast.AST, parents: dict[int, ast.AST], source: str) -> list[str]:
    """Flags and identifiers in the statement around a node, then in its function's docstring."""
    stmt, fn = node, None
    while id(stmt) in parents and not isinstance(stmt, ast.stmt):
        stmt = parents[id(stmt)]
    cur = stmt
    while id(cur) in parents:
        cur = parents[id(cur)]
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn = cur
            break
    found: list[str] = []
    targets = [stmt]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):  # a decorator: the rule's own function
        fn = stmt
        targets = list(stmt.decorator_list)
    for t in targets:
        found += text_candidates(_code_title(t) + " " + (ast.get_source_segment(source, t) or ""))
    if fn is not None:
        found += text_candidates(ast.get_docstring(fn) or "")
    return list(dict.fromkeys(found))


# --------------------------------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------------------------------
class Checkouts:
    def __init__(self, roots: dict[str, Path]) -> None:
        self.roots = roots
        self._lines: dict[Path, list[str] | None] = {}
        self._trees: dict[tuple[str, str], ast.Module | None] = {}

    def resolve(self, repo: str, path: str) -> Path:
        """The file for a cited path; SGLang is read from its wheel, which lacks the repository's python/."""
        root = self.roots[repo]
        if repo == "sglang" and path.startswith("python/") and not (root / path).exists():
            return root / path[len("python/"):]
        return root / path

    def lines(self, repo: str, path: str) -> list[str] | None:
        root = self.roots[repo]
        file = self.resolve(repo, path).resolve()
        if not file.is_relative_to(root.resolve()):
            return None
        if file not in self._lines:
            try:
                self._lines[file] = file.read_text(encoding="utf-8", errors="replace").splitlines() if \
                    file.is_file() else None
            except OSError:
                self._lines[file] = None
        return self._lines[file]

    def statement_span(self, repo: str, path: str, start: int, end: int) -> tuple[int, int]:
        """The cited lines widened to the Python statement they sit in (a compound statement's header only),
        so a citation of one line of a multi-line call or condition sees the whole call; other files as cited."""
        if not path.endswith(".py"):
            return start, end
        key = (repo, path)
        if key not in self._trees:
            try:
                self._trees[key] = ast.parse("\n".join(self.lines(repo, path) or []))
            except (SyntaxError, ValueError):
                self._trees[key] = None
        tree = self._trees[key]
        best: tuple[int, int] | None = None
        for node in ast.walk(tree) if tree is not None else ():
            if not isinstance(node, ast.stmt) or node.lineno > start or (node.end_lineno or 0) < end:
                continue
            lo, hi = node.lineno, node.end_lineno or node.lineno
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and body[0].lineno > end:
                hi = body[0].lineno - 1  # the header of an if/for/def/with
            elif isinstance(body, list) and body:
                continue  # the citation reaches into the body: a smaller statement will do
            if hi - lo <= MAX_STATEMENT_LINES and (best is None or hi - lo < best[1] - best[0]):
                best = (lo, hi)
        return best if best is not None else (start, end)

    def exists(self, repo: str, path: str) -> bool:
        return self.resolve(repo, path).exists()


def check(c: Citation, checkouts: Checkouts, anchors: dict[str, str], excepted: set[tuple[str, str]]) -> Outcome:
    repo = PIN_REPO[c.pin]
    if (c.text, c.where.split(":", 1)[0]) in excepted or (c.text, "") in excepted:
        return Outcome(c, "excepted")
    if c.start is None:
        ok = checkouts.exists(repo, c.path)
        return Outcome(c, "ok" if ok else "file", "" if ok else f"{c.path} does not exist at {c.pin}")
    lines = checkouts.lines(repo, c.path)
    if lines is None:
        return Outcome(c, "file", f"{c.path} does not exist at {c.pin}")
    end = c.end or c.start
    if c.start < 1 or end < c.start or end > len(lines):
        return Outcome(c, "lines", f"{c.path} has {len(lines)} lines; cited {c.start}-{end}")
    lo, hi = checkouts.statement_span(repo, c.path, c.start, end)
    cited = "\n".join(lines[lo - 1:hi])
    explicit = anchors.get(c.text)
    candidates = [explicit] if explicit else c.candidates
    if (c.origin == "card sources" or (c.origin == "table sources" and not candidates)) and not explicit:
        return Outcome(c, "ok")
    if not candidates:
        return Outcome(c, "range-only", "no flag or identifier in its sentence; file and lines checked")
    for cand in candidates:
        for v in ([cand] if cand is explicit else []) + anchor_variants(cand):
            if v in cited or v.lower() in cited.lower():
                return Outcome(c, "ok", cand)
    shown = ", ".join(candidates[:4])
    return Outcome(c, "anchor", f"none of [{shown}] is on {c.path}:{c.start}-{end}")


def load_anchor_file(path: Path) -> tuple[dict[str, str], set[tuple[str, str]], list[dict]]:
    if not path.is_file():
        return {}, set(), []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    anchors = {str(k): str(v) for k, v in (data.get("anchors") or {}).items()}
    exceptions = data.get("exceptions") or []
    excepted = {(str(e["citation"]), str(e.get("where", ""))) for e in exceptions if e.get("reason")}
    return anchors, excepted, exceptions


def run(roots: dict[str, Path], verbose: bool = False, strict: bool = False, out=sys.stdout) -> int:
    missing = [f"{k} ({p})" for k, p in roots.items() if not p.is_dir()]
    if missing:
        print(f"check_citations: checkout not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    anchors, excepted, exceptions = load_anchor_file(ANCHORS_FILE)
    citations = (cards_citations(CARDS_DIR) + rules_citations() + core_citations(CORE_DIR)
                 + table_citations(CARDS_DIR.parent))
    checkouts = Checkouts(roots)
    seen: set[tuple[str, str]] = set()
    outcomes: list[Outcome] = []
    for c in citations:
        key = (c.where, c.text)
        if key in seen:
            continue
        seen.add(key)
        outcomes.append(check(c, checkouts, anchors, excepted))
    by_origin: dict[str, dict[str, int]] = {}
    for o in outcomes:
        counts = by_origin.setdefault(o.citation.origin, {})
        counts[o.status] = counts.get(o.status, 0) + 1
    passing = ("ok", "excepted") if strict else ("ok", "excepted", "range-only")
    failed = [o for o in outcomes if o.status not in passing]
    for o in failed:
        print(f"FAIL {o.status:10} {o.citation.where}: {o.citation.text}: {o.detail}", file=out)
    if verbose:
        for o in outcomes:
            if o.status == "ok":
                print(f"ok   {o.citation.where}: {o.citation.text} [{o.detail or 'file/range'}]", file=out)
    for origin in ("card sources", "card body", "rule", "core", "table sources", "table"):
        counts = by_origin.get(origin, {})
        total = sum(counts.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"{origin:12} {total:4} citations: {detail}", file=out)
    count = {s: sum(1 for o in outcomes if o.status == s) for s in ("ok", "range-only", "excepted")}
    print(f"total {len(outcomes)} citations: {count['ok']} anchored or file-level, {count['range-only']} range-only "
          f"(no anchor in the sentence), {count['excepted']} by reviewed exception; {len(anchors)} explicit "
          f"anchors; {len(failed)} fail", file=out)
    unused = [e["citation"] for e in exceptions if not any(o.citation.text == e["citation"] for o in outcomes)]
    if unused:
        print(f"note: exceptions that match no citation any more: {', '.join(unused)}", file=out)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slime", type=Path, default=DEFAULT_ROOTS["slime"], help="slime checkout at 624b824a")
    parser.add_argument("--megatron", type=Path, default=DEFAULT_ROOTS["megatron"],
                        help="Megatron-LM checkout at 1dcf0daf")
    parser.add_argument("--sglang", type=Path, default=DEFAULT_ROOTS["sglang"],
                        help="SGLang v0.5.15.post1 (the unzipped wheel)")
    parser.add_argument("--verbose", action="store_true", help="also list every passing citation and its anchor")
    parser.add_argument("--strict", action="store_true", help="fail range-only citations too (no anchor found)")
    args = parser.parse_args(argv)
    return run({"slime": args.slime, "megatron": args.megatron, "sglang": args.sglang}, args.verbose, args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
