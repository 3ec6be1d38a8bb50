"""Values and expansion: variables and arrays, `$((...))` arithmetic, word splitting, assignments, and how
branches, loops and functions change what is known."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from core.launch.script.lexer import _ASSIGN_RE, _NAME_RE, Seg, Tok, _Lexer
from core.launch.script.model import (
    MAX_EXPANDED_WORDS,
    MAX_EXPANSION_WORK,
    MAX_INT_DIGITS,
    MAX_NESTING,
    MAX_VALUE_CHARS,
    WORD_COST,
    ScriptNote,
    ScriptWord,
)


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


class _Vars(dict):
    """A variable table that writes the name of every change to a journal shared by every copy of a state, so
    that the end of an if, loop or function looks only at the names changed inside it (not at every variable,
    which made a script of many small ifs quadratic)."""

    __slots__ = ("journal",)

    def __init__(self, items: dict | tuple = (), journal: list[str] | None = None) -> None:
        super().__init__(items)
        self.journal: list[str] = journal if journal is not None else []

    def __setitem__(self, name: str, value: object) -> None:
        self.journal.append(name)
        super().__setitem__(name, value)

    def pop(self, name: str, *default: object) -> object:
        self.journal.append(name)
        return super().pop(name, *default)


class _State:
    __slots__ = ("scalars", "arrays")

    def __init__(self, scalars: _Vars | None = None, arrays: _Vars | None = None) -> None:
        journal: list[str] = []
        self.scalars: _Vars = scalars if scalars is not None else _Vars((), journal)
        self.arrays: _Vars = arrays if arrays is not None else _Vars((), journal)

    @property
    def journal(self) -> list[str]:
        return self.scalars.journal

    def copy(self) -> _State:
        return _State(_Vars(self.scalars, self.scalars.journal), _Vars(self.arrays, self.arrays.journal))

    def changed_since(self, mark: int) -> list[str]:
        """Names set or unset since the journal had `mark` entries, in the order first changed."""
        return list(dict.fromkeys(self.journal[mark:]))


class _Unresolved(Exception):
    pass


class ExpansionLimit(Exception):
    """The script's expansions took more than MAX_EXPANSION_WORK; the reader stops and says so."""

    def __init__(self, line: int | None) -> None:
        super().__init__(f"its values expand to more than {MAX_EXPANSION_WORK:,} characters in all")
        self.line = line


def _bash_int(digits: str, shown: str) -> int:
    """A decimal integer as bash reads it; _Unresolved when it has more digits than a 64-bit integer holds."""
    if len(digits.lstrip("-").lstrip("0")) > MAX_INT_DIGITS:
        raise _Unresolved(f"{shown[:40]}{'...' if len(shown) > 40 else ''} is larger than bash's 64-bit integers")
    return int(digits, 10)


def _arith(expr: str, lookup: Callable[[str], str | None]) -> int:
    """Evaluate bash integer arithmetic (+ - * / % ** and parentheses); raise _Unresolved when it cannot."""
    toks = re.findall(r"\s*([0-9]+|[A-Za-z_][A-Za-z0-9_]*|\*\*|[-+*/%()]|\S)", expr.replace("$", ""))
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
        if t.isascii() and t.isdigit():
            return _bash_int(t, t)
        if _NAME_RE.fullmatch(t):
            raw = lookup(t)
            if raw is None:
                raise _Unresolved(f"${t} is not known")
            raw = raw.strip()
            if not re.fullmatch(r"-?[0-9]+", raw):
                raise _Unresolved(f"${t}={raw[:40]!r} is not an integer")
            return _bash_int(raw, f"${t}")
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
    size: int = 0  # characters in parts
    split_from: str | None = None  # "$VAR=value": an unquoted variable whose value was split into several words


class _Expander:
    """The variables a script has set so far, and how its words expand against them."""

    def __init__(self, notes: list[ScriptNote]) -> None:
        self.state = _State()
        self.notes = notes
        self.unknown_source: str | None = None
        self.origin: str | None = None
        self.origin_line: int | None = None  # line of the `source` in the top-level script
        self._noted: set[tuple[str, str]] = set()
        self.work = 0  # characters and words produced by expansions so far (see MAX_EXPANSION_WORK)

    def _charge(self, units: int, line: int | None) -> None:
        self.work += units
        if self.work > MAX_EXPANSION_WORK:
            raise ExpansionLimit(self._loc(line))

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
        self._charge(WORD_COST, line)

        def put(f: _Field, text: str) -> None:
            f.parts.append(text)
            f.size += len(text)
            self._charge(len(text), line)
            if f.size > MAX_VALUE_CHARS:
                self._note_once("too_big", f"value:{self._loc(line)}", self._loc(line), (
                    f"A value on line {self._loc(line)} grows past {MAX_VALUE_CHARS:,} characters; the checker "
                    "leaves it unresolved instead of building it (a variable doubled again and again?)."))
                raise _Unresolved(f"its value grows past {MAX_VALUE_CHARS:,} characters")

        def new_field() -> None:
            fields.append(_Field())
            self._charge(WORD_COST, line)

        def add_text(text: str, quoted: bool, base: ScriptWord | None, var: str | None = None) -> None:
            if quoted or not split:
                f = fields[-1]
                put(f, text)
                f.kept = f.kept or quoted
                f.base = base or f.base
                return
            pieces = re.split(r"[ \t\n]+", text)
            spill = f"${var}={text.strip()}" if var and sum(1 for x in pieces if x) > 1 else None
            for k, piece in enumerate(pieces):
                if k > 0:
                    new_field()
                if piece:
                    put(fields[-1], piece)
                    fields[-1].base = base or fields[-1].base
                    fields[-1].split_from = fields[-1].split_from or spill

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
                add_text(seg.text, True, None) if seg.quoted else put(fields[-1], seg.text)
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
                add_text(value, seg.quoted, base, seg.text if seg.op == "" else None)
                continue
            if len(value) > MAX_EXPANDED_WORDS:
                raise _Unresolved(f"the expansion of {seg.text} has more than {MAX_EXPANDED_WORDS} words")
            for k, w in enumerate(value):
                if k > 0:
                    if seg.op == "[*]" and seg.quoted:
                        put(fields[-1], " ")
                    else:
                        new_field()
                if not w.resolved:
                    put(fields[-1], w.text)
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
                resolved=f.resolved, reason=f.reason, spread=f.spread, split_from=f.split_from,
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
        if len(text) > MAX_VALUE_CHARS:
            self._note_once("too_big", f"value:{self._loc(line)}", self._loc(line), (
                f"${name} on line {self._loc(line)} grows past {MAX_VALUE_CHARS:,} characters; the checker leaves "
                "it unresolved instead of building it (a variable doubled again and again?)."))
            self.state.arrays.pop(name, None)
            self.state.scalars[name] = Scalar(None, line, f"${name} grows past {MAX_VALUE_CHARS:,} characters")
            return
        self.state.arrays.pop(name, None)
        self.state.scalars[name] = Scalar(text, line)

    def _assign_element(self, name: str, index: str, words: list[ScriptWord], bad: ScriptWord | None,
                        line: int) -> None:
        """`NAME[i]=value` with a literal index on a known array replaces (or appends) one element."""
        arr = self.state.arrays.get(name)
        if (arr is None or arr.words is None or not (index.isascii() and index.isdigit())
                or len(index) > MAX_INT_DIGITS or int(index) > len(arr.words)):
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


def _merge(snap: _State, branches: list[_State], changed: list[str]) -> _State:
    """Join the states at the end of an if: a value all branches agree on stays, the rest become unknown.
    Only the `changed` names can differ between the branches and the state before the if."""
    out = snap.copy()
    names = [n for n in changed if any(n in b.scalars for b in branches)]
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
    names = [n for n in changed if any(n in b.arrays for b in branches)]
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
        prefix = _common_prefix(lists)
        merged = list(lists[0][:prefix])
        for lst in lists:
            merged.extend(w.model_copy(update={"conditional": True}) for w in lst[prefix:])
        out.arrays[name] = Array(tuple(merged), vals[0].line)
    return out


def _common_prefix(lists: list[tuple[ScriptWord, ...]]) -> int:
    """How many leading words all lists share. Tried first on the whole shortest length, compared as tuples (in
    C, identical words at once), as branches that only append share their start."""
    shortest = min(len(lst) for lst in lists)
    first = lists[0][:shortest]
    if all(lst[:shortest] == first for lst in lists):
        return shortest
    prefix = 0
    while all(prefix < len(lst) for lst in lists) and all(lst[prefix] == lists[0][prefix] for lst in lists):
        prefix += 1
    return prefix


def _blur(snap: _State, after: _State, why: str, changed: list[str]) -> _State:
    """After a loop/case/function: anything it changed (one of the `changed` names) is unknown."""
    out = after.copy()
    for name in changed:
        v = after.scalars.get(name)
        if v is not None and snap.scalars.get(name) is not v:
            out.scalars[name] = Scalar(None, v.line, f"${name} is unknown because {why}")
    for name in changed:
        a = after.arrays.get(name)
        if a is not None and snap.arrays.get(name) is not a:
            out.arrays[name] = Array(None, a.line, f"the array {name} is unknown because {why}")
    return out


