"""Lexing: split a script into words, operators and arrays, keeping quoting and expansions as segments."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from core.launch.script.model import MAX_NESTING, MAX_NOTES_PER_KIND, ScriptNote

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
# A word runs to the next bash metacharacter (space, tab, newline, ;&|()<>) or quoting character. Any other
# character, a no-break space or a carriage return included, is part of the word, as in bash.
_PLAIN_RUN = re.compile(r"[^ \t\n;&|()<>'\"\\$`#]+")
_PLAIN_RUN_NO_HASH = re.compile(r"[^ \t\n;&|()<>'\"\\$`]+")
_KEYWORDS = frozenset({"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case", "esac",
                       "{", "}", "!", "function", "select", "time", "in"})
_METACHARS = " \t\n;&|()<>"
_OP_START = frozenset(";&|()<>")


class TooDeep(ValueError):
    """The script nests expansions deeper than the reader follows."""


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
                end = m.end() if m else self.i + 1  # always move on: no character can stop the reader
                segs.append(Seg("lit", self._advance_to(end), False))
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
            if self.i < n and s[self.i] in "<>" and tok.value.isascii() and tok.value.isdigit():
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


# Characters that look like spaces or line breaks, or show nothing at all, but that bash reads as part of a
# word: other Unicode spaces (no-break, full-width...), line and paragraph separators, control characters
# other than tab and newline (a lone carriage return, vertical tab, form feed...), zero-width and direction
# marks, and a byte-order mark inside the text.
_UNUSUAL_CHAR = re.compile("[^\\S \t\n]|[\x00-\x08\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                           "\u2066-\u2069\ufeff]")
_CHAR_NAMES = {"\r": "a carriage return (CR) that does not end a line", "\x0b": "a vertical tab",
               "\x0c": "a form feed", "\xa0": "a no-break space", "\u2028": "a Unicode line separator",
               "\u2029": "a Unicode paragraph separator", "\u3000": "a full-width (ideographic) space",
               "\u200b": "a zero-width space", "\ufeff": "a byte-order mark"}


def _char_name(c: str) -> str:
    code = f"U+{ord(c):04X}"
    if c in _CHAR_NAMES:
        return f"{_CHAR_NAMES[c]} ({code})"
    name = unicodedata.name(c, "")
    return f"the character {name.lower()} ({code})" if name else f"a control character ({code})"


def unusual_character_notes(text: str) -> list[ScriptNote]:
    """One note per line holding a character bash reads as part of a word although it looks like a space,
    a line break or nothing (at most MAX_NOTES_PER_KIND notes; the last one counts the rest)."""
    notes: list[ScriptNote] = []
    line, pos, last_line, more, first_more = 1, 0, 0, 0, 0
    for m in _UNUSUAL_CHAR.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if line == last_line:
            continue
        last_line = line
        if len(notes) < MAX_NOTES_PER_KIND - 1:
            column = m.start() - text.rfind("\n", 0, m.start())
            notes.append(ScriptNote(kind="unusual_char", line=line, subject=f"U+{ord(m.group()):04X}", message=(
                f"Line {line}, column {column} has {_char_name(m.group())}. bash does not read it as a space or a "
                "line break: it becomes part of the word around it, which can turn a flag or value into one slime "
                "does not know. Replace it with a plain space or newline (or delete it).")))
        else:
            more += 1
            first_more = first_more or line
    if more:
        notes.append(ScriptNote(kind="unusual_char", line=first_more, message=(
            f"{more} more line(s), from line {first_more} on, have such characters too.")))
    return notes
