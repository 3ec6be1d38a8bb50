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

from pydantic import BaseModel

from core.launch.script.interpreter import _MODEL_SCRIPT_RE, _SIBLING_SCRIPT_RE, _Reader
from core.launch.script.lexer import Seg, Tok, TooDeep, _Lexer, unusual_character_notes
from core.launch.script.model import (
    MAX_BLOCK_DEPTH,
    MAX_EXPANDED_WORDS,
    MAX_EXPANSION_WORK,
    MAX_INT_DIGITS,
    MAX_NESTING,
    MAX_NOTES_PER_KIND,
    MAX_SCRIPT_CHARS,
    MAX_SOURCE_DEPTH,
    MAX_VALUE_CHARS,
    LaunchCommand,
    ReadScript,
    ScriptNote,
    ScriptWord,
    SourcedModel,
    SourceResolver,
    StrayCommand,
)
from core.launch.script.values import Array, ExpansionLimit, Scalar, _arith, _Unresolved

__all__ = [
    "MAX_BLOCK_DEPTH", "MAX_EXPANDED_WORDS", "MAX_EXPANSION_WORK", "MAX_INT_DIGITS", "MAX_NESTING", "MAX_NOTES_PER_KIND", "MAX_SCRIPT_CHARS", "MAX_SOURCE_DEPTH", "MAX_VALUE_CHARS", "Array",
    "DecodedText", "ExpansionLimit", "LaunchCommand", "ReadScript", "Scalar", "ScriptNote", "ScriptWord", "Seg", "SourceResolver",
    "SourcedModel", "StrayCommand", "Tok", "TooDeep", "_Unresolved", "_arith", "decode_script_bytes",
    "looks_like_arg_list", "model_script_name", "read_arg_list_text", "read_launch_script",
]

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
    notes.extend(unusual_character_notes(text))
    reader = _Reader(resolver, notes)
    reader.lines = text.split("\n")
    try:
        reader.run(_Lexer(text, notes).tokens())
    except (TooDeep, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, TooDeep) else "expansions are nested too deeply"
        notes.append(ScriptNote(kind="unterminated", message=f"The script could not be read to the end: {reason}."))
    except ExpansionLimit as exc:
        notes.append(_expansion_limit_note(exc))
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
    text = text.replace("\r\n", "\n")
    notes.extend(unusual_character_notes(text))
    try:
        toks = _Lexer(text, notes).tokens()
    except (TooDeep, RecursionError):
        notes.append(ScriptNote(kind="unterminated", message="The list nests quotes or expansions too deeply to "
                                                             "read."))
        return [], notes, False
    reader = _Reader(None, notes)
    words: list[ScriptWord] = []
    complete = True
    try:
        for t in toks:
            if t.kind != "word":
                continue
            got, ok = reader.expand_word(t)
            complete = complete and ok
            words.extend(got)
    except ExpansionLimit as exc:
        notes.append(_expansion_limit_note(exc))
        complete = False
    return words, notes, complete


def _expansion_limit_note(exc: ExpansionLimit) -> ScriptNote:
    where = f" near line {exc.line}" if exc.line else ""
    return ScriptNote(kind="too_big", line=exc.line, message=(
        f"The checker stopped reading{where}: {exc} (a variable doubled again and again?), past what a launch "
        "script needs; what came before was checked."))
