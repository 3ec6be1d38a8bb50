"""Rules of the script reader (SCRIPT0xx): what the static bash reader noticed, as findings."""

from __future__ import annotations

from collections.abc import Iterable

from core.findings import Finding
from core.launch.rules.registry import finding, register
from core.launch.script import MAX_NOTES_PER_KIND, ScriptNote, ScriptWord
from core.pins import slime_source

register("SCRIPT001", "")
register("SCRIPT002", "")
register("SCRIPT003", "https://www.gnu.org/software/bash/manual/")
register("SCRIPT004", "https://www.gnu.org/software/bash/manual/")
register("SCRIPT005", slime_source("train.py"))
register("SCRIPT006", slime_source("train.py"))
register("SCRIPT007", slime_source("scripts/models"))
register("SCRIPT008", "https://www.gnu.org/software/bash/manual/")
register("SCRIPT009", "https://www.gnu.org/software/bash/manual/")
register("SCRIPT010", "https://www.gnu.org/software/bash/manual/")
register("SCRIPT011", "")
register("SCRIPT012", "https://www.gnu.org/software/bash/manual/bash.html#index-source")
register("SCRIPT013", "")
register("SCRIPT014", "https://www.gnu.org/software/bash/manual/")


_NOTE_CODES = {
    "unterminated": "SCRIPT003", "syntax": "SCRIPT003", "command_substitution": "SCRIPT004", "heredoc": "SCRIPT010",
    "source_model": "SCRIPT007", "source_file": "SCRIPT007", "source_unknown": "SCRIPT007", "too_large": "SCRIPT001",
    "binary": "SCRIPT001", "not_utf8": "SCRIPT002", "too_big": "SCRIPT013", "unusual_char": "SCRIPT014",
}


def note_findings(notes: Iterable[ScriptNote], missing: dict[str, str] | None = None) -> list[Finding]:
    """Reader notes as findings; command substitutions are summed up in one note (the words they leave
    unresolved in the command are reported one by one by `unresolved_findings`). `missing` maps the path text
    of a sourced file that cannot exist to why (the resolver read it as empty): those are SCRIPT012 errors."""
    out = []
    subs = [n for n in notes if n.kind == "command_substitution"]
    per_kind: dict[str, int] = {}
    for note in notes:
        if note.kind == "command_substitution":
            continue
        if missing and note.kind == "source_file" and note.subject in missing:
            out.append(finding("SCRIPT012", f"`source {note.subject}`: {missing[note.subject]}. bash cannot read it: "
                               "under `set -e` the script stops here, otherwise everything the file would set "
                               "(MODEL_ARGS, the model's shape) stays empty.", line=note.line,
                               fix="point the path at slime's scripts/models/ (from the script's own folder), or "
                               "pass the model flags yourself"))
            continue
        per_kind[note.kind] = per_kind.get(note.kind, 0) + 1
        if per_kind[note.kind] <= MAX_NOTES_PER_KIND:
            out.append(finding(_NOTE_CODES.get(note.kind, "SCRIPT004"), note.message, line=note.line))
    for kind, count in per_kind.items():
        if count > MAX_NOTES_PER_KIND:
            out.append(finding(_NOTE_CODES.get(kind, "SCRIPT004"), f"... and {count - MAX_NOTES_PER_KIND} more "
                               f"like the above ({kind.replace('_', ' ')}); only the first {MAX_NOTES_PER_KIND} "
                               "are listed."))
    if subs:
        out.append(finding("SCRIPT004", f"The script has {len(subs)} command substitution(s) ($(...) or backticks), "
                           f"the first on line {subs[0].line}; the checker never runs them, so values built from "
                           "them are unresolved.", line=subs[0].line))
    return out


def unresolved_findings(words: Iterable[ScriptWord], covered: set[int]) -> list[Finding]:
    """One note per unresolved word of the command that no skipped check already names."""
    out, seen = [], set()
    for w in words:
        if w.resolved or (w.text, w.line) in seen or id(w) in covered:
            continue
        seen.add((w.text, w.line))
        out.append(finding("SCRIPT004", f"{w.text} is unresolved ({w.reason or 'not known statically'}); the checks "
                           "that need it are skipped.", word=w))
    return out
