"""What a rule sees: the argument words split into flags and values the way slime's argparse parsers would
split them, and typed facts about each flag (absent with its default, set to a value, or unknown and why).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.batch import BatchResult
from core.findings import Finding, Severity
from core.launch.rules.derivations import gpu_layout, known_batch
from core.launch.rules.registry import Skip, finding
from core.launch.script import ScriptWord
from core.memory import MAX_GPUS

MAX_SUGGESTIONS = 20  # did-you-mean lookups per check (each scans the whole catalog)


class CheckOptions(BaseModel):
    entry: Literal["train.py", "train_async.py"] | None = None  # for bare arg lists; scripts carry their own
    gpus: int | None = Field(default=None, ge=1, le=MAX_GPUS)  # the user's saved GPU total (core.memory.profile)
    gpus_per_node: int | None = Field(default=None, ge=1, le=MAX_GPUS)  # GPUs a node of theirs has (the profile)
    catalog_path: Path | None = None  # an arguments.json, or a slime checkout to build one from
    script_path: Path | None = None  # where the checked script lives, when known (the CLI): resolves $SCRIPT_DIR
    sglang_source: Path | None = None  # the user's SGLang (installed package or checkout), with a slime checkout
    megatron_source: Path | None = None  # the user's Megatron-LM checkout, with a slime checkout
    # where the two GPU counts come from, as the findings name it ("--gpus 8" on the command line)
    gpus_from: str = "your profile"
    gpus_per_node_from: str = "your profile"



@dataclass
class Occurrence:
    """One flag on the command line with the words argparse would take as its value(s)."""

    flag: str  # as written (without =value)
    word: ScriptWord
    spec: Any | None  # FlagSpec when known
    values: list[ScriptWord] = field(default_factory=list)
    via: str = "exact"  # "exact" | "abbrev" | "unknown"

    @property
    def value_text(self) -> str | None:
        if not self.values:
            return None
        return " ".join(v.text for v in self.values)

    @property
    def resolved(self) -> bool:
        return all(v.resolved for v in self.values) and self.word.resolved


@dataclass
class ParsedArgs:
    occurrences: list[Occurrence]
    findings: list[Finding]
    hidden: list[ScriptWord]  # unresolved words in flag position: flags may hide there

    @property
    def complete(self) -> bool:
        return not self.hidden


def _is_flag_word(w: ScriptWord) -> bool:
    t = w.text
    if not w.resolved or not t.startswith("-") or t in ("-", "--"):
        return False
    if len(t) > 1 and (t[1].isdigit() or t[1] == "."):
        return False  # a negative number is a value
    return True


def _spilled_value(o: Occurrence, w: ScriptWord) -> Finding:
    """An unquoted variable whose value holds spaces is split by bash into several words: the flag before it
    takes the first word only, and the rest reach no parser (ARG008, tied to the flag that lost its value)."""
    var, _, value = (w.split_from or "").partition("=")
    got = " ".join(v.text for v in o.values)
    return finding("ARG008", f"{var} is not quoted, so bash splits its value '{value}' into words: {o.flag} gets "
                   f"only '{got}' and the rest of the value reaches no parser.", word=w, flag=o.flag,
                   fix=f'quote it: {o.flag} "{var}"')


def parse_words(words: list[ScriptWord], catalog: Any | None) -> ParsedArgs:
    """Split the words into flags and values the way slime's argparse parsers would."""
    occ: list[Occurrence] = []
    findings: list[Finding] = []
    hidden: list[ScriptWord] = []
    spilled: list[str] = []  # the unquoted variables already reported as split over a flag's value
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        if not _is_flag_word(w):
            if not w.resolved:
                hidden.append(w)
            elif w.text == "--":
                findings.append(finding("ARG008", "A bare `--` ends option parsing: argparse treats everything "
                                        "after it as positional words, which slime ignores.", word=w))
                break
            elif w.split_from and occ and any(v.split_from == w.split_from for v in occ[-1].values):
                if not spilled or spilled[-1] != w.split_from:
                    findings.append(_spilled_value(occ[-1], w))
                spilled.append(w.split_from)
            else:
                findings.append(finding("ARG008", f"'{w.text}' follows no flag that takes a value; no parser reads "
                                        "it.", word=w, fix="remove it, or put the flag it belongs to before it"))
            i += 1
            continue
        name, eq, inline = w.text.partition("=") if w.text.startswith("--") else (w.text, "", "")
        spec, via = _resolve_flag(name, catalog)
        o = Occurrence(flag=name, word=w, spec=spec, via=via)
        occ.append(o)
        i += 1
        if eq:
            o.values = [w.model_copy(update={"text": inline})]
            continue
        if spec is None:
            while i < n and not _is_flag_word(words[i]):  # an unknown flag: assume the words after are its value
                o.values.append(words[i])
                i += 1
            continue
        if not spec.takes_value:
            continue
        nargs = spec.nargs
        if nargs in ("+", "*"):
            while i < n and not _is_flag_word(words[i]):
                o.values.append(words[i])
                i += 1
        elif nargs == "?":
            if i < n and not _is_flag_word(words[i]):
                o.values.append(words[i])
                i += 1
        else:
            want = nargs if isinstance(nargs, int) else 1
            while want > 0 and i < n and not _is_flag_word(words[i]):
                o.values.append(words[i])
                i += 1
                want -= 1
        if not o.values and nargs not in ("*", "?"):
            findings.append(finding("ARG005", f"{name} needs a value but is followed by "
                                    f"{'another flag' if i < n else 'the end of the command'}; argparse stops "
                                    "with 'expected one argument'.", word=w, flag=name,
                                    fix=f"give {name} a value"))
    return ParsedArgs(occ, findings, hidden)


_OPTION_INDEX: dict[int, tuple[Any, list[str]]] = {}


def _is_prefix_of_another(catalog: Any, name: str) -> bool:
    """Whether some other option string starts with `name` (only then can argparse read it as a prefix)."""
    cached = _OPTION_INDEX.get(id(catalog))
    if cached is None or cached[0] is not catalog:
        _OPTION_INDEX.clear()
        cached = (catalog, sorted({o for f in catalog.flags for o in f.option_strings}))
        _OPTION_INDEX[id(catalog)] = cached
    options = cached[1]
    k = bisect.bisect_right(options, name)
    return k < len(options) and options[k].startswith(name)


def abbreviations(catalog: Any, name: str) -> dict[str, list[Any]]:
    """catalog.abbreviation_matches, skipped when no option string could start with `name`."""
    if catalog is None or not _is_prefix_of_another(catalog, name):
        return {}
    return catalog.abbreviation_matches(name)


def _resolve_flag(name: str, catalog: Any | None) -> tuple[Any | None, str]:
    if catalog is None:
        return None, "unknown"
    spec = catalog.lookup(name)
    if spec is not None:
        return spec, "exact"
    matches = {k: v for k, v in abbreviations(catalog, name).items() if _values_kept(catalog, k)}
    singles = [v[0] for v in matches.values() if len(v) == 1]
    if singles and len(matches) == len(singles):
        return singles[0], "abbrev"
    return None, "unknown"


def _values_kept(catalog: Any, parser_key: str) -> bool:
    """The throwaway SGLang TP parser only computes a default; its reading of a flag does not matter."""
    return parser_key != "sglang_tp"


HIDDEN = "hidden"  # the reason of a fact that unresolved words in flag position may hide
_INT_TYPES = {"int", "_positive_int", "_non_negative_int"}
_FLOAT_TYPES = {"float", "_positive_float"}


@dataclass
class Fact:
    """What the checker knows about one flag: absent (default), set to a value, or unknown."""

    state: str  # "set" | "absent" | "unknown"
    value: Any = None
    flag: str | None = None
    line: int | None = None
    reason: str | None = None

    @property
    def known(self) -> bool:
        return self.state != "unknown"

    @property
    def present(self) -> bool:
        return self.state == "set"


def convert_value(spec: Any, text: str) -> tuple[Any, str | None]:
    """Convert a value the way argparse would for this flag's type; return (value, error)."""
    t = spec.type if spec is not None else None
    try:
        if t in _INT_TYPES:
            v = int(text)
            if t == "_positive_int" and v <= 0 or t == "_non_negative_int" and v < 0:
                return None, f"{text} is out of range for {t}"
            return v, None
        if t in _FLOAT_TYPES:
            v = float(text)
            if t == "_positive_float" and not v > 0:
                return None, f"{text} is not positive"
            return v, None
        if t == "json.loads":
            return json.loads(text), None
    except (ValueError, TypeError) as exc:
        return None, str(exc)
    return text, None


class RuleContext:
    """What a rule sees: typed facts about flags, the entry and the options. What several rules need (the batch
    arithmetic, the GPU layout) comes from core.launch.rules.derivations, cached in `derived`; rules store
    nothing here for one another."""

    def __init__(self, parsed: ParsedArgs, catalog: Any | None, options: CheckOptions, entry: str | None,
                 command_line: int | None = None) -> None:
        self.parsed = parsed
        self.command_line = command_line
        self.catalog = catalog
        self.options = options
        self.entry = entry
        self.by_dest: dict[str, list[Occurrence]] = {}
        self.invalid: set[str] = set()
        for o in parsed.occurrences:
            if o.spec is not None:
                self.by_dest.setdefault(o.spec.dest, []).append(o)
        self.suggestions_left = MAX_SUGGESTIONS
        self.derived: dict[Any, tuple[Any, Skip | None]] = {}  # the cache of core.launch.rules.derivations
        self.code_gate: Any = None  # core.launch.rules.versions.CodeGate when checking against a user's checkout

    @property
    def batch(self) -> BatchResult | None:
        """The batch arithmetic for the report's summary (None when it cannot be computed)."""
        return known_batch(self)

    @property
    def layout(self) -> dict[str, Any]:
        """The GPU layout for the report's summary (empty when a switch it needs is unknown)."""
        try:
            return gpu_layout(self)
        except Skip:
            return {}

    def spec(self, option: str) -> Any | None:
        return self.catalog.lookup(option) if self.catalog is not None else None

    def fact(self, option: str, default: Any = None) -> Fact:
        spec = self.spec(option)
        dest = spec.dest if spec is not None else option.lstrip("-").replace("-", "_")
        occs = self.by_dest.get(dest, [])
        if not occs:
            if not self.parsed.complete:
                return Fact("unknown", flag=option, reason=HIDDEN)
            if spec is not None:
                if spec.default is None and spec.default_repr:
                    return Fact("unknown", flag=option, reason=f"its default ({spec.default_repr}) is computed at "
                                "run time")
                return Fact("absent", spec.default if spec.default is not None else default, flag=option)
            return Fact("absent", default, flag=option)
        last = occs[-1]
        flag, line = last.flag, last.word.line
        if any(o.word.conditional for o in occs):
            return Fact("unknown", flag=flag, line=line, reason=f"{flag} is set inside an if/else branch")
        if dest in self.invalid:
            return Fact("unknown", flag=flag, line=line, reason=f"the value of {flag} is invalid")
        action = last.spec.action
        if not last.spec.takes_value:
            if action == "store_false":
                return Fact("set", False, flag, line)
            if action == "boolean_optional":
                return Fact("set", not flag.startswith("--no-"), flag, line)
            return Fact("set", True, flag, line)
        if not last.resolved:
            bad = next((v for v in last.values if not v.resolved), last.word)
            return Fact("unknown", flag=flag, line=line, reason=f"the value of {flag} ({bad.text}) is unresolved: "
                        f"{bad.reason or 'not known statically'}")
        if spec is not None and spec.nargs in ("+", "*") or (spec is not None and isinstance(spec.nargs, int)
                                                           and spec.nargs > 1):
            return Fact("set", [convert_value(spec, v.text)[0] for v in last.values], flag, line)
        if not last.values:
            return Fact("set", None, flag, line)
        value, err = convert_value(spec, last.values[0].text)
        if err:
            return Fact("unknown", flag=flag, line=line, reason=f"the value of {flag} is invalid")
        return Fact("set", value, flag, line)

    def need(self, option: str, default: Any = None) -> Any:
        """The value of a flag (its default when absent); raise Skip when it cannot be known."""
        f = self.fact(option, default)
        if not f.known:
            raise Skip(option, f.reason or "unknown", f.reason == HIDDEN)
        return f.value

    def is_set(self, option: str) -> bool:
        """Whether the flag is given (switches: and true); raise Skip when that cannot be known."""
        f = self.fact(option)
        if not f.known:
            raise Skip(option, f.reason or "unknown", f.reason == HIDDEN)
        return f.present and f.value is not False

    def line_of(self, option: str) -> int | None:
        return self.fact(option).line

    def hit(self, code: str, message: str, *, flag: str | None = None, fix: str | None = None,
            severity: Severity | None = None, line: int | None = None, source: str | None = None) -> Finding:
        if line is None and flag is not None:
            line = self.line_of(flag)
        if line is None:
            line = self.command_line
        return finding(code, message, line=line, flag=flag, fix=fix, severity=severity, source=source)
