"""The statement interpreter: walks commands, branches, loops, functions and `source`, and records the train
command and stray flag lines."""

from __future__ import annotations

import re

from core.launch.script.lexer import _ASSIGN_RE, _KEYWORDS, _NAME_RE, Tok, TooDeep, _Lexer
from core.launch.script.model import (
    MAX_BLOCK_DEPTH,
    MAX_EXPANDED_WORDS,
    MAX_SOURCE_DEPTH,
    LaunchCommand,
    ScriptNote,
    ScriptWord,
    SourcedModel,
    SourceResolver,
    StrayCommand,
)
from core.launch.script.values import Array, Scalar, _blur, _Expander, _merge

_PYTHON_RE = re.compile(r"(?:^|/)python[0-9.]*$")
_ENTRY_RE = re.compile(r"(?:^|/)(train(?:_async)?\.py)$")
_MODEL_SCRIPT_RE = re.compile(r"(?:^|/)models/([^/\s]+)\.sh$")
_SIBLING_SCRIPT_RE = re.compile(r"(?:^|/)([^/\s]+)\.sh$")
_SEPARATORS = frozenset({"\n", ";", "&", "&&", "||", "|", "|&", ";;", ";&", ";;&"})
_REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})


class _Reader(_Expander):
    def __init__(self, resolver: SourceResolver | None, notes: list[ScriptNote]) -> None:
        super().__init__(notes)
        self.resolver = resolver
        self.commands: list[LaunchCommand] = []
        self.stray: list[StrayCommand] = []
        self.lines: list[str] = []
        self.depth = 0
        self.pending_func = False

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
                self._open(frames, {"kind": "subshell"})
            elif sep == ")" and frames and frames[-1]["kind"] == "subshell":
                self.state = frames.pop()["snap"]
            after_andor = sep in ("&&", "||")

    def _open(self, frames: list[dict], frame: dict) -> None:
        """Enter an if, loop, case, function, group or subshell: keep the state as it was, and where its
        journal of changes stood."""
        if len(frames) >= MAX_BLOCK_DEPTH:
            raise TooDeep(f"if, loop and function blocks are nested more than {MAX_BLOCK_DEPTH} deep")
        frame["snap"] = self.state.copy()
        frame["mark"] = len(self.state.journal)
        frames.append(frame)

    def _keyword(self, kw: str, frames: list[dict], toks: list[Tok], i: int) -> int:
        """Apply a reserved word; return the index of the next token to read."""
        if kw == "if":
            self._open(frames, {"kind": "if", "branches": [], "has_else": False})
        elif kw in ("elif", "else") and frames and frames[-1]["kind"] == "if":
            f = frames[-1]
            f["branches"].append(self.state)
            self.state = f["snap"].copy()
            f["has_else"] = kw == "else"
        elif kw == "fi" and frames and frames[-1]["kind"] == "if":
            f = frames.pop()
            branches = [*f["branches"], self.state] + ([] if f["has_else"] else [f["snap"]])
            self.state = _merge(f["snap"], branches, self.state.changed_since(f["mark"]))
        elif kw in ("for", "while", "until", "select", "case"):
            self._open(frames, {"kind": "case" if kw == "case" else "loop"})
            if kw in ("for", "select", "case"):
                i = self._skip_header(kw, toks, i)
        elif kw in ("done", "esac") and frames and frames[-1]["kind"] in ("loop", "case"):
            f = frames.pop()
            why = "it is set inside a loop" if kw == "done" else "it is set inside a case statement"
            self.state = _blur(f["snap"], self.state, why, self.state.changed_since(f["mark"]))
        elif kw == "{":
            self._open(frames, {"kind": "func" if self.pending_func else "group"})
            self.pending_func = False
        elif kw == "}" and frames and frames[-1]["kind"] in ("func", "group"):
            f = frames.pop()
            if f["kind"] == "func":
                self.state = _blur(f["snap"], self.state, "it is set inside a function",
                                   self.state.changed_since(f["mark"]))
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
