"""The rule registry and runner: every finding code with its title, severity and source, and the loop that
runs the checks.

A check is a function decorated with `@rule(code, source)`; it receives a RuleContext and yields Findings.
Codes without a check function (reader notes, flag-level findings) are registered with `register`. Titles
and default severities come from the code table (`core.launch.rules.codes`), the only place they are
written; a code is registered once. Checks run in registration order, which `core.launch.rules` fixes by
importing the families in a set order; a check that needs a value it cannot know raises Skip and is
reported as skipped. A check reads the script and the shared derivations, never another check's results,
so the order changes nothing but the order of the skip notes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.findings import Finding, Severity
from core.launch.rules.codes import CODES
from core.pins import megatron_source, slime_source

if TYPE_CHECKING:
    from core.launch.rules.context import RuleContext
    from core.launch.script import ScriptWord

ARGS_CARD = "argument-categories"

ERR, WARN, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True)
class RuleInfo:
    code: str
    title: str
    severity: Severity
    source: str
    card: str | None = None
    check: Callable[[RuleContext], Iterable[Finding]] | None = None


RULES: dict[str, RuleInfo] = {}


@dataclass(frozen=True)
class CodeDep:
    """The slime code a rule judges: a file of slime's tree and a pattern its lines must match.

    With a user's checkout, a rule runs only when its file holds a line matching `pattern` (a regular
    expression searched line by line, or across up to `span` lines); otherwise it is skipped with a note.
    `what` says in a few words what the code does, for that note."""

    path: str
    pattern: str
    what: str
    span: int = 1


REQUIREMENTS: dict[str, CodeDep] = {}  # code -> the slime code it judges (see core.launch.rules.versions)


def register(code: str, source: str, card: str | None = None, *,
             check: Callable[[RuleContext], Iterable[Finding]] | None = None) -> RuleInfo:
    """Register a finding code (its title and default severity come from the code table, CODES); a code
    that is not in the table is refused."""
    if code not in CODES:
        raise KeyError(f"{code} is not in core/launch/rules/codes.py")
    if code in RULES:
        raise KeyError(f"{code} is registered twice")
    entry = CODES[code]
    info = RuleInfo(code, entry.title, entry.severity, source, card, check)
    RULES[code] = info
    return info


def rule(code: str, source: str, card: str | None = None, *, requires: CodeDep | None = None):
    """Register a check function under a stable code of the code table; `requires` names the slime code it
    judges, so that with a user's checkout it runs only when that code is there (REQUIREMENTS holds the
    declarations)."""

    def wrap(fn: Callable[[RuleContext], Iterable[Finding]]) -> Callable[[RuleContext], Iterable[Finding]]:
        register(code, source, card, check=fn)
        if requires is not None:
            REQUIREMENTS[code] = requires
        return fn

    return wrap


def src(line: int, path: str = "slime/utils/arguments.py") -> str:
    """A slime source citation, by default into slime/utils/arguments.py (where slime validates its args)."""
    return slime_source(path, line)


def msrc(line: int) -> str:
    """A citation into Megatron's megatron/training/arguments.py."""
    return megatron_source("megatron/training/arguments.py", line)


def finding(code: str, message: str, *, word: ScriptWord | None = None, line: int | None = None,
            flag: str | None = None, fix: str | None = None, severity: Severity | None = None,
            source: str | None = None) -> Finding:
    info = RULES[code]
    if word is not None and line is None:
        line = word.line
        if word.origin and word.origin not in message:
            message = f"{message} (from {word.origin})"
    return Finding(code=code, severity=severity or info.severity, message=message, line=line, flag=flag, fix=fix,
                   source=source or info.source or None, card=info.card)


class Skip(Exception):
    def __init__(self, flag: str, reason: str, hidden: bool) -> None:
        super().__init__(flag)
        self.flag = flag
        self.reason = reason
        self.hidden = hidden


def run_rules(ctx: RuleContext) -> list[Finding]:
    """Run every registered check. A check that needs an unknown value is skipped and said so: one note per
    unresolved flag naming the checks it held back, and one note for checks held back by hidden words."""
    out: list[Finding] = []
    hidden_skips: list[str] = []
    skipped: dict[str, tuple[str, list[RuleInfo]]] = {}
    gate = getattr(ctx, "code_gate", None)  # set when checking against a user's checkout
    backend = _train_backend(ctx)
    not_megatron: list[str] = []
    for info in list(RULES.values()):
        if info.check is None:
            continue
        if backend not in (None, "megatron") and info.code.startswith("MEG"):
            not_megatron.append(info.code)  # Megatron's checks do not apply to another training backend
            continue
        where = None
        if gate is not None:
            runs, where = gate.locate(info.code)
            if not runs:
                continue
        try:
            found = list(info.check(ctx))
            out.extend(f.model_copy(update={"source": where}) if where and f.source == (info.source or None)
                       else f for f in found)
        except Skip as skip:
            if skip.hidden:
                hidden_skips.append(info.code)
            else:
                skipped.setdefault(skip.flag, (skip.reason, []))[1].append(info)
    for flag, (reason, infos) in skipped.items():
        names = ", ".join(f"{i.code} ({i.title})" for i in infos)
        out.append(finding("SCRIPT004", f"{flag}: {reason}; not checked: {names}.", line=ctx.fact(flag).line,
                           flag=flag, fix="give the value literally (or from a variable set in the script) to "
                           "have it checked"))
    if not_megatron:
        out.append(finding("VER004", f"--train-backend {backend}: Megatron is not used, so its {len(not_megatron)} "
                           f"check(s) were skipped ({', '.join(not_megatron)}).", line=ctx.fact("--train-backend").line,
                           flag="--train-backend"))
    if hidden_skips:
        shown = ", ".join(f"{w.text} (line {w.line})" if w.line else w.text for w in ctx.parsed.hidden[:4])
        out.append(finding("SCRIPT011", f"{len(hidden_skips)} check(s) skipped ({', '.join(hidden_skips)}): the "
                           f"command contains unresolved words that could stand for any flags: {shown}.",
                           line=ctx.parsed.hidden[0].line if ctx.parsed.hidden else None,
                           fix="write those flags out, or make the variables resolvable in the script"))
    return out


def _train_backend(ctx: RuleContext) -> str | None:
    """The training backend the run uses: --train-backend when the catalog has it (else Megatron, the only
    backend before the flag existed); None when the value cannot be known."""
    try:
        if ctx.spec("--train-backend") is None:
            return "megatron"
        fact = ctx.fact("--train-backend", "megatron")
    except (AttributeError, TypeError):
        return None
    return str(fact.value) if fact.known and fact.value is not None else None


def list_rules() -> list[RuleInfo]:
    """Every finding code, sorted, with its title, default severity and source."""
    return sorted(RULES.values(), key=lambda r: (r.code.rstrip("0123456789"), int(r.code.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
                                                                                 or 0)))
