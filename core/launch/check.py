"""The launch-script checker: what slime would do with a command line, found before `ray job submit`.

slime hands its command line to several argparse parsers that all ignore what they do not know
(megatron/training/arguments.py:100@1dcf0daf, called with ignore_unknown_args=True from
slime/backends/megatron_utils/arguments.py:195@624b824a), so a misspelt flag is dropped without a word and
its default is used. Most of slime's own checks run only once the job is on the cluster. This module reads a
launch script (or a bare argument list) statically, classifies every flag against the argument catalog, and
runs the checks that can be decided without GPUs, each one a small function citing its upstream source.

Finding codes (stable; `slime-assistant check-args --list-rules` prints this table with sources):

    SCRIPT001 error    the input is not a readable script (binary, NUL bytes, too large)
    SCRIPT002 warning  the input is not valid UTF-8
    SCRIPT003 error    an unterminated quote, expansion or array: bash would refuse the script
    SCRIPT004 info     a value the checker cannot resolve statically ($(...), backticks, environment, loops)
    SCRIPT005 warning  no `python ... train.py` / `train_async.py` command found
    SCRIPT006 info     several train commands: the last one is checked
    SCRIPT007 info     a sourced file: model scripts are taken from the catalog, other files are unknown
    SCRIPT008 error    flags that begin a command of their own (a comment or stray space broke the `\\` chain)
    SCRIPT009 info     the train command sits inside an if, loop or function
    SCRIPT010 warning  a here-document that is never closed
    SCRIPT011 info     checks skipped because unresolved words could hide flags
    ARG001    error    unknown flag: slime silently ignores it (with a did-you-mean)
    ARG002    warning  a flag given twice with different values (says which one wins)
    ARG003    warning  an abbreviation SGLang's parser silently expands
    ARG004    error    an abbreviation argparse finds ambiguous: it stops with an error
    ARG005    error    a flag that needs a value has none
    ARG006    error    a value argparse cannot convert to the flag's type
    ARG007    error    a value outside the flag's choices
    ARG008    warning  a word no parser reads (a value after a switch, or a stray word)
    ARG009    error    a required flag is missing
    ARG010    error    a flag only another launcher registers
    ARG011    error    an SGLang flag slime deliberately does not register (it sets the value itself)
    ARG012    warning  a deprecated flag
    ARG013    info     --custom-config-path: a YAML file may override any value checked here
    BATCH001  error    the batch equation fails (error when slime asserts, warning when samples are dropped)
    BATCH002  info     the equation holds with a different number of steps than given or assumed
    BATCH003  warning  no global batch: Megatron falls back to micro batch x data-parallel size
    BATCH004  error    a rollout is smaller than one global batch: no training step can run
    BATCH005  info     --num-rollout 0: nothing is trained
    BATCH006  error    static batching: a step's micro-batches do not split evenly over data-parallel ranks
    BATCH007  error    the global batch is smaller than the data-parallel size
    ENTRY001  error    train_async.py refuses --colocate
    ENTRY002  info     bare argument list without an entry: entry-specific checks skipped
    GPU001    error    a disaggregated run without --rollout-num-gpus
    GPU002    warning  rollout GPUs do not divide into whole engines (error when not even one engine fits)
    GPU003    error    the run needs more GPUs than the saved profile has (info when it uses fewer)
    MEG001    error    world size not divisible by TP x PP x CP
    MEG002    error    layers not divisible by the pipeline size
    MEG003    error    attention heads do not divide the hidden size (no --kv-channels)
    MEG004    error    --min-lr above --lr
    MEG005    error    --save without --save-interval
    MEG006    error    required model flags missing (--num-layers, --hidden-size, --num-attention-heads)
    MEG007    error    removed Megatron flags (--batch-size, --warmup, --model-parallel-size, --checkpoint-activations)
    MEG008    error    sequence length not a multiple of 2 x CP
    MEG009    error    --max-position-embeddings below the sequence length
    MEG010    error    expert parallelism without a divisible --num-experts
    MEG011    error    selective recompute with a recompute method
    MEG012    error    uneven pipeline layer counts with pipeline size 1
    MODE001   warning  --micro-batch-size has no effect under --use-dynamic-batch-size
    MODE002   warning  --max-tokens-per-gpu has no effect without --use-dynamic-batch-size
    MODE003   warning  --sequence-parallel has no effect with tensor parallel size 1
    MODE004   warning  --num-epoch is ignored when --num-rollout is given
    MODE005   warning  --kl-loss-coef has no effect without --use-kl-loss
    MODE006   info     --use-kl-loss with --kl-loss-coef 0: the reference model is loaded for nothing but logs
    MODE007   warning  eval data without --eval-interval: no evaluation runs
    MODE008   warning  offload flags ignored under --colocate --release-train
    SGL001    error    --rollout-num-gpus-per-engine not divisible by the SGLang pipeline size
    SGL002    error    --sglang-dp-size > 1 without --sglang-enable-dp-attention
    SGL003    error    mutually exclusive SGLang deployment options
    SLIME001  error    --rollout-temperature must be > 0
    SLIME002  error    KL needs --ref-load
    SLIME003  error    --kl-coef and --kl-loss-coef both non-zero
    SLIME004  error    on-policy distillation options inconsistent
    SLIME005  error    --eval-interval without eval data
    SLIME006  error    --save-interval without --save
    SLIME007  error    REINFORCE++ estimators need --normalize-advantages
    SLIME008  error    --use-rollout-logprobs with --use-tis
    SLIME009  error    --get-mismatch-metrics without --custom-tis-function-path
    SLIME010  error    --use-dynamic-batch-size without --max-tokens-per-gpu
    SLIME011  error    --balance-by-flops without --use-dynamic-batch-size
    SLIME012  error    debug train/rollout data paths equal
    SLIME013  error    --debug-rollout-only with --debug-train-only
    SLIME014  error    --over-sampling-batch-size below --rollout-batch-size
    SLIME015  error    neither --num-rollout nor --num-epoch (or --num-epoch without the global dataset)
    SLIME016  error    --enable-mtp-training without --mtp-num-layers
    SLIME017  error    prompt length leaves no room for a response in the context length
    SLIME018  error    --only-train-params-name-list with --freeze-params-name-list
    SLIME019  error    disk weight transport without --update-weight-disk-dir
    SLIME020  error    --release-train requirements
    SLIME021  error    delta weight updates requirements
    SLIME022  info     --n-samples-per-prompt 1 turns GRPO std normalisation off
    SLIME023  warning  CISPO with --eps-clip below 1
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.batch import BATCH_CARD, BatchInputError, BatchResult, check_batch_equation
from core.findings import Finding, Severity, count_by_severity, sort_and_dedupe
from core.launch.script import (
    MAX_NOTES_PER_KIND,
    MAX_SCRIPT_CHARS,
    ReadScript,
    ScriptNote,
    ScriptWord,
    SourcedModel,
    decode_script_bytes,
    looks_like_arg_list,
    model_script_name,
    read_arg_list_text,
    read_launch_script,
)
from core.memory import MAX_GPUS
from core.pins import megatron_source, slime_source

ARGS_CARD = "argument-categories"
MAX_SUGGESTIONS = 20  # did-you-mean lookups per check (each scans the whole catalog)
MAX_UNKNOWN_LISTED = 200  # unknown flags listed one by one; the rest are counted in one finding

ERR, WARN, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


# --------------------------------------------------------------------------------------------------
# API
# --------------------------------------------------------------------------------------------------
class CheckOptions(BaseModel):
    entry: Literal["train.py", "train_async.py"] | None = None  # for bare arg lists; scripts carry their own
    gpus: int | None = Field(default=None, ge=1, le=MAX_GPUS)  # the user's saved GPU total (core.memory.profile)
    catalog_path: Path | None = None  # an arguments.json, or a slime checkout to build one from


class CheckReport(BaseModel):
    findings: list[Finding]
    categories: dict[str, str]
    values: dict[str, str | None]
    entry: str | None
    summary: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not any(f.severity == Severity.ERROR for f in self.findings)


# --------------------------------------------------------------------------------------------------
# Rule registry
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuleInfo:
    code: str
    title: str
    severity: Severity
    source: str
    card: str | None = None
    check: Callable[[RuleContext], Iterable[Finding]] | None = None


RULES: dict[str, RuleInfo] = {}


def _register(code: str, title: str, severity: Severity, source: str, card: str | None = None,
              check: Callable[[RuleContext], Iterable[Finding]] | None = None) -> RuleInfo:
    info = RuleInfo(code, title, severity, source, card, check)
    RULES[code] = info
    return info


def rule(code: str, title: str, severity: Severity, source: str, card: str | None = None):
    """Register a check function under a stable code."""

    def wrap(fn: Callable[[RuleContext], Iterable[Finding]]) -> Callable[[RuleContext], Iterable[Finding]]:
        _register(code, title, severity, source, card, fn)
        return fn

    return wrap


SRC_IGNORE_UNKNOWN = megatron_source("megatron/training/arguments.py", 100)
SRC_SGLANG_PARSE = slime_source("slime/backends/sglang_utils/arguments.py", 225)

_register("SCRIPT001", "Not a readable script", ERR, "")
_register("SCRIPT002", "Not valid UTF-8", WARN, "")
_register("SCRIPT003", "Unterminated quote, expansion or array", ERR, "https://www.gnu.org/software/bash/manual/")
_register("SCRIPT004", "Value not resolvable statically", INFO, "https://www.gnu.org/software/bash/manual/")
_register("SCRIPT005", "No train.py / train_async.py command", WARN, slime_source("train.py"))
_register("SCRIPT006", "Several train commands", INFO, slime_source("train.py"))
_register("SCRIPT007", "Sourced file", INFO, slime_source("scripts/models"))
_register("SCRIPT008", "Flags outside the train command", ERR, "https://www.gnu.org/software/bash/manual/")
_register("SCRIPT009", "Train command inside a conditional", INFO, "https://www.gnu.org/software/bash/manual/")
_register("SCRIPT010", "Unclosed here-document", WARN, "https://www.gnu.org/software/bash/manual/")
_register("SCRIPT011", "Checks skipped: hidden words", INFO, "")
_register("ARG001", "Unknown flag", ERR, SRC_IGNORE_UNKNOWN, ARGS_CARD)
_register("ARG002", "Repeated flag", WARN, "https://docs.python.org/3/library/argparse.html#action", ARGS_CARD)
_register("ARG003", "Abbreviated flag", WARN, SRC_SGLANG_PARSE, ARGS_CARD)
_register("ARG004", "Ambiguous abbreviation", ERR, SRC_SGLANG_PARSE, ARGS_CARD)
_register("ARG005", "Missing value", ERR, "https://docs.python.org/3/library/argparse.html#nargs", ARGS_CARD)
_register("ARG006", "Value of the wrong type", ERR, "https://docs.python.org/3/library/argparse.html#type", ARGS_CARD)
_register("ARG007", "Value outside the choices", ERR, "https://docs.python.org/3/library/argparse.html#choices",
          ARGS_CARD)
_register("ARG008", "Word no parser reads", WARN, SRC_IGNORE_UNKNOWN, ARGS_CARD)
_register("ARG009", "Required flag missing", ERR, slime_source("slime/utils/arguments.py", 693), ARGS_CARD)
_register("ARG010", "Flag of another launcher", ERR, SRC_IGNORE_UNKNOWN, ARGS_CARD)
_register("ARG011", "SGLang flag slime does not register", ERR,
          slime_source("slime/backends/sglang_utils/arguments.py", 53), ARGS_CARD)
_register("ARG012", "Deprecated flag", WARN, SRC_IGNORE_UNKNOWN, ARGS_CARD)
_register("ARG013", "Values may be overridden by a YAML file", INFO, slime_source("slime/utils/arguments.py", 2013))
_register("BATCH002", "Batch equation holds with other steps", INFO, slime_source("slime/utils/dp_schedule.py", 135),
          BATCH_CARD)
_register("BATCH003", "No global batch size", WARN, megatron_source("megatron/training/arguments.py", 498),
          BATCH_CARD)
_register("BATCH004", "Rollout smaller than one global batch", ERR, slime_source("slime/utils/dp_schedule.py", 136),
          BATCH_CARD)


# --------------------------------------------------------------------------------------------------
# Parsing the argument words against the catalog
# --------------------------------------------------------------------------------------------------
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


def _finding(code: str, message: str, *, word: ScriptWord | None = None, line: int | None = None,
             flag: str | None = None, fix: str | None = None, severity: Severity | None = None,
             source: str | None = None) -> Finding:
    info = RULES[code]
    if word is not None and line is None:
        line = word.line
        if word.origin and word.origin not in message:
            message = f"{message} (from {word.origin})"
    return Finding(code=code, severity=severity or info.severity, message=message, line=line, flag=flag, fix=fix,
                   source=source or info.source or None, card=info.card)


def parse_words(words: list[ScriptWord], catalog: Any | None) -> ParsedArgs:
    """Split the words into flags and values the way slime's argparse parsers would."""
    occ: list[Occurrence] = []
    findings: list[Finding] = []
    hidden: list[ScriptWord] = []
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        if not _is_flag_word(w):
            if not w.resolved:
                hidden.append(w)
            elif w.text == "--":
                findings.append(_finding("ARG008", "A bare `--` ends option parsing: argparse treats everything "
                                         "after it as positional words, which slime ignores.", word=w))
                break
            else:
                findings.append(_finding("ARG008", f"'{w.text}' follows no flag that takes a value; no parser reads "
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
            findings.append(_finding("ARG005", f"{name} needs a value but is followed by "
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


# --------------------------------------------------------------------------------------------------
# Facts for the rules
# --------------------------------------------------------------------------------------------------
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


class Skip(Exception):
    def __init__(self, flag: str, reason: str, hidden: bool) -> None:
        super().__init__(flag)
        self.flag = flag
        self.reason = reason
        self.hidden = hidden


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
    """What a rule sees: typed facts about flags, the entry, the options and the batch arithmetic."""

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
        self.batch: BatchResult | None = None
        self.suggestions_left = MAX_SUGGESTIONS
        self.layout: dict[str, Any] = {}
        self.layout_unknown: Skip | None = None

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
        return _finding(code, message, line=line, flag=flag, fix=fix, severity=severity, source=source)


# --------------------------------------------------------------------------------------------------
# Flag-level findings: unknown, repeated, abbreviated, typed, deprecated
# --------------------------------------------------------------------------------------------------
def flag_findings(ctx: RuleContext) -> list[Finding]:
    out: list[Finding] = []
    catalog = ctx.catalog
    seen: dict[str, list[Occurrence]] = {}
    unknown = 0
    for o in ctx.parsed.occurrences:
        w, name = o.word, o.flag
        if catalog is not None and o.spec is None:
            unknown += 1
            if unknown <= MAX_UNKNOWN_LISTED:
                out.append(_unknown_flag_finding(ctx, o))
            continue
        if o.spec is None:
            continue
        spec = o.spec
        if o.via == "abbrev":
            out.append(_finding("ARG003", f"{name} is not a flag; SGLang's parser (which accepts unique prefixes) "
                                f"reads it as {spec.primary}. Megatron's parser ignores it.", word=w, flag=name,
                                fix=f"write {spec.primary} in full"))
        amb = {k: v for k, v in abbreviations(catalog, name).items() if len(v) > 1}
        if amb and o.via == "exact" and any(k not in spec.parsers for k in amb):
            opts = sorted({f.primary for v in amb.values() for f in v})[:4]
            out.append(_finding("ARG004", f"{name} is also a prefix of several SGLang-side flags ({', '.join(opts)}); "
                                "that parser stops with 'ambiguous option'.", word=w, flag=name,
                                fix="rename or remove the flag"))
        if spec.entry_point and ctx.entry and not spec.entry_point.endswith(ctx.entry):
            out.append(_finding("ARG010", f"{name} is registered only by {spec.entry_point}; {ctx.entry} does not "
                                "know it and ignores it silently.", word=w, flag=name, source=spec.source))
        if spec.action.startswith("Deprecated"):
            effect = ("it is accepted but does nothing" if spec.action == "DeprecatedAction"
                      else "it still works but prints a warning and will be removed")
            detail = "; ".join(spec.notes) if spec.notes else ""
            out.append(_finding("ARG012", f"{name} is deprecated in SGLang {catalog.pins.get('sglang', '')}: {effect}"
                                + (f" ({detail})" if detail else "") + ".", word=w, flag=name, source=spec.source,
                                fix=next(("use " + n.split("use ", 1)[1] for n in spec.notes if "use " in n), None)))
        out.extend(_value_findings(ctx, o))
        seen.setdefault(spec.dest, []).append(o)
    if unknown > MAX_UNKNOWN_LISTED:
        out.append(_finding("ARG001", f"... and {unknown - MAX_UNKNOWN_LISTED} more unknown flags; only the first "
                            f"{MAX_UNKNOWN_LISTED} are listed (see the categories table for all of them)."))
    for occs in seen.values():
        if len(occs) < 2 or occs[0].spec.action in ("append", "count", "append_const"):
            continue
        texts = [o.value_text if o.spec.takes_value else o.flag for o in occs]
        last = occs[-1]
        where = ", ".join(f"line {o.word.line}" if o.word.line else o.flag for o in occs)
        if len(set(texts)) > 1:
            shown = "; ".join(f"{o.flag} {t if o.spec.takes_value else ''}".strip() for o, t in zip(occs, texts, strict=True))
            msg = (f"{last.spec.primary} is given {len(occs)} times with different values ({shown}; {where}); "
                   f"argparse keeps the last one: {last.flag} {texts[-1] if last.spec.takes_value else ''}".strip())
            out.append(_finding("ARG002", msg, line=last.word.line, flag=last.flag,
                                fix="keep one occurrence so the script says what runs"))
        else:
            out.append(_finding("ARG002", f"{last.spec.primary} is given {len(occs)} times with the same value "
                                f"({where}).", line=last.word.line, flag=last.flag, severity=INFO))
    return out


def _unknown_flag_finding(ctx: RuleContext, o: Occurrence) -> Finding:
    catalog, name, w = ctx.catalog, o.flag, o.word
    skipped = catalog.lookup_skipped(name) if hasattr(catalog, "lookup_skipped") else None
    if skipped is not None:
        return _finding("ARG011", f"slime does not register {name} (SGLang's {skipped.upstream_option_strings[0]}): "
                        "it sets that value itself, so the flag is silently ignored.", word=w, flag=name,
                        source=skipped.source,
                        fix="remove it; for the engine size use --rollout-num-gpus-per-engine" if
                        skipped.dest == "tp_size" else "remove it")
    amb = {k: v for k, v in abbreviations(catalog, name).items() if len(v) > 1}
    if amb:
        opts = sorted({f.primary for v in amb.values() for f in v})
        shown = ", ".join(opts[:5]) + (", ..." if len(opts) > 5 else "")
        return _finding("ARG004", f"{name} is an ambiguous abbreviation ({shown}); SGLang's parser stops with "
                        "'ambiguous option' before anything runs.", word=w, flag=name,
                        fix=f"write the full flag, e.g. {opts[0]}")
    value = f" {o.value_text}" if o.values else ""
    known_myth = FOLKLORE_FLAGS.get(name)
    if known_myth is None and name.startswith("--sglang-router-") and catalog.lookup("--" + name[len("--sglang-"):]):
        known_myth = (f"use {'--' + name[len('--sglang-'):]}: slime gives router options a plain --router- prefix",
                      slime_source("slime/backends/sglang_utils/arguments.py", 34))
    if known_myth is not None:
        fix, source = known_myth
        found = _finding("ARG001", f"{name}{value} appears in popular descriptions of slime, but no parser defines "
                         f"it at slime {catalog.pins.get('slime', '')}; slime would silently ignore it.", word=w,
                         flag=name, fix=fix, source=source)
        return found.model_copy(update={"card": FOLKLORE_CARD})
    ctx.suggestions_left -= 1
    guesses = catalog.suggest(name, 3) if ctx.suggestions_left >= 0 else []
    fix = f"did you mean {' or '.join(guesses)}?" if guesses else "remove it, or check the spelling in slime's docs"
    return _finding("ARG001", f"{name}{value} is not a flag slime, Megatron or SGLang knows; slime would silently "
                    "ignore it and run with the default instead.", word=w, flag=name, fix=fix)


FOLKLORE_CARD = "source-vs-folklore"
_TURNS_FIX = ("put max_turns in a YAML file passed with --custom-config-path (slime copies its keys onto args) and "
              "read it in your generate function")
FOLKLORE_FLAGS: dict[str, tuple[str, str]] = {
    "--async-buffer-size": ("launch train_async.py and tune --update-weights-interval",
                            slime_source("slime/utils/arguments.py", 537)),
    "--max-turns": (_TURNS_FIX, slime_source("slime/utils/arguments.py", 2013)),
    "--initial-megatron-checkpoint": ("use --ref-load (and --load to resume)", slime_source("slime/utils/arguments.py",
                                                                                           842)),
    "--num-data-workers": ("remove it", SRC_IGNORE_UNKNOWN),
    "--streaming-data": ("remove it", SRC_IGNORE_UNKNOWN),
}
"""Flags that widely copied descriptions of slime use but no parser defines at the pin (see the card)."""


def _value_findings(ctx: RuleContext, o: Occurrence) -> list[Finding]:
    spec, out = o.spec, []
    if not spec.takes_value:
        if o.values:  # --switch=value
            out.append(_finding("ARG006", f"{o.flag} takes no value but is written with '={o.values[0].text}'; "
                                "argparse stops with 'ignored explicit argument'.", word=o.word, flag=o.flag,
                                fix=f"write {o.flag} alone"))
            ctx.invalid.add(spec.dest)
        return out
    for v in o.values:
        if not v.resolved:
            continue
        value, err = convert_value(spec, v.text)
        if err:
            ctx.invalid.add(spec.dest)
            out.append(_finding("ARG006", f"{o.flag} expects {spec.type} but gets '{v.text}'; argparse stops with "
                                "'invalid value'.", word=v, flag=o.flag, source=spec.source))
            continue
        if spec.choices and str(value) not in {str(c) for c in spec.choices}:
            ctx.invalid.add(spec.dest)
            choices = ", ".join(str(c) for c in spec.choices[:12])
            out.append(_finding("ARG007", f"{o.flag} is '{v.text}', not one of its choices ({choices}); argparse "
                                "stops with 'invalid choice'.", word=v, flag=o.flag, source=spec.source))
    return out


# --------------------------------------------------------------------------------------------------
# Rules ported from slime (slime/utils/arguments.py slime_validate_args)
# --------------------------------------------------------------------------------------------------
def _src(line: int, path: str = "slime/utils/arguments.py") -> str:
    return slime_source(path, line)


@rule("ARG009", "Required flag missing", ERR, _src(693), ARGS_CARD)
def required_rollout_batch_size(ctx: RuleContext) -> Iterable[Finding]:
    """--rollout-batch-size is declared required: without it argparse stops before anything runs."""
    if ctx.fact("--rollout-batch-size").state == "absent":
        yield ctx.hit("ARG009", "--rollout-batch-size is required (argparse stops with 'the following arguments are "
                      "required').", flag="--rollout-batch-size", fix="add --rollout-batch-size N (prompts per "
                      "rollout)")


@rule("SLIME001", "--rollout-temperature must be > 0", ERR, _src(1770))
def temperature_positive(ctx: RuleContext) -> Iterable[Finding]:
    """slime refuses a rollout temperature of 0 or below: greedy decoding is not an RL policy."""
    t = ctx.need("--rollout-temperature", 1.0)
    if t is not None and t <= 0:
        yield ctx.hit("SLIME001", f"--rollout-temperature is {t}; slime requires > 0 (0 is greedy decoding, not a "
                      "valid RL policy).", flag="--rollout-temperature", fix="use a temperature such as 1.0")


@rule("SLIME002", "KL needs --ref-load", ERR, _src(1776))
def kl_needs_ref_load(ctx: RuleContext) -> Iterable[Finding]:
    """With --kl-coef != 0 or --use-kl-loss, slime checks that --ref-load exists; without it the check fails."""
    kl_coef = ctx.need("--kl-coef", 0.0)
    use_kl = ctx.is_set("--use-kl-loss")
    if (kl_coef or use_kl) and ctx.need("--ref-load") is None:
        why = "--use-kl-loss" if use_kl else f"--kl-coef {kl_coef}"
        yield ctx.hit("SLIME002", f"{why} needs the reference model, but --ref-load is not given; slime's check of "
                      "the reference path fails before training.", flag="--use-kl-loss" if use_kl else "--kl-coef",
                      fix="add --ref-load /path/to/model_torch_dist")


@rule("SLIME003", "--kl-coef and --kl-loss-coef both non-zero", ERR, _src(1846))
def kl_coef_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """Only one of --kl-coef (reward shaping) and --kl-loss-coef (loss term) may be non-zero."""
    a, b = ctx.need("--kl-coef", 0.0), ctx.need("--kl-loss-coef", 0.0)
    if a and b:
        yield ctx.hit("SLIME003", f"--kl-coef {a} and --kl-loss-coef {b} are both non-zero; slime allows only one.",
                      flag="--kl-loss-coef", fix="set one of them to 0")


@rule("SLIME004", "On-policy distillation options inconsistent", ERR, _src(1786))
def opd_consistent(ctx: RuleContext) -> Iterable[Finding]:
    """--use-opd needs --opd-type; megatron OPD needs --opd-teacher-load; sglang OPD and no OPD forbid it."""
    use_opd = ctx.is_set("--use-opd")
    teacher = ctx.need("--opd-teacher-load")
    if not use_opd:
        if teacher is not None:
            yield ctx.hit("SLIME004", "--opd-teacher-load is set but --use-opd is not; slime refuses this.",
                          flag="--opd-teacher-load", fix="add --use-opd or remove --opd-teacher-load",
                          source=_src(1814))
        return
    kind = ctx.need("--opd-type")
    if kind is None:
        yield ctx.hit("SLIME004", "--use-opd needs --opd-type (sglang or megatron).", flag="--use-opd",
                      fix="add --opd-type sglang or --opd-type megatron", source=_src(1787))
    elif kind == "megatron" and teacher is None:
        yield ctx.hit("SLIME004", "--opd-type megatron needs --opd-teacher-load (the teacher checkpoint).",
                      flag="--opd-type", fix="add --opd-teacher-load /path/to/teacher_torch_dist", source=_src(1791))
    elif kind == "sglang" and teacher is not None:
        yield ctx.hit("SLIME004", "--opd-type sglang takes teacher log-probs from a server; --opd-teacher-load "
                      "must not be set.", flag="--opd-teacher-load", fix="remove --opd-teacher-load",
                      source=_src(1807))


@rule("SLIME005", "--eval-interval without eval data", ERR, _src(1841))
def eval_interval_needs_data(ctx: RuleContext) -> Iterable[Finding]:
    """An eval interval needs eval datasets (--eval-prompt-data or --eval-config)."""
    if ctx.need("--eval-interval") is None:
        return
    if ctx.need("--eval-prompt-data") is None and ctx.need("--eval-config") is None:
        yield ctx.hit("SLIME005", f"--eval-interval {ctx.need('--eval-interval')} is set but no evaluation data is "
                      "given; slime's assertion fails.", flag="--eval-interval",
                      fix="add --eval-prompt-data NAME PATH (or --eval-config FILE), or remove --eval-interval")


@rule("SLIME006", "--save-interval without --save", ERR, _src(1844))
def save_interval_needs_save(ctx: RuleContext) -> Iterable[Finding]:
    """--save-interval needs --save (where to write)."""
    si = ctx.need("--save-interval")
    if si is not None and ctx.need("--save") is None:
        yield ctx.hit("SLIME006", f"--save-interval {si} is set without --save; slime's assertion fails.",
                      flag="--save-interval", fix="add --save /path/to/checkpoints")


@rule("SLIME007", "REINFORCE++ needs --normalize-advantages", ERR, _src(1849))
def reinforce_needs_normalization(ctx: RuleContext) -> Iterable[Finding]:
    """The reinforce_plus_plus estimators require advantage normalisation."""
    est = ctx.need("--advantage-estimator", "grpo")
    if est in ("reinforce_plus_plus", "reinforce_plus_plus_baseline") and not ctx.is_set("--normalize-advantages"):
        yield ctx.hit("SLIME007", f"--advantage-estimator {est} requires --normalize-advantages.",
                      flag="--advantage-estimator", fix="add --normalize-advantages")


@rule("SLIME008", "--use-rollout-logprobs with --use-tis", ERR, _src(1855))
def rollout_logprobs_vs_tis(ctx: RuleContext) -> Iterable[Finding]:
    """--use-rollout-logprobs and --use-tis cannot be combined."""
    if ctx.is_set("--use-rollout-logprobs") and ctx.is_set("--use-tis"):
        yield ctx.hit("SLIME008", "--use-rollout-logprobs and --use-tis cannot be set together.", flag="--use-tis",
                      fix="keep one of them")


@rule("SLIME009", "--get-mismatch-metrics needs --custom-tis-function-path", ERR, _src(1859))
def mismatch_metrics_need_tis_fn(ctx: RuleContext) -> Iterable[Finding]:
    """--get-mismatch-metrics requires --custom-tis-function-path."""
    if ctx.is_set("--get-mismatch-metrics") and ctx.need("--custom-tis-function-path") is None:
        yield ctx.hit("SLIME009", "--get-mismatch-metrics needs --custom-tis-function-path.",
                      flag="--get-mismatch-metrics", fix="add --custom-tis-function-path module.function")


@rule("SLIME010", "--use-dynamic-batch-size needs --max-tokens-per-gpu", ERR, _src(1868))
def dynamic_batch_needs_max_tokens(ctx: RuleContext) -> Iterable[Finding]:
    """Dynamic batching packs micro-batches up to --max-tokens-per-gpu, so that flag is required."""
    if ctx.is_set("--use-dynamic-batch-size") and ctx.need("--max-tokens-per-gpu") is None:
        yield ctx.hit("SLIME010", "--use-dynamic-batch-size needs --max-tokens-per-gpu; slime's assertion fails.",
                      flag="--use-dynamic-batch-size", fix="add --max-tokens-per-gpu N (e.g. the longest response "
                      "length divided by the context-parallel size)")


@rule("SLIME011", "--balance-by-flops needs --use-dynamic-batch-size", ERR, _src(1873))
def flops_balance_needs_dynamic(ctx: RuleContext) -> Iterable[Finding]:
    """--balance-by-flops works only with dynamic batching."""
    if ctx.is_set("--balance-by-flops") and not ctx.is_set("--use-dynamic-batch-size"):
        yield ctx.hit("SLIME011", "--balance-by-flops requires --use-dynamic-batch-size.", flag="--balance-by-flops",
                      fix="add --use-dynamic-batch-size --max-tokens-per-gpu N, or remove --balance-by-flops")


@rule("SLIME012", "Debug train and rollout data paths equal", ERR, _src(1895))
def debug_dump_paths_differ(ctx: RuleContext) -> Iterable[Finding]:
    """--save-debug-train-data must differ from --save-debug-rollout-data (unless --dump-details sets both)."""
    if ctx.need("--dump-details") is not None:
        return
    train, rollout = ctx.need("--save-debug-train-data"), ctx.need("--save-debug-rollout-data")
    if train is not None and train == rollout:
        yield ctx.hit("SLIME012", f"--save-debug-train-data and --save-debug-rollout-data are both '{train}'; slime "
                      "refuses equal paths.", flag="--save-debug-train-data", fix="use two different paths")


@rule("SLIME013", "--debug-rollout-only with --debug-train-only", ERR, _src(1934))
def debug_modes_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """Only one debug mode at a time (--load-debug-rollout-data implies --debug-train-only)."""
    train_only = ctx.is_set("--debug-train-only") or ctx.need("--load-debug-rollout-data") is not None
    if ctx.is_set("--debug-rollout-only") and train_only:
        yield ctx.hit("SLIME013", "--debug-rollout-only cannot be combined with --debug-train-only (which "
                      "--load-debug-rollout-data also turns on).", flag="--debug-rollout-only", fix="keep one mode")


@rule("SLIME014", "--over-sampling-batch-size below --rollout-batch-size", ERR, _src(1988))
def over_sampling_at_least_rollout(ctx: RuleContext) -> Iterable[Finding]:
    """The over-sampling batch (default: the rollout batch) must be >= --rollout-batch-size."""
    osb, rbs = ctx.need("--over-sampling-batch-size"), ctx.need("--rollout-batch-size")
    if osb is not None and rbs is not None and osb < rbs:
        yield ctx.hit("SLIME014", f"--over-sampling-batch-size {osb} is below --rollout-batch-size {rbs}; slime's "
                      "assertion fails.", flag="--over-sampling-batch-size",
                      fix=f"set --over-sampling-batch-size {rbs} or more, or remove it")


@rule("SLIME015", "Neither --num-rollout nor --num-epoch", ERR, _src(2003))
def rollout_count_given(ctx: RuleContext) -> Iterable[Finding]:
    """slime needs --num-rollout or --num-epoch; --num-epoch needs the global dataset."""
    num_rollout, num_epoch = ctx.need("--num-rollout"), ctx.need("--num-epoch")
    if num_epoch is None and num_rollout is None:
        yield ctx.hit("SLIME015", "Neither --num-rollout nor --num-epoch is given; slime's assertion fails.",
                      fix="add --num-rollout N (rollout steps) or --num-epoch N")
    elif num_epoch is not None and num_rollout is None and ctx.need("--disable-rollout-global-dataset", True) is False:
        yield ctx.hit("SLIME015", "--num-epoch needs the global dataset, but --disable-rollout-global-dataset is "
                      "set.", flag="--num-epoch", source=_src(1997),
                      fix="remove --disable-rollout-global-dataset or use --num-rollout")


@rule("SLIME016", "--enable-mtp-training needs --mtp-num-layers", ERR, _src(2008))
def mtp_needs_layers(ctx: RuleContext) -> Iterable[Finding]:
    """MTP training needs a non-zero --mtp-num-layers."""
    if ctx.is_set("--enable-mtp-training") and not ctx.need("--mtp-num-layers"):
        yield ctx.hit("SLIME016", "--enable-mtp-training needs --mtp-num-layers.", flag="--enable-mtp-training",
                      fix="add --mtp-num-layers 1 (or the model's MTP depth)")


@rule("SLIME017", "Prompt length leaves no room for a response", ERR, _src(2034))
def prompt_fits_context(ctx: RuleContext) -> Iterable[Finding]:
    """--rollout-max-prompt-len must be at most --rollout-max-context-len - 1 (one generated token at least)."""
    ctxlen, prompt = ctx.need("--rollout-max-context-len"), ctx.need("--rollout-max-prompt-len")
    if ctxlen is not None and prompt is not None and prompt > ctxlen - 1:
        yield ctx.hit("SLIME017", f"--rollout-max-prompt-len {prompt} leaves no room for a response in "
                      f"--rollout-max-context-len {ctxlen} (at most {ctxlen - 1}).", flag="--rollout-max-prompt-len",
                      fix=f"set --rollout-max-prompt-len {ctxlen - 1} or less")


@rule("SLIME018", "Train-only and freeze parameter lists together", ERR, _src(2038))
def param_lists_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """--only-train-params-name-list and --freeze-params-name-list are mutually exclusive."""
    if ctx.need("--only-train-params-name-list") and ctx.need("--freeze-params-name-list"):
        yield ctx.hit("SLIME018", "--only-train-params-name-list and --freeze-params-name-list are mutually "
                      "exclusive.", flag="--freeze-params-name-list", fix="keep one of them")


@rule("SLIME019", "Disk weight transport without a shared directory", ERR, _src(2042))
def disk_transport_needs_dir(ctx: RuleContext) -> Iterable[Finding]:
    """--update-weight-transport disk needs --update-weight-disk-dir on a shared filesystem."""
    if ctx.need("--update-weight-transport") == "disk" and not ctx.need("--update-weight-disk-dir"):
        yield ctx.hit("SLIME019", "--update-weight-transport disk needs --update-weight-disk-dir (a directory shared "
                      "by the trainer and the rollout engines).", flag="--update-weight-transport",
                      fix="add --update-weight-disk-dir /shared/path")


@rule("SLIME020", "--release-train requirements", ERR, _src(2046))
def release_train_requirements(ctx: RuleContext) -> Iterable[Finding]:
    """--release-train: no critic (ppo), no --keep-old-actor, needs --save, full weights over disk."""
    if not ctx.is_set("--release-train"):
        return
    if ctx.need("--advantage-estimator", "grpo") == "ppo":
        yield ctx.hit("SLIME020", "--release-train does not support critic training (--advantage-estimator ppo).",
                      flag="--release-train", source=_src(2050))
    if ctx.is_set("--keep-old-actor"):
        yield ctx.hit("SLIME020", "--release-train does not support --keep-old-actor.", flag="--keep-old-actor",
                      source=_src(2052))
    if ctx.need("--save") is None:
        yield ctx.hit("SLIME020", "--release-train needs --save so the next actor can reload.", flag="--release-train",
                      fix="add --save /path/to/checkpoints", source=_src(2054))
    mode, transport = ctx.need("--update-weight-mode"), ctx.need("--update-weight-transport")
    if mode != "full" or transport != "disk":
        yield ctx.hit("SLIME020", f"--release-train needs --update-weight-mode full and --update-weight-transport disk "
                      f"(now {mode} and {transport}).", flag="--release-train", source=_src(2058),
                      fix="add --update-weight-mode full --update-weight-transport disk --update-weight-disk-dir DIR")


@rule("SLIME021", "Delta weight update requirements", ERR, _src(2059))
def delta_update_requirements(ctx: RuleContext) -> Iterable[Finding]:
    """--update-weight-mode delta needs disk transport, no --colocate and a local checkpoint directory."""
    if ctx.need("--update-weight-mode") != "delta":
        return
    if ctx.need("--update-weight-transport") != "disk":
        yield ctx.hit("SLIME021", "--update-weight-mode delta needs --update-weight-transport disk.",
                      flag="--update-weight-mode", source=_src(2060))
    if ctx.is_set("--colocate"):
        yield ctx.hit("SLIME021", "--update-weight-mode delta is not supported with --colocate.", flag="--colocate",
                      source=_src(2065))
    if not ctx.need("--update-weight-local-checkpoint-dir"):
        yield ctx.hit("SLIME021", "--update-weight-mode delta needs --update-weight-local-checkpoint-dir.",
                      flag="--update-weight-mode", source=_src(2071))


@rule("SLIME022", "One sample per prompt turns GRPO std normalisation off", INFO, _src(1981))
def single_sample_normalization(ctx: RuleContext) -> Iterable[Finding]:
    """With --n-samples-per-prompt 1 slime switches off GRPO's per-group std normalisation."""
    if ctx.need("--n-samples-per-prompt", 1) == 1 and ctx.need("--advantage-estimator", "grpo") in ("grpo", "gspo"):
        yield ctx.hit("SLIME022", "--n-samples-per-prompt is 1: GRPO compares samples of the same prompt, so with one "
                      "sample per prompt slime turns std normalisation off and every advantage is zero-centred on a "
                      "group of one.", flag="--n-samples-per-prompt", fix="use --n-samples-per-prompt 4 to 16 for GRPO")


@rule("SLIME023", "CISPO with --eps-clip below 1", WARN, _src(1881))
def cispo_clip(ctx: RuleContext) -> Iterable[Finding]:
    """slime warns that CISPO is single-sided and --eps-clip < 1 keeps a lower clip bound."""
    if ctx.need("--advantage-estimator", "grpo") == "cispo" and ctx.need("--eps-clip", 0.2) < 1.0:
        yield ctx.hit("SLIME023", f"CISPO with --eps-clip {ctx.need('--eps-clip', 0.2)} keeps a lower clip bound; "
                      "the canonical setting is --eps-clip 1.0.", flag="--eps-clip",
                      fix="--eps-clip 1.0 and tune --eps-clip-high (e.g. 4.0)")


@rule("ARG013", "Values may be overridden by a YAML file", INFO, _src(2013))
def custom_config_overrides(ctx: RuleContext) -> Iterable[Finding]:
    """--custom-config-path loads a YAML file whose keys override any argument after these checks' inputs."""
    path = ctx.need("--custom-config-path")
    if path:
        yield ctx.hit("ARG013", f"--custom-config-path {path}: its keys override command-line values after parsing; "
                      "this check sees only the command line.", flag="--custom-config-path")


# --------------------------------------------------------------------------------------------------
# Entry point, GPUs and SGLang
# --------------------------------------------------------------------------------------------------
@rule("ENTRY001", "train_async.py refuses --colocate", ERR, slime_source("train_async.py", 11))
def async_refuses_colocate(ctx: RuleContext) -> Iterable[Finding]:
    """train_async.py asserts that --colocate is off: generation and training overlap on separate GPUs."""
    if ctx.entry == "train_async.py" and ctx.is_set("--colocate"):
        yield ctx.hit("ENTRY001", "train_async.py stops at start with --colocate: async training overlaps generation "
                      "and training, so they need separate GPUs.", flag="--colocate",
                      fix="remove --colocate and set --rollout-num-gpus, or launch train.py")


def gpu_layout(ctx: RuleContext) -> dict[str, Any]:
    """How many GPUs slime's placement group asks Ray for (slime/ray/placement_group.py:100).

    Counts that cannot be resolved are None; the mode (colocated, disaggregated, ...) needs only switches.
    """
    unknown: Skip | None = None
    try:
        actor: int | None = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
    except Skip as skip:
        actor, unknown = None, skip
    colocate = ctx.is_set("--colocate")
    try:
        rollout = ctx.need("--rollout-num-gpus")
        rollout_known = True
    except Skip as skip:
        rollout, rollout_known, unknown = None, False, unknown or skip
    ctx.layout_unknown = unknown

    def total(*parts: int | None) -> int | None:
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    if ctx.is_set("--debug-train-only") or ctx.need("--load-debug-rollout-data") is not None:
        return {"mode": "debug-train-only", "actor_gpus": actor, "rollout_gpus": 0, "total": actor}
    if ctx.need("--rollout-external-engine-addrs") is not None:
        return {"mode": "external rollout", "actor_gpus": actor, "rollout_gpus": 0, "total": actor}
    if ctx.is_set("--debug-rollout-only"):
        r = actor if colocate and rollout is None and rollout_known else rollout
        return {"mode": "debug-rollout-only", "actor_gpus": 0, "rollout_gpus": r, "total": r}
    if colocate:
        r = actor if rollout is None and rollout_known else rollout
        both = None if actor is None or r is None else max(actor, r)
        return {"mode": "colocated", "actor_gpus": actor, "rollout_gpus": r, "total": both}
    return {"mode": "disaggregated", "actor_gpus": actor, "rollout_gpus": rollout, "rollout_known": rollout_known,
            "total": total(actor, rollout)}


@rule("GPU001", "Disaggregated run without --rollout-num-gpus", ERR,
      slime_source("slime/ray/placement_group.py", 117))
def disaggregated_needs_rollout_gpus(ctx: RuleContext) -> Iterable[Finding]:
    """Without --colocate, the placement group adds --rollout-num-gpus to the actor GPUs; it must be given."""
    layout = gpu_layout(ctx)
    ctx.layout = layout
    if layout["mode"] == "disaggregated" and layout["rollout_gpus"] is None and layout["rollout_known"]:
        yield ctx.hit("GPU001", "Without --colocate, training and generation use separate GPUs and slime needs "
                      "--rollout-num-gpus to size the placement group; without it the launch fails adding None to "
                      "the actor GPU count.", fix="add --rollout-num-gpus N, or --colocate to share the GPUs")


@rule("GPU002", "Rollout GPUs do not divide into engines", WARN, slime_source("slime/ray/rollout.py", 1035))
def rollout_gpus_make_whole_engines(ctx: RuleContext) -> Iterable[Finding]:
    """Engines get min(GPUs per engine, --num-gpus-per-node) GPUs each; the rollout GPUs are split by floor."""
    layout = ctx.layout or gpu_layout(ctx)
    rollout = layout.get("rollout_gpus")
    if not rollout or layout["mode"] in ("external rollout", "debug-train-only"):
        return
    if ctx.need("--sglang-config") is not None or ctx.need("--prefill-num-servers") is not None:
        return
    per_engine = ctx.need("--rollout-num-gpus-per-engine", 1)
    per_node = ctx.need("--num-gpus-per-node", 8)
    on_node = min(per_engine, per_node)
    if on_node <= 0:
        return
    engines, idle = divmod(rollout, on_node)
    if engines == 0:
        yield ctx.hit("GPU002", f"{rollout} rollout GPU(s) cannot hold one engine of {on_node} GPUs "
                      f"(--rollout-num-gpus-per-engine {per_engine}); no SGLang engine would start.",
                      flag="--rollout-num-gpus-per-engine", severity=ERR,
                      fix=f"use --rollout-num-gpus-per-engine {rollout} or fewer, or give more rollout GPUs")
    elif idle:
        yield ctx.hit("GPU002", f"{rollout} rollout GPUs make {engines} engine(s) of {on_node} GPUs; {idle} GPU(s) "
                      "stay idle.", flag="--rollout-num-gpus-per-engine",
                      fix=f"use a multiple of {on_node} rollout GPUs ({engines * on_node} or {(engines + 1) * on_node})")


@rule("GPU003", "More GPUs than the profile has", ERR, slime_source("slime/ray/placement_group.py", 123))
def gpu_total_fits_profile(ctx: RuleContext) -> Iterable[Finding]:
    """The placement group asks Ray for all GPUs at once and waits (without a time limit) until they exist.

    The total comes from the layout call (slime/ray/placement_group.py:123); one bundle per GPU is requested
    in a single placement group (:47-48) and the wait loop has no time limit (:60).
    """
    have = ctx.options.gpus
    if have is None:
        return
    layout = ctx.layout or gpu_layout(ctx)
    need = layout.get("total")
    if need is None:
        if ctx.layout_unknown is not None:
            raise ctx.layout_unknown
        return
    detail = (f"{layout['mode']}: actor {layout['actor_gpus']}" +
              (f" + rollout {layout['rollout_gpus']}" if layout["mode"] == "disaggregated" else
               f", rollout {layout['rollout_gpus']} on the same GPUs" if layout["mode"] == "colocated" else ""))
    if need > have:
        yield ctx.hit("GPU003", f"The run asks Ray for {need} GPUs ({detail}) but your profile has {have}; the "
                      "placement group would wait for GPUs that never come.", flag="--actor-num-gpus-per-node",
                      fix="lower --actor-num-nodes / --actor-num-gpus-per-node / --rollout-num-gpus, or update the "
                      "GPU count in your profile")
    elif need < have:
        yield ctx.hit("GPU003", f"The run uses {need} of your {have} GPUs ({detail}).", severity=INFO)


@rule("SGL001", "Engine GPUs not divisible by the SGLang pipeline size", ERR,
      slime_source("slime/backends/sglang_utils/arguments.py", 174))
def sglang_pp_divides_engine(ctx: RuleContext) -> Iterable[Finding]:
    """--rollout-num-gpus-per-engine must be divisible by --sglang-pp-size when that is above 1."""
    if ctx.is_set("--debug-train-only"):
        return
    pp = ctx.need("--sglang-pp-size", 1) or 1
    gpe = ctx.need("--rollout-num-gpus-per-engine", 1)
    if pp > 1 and gpe % pp:
        yield ctx.hit("SGL001", f"--rollout-num-gpus-per-engine {gpe} is not divisible by --sglang-pp-size {pp}.",
                      flag="--sglang-pp-size", fix=f"use a multiple of {pp} GPUs per engine")


@rule("SGL002", "SGLang data parallelism needs DP attention", ERR,
      slime_source("slime/backends/sglang_utils/arguments.py", 184))
def sglang_dp_needs_dp_attention(ctx: RuleContext) -> Iterable[Finding]:
    """--sglang-dp-size above 1 requires --sglang-enable-dp-attention."""
    if ctx.is_set("--debug-train-only"):
        return
    dp = ctx.need("--sglang-dp-size", 1) or 1
    if dp > 1 and not ctx.is_set("--sglang-enable-dp-attention"):
        yield ctx.hit("SGL002", f"--sglang-dp-size {dp} needs --sglang-enable-dp-attention.", flag="--sglang-dp-size",
                      fix="add --sglang-enable-dp-attention")


@rule("SGL003", "Exclusive SGLang deployment options", ERR, slime_source("slime/backends/sglang_utils/arguments.py", 189))
def sglang_deployment_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """--prefill-num-servers, --sglang-config and --rollout-external-engine-addrs exclude each other."""
    if ctx.is_set("--debug-train-only"):
        return
    given = [f for f in ("--prefill-num-servers", "--sglang-config", "--rollout-external-engine-addrs")
             if ctx.need(f) is not None]
    if len(given) > 1:
        yield ctx.hit("SGL003", f"{' and '.join(given)} cannot be combined.", flag=given[-1], fix="keep one of them")


# --------------------------------------------------------------------------------------------------
# Megatron rules that need no model files
# --------------------------------------------------------------------------------------------------
def _msrc(line: int) -> str:
    return megatron_source("megatron/training/arguments.py", line)


def _megatron_runs(ctx: RuleContext) -> bool:
    return not ctx.is_set("--debug-rollout-only")


def _parallel_sizes(ctx: RuleContext) -> tuple[int, int, int]:
    return (ctx.need("--tensor-model-parallel-size", 1) or 1, ctx.need("--pipeline-model-parallel-size", 1) or 1,
            ctx.need("--context-parallel-size", 1) or 1)


@rule("MEG001", "World size not divisible by TP x PP x CP", ERR, _msrc(317))
def world_size_divisible(ctx: RuleContext) -> Iterable[Finding]:
    """The training world (actor nodes x GPUs per node) must divide by TP x PP x CP."""
    if not _megatron_runs(ctx):
        return
    world = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
    tp, pp, cp = _parallel_sizes(ctx)
    if world % (tp * pp * cp):
        yield ctx.hit("MEG001", f"The training world is {world} GPUs, not divisible by TP {tp} x PP {pp} x CP {cp} = "
                      f"{tp * pp * cp}; Megatron stops.", flag="--tensor-model-parallel-size",
                      fix=f"make --actor-num-nodes x --actor-num-gpus-per-node a multiple of {tp * pp * cp}")


@rule("MEG002", "Layers not divisible by the pipeline size", ERR, _msrc(570))
def layers_divisible_by_pp(ctx: RuleContext) -> Iterable[Finding]:
    """Without uneven or virtual pipeline options, --num-layers must divide by the pipeline size."""
    if not _megatron_runs(ctx):
        return
    pp = ctx.need("--pipeline-model-parallel-size", 1) or 1
    if pp == 1:
        return
    for f in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
              "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
              "--pipeline-model-parallel-layout"):
        if ctx.need(f) is not None:
            return
    layers = ctx.need("--num-layers")
    if layers is None:
        return
    extra = int(bool(ctx.is_set("--account-for-embedding-in-pipeline-split"))) + int(
        bool(ctx.is_set("--account-for-loss-in-pipeline-split")))
    if (layers + extra) % pp:
        yield ctx.hit("MEG002", f"--num-layers {layers}{f' (+{extra} for embedding/loss)' if extra else ''} is not "
                      f"divisible by --pipeline-model-parallel-size {pp}; Megatron stops.",
                      flag="--pipeline-model-parallel-size",
                      fix="pick a pipeline size that divides the layer count, or set "
                      "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers")


@rule("MEG003", "Heads do not divide the hidden size", ERR, _msrc(813))
def heads_divide_hidden(ctx: RuleContext) -> Iterable[Finding]:
    """Without --kv-channels, Megatron derives it as hidden / heads and asserts the division is exact."""
    if not _megatron_runs(ctx) or ctx.need("--kv-channels") is not None:
        return
    hidden, heads = ctx.need("--hidden-size"), ctx.need("--num-attention-heads")
    if hidden and heads and hidden % heads:
        yield ctx.hit("MEG003", f"--hidden-size {hidden} is not divisible by --num-attention-heads {heads} and "
                      "--kv-channels is not given; Megatron stops.", flag="--num-attention-heads",
                      fix="add --kv-channels (the model's head dimension)")


@rule("MEG004", "--min-lr above --lr", ERR, _msrc(835))
def min_lr_below_lr(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron requires --min-lr <= --lr."""
    if not _megatron_runs(ctx):
        return
    lr, min_lr = ctx.need("--lr", 1e-6), ctx.need("--min-lr", 0.0)
    if lr is not None and min_lr is not None and min_lr > lr:
        yield ctx.hit("MEG004", f"--min-lr {min_lr} is above --lr {lr}; Megatron stops.", flag="--min-lr",
                      fix=f"set --min-lr {lr} or lower")


@rule("MEG005", "--save without --save-interval", ERR, _msrc(837))
def save_needs_interval(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron asserts a positive --save-interval whenever --save is given (--release-train sets 1 itself)."""
    if not _megatron_runs(ctx) or ctx.need("--save") is None or ctx.is_set("--release-train"):
        return
    si = ctx.need("--save-interval")
    if si is None:
        yield ctx.hit("MEG005", "--save is given without --save-interval; Megatron's assertion fails.", flag="--save",
                      fix="add --save-interval N (rollouts between checkpoints)")
    elif si <= 0:
        yield ctx.hit("MEG005", f"--save-interval {si} must be positive.", flag="--save-interval", source=_msrc(838))


@rule("MEG006", "Model shape flags missing", ERR, _msrc(798))
def model_shape_given(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron requires --num-layers, --hidden-size and --num-attention-heads (usually from MODEL_ARGS)."""
    if not _megatron_runs(ctx):
        return
    missing = [f for f in ("--num-layers", "--hidden-size", "--num-attention-heads") if ctx.need(f) is None]
    if missing and not (missing == ["--num-layers"] and ctx.need("--encoder-num-layers") is not None):
        yield ctx.hit("MEG006", f"{', '.join(missing)} missing: Megatron needs the model shape (slime's "
                      "scripts/models/*.sh provide it as MODEL_ARGS).", flag=missing[0],
                      fix="source the model's scripts/models/X.sh and pass ${MODEL_ARGS[@]}")


_REMOVED = {
    "--batch-size": (414, "use --micro-batch-size (slime: --global-batch-size / --rollout-batch-size)"),
    "--warmup": (417, "use --lr-warmup-fraction or --lr-warmup-iters"),
    "--model-parallel-size": (420, "use --tensor-model-parallel-size"),
    "--checkpoint-activations": (424, "use --recompute-granularity / --recompute-method (Megatron exits silently)"),
}
_NO_EFFECT = {
    "--use-dist-ckpt": 1127, "--dist-ckpt-format": 1130, "--ckpt-fully-parallel-save": 1115,
}


@rule("MEG007", "Removed Megatron flags", ERR, _msrc(414))
def removed_megatron_flags(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron still parses these old flags but refuses (or exits on) them; a few others are accepted and ignored."""
    if not _megatron_runs(ctx):
        return
    for flag, (line, fix) in _REMOVED.items():
        f = ctx.fact(flag)
        if f.present and f.value not in (None, False):
            yield ctx.hit("MEG007", f"{flag} is no longer accepted by Megatron; it stops at start.", flag=flag,
                          fix=fix, source=_msrc(line))
    for flag, line in _NO_EFFECT.items():
        f = ctx.fact(flag)
        if f.present and f.value not in (None, False):
            yield ctx.hit("MEG007", f"{flag} is deprecated in Megatron and has no effect.", flag=flag, severity=WARN,
                          source=_msrc(line), fix="remove it")


@rule("MEG008", "Sequence length not a multiple of 2 x CP", ERR, _msrc(817))
def seq_length_fits_cp(ctx: RuleContext) -> Iterable[Finding]:
    """With context parallelism, --seq-length (slime's default 4096) must be a multiple of 2 x CP."""
    if not _megatron_runs(ctx):
        return
    cp = ctx.need("--context-parallel-size", 1) or 1
    seq = ctx.need("--seq-length") or 4096
    if cp > 1 and seq % (2 * cp):
        yield ctx.hit("MEG008", f"--seq-length {seq} is not a multiple of 2 x --context-parallel-size {cp}.",
                      flag="--context-parallel-size", fix=f"use a --seq-length divisible by {2 * cp}")


@rule("MEG009", "--max-position-embeddings below the sequence length", ERR, _msrc(829))
def max_positions_cover_seq(ctx: RuleContext) -> Iterable[Finding]:
    """slime fills --seq-length with 4096 when absent; Megatron requires max positions >= sequence length."""
    if not _megatron_runs(ctx):
        return
    mpe = ctx.need("--max-position-embeddings")
    seq = ctx.need("--seq-length") or 4096
    if mpe is not None and mpe < seq:
        yield ctx.hit("MEG009", f"--max-position-embeddings {mpe} is below the sequence length {seq}"
                      + (" (slime's placeholder when --seq-length is absent)" if ctx.need("--seq-length") is None
                         else "") + "; Megatron stops.", flag="--max-position-embeddings",
                      fix=f"add --seq-length {mpe}", source=slime_source(
                          "slime/backends/megatron_utils/arguments.py", 165))


@rule("MEG010", "Expert parallelism without divisible experts", ERR, _msrc(1025))
def expert_parallel_divides_experts(ctx: RuleContext) -> Iterable[Finding]:
    """--expert-model-parallel-size > 1 needs --num-experts, divisible by it."""
    if not _megatron_runs(ctx):
        return
    ep = ctx.need("--expert-model-parallel-size", 1) or 1
    if ep <= 1:
        return
    experts = ctx.need("--num-experts")
    if experts is None:
        yield ctx.hit("MEG010", f"--expert-model-parallel-size {ep} needs --num-experts.",
                      flag="--expert-model-parallel-size", fix="use an MoE model's MODEL_ARGS or set EP to 1")
    elif experts % ep:
        yield ctx.hit("MEG010", f"--num-experts {experts} is not divisible by --expert-model-parallel-size {ep}.",
                      flag="--expert-model-parallel-size", source=_msrc(1026),
                      fix="use an expert-parallel size that divides the expert count")


@rule("MEG011", "Selective recompute with a recompute method", ERR, _msrc(898))
def selective_recompute_no_method(ctx: RuleContext) -> Iterable[Finding]:
    """--recompute-granularity selective takes no --recompute-method."""
    if not _megatron_runs(ctx):
        return
    if ctx.need("--recompute-granularity") == "selective" and ctx.need("--recompute-method") is not None:
        yield ctx.hit("MEG011", "--recompute-method does not apply to --recompute-granularity selective; Megatron "
                      "stops.", flag="--recompute-method", fix="remove --recompute-method, or use granularity full")


@rule("MEG012", "Uneven pipeline layers with pipeline size 1", ERR,
      slime_source("slime/backends/megatron_utils/arguments.py", 90))
def uneven_pipeline_needs_pp(ctx: RuleContext) -> Iterable[Finding]:
    """slime refuses --decoder-first/last-pipeline-num-layers when the pipeline size is 1."""
    if not _megatron_runs(ctx) or (ctx.need("--pipeline-model-parallel-size", 1) or 1) != 1:
        return
    for f in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"):
        if ctx.need(f) is not None:
            yield ctx.hit("MEG012", f"{f} needs --pipeline-model-parallel-size above 1.", flag=f, fix="remove it")


# --------------------------------------------------------------------------------------------------
# Flags with no effect in the chosen mode
# --------------------------------------------------------------------------------------------------
@rule("MODE001", "--micro-batch-size ignored under dynamic batching", WARN, _src(716))
def micro_batch_ignored_when_dynamic(ctx: RuleContext) -> Iterable[Finding]:
    """Dynamic batching packs micro-batches by --max-tokens-per-gpu; --micro-batch-size is not used."""
    if ctx.is_set("--use-dynamic-batch-size") and ctx.fact("--micro-batch-size").present:
        yield ctx.hit("MODE001", f"--micro-batch-size {ctx.need('--micro-batch-size')} has no effect with "
                      "--use-dynamic-batch-size (micro-batches are packed up to --max-tokens-per-gpu).",
                      flag="--micro-batch-size", fix="remove it, or drop --use-dynamic-batch-size")


@rule("MODE002", "--max-tokens-per-gpu without dynamic batching", WARN, _src(119, "slime/utils/dp_schedule.py"))
def max_tokens_needs_dynamic(ctx: RuleContext) -> Iterable[Finding]:
    """--max-tokens-per-gpu is read only by the dynamic batching path."""
    if ctx.fact("--max-tokens-per-gpu").present and not ctx.is_set("--use-dynamic-batch-size"):
        yield ctx.hit("MODE002", "--max-tokens-per-gpu has no effect without --use-dynamic-batch-size; micro-batches "
                      "have --micro-batch-size samples.", flag="--max-tokens-per-gpu",
                      fix="add --use-dynamic-batch-size, or remove --max-tokens-per-gpu")


@rule("MODE003", "--sequence-parallel with tensor parallel size 1", WARN, _msrc(906))
def sequence_parallel_needs_tp(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron turns sequence parallelism off when the tensor-parallel size is 1."""
    if ctx.is_set("--sequence-parallel") and (ctx.need("--tensor-model-parallel-size", 1) or 1) == 1:
        yield ctx.hit("MODE003", "--sequence-parallel has no effect with --tensor-model-parallel-size 1 (Megatron "
                      "turns it off).", flag="--sequence-parallel", fix="remove it, or use TP > 1")


@rule("MODE004", "--num-epoch ignored", WARN, _src(1995))
def num_epoch_ignored(ctx: RuleContext) -> Iterable[Finding]:
    """When both are given, slime uses --num-rollout and ignores --num-epoch."""
    if ctx.need("--num-epoch") is not None and ctx.need("--num-rollout") is not None:
        yield ctx.hit("MODE004", "--num-epoch is ignored because --num-rollout is also given.", flag="--num-epoch",
                      fix="keep one of them")


@rule("MODE005", "--kl-loss-coef without --use-kl-loss", WARN, _src(1116, "slime/backends/megatron_utils/loss.py"))
def kl_loss_coef_needs_switch(ctx: RuleContext) -> Iterable[Finding]:
    """The KL loss term is added only under --use-kl-loss."""
    coef = ctx.need("--kl-loss-coef", 0.0)
    if coef and not ctx.is_set("--use-kl-loss"):
        yield ctx.hit("MODE005", f"--kl-loss-coef {coef} has no effect without --use-kl-loss.", flag="--kl-loss-coef",
                      fix="add --use-kl-loss, or remove --kl-loss-coef")


@rule("MODE006", "KL loss with coefficient 0", INFO, slime_source("slime/ray/placement_group.py", 178))
def kl_loss_zero_coef(ctx: RuleContext) -> Iterable[Finding]:
    """--use-kl-loss loads the reference model even when --kl-loss-coef is 0 (the KL is then only logged)."""
    if ctx.is_set("--use-kl-loss") and not ctx.need("--kl-loss-coef", 0.0) and not ctx.need("--kl-coef", 0.0):
        yield ctx.hit("MODE006", "--use-kl-loss with --kl-loss-coef 0: the reference model is loaded and the KL is "
                      "logged, but it does not change the loss.", flag="--use-kl-loss",
                      fix="fine for monitoring; drop --use-kl-loss to save the reference model's memory")


@rule("MODE007", "Eval data without --eval-interval", WARN, slime_source("train.py", 50))
def eval_data_needs_interval(ctx: RuleContext) -> Iterable[Finding]:
    """Evaluation runs only when --eval-interval is set."""
    if ctx.need("--eval-interval") is None and (ctx.need("--eval-prompt-data") is not None
                                                 or ctx.need("--eval-config") is not None):
        yield ctx.hit("MODE007", "Evaluation data is given but --eval-interval is not, so no evaluation ever runs.",
                      flag="--eval-prompt-data" if ctx.need("--eval-prompt-data") is not None else "--eval-config",
                      fix="add --eval-interval N")


@rule("MODE008", "Offload flags ignored under colocated release-train", WARN, _src(1940))
def release_train_offload_ignored(ctx: RuleContext) -> Iterable[Finding]:
    """Colocated --release-train forces --no-offload-train and --offload-rollout whatever is given."""
    if not (ctx.is_set("--colocate") and ctx.is_set("--release-train")):
        return
    f = ctx.fact("--offload-train")
    if f.present and f.value:
        yield ctx.hit("MODE008", "--offload-train is ignored with --colocate --release-train (train actors are "
                      "released instead).", flag="--offload-train", fix="remove it")
    f = ctx.fact("--offload-rollout")
    if f.present and f.value is False:
        yield ctx.hit("MODE008", "--no-offload-rollout is ignored with --colocate --release-train (rollout offload is "
                      "required).", flag="--no-offload-rollout", fix="remove it", source=_src(1944))


# --------------------------------------------------------------------------------------------------
# Batch arithmetic
# --------------------------------------------------------------------------------------------------
def _data_parallel_size(ctx: RuleContext) -> int | None:
    try:
        world = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
        tp, pp, cp = _parallel_sizes(ctx)
    except Skip:
        return None
    if world <= 0 or world % (tp * pp * cp):
        return None
    return world // (tp * pp * cp)


@rule("BATCH001", "Batch equation fails", ERR, slime_source("slime/utils/arguments.py", 1974), BATCH_CARD)
def batch_equation(ctx: RuleContext) -> Iterable[Finding]:
    """rollout_batch_size x n_samples_per_prompt must equal global_batch_size x num_steps_per_rollout."""
    rbs = ctx.need("--rollout-batch-size")
    if rbs is None:
        return
    n = ctx.need("--n-samples-per-prompt", 1)
    gbs = ctx.need("--global-batch-size")
    steps = ctx.need("--num-steps-per-rollout")
    num_rollout = ctx.need("--num-rollout")
    default_gbs = None
    if gbs is None and steps is None:
        dp = _data_parallel_size(ctx)
        mbs = ctx.need("--micro-batch-size", 1)
        default_gbs = mbs * dp if dp and mbs else None
    try:
        result = check_batch_equation(rbs, n, gbs, steps, num_rollout=num_rollout,
                                      default_global_batch_size=default_gbs)
    except BatchInputError as exc:
        yield ctx.hit("BATCH001", str(exc), flag="--rollout-batch-size")
        return
    ctx.batch = result
    if result.status == "ok" or result.code is None:
        return
    severity = {"error": ERR, "warning": WARN, "info": INFO}[result.status]
    exact = [f.message for f in result.fixes if f.value is not None or f.message.startswith("or ")]
    fix = "; ".join(exact) if exact else (result.fixes[0].message if result.fixes else None)
    flag = "--global-batch-size" if gbs is not None else "--num-steps-per-rollout" if steps is not None else \
        "--rollout-batch-size"
    notes = " ".join(result.assumptions)
    yield ctx.hit(result.code, f"{result.equation}: {result.slime_behaviour}"
                  + (f" ({notes})" if notes else ""), flag=flag, fix=fix, severity=severity, source=result.source)


_register("BATCH005", "Nothing trained", INFO, slime_source("train.py", 35), BATCH_CARD)


@rule("BATCH006", "Static micro-batches do not split over data-parallel ranks", ERR,
      slime_source("slime/utils/dp_schedule.py", 175), BATCH_CARD)
def static_batches_split_evenly(ctx: RuleContext) -> Iterable[Finding]:
    """With static batching a step's micro-batch count, ceil(global batch / micro batch), must divide by DP."""
    num_rollout = ctx.fact("--num-rollout")
    if num_rollout.known and num_rollout.value == 0:
        yield ctx.hit("BATCH005", "--num-rollout 0: no rollout is trained (train.py only evaluates when "
                      "--eval-interval is set).", flag="--num-rollout")
        return
    if ctx.batch is None or ctx.batch.effective_global_batch_size in (None, 0):
        return
    dp = _data_parallel_size(ctx)
    if dp is None:
        return
    gbs = ctx.batch.effective_global_batch_size
    custom = ctx.need("--custom-generate-function-path") is not None or ctx.fact("--rollout-function-path").present
    sev = WARN if custom else ERR
    caveat = " (with a custom rollout one step may hold more samples; this assumes one sample per rollout)" if \
        custom else ""
    if gbs < dp:
        yield ctx.hit("BATCH007", f"The global batch ({gbs}) is smaller than the data-parallel size ({dp}); every "
                      f"rank needs at least one sample per step.{caveat}", flag="--global-batch-size", severity=sev,
                      fix=f"use a global batch of at least {dp}")
        return
    if ctx.is_set("--use-dynamic-batch-size"):
        return
    for f in ("--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank"):
        if ctx.need(f) is not None:
            return
    mbs = ctx.need("--micro-batch-size", 1) or 1
    chunks = math.ceil(gbs / mbs)
    if chunks % dp:
        good = dp * mbs
        yield ctx.hit("BATCH006", f"Static batching: a step of {gbs} samples makes {chunks} micro-batches of "
                      f"{mbs}, which does not divide over {dp} data-parallel ranks; slime stops at the first "
                      f"training step.{caveat}", flag="--micro-batch-size", severity=sev,
                      fix=f"use a global batch that is a multiple of {good} (DP {dp} x micro batch {mbs}), or "
                      "--use-dynamic-batch-size")


_register("BATCH007", "Global batch below the data-parallel size", ERR, slime_source("slime/utils/dp_schedule.py", 151),
          BATCH_CARD)
_register("ENTRY002", "No entry known", INFO, slime_source("train.py"))


# --------------------------------------------------------------------------------------------------
# Running everything
# --------------------------------------------------------------------------------------------------
def run_rules(ctx: RuleContext) -> list[Finding]:
    """Run every registered check. A check that needs an unknown value is skipped and said so: one note per
    unresolved flag naming the checks it held back, and one note for checks held back by hidden words."""
    out: list[Finding] = []
    hidden_skips: list[str] = []
    skipped: dict[str, tuple[str, list[RuleInfo]]] = {}
    for info in list(RULES.values()):
        if info.check is None:
            continue
        try:
            out.extend(info.check(ctx))
        except Skip as skip:
            if skip.hidden:
                hidden_skips.append(info.code)
            else:
                skipped.setdefault(skip.flag, (skip.reason, []))[1].append(info)
    for flag, (reason, infos) in skipped.items():
        names = ", ".join(f"{i.code} ({i.title})" for i in infos)
        out.append(_finding("SCRIPT004", f"{flag}: {reason}; not checked: {names}.", line=ctx.fact(flag).line,
                            flag=flag, fix="give the value literally (or from a variable set in the script) to "
                            "have it checked"))
    if hidden_skips:
        shown = ", ".join(f"{w.text} (line {w.line})" if w.line else w.text for w in ctx.parsed.hidden[:4])
        out.append(_finding("SCRIPT011", f"{len(hidden_skips)} check(s) skipped ({', '.join(hidden_skips)}): the "
                            f"command contains unresolved words that could stand for any flags: {shown}.",
                            line=ctx.parsed.hidden[0].line if ctx.parsed.hidden else None,
                            fix="write those flags out, or make the variables resolvable in the script"))
    return out


_NOTE_CODES = {
    "unterminated": "SCRIPT003", "syntax": "SCRIPT003", "command_substitution": "SCRIPT004", "heredoc": "SCRIPT010",
    "source_model": "SCRIPT007", "source_file": "SCRIPT007", "source_unknown": "SCRIPT007", "too_large": "SCRIPT001",
    "binary": "SCRIPT001", "not_utf8": "SCRIPT002",
}


def note_findings(notes: Iterable[ScriptNote]) -> list[Finding]:
    """Reader notes as findings; command substitutions are summed up in one note (the words they leave
    unresolved in the command are reported one by one by `unresolved_findings`)."""
    out = []
    subs = [n for n in notes if n.kind == "command_substitution"]
    per_kind: dict[str, int] = {}
    for note in notes:
        if note.kind == "command_substitution":
            continue
        per_kind[note.kind] = per_kind.get(note.kind, 0) + 1
        if per_kind[note.kind] <= MAX_NOTES_PER_KIND:
            out.append(_finding(_NOTE_CODES.get(note.kind, "SCRIPT004"), note.message, line=note.line))
    for kind, count in per_kind.items():
        if count > MAX_NOTES_PER_KIND:
            out.append(_finding(_NOTE_CODES.get(kind, "SCRIPT004"), f"... and {count - MAX_NOTES_PER_KIND} more "
                                f"like the above ({kind.replace('_', ' ')}); only the first {MAX_NOTES_PER_KIND} "
                                "are listed."))
    if subs:
        out.append(_finding("SCRIPT004", f"The script has {len(subs)} command substitution(s) ($(...) or backticks), "
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
        out.append(_finding("SCRIPT004", f"{w.text} is unresolved ({w.reason or 'not known statically'}); the checks "
                            "that need it are skipped.", word=w))
    return out


def _load_catalog(options: CheckOptions) -> tuple[Any | None, list[Finding]]:
    """The catalog to check against, and a warning when the one asked for could not be used.

    build_catalog and load_catalog report any unusable checkout or catalog file as CatalogError (a syntax
    error or NUL byte in the checkout, a missing entry function, code the static reader cannot follow);
    OSError covers a path that vanished or cannot be stat'ed between the caller's check and this read.
    """
    from core.launch.catalog import CatalogError, load_catalog

    path = options.catalog_path
    try:
        if path is None:
            return load_catalog(), []
        if Path(path).is_dir():
            return _checkout_catalog(Path(path)), []
        return load_catalog(Path(path)), []
    except (CatalogError, OSError) as exc:
        try:
            fallback = load_catalog()
        except (CatalogError, OSError):
            fallback = None
        reason = str(exc) if isinstance(exc, CatalogError) else (exc.strerror or str(exc))
        return fallback, [Finding(code="ARG001", severity=WARN, message=(
            f"The catalog at {path} could not be used ({reason}); checked against the bundled catalog instead."),
            source="core/launch/catalog.py")]


def catalog_for(path: Path | None) -> tuple[Any | None, list[Finding]]:
    """The catalog of a slime checkout (or an arguments.json, or the bundled one for None), with a warning
    finding when the one asked for could not be used and the bundled catalog stands in."""
    return _load_catalog(CheckOptions(catalog_path=path))


def _checkout_catalog(path: Path) -> Any:
    from core.launch.catalog_build import build_catalog

    return _cached_checkout_catalog(str(path.resolve()), _tree_stamp(path), build_catalog)


# The last checkout read, keyed by path and the modification times of the files the build starts from.
# A failed build is kept too, so a page rerun does not read a broken checkout again until it changes.
_CHECKOUT_CACHE: dict[tuple[str, tuple[float, ...]], Any] = {}
_STAMPED_FILES = ("slime/utils/arguments.py", "slime/backends/sglang_utils/arguments.py",
                  "slime/backends/megatron_utils/arguments.py", "slime/backends/megatron_utils/server/arguments.py",
                  "docker/Dockerfile")


def _tree_stamp(path: Path) -> tuple[float, ...]:
    stamps = []
    for rel in _STAMPED_FILES:
        try:
            stamps.append((path / rel).stat().st_mtime)
        except OSError:
            stamps.append(0.0)
    return tuple(stamps)


def _cached_checkout_catalog(path: str, stamp: tuple[float, ...], build: Callable[[Path], Any]) -> Any:
    from core.launch.catalog import CatalogError

    key = (path, stamp)
    if key not in _CHECKOUT_CACHE:
        _CHECKOUT_CACHE.clear()
        try:
            _CHECKOUT_CACHE[key] = build(Path(path))
        except CatalogError as exc:
            _CHECKOUT_CACHE[key] = exc
    cached = _CHECKOUT_CACHE[key]
    if isinstance(cached, CatalogError):
        raise CatalogError(str(cached))  # a fresh error: re-raising the stored one would grow its traceback
    return cached


def model_script_resolver(options: CheckOptions) -> Callable[[str], SourcedModel | str | None]:
    """Resolve `source .../models/X.sh` to slime's model script: from a checkout when given, else the catalog."""
    from core.model_scripts import MODEL_SCRIPTS_JSON, load_model_scripts

    checkout = Path(options.catalog_path) if options.catalog_path and Path(options.catalog_path).is_dir() else None

    def resolve(path_text: str) -> SourcedModel | str | None:
        name = model_script_name(path_text)
        if name is None:
            return None
        if checkout is not None:
            candidate = checkout / "scripts" / "models" / f"{name}.sh"
            try:
                if candidate.is_file() and candidate.stat().st_size < MAX_SCRIPT_CHARS:
                    return candidate.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return None
        try:
            scripts = load_model_scripts(MODEL_SCRIPTS_JSON)
        except (OSError, ValueError):
            return None
        found = next((s for s in scripts if s.name == name), None)
        return SourcedModel(path=found.path, source=found.source, model_args=list(found.model_args)) if found else None

    return resolve


def _build_report(words: list[ScriptWord], entry: str | None, options: CheckOptions, pre: list[Finding],
                  read: ReadScript | None) -> CheckReport:
    catalog, cat_findings = _load_catalog(options)
    parsed = parse_words(words, catalog)
    ctx = RuleContext(parsed, catalog, options, entry, read.command.line if read and read.command else None)
    rule_findings = run_rules(ctx)
    skipped_flags = {f.flag for f in rule_findings if f.code == "SCRIPT004"}
    covered = {id(v) for o in parsed.occurrences if o.flag in skipped_flags for v in o.values}
    findings = [*pre, *cat_findings, *unresolved_findings(words, covered), *parsed.findings, *flag_findings(ctx),
                *rule_findings]
    if entry is None:
        findings.append(_finding("ENTRY002", "No train.py / train_async.py given: the checks specific to the entry "
                                 "(train_async.py refusing --colocate) were skipped.",
                                 fix="pass --entry train.py or --entry train_async.py"))
    findings = sort_and_dedupe(findings)
    categories: dict[str, str] = {}
    values: dict[str, str | None] = {}
    for o in parsed.occurrences:
        categories[o.flag] = o.spec.owner if o.spec is not None else "unknown"
        values[o.flag] = o.value_text if o.resolved else None
    owners: dict[str, int] = {}
    for owner in categories.values():
        owners[owner] = owners.get(owner, 0) + 1
    summary: dict[str, Any] = {
        **count_by_severity(findings),
        "flags": len(parsed.occurrences),
        "distinct_flags": len(categories),
        "by_owner": owners,
        "unknown_flags": sorted(f for f, o in categories.items() if o == "unknown"),
        "complete": parsed.complete,
        "entry": entry,
        "batch": ctx.batch.model_dump(mode="json") if ctx.batch is not None else None,
        "gpu_layout": ctx.layout or None,
        "catalog": dict(catalog.pins) if catalog is not None else None,
        "unresolved": [w.text for w in words if not w.resolved][:20],
    }
    if read is not None:
        summary["train_commands"] = len(read.commands)
    return CheckReport(findings=findings, categories=categories, values=values, entry=entry, summary=summary)


def check_launch_script(text: str, options: CheckOptions = CheckOptions()) -> CheckReport:  # noqa: B008
    """Check a whole launch script (or a pasted argument list) statically; nothing is executed."""
    if looks_like_arg_list(text):
        words, notes, _ = read_arg_list_text(text)
        return _build_report(words, options.entry, options, note_findings(notes), None)
    read = read_launch_script(text, model_script_resolver(options))
    pre = note_findings(read.notes)
    for stray in read.stray_commands:
        shown = ", ".join(stray.flags[:4]) + (", ..." if len(stray.flags) > 4 else "")
        pre.append(_finding("SCRIPT008", f"`{stray.raw}` starts a command of its own, so its flags ({shown}) never "
                            f"reach python: {stray.cause}.", line=stray.line,
                            flag=stray.flags[0] if stray.flags else None,
                            fix="join it to the train command: end the line above with '\\' (no trailing space, no "
                            "comment lines in between)"))
    cmd = read.command
    if cmd is None:
        if not any(f.code == "SCRIPT001" for f in pre):
            pre.append(_finding("SCRIPT005", "No `python ... train.py` or `train_async.py` command was found, so no "
                                "flags were checked.", fix="paste the whole launch script, or just its arguments"))
        return CheckReport(findings=sort_and_dedupe(pre), categories={}, values={}, entry=None,
                           summary={**count_by_severity(pre), "flags": 0, "entry": None, "batch": None,
                                    "gpu_layout": None, "complete": False, "train_commands": 0})
    if len(read.commands) > 1:
        lines = ", ".join(str(c.line) for c in read.commands)
        pre.append(_finding("SCRIPT006", f"The script has {len(read.commands)} train commands (lines {lines}); the "
                            f"last one (line {cmd.line}) is checked.", line=cmd.line))
    if cmd.conditional:
        pre.append(_finding("SCRIPT009", "The train command is inside an if, loop or function; it is checked as if it "
                            "runs.", line=cmd.line))
    return _build_report(cmd.args, cmd.entry, options, pre, read)


def check_script_bytes(data: bytes, options: CheckOptions = CheckOptions()) -> CheckReport:  # noqa: B008
    """Check uploaded bytes: binary, oversized or non-UTF-8 input gets a specific finding, never a crash."""
    decoded = decode_script_bytes(data)
    pre = note_findings(decoded.notes)
    if decoded.text is None:
        findings = sort_and_dedupe(pre)
        return CheckReport(findings=findings, categories={}, values={}, entry=None,
                           summary={**count_by_severity(findings), "flags": 0, "entry": None, "batch": None,
                                    "gpu_layout": None, "complete": False})
    report = check_launch_script(decoded.text, options)
    if pre:
        findings = sort_and_dedupe([*pre, *report.findings])
        report = report.model_copy(update={"findings": findings,
                                           "summary": {**report.summary, **count_by_severity(findings)}})
    return report


def check_arg_list(args: list[str], options: CheckOptions = CheckOptions()) -> CheckReport:  # noqa: B008
    """Check a plain argument list (as sys.argv[1:] would hold it)."""
    words = [ScriptWord(text=a) for a in args]
    return _build_report(words, options.entry, options, [], None)


def rule_context(args: list[str], options: CheckOptions | None = None) -> RuleContext:
    """The context the rules see for a plain argument list (for calling one rule directly)."""
    options = options or CheckOptions()
    catalog, _ = _load_catalog(options)
    ctx = RuleContext(parse_words([ScriptWord(text=a) for a in args], catalog), catalog, options, options.entry)
    flag_findings(ctx)  # marks invalid values, as a full check would
    return ctx


def list_rules() -> list[RuleInfo]:
    """Every finding code, sorted, with its title, default severity and source."""
    return sorted(RULES.values(), key=lambda r: (r.code.rstrip("0123456789"), int(r.code.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
                                                                                 or 0)))


__all__ = ["CheckOptions", "CheckReport", "RULES", "RuleInfo", "catalog_for", "check_arg_list", "check_launch_script",
           "check_script_bytes", "list_rules", "parse_words", "rule_context"]
