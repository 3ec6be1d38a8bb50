"""Static reader of bash launch scripts: the words of the `python3 train.py ...` command, with line numbers.

The script is read as text and never run. The reader understands what slime launch scripts use: comments,
quotes, line continuations, arrays (`ARGS=( ... )`, `ARGS+=( ... )`), scalar assignments, `${VAR:-default}`,
`$((...))` integer arithmetic, `if`/`else` branches, loops, heredocs, `source scripts/models/X.sh` and the
final `python3 train.py` / `train_async.py` command (usually after `ray job submit ... --`).

Anything that needs the shell to decide (command substitution `$(...)` and backticks, environment variables,
values set inside loops, branches that disagree) becomes an *unresolved* word: its text is kept as written and
the notes say why, so the checks that need it can say they were skipped instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel

MAX_SCRIPT_CHARS = 262_144  # launch scripts are a few kilobytes; larger input is refused with a finding
MAX_EXPANDED_WORDS = 20_000
MAX_SOURCE_DEPTH = 4
MAX_NESTING = 64  # nested ${...:-...}, quotes or parentheses deeper than this are refused, not recursed into
MAX_NOTES_PER_KIND = 20

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_PLAIN_RUN = re.compile(r"[^\s;&|()<>'\"\\$`#]+")
_PLAIN_RUN_NO_HASH = re.compile(r"[^\s;&|()<>'\"\\$`]+")
_PYTHON_RE = re.compile(r"(?:^|/)python[0-9.]*$")
_ENTRY_RE = re.compile(r"(?:^|/)(train(?:_async)?\.py)$")
_MODEL_SCRIPT_RE = re.compile(r"(?:^|/)models/([^/\s]+)\.sh$")
_SIBLING_SCRIPT_RE = re.compile(r"(?:^|/)([^/\s]+)\.sh$")
_KEYWORDS = frozenset({"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case", "esac",
                       "{", "}", "!", "function", "select", "time", "in"})
_METACHARS = " \t\n;&|()<>"
_OP_START = frozenset(";&|()<>")
_SEPARATORS = frozenset({"\n", ";", "&", "&&", "||", "|", "|&", ";;", ";&", ";;&"})
_REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})


# --------------------------------------------------------------------------------------------------
# Public results
# --------------------------------------------------------------------------------------------------
class ScriptWord(BaseModel):
    """One word of the final command after expansion, located where its text was written."""

    text: str
    line: int | None = None
    resolved: bool = True
    spread: bool = False  # an unquoted unresolved expansion: it may stand for any number of words
    conditional: bool = False
    origin: str | None = None  # e.g. "scripts/models/qwen3-4B.sh" when the word came from a sourced script
    reason: str | None = None  # why it is unresolved


class ScriptNote(BaseModel):
    """Something the reader noticed: an unterminated quote, a value it could not resolve, a sourced file..."""

    kind: str
    line: int | None = None
    message: str
    subject: str | None = None  # the variable, file or text concerned


class StrayCommand(BaseModel):
    """A command that begins with flags: words that were meant for the train command but never reach it."""

    line: int
    raw: str
    flags: list[str]
    cause: str


class LaunchCommand(BaseModel):
    """A `python ... train.py` / `train_async.py` command and its arguments."""

    entry: str
    line: int
    args: list[ScriptWord]
    conditional: bool = False  # inside an if/loop/function: it may not run


class ReadScript(BaseModel):
    commands: list[LaunchCommand]
    notes: list[ScriptNote]
    scalars: dict[str, str | None]
    arrays: dict[str, list[ScriptWord] | None]
    stray_commands: list[StrayCommand]  # commands that begin with flags (a broken `\` continuation)

    @property
    def command(self) -> LaunchCommand | None:
        """The command that is checked: the last train command in the script."""
        return self.commands[-1] if self.commands else None


# A model script as the reader can use it when a launch script sources it.
class SourcedModel(BaseModel):
    path: str
    source: str
    model_args: list[str]


SourceResolver = Callable[[str], "SourcedModel | str | None"]
"""Given the path text of a `source` command, return a model script's words, the text of the sourced file
(to be read in place), or None when it is not available."""


# --------------------------------------------------------------------------------------------------
# Decoding raw bytes
# --------------------------------------------------------------------------------------------------
class DecodedText(BaseModel):
    text: str | None
    notes: list[ScriptNote]


def decode_script_bytes(data: bytes, *, limit: int = MAX_SCRIPT_CHARS) -> DecodedText:
    """Turn uploaded bytes into text, refusing binary and oversized input with a specific note."""
    if len(data) > limit:
        return DecodedText(text=None, notes=[ScriptNote(
            kind="too_large", message=(f"The input is {len(data):,} bytes; a launch script is a few kilobytes and "
                                       f"the checker reads at most {limit:,}. Nothing was checked."))])
    head = data[:8192]
    if b"\0" in head or (head and sum(b < 9 or 13 < b < 32 for b in head) > len(head) // 10):
        return DecodedText(text=None, notes=[ScriptNote(
            kind="binary", message="This looks like a binary file, not a shell script. Nothing was checked.")])
    notes: list[ScriptNote] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        text = data.decode("utf-8", errors="replace")
        notes.append(ScriptNote(kind="not_utf8", line=line, message=(
            f"The input is not valid UTF-8 (first bad byte at offset {exc.start}, line {line}); undecodable "
            "bytes were replaced with U+FFFD and the rest was checked.")))
    if text.startswith("\ufeff"):
        text = text[1:]
    return DecodedText(text=text, notes=notes)


# --------------------------------------------------------------------------------------------------
# Lexer
# --------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class Seg:
    kind: str  # "lit" | "param" | "cmd" | "arith"
    text: str
    quoted: bool
    op: str = ""  # for params: "", ":-", "-", ":=", "=", ":+", "+", "[@]", "[*]", "idx", "len", "other"
    arg: list[Seg] | None = None


@dataclass(slots=True)
class Tok:
    kind: str  # "word" | "op" | "array"
    value: str  # op text, or raw source of the word, or array name
    line: int
    segs: list[Seg] = field(default_factory=list)
    append: bool = False  # for "array": `+=(`
    elements: list[Tok] = field(default_factory=list)  # for "array"


class _Lexer:
    def __init__(self, text: str, notes: list[ScriptNote], nesting: int = 0) -> None:
        if nesting > MAX_NESTING:
            raise TooDeep(f"expansions are nested more than {MAX_NESTING} deep")
        self.nesting = nesting
        self.s = text
        self.n = len(text)
        self.i = 0
        self.line = 1
        self.notes = notes
        self.pending_heredocs: list[tuple[str, bool, int]] = []

    # -- helpers ---------------------------------------------------------------------------------
    def _note(self, kind: str, line: int, message: str, subject: str | None = None) -> None:
        self.notes.append(ScriptNote(kind=kind, line=line, message=message, subject=subject))

    def _advance_to(self, j: int) -> str:
        chunk = self.s[self.i:j]
        self.line += chunk.count("\n")
        self.i = j
        return chunk

    def _skip_squote(self, j: int) -> int:
        """j points after an opening single quote; return the index after the closing one (or -1)."""
        k = self.s.find("'", j)
        return -1 if k < 0 else k + 1

    def _skip_dquote(self, j: int) -> int:
        s, n = self.s, self.n
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
            elif c == '"':
                return j + 1
            elif c == "$" and s.startswith("$(", j):
                j = self._skip_parens(j + 2)
                if j < 0:
                    return -1
            elif c == "$" and s.startswith("${", j):
                j = self._skip_brace(j + 2)
                if j < 0:
                    return -1
            elif c == "`":
                j = self._skip_backtick(j + 1)
                if j < 0:
                    return -1
            else:
                j += 1
        return -1

    def _skip_backtick(self, j: int) -> int:
        s, n = self.s, self.n
        while j < n:
            if s[j] == "\\":
                j += 2
            elif s[j] == "`":
                return j + 1
            else:
                j += 1
        return -1

    def _skip_brace(self, j: int) -> int:
        """j points after `${`; return the index after the matching `}`."""
        s, n = self.s, self.n
        depth = 1
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "'":
                j = self._skip_squote(j + 1)
            elif c == '"':
                j = self._skip_dquote(j + 1)
            elif c == "$" and s.startswith("${", j):
                depth += 1
                j += 2
                continue
            elif c == "$" and s.startswith("$(", j):
                j = self._skip_parens(j + 2)
            elif c == "`":
                j = self._skip_backtick(j + 1)
            elif c == "}":
                depth -= 1
                j += 1
                if depth == 0:
                    return j
                continue
            else:
                j += 1
                continue
            if j < 0:
                return -1
        return -1

    def _skip_parens(self, j: int) -> int:
        """j points after `$(` (or `((`); return the index after the matching `)`."""
        s, n = self.s, self.n
        depth = 1
        at_word_start = True
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
                at_word_start = False
                continue
            if c == "'":
                j = self._skip_squote(j + 1)
            elif c == '"':
                j = self._skip_dquote(j + 1)
            elif c == "`":
                j = self._skip_backtick(j + 1)
            elif c == "$" and s.startswith("${", j):
                j = self._skip_brace(j + 2)
            elif c == "#" and at_word_start:
                k = s.find("\n", j)
                j = n if k < 0 else k
                continue
            elif c == "<" and s.startswith("<<", j) and not s.startswith("<<<", j):
                m = re.match(r"<<-?\s*(['\"]?)([A-Za-z0-9_]+)\1", s[j:j + 200])
                if m:
                    nl = s.find("\n", j)
                    if nl < 0:
                        return -1
                    end = re.compile(r"^\t*" + re.escape(m.group(2)) + r"[ \t]*$", re.M).search(s, nl + 1)
                    if not end:
                        return -1
                    j = end.end()
                    at_word_start = True
                    continue
                j += 2
                continue
            elif c == "(":
                depth += 1
                j += 1
                at_word_start = True
                continue
            elif c == ")":
                depth -= 1
                j += 1
                if depth == 0:
                    return j
                continue
            else:
                at_word_start = c in " \t\n;&|"
                j += 1
                continue
            if j < 0:
                return -1
            at_word_start = False
        return -1

    # -- words -----------------------------------------------------------------------------------
    def _param_segs(self, inner: str, quoted: bool) -> Seg:
        """Parse the inside of `${...}` into a param segment."""
        if inner.startswith("#") and len(inner) > 1:
            return Seg("param", inner[1:], quoted, op="len")
        m = _NAME_RE.match(inner) or re.match(r"[0-9]+|[@*#?$!-]", inner)
        if not m:
            return Seg("param", inner, quoted, op="other")
        name, rest = m.group(0), inner[m.end():]
        if not rest:
            return Seg("param", name, quoted)
        if rest in ("[@]", "[*]"):
            return Seg("param", name, quoted, op=rest)
        if rest.startswith("[") and rest.endswith("]"):
            return Seg("param", name, quoted, op="idx", arg=[Seg("lit", rest[1:-1], True)])
        for op in (":-", ":=", ":+", "-", "=", "+"):
            if rest.startswith(op):
                sub = _Lexer(rest[len(op):], [], self.nesting + 1)
                return Seg("param", name, quoted, op=op, arg=sub.read_inline_word(quoted))
        return Seg("param", name, quoted, op="other")

    def read_inline_word(self, quoted: bool) -> list[Seg]:
        """Read the whole remaining text as one word (used for `${X:-word}`), keeping quotes meaningful."""
        segs: list[Seg] = []
        while self.i < self.n:
            c = self.s[self.i]
            if c in "'\"\\$`":
                if not self._read_special(segs, quoted):
                    break
            else:
                j = self.i + 1
                while j < self.n and self.s[j] not in "'\"\\$`":
                    j += 1
                segs.append(Seg("lit", self._advance_to(j), quoted))
        return segs

    def _read_dollar(self, segs: list[Seg], quoted: bool) -> bool:
        s, i = self.s, self.i
        start_line = self.line
        if s.startswith("$((", i):
            j = self._skip_parens(i + 2)
            if j < 0 or not s.startswith("))", j - 2):
                self._note("unterminated", start_line, "An arithmetic expansion `$((` is never closed.")
                self._advance_to(self.n)
                return False
            raw = self._advance_to(j)
            segs.append(Seg("arith", raw[3:-2], quoted))
            return True
        if s.startswith("$(", i):
            j = self._skip_parens(i + 2)
            if j < 0:
                self._note("unterminated", start_line, "A command substitution `$(` is never closed.")
                self._advance_to(self.n)
                return False
            raw = self._advance_to(j)
            segs.append(Seg("cmd", raw, quoted))
            return True
        if s.startswith("${", i):
            j = self._skip_brace(i + 2)
            if j < 0:
                self._note("unterminated", start_line, "A parameter expansion `${` is never closed.")
                self._advance_to(self.n)
                return False
            raw = self._advance_to(j)
            segs.append(self._param_segs(raw[2:-1], quoted))
            return True
        if s.startswith("$'", i) and not quoted:
            j = i + 2
            out = []
            while j < self.n and s[j] != "'":
                if s[j] == "\\" and j + 1 < self.n:
                    out.append({"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}.get(s[j + 1], "\\" + s[j + 1]))
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            if j >= self.n:
                self._note("unterminated", start_line, "A `$'...'` string is never closed.")
                self._advance_to(self.n)
                return False
            self._advance_to(j + 1)
            segs.append(Seg("lit", "".join(out), True))
            return True
        m = _NAME_RE.match(s, i + 1)
        if m:
            self._advance_to(m.end())
            segs.append(Seg("param", m.group(0), quoted))
            return True
        if i + 1 < self.n and s[i + 1] in "0123456789@*#?$!-":
            self._advance_to(i + 2)
            segs.append(Seg("param", s[i + 1], quoted))
            return True
        self._advance_to(i + 1)
        segs.append(Seg("lit", "$", quoted))
        return True

    def _read_special(self, segs: list[Seg], quoted: bool) -> bool:
        """Read one quote, escape, `$` or backtick construct; False when it runs off the end."""
        s, i = self.s, self.i
        c = s[i]
        start_line = self.line
        if c == "\\":
            if i + 1 >= self.n:
                self._advance_to(self.n)
                return True
            if s[i + 1] == "\n":
                self._advance_to(i + 2)
                return True
            if quoted and s[i + 1] not in '$`"\\':
                self._advance_to(i + 2)
                segs.append(Seg("lit", "\\" + s[i + 1], True))
                return True
            self._advance_to(i + 2)
            segs.append(Seg("lit", s[i + 1], True))
            return True
        if c == "'" and not quoted:
            j = self._skip_squote(i + 1)
            if j < 0:
                self._note("unterminated", start_line, "A single quote opened here is never closed; bash would "
                           "stop with 'unexpected EOF'.")
                self._advance_to(self.n)
                return False
            segs.append(Seg("lit", self._advance_to(j)[1:-1], True))
            return True
        if c == '"' and not quoted:
            j = self._skip_dquote(i + 1)
            if j < 0:
                self._note("unterminated", start_line, "A double quote opened here is never closed; bash would "
                           "stop with 'unexpected EOF'.")
                self._advance_to(self.n)
                return False
            sub = _Lexer(s[i + 1:j - 1], self.notes, self.nesting + 1)
            sub.line = self.line
            inner = sub.read_inline_word(True)
            self._advance_to(j)
            segs.extend(inner if inner else [Seg("lit", "", True)])
            return True
        if c == "`":
            j = self._skip_backtick(i + 1)
            if j < 0:
                self._note("unterminated", start_line, "A backtick opened here is never closed.")
                self._advance_to(self.n)
                return False
            segs.append(Seg("cmd", self._advance_to(j), quoted))
            return True
        if c == "$":
            return self._read_dollar(segs, quoted)
        # a quote character inside double quotes is literal
        self._advance_to(i + 1)
        segs.append(Seg("lit", c, quoted))
        return True

    def _read_word(self) -> Tok | None:
        start, line = self.i, self.line
        segs: list[Seg] = []
        s, n = self.s, self.n
        first = True
        while self.i < n:
            c = s[self.i]
            if c in _METACHARS:
                break
            if c in "'\"\\$`":
                if not self._read_special(segs, False):
                    break
            else:
                m = (_PLAIN_RUN if first else _PLAIN_RUN_NO_HASH).match(s, self.i)
                if not m:  # '#' at word start is handled by the caller
                    m = _PLAIN_RUN_NO_HASH.match(s, self.i)
                segs.append(Seg("lit", self._advance_to(m.end()), False))
            first = False
        raw = s[start:self.i]
        if not raw:
            return None
        return Tok("word", raw, line, segs)

    # -- tokens ----------------------------------------------------------------------------------
    def _read_heredocs(self) -> None:
        for delim, strip_tabs, line in self.pending_heredocs:
            pattern = re.compile(r"^" + (r"\t*" if strip_tabs else "") + re.escape(delim) + r"[ \t]*$", re.M)
            m = pattern.search(self.s, self.i)
            if not m:
                self._note("heredoc", line, f"The here-document started here is never closed by a line "
                           f"'{delim}'; bash reads to the end of the file.", subject=delim)
                self._advance_to(self.n)
                break
            end = self.s.find("\n", m.end())
            self._advance_to(self.n if end < 0 else end + 1)
        self.pending_heredocs = []

    def tokens(self) -> list[Tok]:
        out: list[Tok] = []
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
                continue
            if c == "\\" and s.startswith("\\\n", self.i):
                self._advance_to(self.i + 2)
                continue
            if c == "#":
                k = s.find("\n", self.i)
                self.i = n if k < 0 else k
                continue
            if c == "\n":
                out.append(Tok("op", "\n", self.line))
                self._advance_to(self.i + 1)
                if self.pending_heredocs:
                    self._read_heredocs()
                continue
            if c == "(" and s.startswith("((", self.i) and (not out or out[-1].kind == "op"
                                                              or out[-1].value in _KEYWORDS):
                line = self.line
                j = self._skip_parens(self.i + 1)
                if j < 0:
                    self._note("unterminated", line, "An arithmetic command `((` is never closed.")
                    self._advance_to(n)
                    break
                self._advance_to(j)
                out.append(Tok("op", "((", line))
                continue
            op = self._match_op()
            if op:
                out.append(Tok("op", op, self.line))
                self._advance_to(self.i + len(op))
                if op in ("<<", "<<-"):
                    self._queue_heredoc(op == "<<-")
                continue
            tok = self._read_word()
            if tok is None:
                self.i += 1
                continue
            if self.i < n and s[self.i] == "(" and _ASSIGN_RE.match(tok.value) and tok.value.endswith("="):
                out.append(self._read_array(tok))
                continue
            if self.i < n and s[self.i] in "<>" and tok.value.isdigit():
                continue  # a file-descriptor number in front of a redirection (2>&1)
            out.append(tok)
        return out

    def _match_op(self) -> str | None:
        s, i = self.s, self.i
        if s[i] not in _OP_START:
            return None
        for op in ("&>>", "<<<", "<<-", ";;&", "&&", "||", "|&", ";;", ";&", ">>", ">|", "<>", "<&", ">&", "&>",
                   "<<", ";", "&", "|", "(", ")", "<", ">"):
            if s.startswith(op, i):
                return op
        return None

    def _queue_heredoc(self, strip_tabs: bool) -> None:
        m = re.match(r"[ \t]*(['\"]?)([^\s;&|()<>'\"]+)\1", self.s[self.i:self.i + 300])
        if m:
            self.pending_heredocs.append((m.group(2), strip_tabs, self.line))

    def _read_array(self, name_tok: Tok) -> Tok:
        m = _ASSIGN_RE.match(name_tok.value)
        assert m is not None
        arr = Tok("array", m.group(1), name_tok.line, append=bool(m.group(3)))
        open_line = self.line
        self._advance_to(self.i + 1)  # the '('
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n":
                self._advance_to(self.i + 1)
                continue
            if c == "\\" and s.startswith("\\\n", self.i):
                self._advance_to(self.i + 2)
                continue
            if c == "#":
                k = s.find("\n", self.i)
                self.i = n if k < 0 else k
                continue
            if c == ")":
                self._advance_to(self.i + 1)
                return arr
            if c in ";&|<>(":
                self._note("syntax", self.line, f"Unexpected '{c}' inside the array {arr.value}=( ... ).",
                           subject=arr.value)
                self._advance_to(self.i + 1)
                continue
            tok = self._read_word()
            if tok is None:
                self._advance_to(self.i + 1)
                continue
            arr.elements.append(tok)
        self._note("unterminated", open_line, f"The array {arr.value}=( opened here is never closed with ')'.",
                   subject=arr.value)
        return arr


# --------------------------------------------------------------------------------------------------
# Values and expansion
# --------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class Scalar:
    value: str | None  # None: unknown
    line: int | None
    reason: str | None = None


@dataclass(slots=True)
class Array:
    words: tuple[ScriptWord, ...] | None  # None: unknown
    line: int | None
    reason: str | None = None


@dataclass
class _State:
    scalars: dict[str, Scalar] = field(default_factory=dict)
    arrays: dict[str, Array] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(dict(self.scalars), dict(self.arrays))


class _Unresolved(Exception):
    pass


class TooDeep(ValueError):
    """The script nests expansions deeper than the reader follows."""


def _arith(expr: str, lookup: Callable[[str], str | None]) -> int:
    """Evaluate bash integer arithmetic (+ - * / % ** and parentheses); raise _Unresolved when it cannot."""
    toks = re.findall(r"\s*(\d+|[A-Za-z_][A-Za-z0-9_]*|\*\*|[-+*/%()]|\S)", expr.replace("$", ""))
    pos = 0

    def peek() -> str | None:
        return toks[pos] if pos < len(toks) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return toks[pos - 1]

    depth = 0

    def atom() -> int:
        nonlocal depth
        depth += 1
        if depth > MAX_NESTING:
            raise _Unresolved("the expression is nested too deeply")
        t = take() if peek() is not None else None
        if t is None:
            raise _Unresolved("incomplete expression")
        if t == "(":
            v = add()
            if peek() != ")":
                raise _Unresolved("unbalanced parentheses")
            take()
            return v
        if t == "-":
            return -atom()
        if t == "+":
            return atom()
        if t.isdigit():
            return int(t, 10)
        if _NAME_RE.fullmatch(t):
            raw = lookup(t)
            if raw is None:
                raise _Unresolved(f"${t} is not known")
            raw = raw.strip()
            if not re.fullmatch(r"-?\d+", raw):
                raise _Unresolved(f"${t}={raw!r} is not an integer")
            return int(raw)
        raise _Unresolved(f"unsupported operator {t!r}")

    def power() -> int:
        base = atom()
        if peek() == "**":
            take()
            exp = power()
            if exp < 0 or exp > 64 or abs(base) > 2**32:
                raise _Unresolved("exponent out of range")
            return base**exp
        return base

    def mul() -> int:
        v = power()
        while peek() in ("*", "/", "%"):
            op = take()
            r = power()
            if op == "*":
                v *= r
            elif r == 0:
                raise _Unresolved("division by zero")
            elif op == "/":
                v = abs(v) // abs(r) * (1 if (v >= 0) == (r >= 0) else -1)
            else:
                v = abs(v) % abs(r) * (1 if v >= 0 else -1)
            if abs(v) > 2**63:
                raise _Unresolved("overflow")
        return v

    def add() -> int:
        v = mul()
        while peek() in ("+", "-"):
            op = take()
            v = v + mul() if op == "+" else v - mul()
        return v

    result = add()
    if pos != len(toks):
        raise _Unresolved(f"unsupported syntax near {toks[pos]!r}")
    return result


@dataclass
class _Field:
    parts: list[str] = field(default_factory=list)
    resolved: bool = True
    kept: bool = False  # a quoted or unresolved piece keeps the field even when its text is empty
    spread: bool = False
    reason: str | None = None
    base: ScriptWord | None = None  # the array element (or assignment) the text came from


class _Reader:
    def __init__(self, resolver: SourceResolver | None, notes: list[ScriptNote]) -> None:
        self.state = _State()
        self.notes = notes
        self.resolver = resolver
        self.commands: list[LaunchCommand] = []
        self.stray: list[StrayCommand] = []
        self.lines: list[str] = []
        self.unknown_source: str | None = None
        self.depth = 0
        self.origin: str | None = None
        self.origin_line: int | None = None  # line of the `source` in the top-level script
        self.pending_func = False
        self._noted: set[tuple[str, str]] = set()

    def _note_once(self, kind: str, subject: str, line: int | None, message: str) -> None:
        if (kind, subject) in self._noted:
            return
        self._noted.add((kind, subject))
        self.notes.append(ScriptNote(kind=kind, line=line, message=message, subject=subject))

    def _loc(self, line: int | None) -> int | None:
        return self.origin_line if self.origin_line is not None else line

    # -- variable lookup -------------------------------------------------------------------------
    def _scalar(self, name: str) -> Scalar | None:
        """The value of $name: a Scalar, or None when it is unset in the script."""
        sc = self.state.scalars.get(name)
        if sc is not None:
            return sc
        arr = self.state.arrays.get(name)
        if arr is not None:
            if arr.words is None:
                return Scalar(None, arr.line, arr.reason)
            if not arr.words:
                return Scalar("", arr.line)
            w = arr.words[0]
            return Scalar(w.text if w.resolved else None, w.line, w.reason)
        return None

    def _unset_reason(self, name: str) -> str:
        if self.unknown_source:
            return f"${name} is not set in the script (it may come from the sourced file {self.unknown_source})"
        return f"${name} is not set in the script (it would come from the environment)"

    def _default_word(self, seg: Seg, line: int) -> tuple[str | None, str | None]:
        words, _ = self._expand_segs(seg.arg or [], line, split=False)
        bad = next((w for w in words if not w.resolved), None)
        if bad is not None:
            return None, bad.reason
        return " ".join(w.text for w in words), None

    def _expand_param(self, seg: Seg, line: int) -> tuple[list[ScriptWord] | str | None, str | None]:
        """The value of one parameter expansion: a string, a list of words (arrays), or None with a reason."""
        name = seg.text
        if seg.op in ("[@]", "[*]"):
            arr = self.state.arrays.get(name)
            if arr is not None:
                if arr.words is None:
                    return None, arr.reason or f"the array {name} is not known statically"
                return list(arr.words), None
            sc = self.state.scalars.get(name)
            if sc is not None:
                return sc.value, sc.reason
            if self.unknown_source:
                return None, self._unset_reason(name)
            return [], None  # an unset array expands to nothing
        if seg.op in ("len", "other", "idx"):
            return None, f"the expansion ${{{name}...}} is not evaluated statically"
        if not _NAME_RE.fullmatch(name):
            return None, f"${name} is a shell special parameter, known only at run time"
        sc = self._scalar(name)
        if seg.op in (":-", "-", ":=", "="):
            if sc is not None and not (seg.op.startswith(":") and sc.value == ""):
                return sc.value, sc.reason
            if sc is None and self.unknown_source:
                return None, self._unset_reason(name)
            val, reason = self._default_word(seg, line)
            if val is not None and seg.op in (":=", "="):
                self.state.scalars[name] = Scalar(val, line)
            return val, reason
        if seg.op in (":+", "+"):
            if sc is None:
                return ("", None) if not self.unknown_source else (None, self._unset_reason(name))
            if sc.value is None:
                return None, sc.reason
            if seg.op == ":+" and sc.value == "":
                return "", None
            return self._default_word(seg, line)
        if sc is None:
            return None, self._unset_reason(name)
        return sc.value, sc.reason

    def _expand_segs(self, segs: list[Seg], line: int, *, split: bool = True,
                     raw: str = "") -> tuple[list[ScriptWord], bool]:
        """Expand one word into fields, as bash would. Returns (words, complete); `complete` is False when an
        unquoted unresolved expansion might have produced words we cannot see."""
        fields: list[_Field] = [_Field()]
        complete = True

        def add_text(text: str, quoted: bool, base: ScriptWord | None) -> None:
            if quoted or not split:
                f = fields[-1]
                f.parts.append(text)
                f.kept = f.kept or quoted
                f.base = base or f.base
                return
            for k, piece in enumerate(re.split(r"[ \t\n]+", text)):
                if k > 0:
                    fields.append(_Field())
                if piece:
                    fields[-1].parts.append(piece)
                    fields[-1].base = base or fields[-1].base

        def mark_unresolved(reason: str, quoted: bool, base: ScriptWord | None = None) -> None:
            nonlocal complete
            f = fields[-1]
            f.resolved = False
            f.kept = True
            f.reason = f.reason or reason
            f.base = base or f.base
            if (not quoted and split) or (base is not None and base.spread):
                complete = False
                f.spread = True

        for seg in segs:
            if seg.kind == "lit":
                add_text(seg.text, True, None) if seg.quoted else fields[-1].parts.append(seg.text)
                continue
            if seg.kind == "cmd":
                mark_unresolved("it is a command substitution, which the checker never runs", seg.quoted)
                self._note_once("command_substitution", seg.text[:80], self._loc(line),
                                f"`{seg.text[:80]}` is a command substitution: the checker never runs it, so its "
                                "value is unresolved and the checks that need it are skipped.")
                continue
            if seg.kind == "arith":
                try:
                    val = str(_arith(seg.text, self._lookup_for_arith))
                except _Unresolved as exc:
                    mark_unresolved(f"$(({seg.text.strip()})) cannot be computed statically: {exc}", seg.quoted)
                    continue
                add_text(val, seg.quoted, None)
                continue
            value, reason = self._expand_param(seg, line)
            if value is None:
                mark_unresolved(reason or f"${seg.text} is unknown", seg.quoted)
                continue
            if isinstance(value, str):
                base = None
                if len(segs) == 1 and seg.op == "":
                    sc = self._scalar(seg.text)
                    base = ScriptWord(text="", line=sc.line) if sc is not None else None
                add_text(value, seg.quoted, base)
                continue
            if len(value) > MAX_EXPANDED_WORDS:
                raise _Unresolved(f"the expansion of {seg.text} has more than {MAX_EXPANDED_WORDS} words")
            for k, w in enumerate(value):
                if k > 0:
                    if seg.op == "[*]" and seg.quoted:
                        fields[-1].parts.append(" ")
                    else:
                        fields.append(_Field())
                if not w.resolved:
                    fields[-1].parts.append(w.text)
                    mark_unresolved(w.reason or "unresolved", seg.quoted, w)
                    continue
                add_text(w.text, seg.quoted or not split, w)
                if seg.quoted:
                    fields[-1].kept = True
        out: list[ScriptWord] = []
        for f in fields:
            text = "".join(f.parts)
            if not text and not f.kept:
                continue
            base = f.base
            if not f.resolved and (base is None or base.resolved):
                text = raw or text
            out.append(ScriptWord(
                text=text, line=self._loc(base.line if base is not None and base.line is not None else line),
                resolved=f.resolved, reason=f.reason, spread=f.spread,
                conditional=bool(base.conditional) if base is not None else False,
                origin=(base.origin if base is not None and base.origin else self.origin),
            ))
        return out, complete

    def _lookup_for_arith(self, name: str) -> str | None:
        sc = self._scalar(name)
        return sc.value if sc is not None else None

    def expand_word(self, tok: Tok, *, split: bool = True) -> tuple[list[ScriptWord], bool]:
        try:
            return self._expand_segs(tok.segs, tok.line, split=split, raw=tok.value)
        except _Unresolved as exc:
            return [ScriptWord(text=tok.value, line=self._loc(tok.line), resolved=False, spread=True,
                               reason=str(exc), origin=self.origin)], False

    def word_text(self, tok: Tok) -> tuple[str, bool]:
        """The single-string value of a word (as in an assignment), and whether it resolved."""
        words, _ = self.expand_word(tok, split=False)
        if not words:
            return "", True
        if all(w.resolved for w in words):
            return " ".join(w.text for w in words), True
        return tok.value, False

    # -- statements ------------------------------------------------------------------------------
    def assign_scalar(self, tok: Tok) -> None:
        m = _ASSIGN_RE.match(tok.value)
        assert m is not None
        name, index, append = m.group(1), m.group(2), bool(m.group(3))
        line = tok.line
        rest = tok.value[m.end():]
        val_tok = Tok("word", rest, line, _Lexer(rest, []).read_inline_word(False))
        words, _ = self.expand_word(val_tok, split=False)
        bad = next((w for w in words if not w.resolved), None)
        if index is not None:
            self._assign_element(name, index[1:-1], words, bad, line)
            return
        if bad is not None:
            self.state.scalars[name] = Scalar(None, line, bad.reason or f"${name} could not be resolved")
            return
        text = " ".join(w.text for w in words)
        if append:
            prev = self._scalar(name) or Scalar("", line)
            if prev.value is None:
                self.state.scalars[name] = Scalar(None, line, prev.reason)
                return
            text = prev.value + text
        self.state.arrays.pop(name, None)
        self.state.scalars[name] = Scalar(text, line)

    def _assign_element(self, name: str, index: str, words: list[ScriptWord], bad: ScriptWord | None,
                        line: int) -> None:
        """`NAME[i]=value` with a literal index on a known array replaces (or appends) one element."""
        arr = self.state.arrays.get(name)
        if arr is None or arr.words is None or not index.isdigit() or int(index) > len(arr.words):
            self.state.arrays[name] = Array(None, line, f"{name}[{index}]= changes the array in a way the checker "
                                            "does not follow")
            return
        text = " ".join(w.text for w in words)
        new = ScriptWord(text=text if bad is None else "".join(w.text for w in words), line=self._loc(line),
                         resolved=bad is None, reason=bad.reason if bad else None, origin=self.origin)
        items = list(arr.words)
        k = int(index)
        items[k:k + 1] = [new]
        self.state.arrays[name] = Array(tuple(items), arr.line)

    def assign_array(self, tok: Tok) -> None:
        name = tok.value
        words: list[ScriptWord] = []
        for el in tok.elements:
            got, _ = self.expand_word(el)
            words.extend(got)
        if tok.append:
            prev = self.state.arrays.get(name)
            if prev is None and name in self.state.scalars:
                sc = self.state.scalars[name]
                prev = Array((ScriptWord(text=sc.value, line=sc.line),) if sc.value is not None else None, sc.line,
                             sc.reason)
            if prev is None and self.unknown_source:
                prev = Array(None, tok.line, self._unset_reason(name))
            if prev is not None and prev.words is None:
                self.state.arrays[name] = Array(None, tok.line, prev.reason)
                return
            words = list(prev.words if prev is not None else ()) + words
        if len(words) > MAX_EXPANDED_WORDS:
            self.state.arrays[name] = Array(None, tok.line, f"the array {name} grew past {MAX_EXPANDED_WORDS} words")
            return
        self.state.scalars.pop(name, None)
        self.state.arrays[name] = Array(tuple(words), tok.line)

    def run(self, toks: list[Tok]) -> None:
        """Walk the tokens command by command, tracking variables, arrays and train commands."""
        frames: list[dict] = []
        i, n = 0, len(toks)
        after_andor = False
        while i < n:
            words: list[Tok] = []
            keyword: str | None = None
            while i < n:
                t = toks[i]
                if t.kind == "op":
                    if t.value in _REDIRECTS:
                        i += 2 if i + 1 < n and toks[i + 1].kind == "word" else 1
                        continue
                    break
                if not words and t.kind == "word" and t.value in _KEYWORDS:
                    keyword = t.value
                    i += 1
                    break
                words.append(t)
                i += 1
            if keyword is not None:
                i = self._keyword(keyword, frames, toks, i)
                continue
            sep = toks[i].value if i < n else None
            if sep == "(" and len(words) == 1 and i + 1 < n and toks[i + 1].value == ")":
                self.pending_func = True  # name() { ... }
                i += 2
                continue
            if words:
                self._command(words, frames, after_andor)
            if sep is None:
                break
            i += 1
            if sep == "(":
                frames.append({"kind": "subshell", "snap": self.state.copy()})
            elif sep == ")" and frames and frames[-1]["kind"] == "subshell":
                self.state = frames.pop()["snap"]
            after_andor = sep in ("&&", "||")

    def _keyword(self, kw: str, frames: list[dict], toks: list[Tok], i: int) -> int:
        """Apply a reserved word; return the index of the next token to read."""
        if kw == "if":
            frames.append({"kind": "if", "snap": self.state.copy(), "branches": [], "has_else": False})
        elif kw in ("elif", "else") and frames and frames[-1]["kind"] == "if":
            f = frames[-1]
            f["branches"].append(self.state)
            self.state = f["snap"].copy()
            f["has_else"] = kw == "else"
        elif kw == "fi" and frames and frames[-1]["kind"] == "if":
            f = frames.pop()
            branches = [*f["branches"], self.state] + ([] if f["has_else"] else [f["snap"]])
            self.state = _merge(f["snap"], branches)
        elif kw in ("for", "while", "until", "select", "case"):
            frames.append({"kind": "case" if kw == "case" else "loop", "snap": self.state.copy()})
            if kw in ("for", "select", "case"):
                i = self._skip_header(kw, toks, i)
        elif kw in ("done", "esac") and frames and frames[-1]["kind"] in ("loop", "case"):
            f = frames.pop()
            why = "it is set inside a loop" if kw == "done" else "it is set inside a case statement"
            self.state = _blur(f["snap"], self.state, why)
        elif kw == "{":
            frames.append({"kind": "func" if self.pending_func else "group", "snap": self.state.copy()})
            self.pending_func = False
        elif kw == "}" and frames and frames[-1]["kind"] in ("func", "group"):
            f = frames.pop()
            if f["kind"] == "func":
                self.state = _blur(f["snap"], self.state, "it is set inside a function")
        elif kw == "function":
            self.pending_func = True
            while i < len(toks) and toks[i].kind == "word" and toks[i].value != "{":
                i += 1
            while i < len(toks) and toks[i].kind == "op" and toks[i].value in ("(", ")", "\n"):
                i += 1
        return i

    def _skip_header(self, kw: str, toks: list[Tok], i: int) -> int:
        """Skip `for NAME in words` / `case WORD in`; the loop variable becomes unknown."""
        while i < len(toks) and not (toks[i].kind == "op" and toks[i].value in ("\n", ";")):
            t = toks[i]
            i += 1
            if kw == "case" and t.kind == "word" and t.value == "in":
                break
            if kw != "case" and t.kind == "word" and _NAME_RE.fullmatch(t.value) and t.value != "in":
                self.state.scalars[t.value] = Scalar(None, t.line, f"${t.value} is a loop variable")
        return i

    def _command(self, words: list[Tok], frames: list[dict], after_andor: bool) -> None:
        conditional = any(f["kind"] in ("if", "loop", "case", "func") for f in frames)
        k = 0
        while k < len(words) and (words[k].kind == "array" or (
                _ASSIGN_RE.match(words[k].value) and words[k].segs and not words[k].segs[0].quoted)):
            k += 1
        assigns, rest = words[:k], words[k:]
        head = rest[0].value if rest else ""
        if head in ("export", "declare", "typeset", "local", "readonly"):
            assigns = [w for w in rest[1:] if w.kind == "array" or _ASSIGN_RE.match(w.value)]
            rest = []
        if not rest:
            # `X=1` alone (or after export): it changes the script's state; after && or || it may not run
            snap = self.state.copy() if after_andor else None
            for a in assigns:
                self.assign_array(a) if a.kind == "array" else self.assign_scalar(a)
            if snap is not None:
                self.state = _merge(snap, [snap, self.state])
            return
        if head == "unset":
            for w in rest[1:]:
                self.state.scalars.pop(w.value, None)
                self.state.arrays.pop(w.value, None)
        elif head in ("read", "mapfile", "readarray", "printf", "getopts"):
            self._unknown_targets(rest)
        elif head in ("source", ".") and len(rest) > 1:
            self._source_with_env(assigns, rest[1], conditional)
        else:
            self._maybe_train(rest, conditional)
            if self.depth == 0 and (head.startswith("--") or head.startswith("$")):
                self._maybe_stray(rest)

    def _maybe_stray(self, rest: list[Tok]) -> None:
        words: list[ScriptWord] = []
        for t in rest:
            if t.kind == "word":
                got, _ = self.expand_word(t)
                words.extend(got)
        if not words or not words[0].text.startswith("--") or len(words[0].text) < 3:
            return
        line = rest[0].line
        flags = [w.text.split("=")[0] for w in words if w.resolved and w.text.startswith("--")]
        self.stray.append(StrayCommand(line=line, raw=rest[0].value, flags=flags, cause=self._stray_cause(line)))

    def _stray_cause(self, line: int) -> str:
        r"""Why a continued command ended just before `line`: a comment, a space after `\`, or no `\`."""
        k = line - 2
        while k >= 0 and not self.lines[k].strip():
            k -= 1
        if k < 0:
            return "it is not part of any command"
        prev = self.lines[k]
        if prev.lstrip().startswith("#"):
            return f"the comment on line {k + 1} ends the command above it (a comment cannot continue a line)"
        if prev.rstrip(" \t").endswith("\\") and prev != prev.rstrip(" \t"):
            return f"line {k + 1} has spaces after its '\\', so the backslash does not continue the line"
        return f"line {k + 1} does not end with '\\', so the command stops there"

    def _unknown_targets(self, rest: list[Tok]) -> None:
        name = rest[0].value
        args = [w.value for w in rest[1:] if w.kind == "word"]
        targets: list[str] = []
        if name == "printf":
            if "-v" in args:
                idx = args.index("-v")
                if idx + 1 < len(args):
                    targets.append(args[idx + 1])
        else:
            targets = [a for a in args if _NAME_RE.fullmatch(a)]
        for t in targets:
            reason = f"${t} is set by `{name}` at run time"
            self.state.scalars[t] = Scalar(None, rest[0].line, reason)
            self.state.arrays.pop(t, None)

    def _source_with_env(self, assigns: list[Tok], tok: Tok, conditional: bool) -> None:
        """`X=1 source file`: the sourced file sees X=1; afterwards X is what it was before."""
        saved = {a.value.split("=", 1)[0].rstrip("+"): self.state.scalars.get(a.value.split("=", 1)[0].rstrip("+"))
                 for a in assigns if a.kind == "word"}
        for a in assigns:
            if a.kind == "word":
                self.assign_scalar(a)
        self._source(tok, conditional)
        for name, before in saved.items():
            if before is None:
                self.state.scalars.pop(name, None)
            else:
                self.state.scalars[name] = before

    def _source(self, tok: Tok, conditional: bool) -> None:
        text, ok = self.word_text(tok)
        path_text = text if ok else _strip_quotes(tok.value)
        line = tok.line
        got = self.resolver(path_text) if self.resolver is not None and self.depth < MAX_SOURCE_DEPTH else None
        if isinstance(got, SourcedModel):
            words = tuple(ScriptWord(text=w, line=self._loc(line), resolved="$" not in w and "`" not in w,
                                     reason=(f"{w} is left unresolved in {got.path}" if "$" in w or "`" in w
                                             else None),
                                     origin=got.path, conditional=conditional)
                          for w in got.model_args)
            self.state.arrays["MODEL_ARGS"] = Array(words, self._loc(line))
            self.state.scalars.pop("MODEL_ARGS", None)
            self.notes.append(ScriptNote(kind="source_model", line=self._loc(line), subject=got.path,
                                         message=f"MODEL_ARGS comes from slime's {got.path} ({got.source})."))
            return
        if isinstance(got, str):
            lexer = _Lexer(got, [])
            toks = lexer.tokens()
            saved = (self.origin, self.origin_line)
            self.origin = path_text
            self.origin_line = self._loc(line)
            self.depth += 1
            try:
                self.run(toks)
            finally:
                self.depth -= 1
                self.origin, self.origin_line = saved
            self.notes.append(ScriptNote(kind="source_file", line=self._loc(line), subject=path_text,
                                         message=f"Read the sourced file {path_text} in place."))
            return
        self.unknown_source = path_text
        self.notes.append(ScriptNote(
            kind="source_unknown", line=self._loc(line), subject=path_text,
            message=(f"The script sources {path_text}, which the checker cannot read; variables it may set are "
                     "treated as unknown from here on.")))

    def _maybe_train(self, rest: list[Tok], conditional: bool) -> None:
        """Record `python ... train.py ARGS` (or train_async.py) with its arguments expanded."""
        py = None
        for idx, w in enumerate(rest):
            if w.kind == "word" and _PYTHON_RE.search(_strip_quotes(w.value)):
                py = idx
                break
        if py is None:
            return
        j = py + 1
        while j < len(rest) and rest[j].kind == "word" and rest[j].value.startswith("-"):
            j += 2 if rest[j].value in ("-X", "-W") else 1
        if j >= len(rest) or rest[j].kind != "word":
            return
        m = _ENTRY_RE.search(_strip_quotes(rest[j].value))
        if not m:
            return
        args: list[ScriptWord] = []
        for w in rest[j + 1:]:
            if w.kind != "word":
                continue
            got, _ = self.expand_word(w)
            for g in got:
                if conditional:
                    g.conditional = True
            args.extend(got)
            if len(args) > MAX_EXPANDED_WORDS:
                args = args[:MAX_EXPANDED_WORDS]
                args.append(ScriptWord(text="...", line=self._loc(w.line), resolved=False, spread=True,
                                       reason=f"the command has more than {MAX_EXPANDED_WORDS} words"))
                break
        self.commands.append(LaunchCommand(entry=m.group(1), line=self._loc(rest[j].line), args=args,
                                           conditional=conditional))


def _strip_quotes(raw: str) -> str:
    return raw.replace('"', "").replace("'", "")


def _merge(snap: _State, branches: list[_State]) -> _State:
    """Join the states at the end of an if: a value all branches agree on stays, the rest become unknown."""
    out = snap.copy()
    names = set().union(*(b.scalars.keys() for b in branches))
    for name in names:
        vals = [b.scalars.get(name) for b in branches]
        texts = {v.value if v is not None else "\0unset" for v in vals}
        if len(texts) == 1:
            v = vals[0]
            if v is None:
                out.scalars.pop(name, None)
            else:
                out.scalars[name] = v
        else:
            line = next((v.line for v in vals if v is not None), None)
            out.scalars[name] = Scalar(None, line, f"${name} depends on which branch of an if runs")
    names = set().union(*(b.arrays.keys() for b in branches))
    for name in names:
        vals = [b.arrays.get(name) for b in branches]
        if any(v is None or v.words is None for v in vals):
            if all(v is None for v in vals):
                continue
            line = next((v.line for v in vals if v is not None), None)
            out.arrays[name] = Array(None, line, f"the array {name} depends on which branch of an if runs")
            continue
        lists = [v.words for v in vals if v is not None and v.words is not None]
        if all(lst == lists[0] for lst in lists):
            out.arrays[name] = vals[0]
            continue
        # common prefix stays as is; what differs is kept, marked conditional
        prefix = 0
        while all(prefix < len(lst) for lst in lists) and all(lst[prefix] == lists[0][prefix] for lst in lists):
            prefix += 1
        merged = list(lists[0][:prefix])
        for lst in lists:
            merged.extend(w.model_copy(update={"conditional": True}) for w in lst[prefix:])
        out.arrays[name] = Array(tuple(merged), vals[0].line)
    return out


def _blur(snap: _State, after: _State, why: str) -> _State:
    """After a loop/case/function: anything it changed is unknown."""
    out = after.copy()
    for name, v in after.scalars.items():
        if snap.scalars.get(name) is not v:
            out.scalars[name] = Scalar(None, v.line, f"${name} is unknown because {why}")
    for name, v in after.arrays.items():
        if snap.arrays.get(name) is not v:
            out.arrays[name] = Array(None, v.line, f"the array {name} is unknown because {why}")
    return out


# --------------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------------
def read_launch_script(text: str, resolver: SourceResolver | None = None) -> ReadScript:
    """Read a launch script statically; never executes anything."""
    notes: list[ScriptNote] = []
    if len(text) > MAX_SCRIPT_CHARS:
        notes.append(ScriptNote(kind="too_large", message=(
            f"The script is {len(text):,} characters; the checker reads at most {MAX_SCRIPT_CHARS:,}. "
            "Nothing was checked.")))
        return ReadScript(commands=[], notes=notes, scalars={}, arrays={}, stray_commands=[])
    if "\0" in text:
        notes.append(ScriptNote(kind="binary", message="The text contains NUL bytes; it is not a shell script. "
                                                       "Nothing was checked."))
        return ReadScript(commands=[], notes=notes, scalars={}, arrays={}, stray_commands=[])
    text = text.replace("\r\n", "\n")
    reader = _Reader(resolver, notes)
    reader.lines = text.split("\n")
    try:
        reader.run(_Lexer(text, notes).tokens())
    except (TooDeep, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, TooDeep) else "expansions are nested too deeply"
        notes.append(ScriptNote(kind="unterminated", message=f"The script could not be read to the end: {reason}."))
    return ReadScript(
        commands=reader.commands, notes=notes,
        scalars={k: v.value for k, v in reader.state.scalars.items()},
        arrays={k: list(v.words) if v.words is not None else None for k, v in reader.state.arrays.items()},
        stray_commands=reader.stray,
    )


def model_script_name(path_text: str) -> str | None:
    """The model name of `source .../models/NAME.sh`, or of `source "$(dirname ${BASH_SOURCE[0]})/NAME.sh"` (how
    one model script sources another); None for any other sourced file."""
    text = path_text.strip()
    m = _MODEL_SCRIPT_RE.search(text)
    if m:
        return m.group(1)
    if "BASH_SOURCE" in text:
        m = _SIBLING_SCRIPT_RE.search(text)
        return m.group(1) if m else None
    return None


def looks_like_arg_list(text: str) -> bool:
    """True when the text is a bare argument list (its first word is a flag), not a script."""
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        return s.startswith("-")
    return False


def read_arg_list_text(text: str) -> tuple[list[ScriptWord], list[ScriptNote], bool]:
    """Split a pasted argument list (flags over one or many lines, with or without backslashes) into words."""
    notes: list[ScriptNote] = []
    try:
        toks = _Lexer(text.replace("\r\n", "\n"), notes).tokens()
    except (TooDeep, RecursionError):
        notes.append(ScriptNote(kind="unterminated", message="The list nests quotes or expansions too deeply to "
                                                             "read."))
        return [], notes, False
    reader = _Reader(None, notes)
    words: list[ScriptWord] = []
    complete = True
    for t in toks:
        if t.kind != "word":
            continue
        got, ok = reader.expand_word(t)
        complete = complete and ok
        words.extend(got)
    return words, notes, complete
