"""Flag-level rules (ARG0xx): unknown, repeated, abbreviated, mistyped and deprecated flags."""

from __future__ import annotations

from core.findings import Finding
from core.launch.rules.context import Occurrence, RuleContext, abbreviations, convert_value
from core.launch.rules.registry import ARGS_CARD, INFO, finding, register
from core.pins import megatron_source, sglang_source, slime_source

MAX_UNKNOWN_LISTED = 200  # unknown flags listed one by one; the rest are counted in one finding

SRC_IGNORE_UNKNOWN = megatron_source("megatron/training/arguments.py", 100)
SRC_SGLANG_PARSE = slime_source("slime/backends/sglang_utils/arguments.py", 225)

register("ARG001", SRC_IGNORE_UNKNOWN, ARGS_CARD)
register("ARG002", "https://docs.python.org/3/library/argparse.html#action", ARGS_CARD)
register("ARG003", SRC_SGLANG_PARSE, ARGS_CARD)
register("ARG004", SRC_SGLANG_PARSE, ARGS_CARD)
register("ARG005", "https://docs.python.org/3/library/argparse.html#nargs", ARGS_CARD)
register("ARG006", "https://docs.python.org/3/library/argparse.html#type", ARGS_CARD)
register("ARG007", "https://docs.python.org/3/library/argparse.html#choices", ARGS_CARD)
register("ARG008", SRC_IGNORE_UNKNOWN, ARGS_CARD)
register("ARG010", SRC_IGNORE_UNKNOWN, ARGS_CARD)
register("ARG011", slime_source("slime/backends/sglang_utils/arguments.py", 51), ARGS_CARD)
register("ARG012", sglang_source("sglang/srt/arg_groups/argparse_actions.py", 32), ARGS_CARD)


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
                out.append(_unknown_flagfinding(ctx, o))
            continue
        if o.spec is None:
            continue
        spec = o.spec
        if o.via == "abbrev":
            out.append(finding("ARG003", f"{name} is not a flag; SGLang's parser (which accepts unique prefixes) "
                               f"reads it as {spec.primary}. Megatron's parser ignores it.", word=w, flag=name,
                               fix=f"write {spec.primary} in full"))
        amb = {k: v for k, v in abbreviations(catalog, name).items() if len(v) > 1}
        if amb and o.via == "exact" and any(k not in spec.parsers for k in amb):
            opts = sorted({f.primary for v in amb.values() for f in v})[:4]
            out.append(finding("ARG004", f"{name} is also a prefix of several SGLang-side flags ({', '.join(opts)}); "
                               "that parser stops with 'ambiguous option'.", word=w, flag=name,
                               fix="rename or remove the flag"))
        if spec.entry_point and ctx.entry and not spec.entry_point.endswith(ctx.entry):
            out.append(finding("ARG010", f"{name} is registered only by {spec.entry_point}; {ctx.entry} does not "
                               "know it and ignores it silently.", word=w, flag=name, source=spec.source))
        if spec.action.startswith("Deprecated"):
            effect = ("it is accepted but does nothing" if spec.action == "DeprecatedAction"
                      else "it still works but prints a warning and will be removed")
            detail = "; ".join(spec.notes) if spec.notes else ""
            out.append(finding("ARG012", f"{name} is deprecated in SGLang {catalog.pins.get('sglang', '')}: {effect}"
                               + (f" ({detail})" if detail else "") + ".", word=w, flag=name, source=spec.source,
                               fix=next(("use " + n.split("use ", 1)[1] for n in spec.notes if "use " in n), None)))
        out.extend(_value_findings(ctx, o))
        seen.setdefault(spec.dest, []).append(o)
    if unknown > MAX_UNKNOWN_LISTED:
        out.append(finding("ARG001", f"... and {unknown - MAX_UNKNOWN_LISTED} more unknown flags; only the first "
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
            out.append(finding("ARG002", msg, line=last.word.line, flag=last.flag,
                               fix="keep one occurrence so the script says what runs"))
        else:
            out.append(finding("ARG002", f"{last.spec.primary} is given {len(occs)} times with the same value "
                               f"({where}).", line=last.word.line, flag=last.flag, severity=INFO))
    return out


def _unknown_flagfinding(ctx: RuleContext, o: Occurrence) -> Finding:
    catalog, name, w = ctx.catalog, o.flag, o.word
    skipped = catalog.lookup_skipped(name) if hasattr(catalog, "lookup_skipped") else None
    if skipped is not None:
        return finding("ARG011", f"slime does not register {name} (SGLang's {skipped.upstream_option_strings[0]}): "
                       "it sets that value itself, so the flag is silently ignored.", word=w, flag=name,
                       source=skipped.source,
                       fix="remove it; for the engine size use --rollout-num-gpus-per-engine" if
                       skipped.dest == "tp_size" else "remove it")
    amb = {k: v for k, v in abbreviations(catalog, name).items() if len(v) > 1}
    if amb:
        opts = sorted({f.primary for v in amb.values() for f in v})
        shown = ", ".join(opts[:5]) + (", ..." if len(opts) > 5 else "")
        return finding("ARG004", f"{name} is an ambiguous abbreviation ({shown}); SGLang's parser stops with "
                       "'ambiguous option' before anything runs.", word=w, flag=name,
                       fix=f"write the full flag, e.g. {opts[0]}")
    value = f" {o.value_text}" if o.values else ""
    known_myth = FOLKLORE_FLAGS.get(name)
    if known_myth is None and name.startswith("--sglang-router-") and catalog.lookup("--" + name[len("--sglang-"):]):
        known_myth = (f"use {'--' + name[len('--sglang-'):]}: slime gives router options a plain --router- prefix",
                      slime_source("slime/backends/sglang_utils/arguments.py", 34))
    if known_myth is not None:
        fix, source = known_myth
        found = finding("ARG001", f"{name}{value} appears in popular descriptions of slime, but no parser defines "
                        f"it at slime {catalog.pins.get('slime', '')}; slime would silently ignore it.", word=w,
                        flag=name, fix=fix, source=source)
        return found.model_copy(update={"card": FOLKLORE_CARD})
    ctx.suggestions_left -= 1
    guesses = catalog.suggest(name, 3) if ctx.suggestions_left >= 0 else []
    fix = f"did you mean {' or '.join(guesses)}?" if guesses else "remove it, or check the spelling in slime's docs"
    meant = catalog.lookup(guesses[0]) if guesses else None
    if meant is not None and getattr(meant, "required", False) and ctx.fact(meant.primary).state == "absent":
        return finding("ARG001", f"{name}{value} is not a flag slime, Megatron or SGLang knows, and {meant.primary}, "
                       "which it looks like, is required and not set: the run will not start (argparse stops with "
                       "'the following arguments are required').", word=w, flag=name,
                       fix=f"write {meant.primary}{value}")
    return finding("ARG001", f"{name}{value} is not a flag slime, Megatron or SGLang knows; slime would silently "
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
            out.append(finding("ARG006", f"{o.flag} takes no value but is written with '={o.values[0].text}'; "
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
            out.append(finding("ARG006", f"{o.flag} expects {spec.type} but gets '{v.text}'; argparse stops with "
                               "'invalid value'.", word=v, flag=o.flag, source=spec.source))
            continue
        if spec.choices and str(value) not in {str(c) for c in spec.choices}:
            ctx.invalid.add(spec.dest)
            choices = ", ".join(str(c) for c in spec.choices[:12])
            out.append(finding("ARG007", f"{o.flag} is '{v.text}', not one of its choices ({choices}); argparse "
                               "stops with 'invalid choice'.", word=v, flag=o.flag, source=spec.source))
    return out
