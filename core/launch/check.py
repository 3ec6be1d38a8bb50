"""The launch-script checker: what slime would do with a command line, found before `ray job submit`.

slime hands its command line to several argparse parsers that all ignore what they do not know
(megatron/training/arguments.py:100@1dcf0daf, called with ignore_unknown_args=True from
slime/backends/megatron_utils/arguments.py:195@624b824a), so a misspelt flag is dropped without a word and
its default is used. Most of slime's own checks run only once the job is on the cluster. This module reads a
launch script (or a bare argument list) statically, classifies every flag against the argument catalog, and
runs the checks that can be decided without GPUs: the rules live in `core.launch.rules`, one module per
family, each a small function citing its upstream source (the table of finding codes is in that package's
docstring; `slime-assistant check-args --list-rules` prints it with sources).

This module is the public entry the pages, the CLI and the drafts use: check_launch_script,
check_script_bytes, check_arg_list, rule_context, list_rules, with CheckOptions and CheckReport.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.findings import Finding, Severity, count_by_severity, sort_and_dedupe
from core.launch.report import ReportSummary
from core.launch.rules import (
    RULES,
    CheckOptions,
    RuleContext,
    RuleInfo,
    finding,
    flag_findings,
    list_rules,
    note_findings,
    parse_words,
    run_rules,
    unresolved_findings,
)
from core.launch.script import (
    MAX_SCRIPT_CHARS,
    ReadScript,
    ScriptWord,
    SourcedModel,
    decode_script_bytes,
    looks_like_arg_list,
    model_script_name,
    read_arg_list_text,
    read_launch_script,
)
from core.paths import PathRefused, containing_roots, decode_text, read_within
from core.pins import SLIME_SHORT

WARN = Severity.WARNING


class CheckReport(BaseModel):
    findings: list[Finding]
    categories: dict[str, str]
    values: dict[str, str | None]
    entry: str | None
    summary: ReportSummary

    @property
    def ok(self) -> bool:
        return not any(f.severity == Severity.ERROR for f in self.findings)



def _load_catalog(options: CheckOptions) -> tuple[Any | None, list[Finding]]:
    """The catalog to check against, and a warning when the one asked for could not be used.

    A directory is the user's slime checkout: its catalog is built (or taken from the per-checkout cache,
    core.launch.versions) with their SGLang and Megatron sources when given. build_catalog and load_catalog
    report any unusable checkout or catalog file as CatalogError (a syntax error or NUL byte in the checkout,
    a missing entry function, code the static reader cannot follow); SourceError a directory that is not what
    it is given as; OSError a path that vanished or cannot be stat'ed between the caller's check and this read.
    """
    from core.launch.catalog import CatalogError, load_catalog
    from core.launch.versions import SourceError, UserSources, checkout_catalog

    path = options.catalog_path
    try:
        if path is None:
            return load_catalog(), []
        if Path(path).is_dir():
            sources = UserSources(slime=Path(path), sglang=options.sglang_source, megatron=options.megatron_source)
            return checkout_catalog(sources), []
        return load_catalog(Path(path)), []
    except (CatalogError, SourceError, OSError) as exc:
        try:
            fallback = load_catalog()
        except (CatalogError, OSError):
            fallback = None
        reason = str(exc) if isinstance(exc, (CatalogError, SourceError)) else (exc.strerror or str(exc))
        return fallback, [Finding(code="ARG001", severity=WARN, message=(
            f"The catalog at {path} could not be used ({reason}); checked against the bundled catalog instead, so "
            "flags your version adds or removes may be judged wrongly."),
            source="core/launch/catalog.py")]


def catalog_for(path: Path | None, sglang: Path | None = None, megatron: Path | None = None
                ) -> tuple[Any | None, list[Finding]]:
    """The catalog of a slime checkout (or an arguments.json, or the bundled one for None), with a warning
    finding when the one asked for could not be used and the bundled catalog stands in. `sglang` and
    `megatron` are the user's own sources, used with a checkout."""
    return _load_catalog(CheckOptions(catalog_path=path, sglang_source=sglang, megatron_source=megatron))


_SCRIPT_DIR_IDIOM = re.compile(r"^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=[\"']?\$\(cd[ \t]+(?:--[ \t]+)?[\"']?"
                               r"\$\(dirname[^)\n]*BASH_SOURCE[^)\n]*\)((?:/[^\"'\s&)]*)?)[\"']?[^\n]*&&[ \t]*pwd[ \t]*\)"
                               r"[\"']?[ \t]*$", re.M)
MAX_TREE_DEPTH = 12  # ancestors searched for the slime tree a script sits in
MAX_IDIOM_LINE = 400  # longer lines are not the SCRIPT_DIR idiom (and would make the pattern slow)


class ModelScriptResolver:
    """Resolve `source .../models/X.sh` to slime's model script: from a checkout when given, else the catalog.

    A path relative to the script's own directory (a variable set with the `$(cd "$(dirname
    "${BASH_SOURCE[0]}")" && pwd)` idiom) is resolved the way bash would when the script's location is known
    and it sits in a slime tree; a target that does not exist there, or a `scripts/models/X.sh` that slime (or
    the checkout) does not have, is recorded in `missing` (path text -> why) and read as an empty file, which
    is what bash leaves behind when `source` fails without `set -e`.
    """

    def __init__(self, options: CheckOptions, script_text: str = "") -> None:
        checkout = Path(options.catalog_path) if options.catalog_path else None
        self.checkout = checkout if checkout is not None and (checkout / "scripts" / "models").is_dir() else None
        idiom_lines = "\n".join(line for line in script_text.splitlines()
                                if "BASH_SOURCE" in line and len(line) <= MAX_IDIOM_LINE)
        self.script_dir_vars = dict(_SCRIPT_DIR_IDIOM.findall(idiom_lines))  # variable -> suffix (/../..)
        self.script_dir = Path(options.script_path).parent if options.script_path else None
        self.tree = _slime_tree_of(self.script_dir) if self.script_dir is not None else None
        self.missing: dict[str, str] = {}

    def __call__(self, path_text: str) -> SourcedModel | str | None:
        from core.model_scripts import MODEL_SCRIPTS_JSON, load_model_scripts

        name = model_script_name(path_text)
        if name is None or "$" in name:  # a name computed at run time (e.g. with sed) is unknown, not missing
            return None
        relative = self._script_relative(path_text)
        if relative is not None and self.tree is not None and self.script_dir is not None:
            target = Path(os.path.normpath(self.script_dir / relative))
            if not target.is_file():
                shown = os.path.relpath(target, self.tree)
                self.missing[path_text] = (f"from the script's own directory this is {shown} in the slime tree at "
                                           f"{self.tree}, which does not exist")
                return ""
        if self.checkout is not None:
            candidate = self.checkout / "scripts" / "models" / f"{name}.sh"
            try:
                if candidate.is_file() and candidate.stat().st_size < MAX_SCRIPT_CHARS:
                    return decode_text(read_within(candidate, containing_roots(self.checkout),
                                                   limit=MAX_SCRIPT_CHARS))
            except (OSError, PathRefused):  # missing or unreadable, or it leads outside the roots: not read
                return None
            if self._names_slime_models(path_text, relative):
                self.missing[path_text] = f"your checkout {self.checkout} has no scripts/models/{name}.sh"
                return ""
            return None
        try:
            scripts = load_model_scripts(MODEL_SCRIPTS_JSON)
        except (OSError, ValueError):
            return None
        found = next((s for s in scripts if s.name == name), None)
        if found is None:
            if self._names_slime_models(path_text, relative):
                self.missing[path_text] = f"slime {SLIME_SHORT} has no model script scripts/models/{name}.sh"
                return ""
            return None
        return SourcedModel(path=found.path, source=found.source, model_args=list(found.model_args))

    def _script_relative(self, path_text: str) -> str | None:
        """The part after `$SCRIPT_DIR/` when the path starts with a variable holding the script's directory."""
        for var, suffix in self.script_dir_vars.items():
            for prefix in (f"${{{var}}}/", f"${var}/"):
                if path_text.startswith(prefix):
                    return suffix.strip("/") + "/" + path_text[len(prefix):] if suffix.strip("/") else \
                        path_text[len(prefix):]
        return None

    @staticmethod
    def _names_slime_models(path_text: str, relative: str | None) -> bool:
        """Whether the path names slime's own model-script folder (not a file of the user's elsewhere)."""
        return "scripts/models/" in path_text or (relative is not None and relative.startswith(("models/",
                                                                                                 "../models/")))


def _slime_tree_of(directory: Path) -> Path | None:
    """The slime checkout a directory lies in (the nearest ancestor with slime/utils/arguments.py), if any."""
    try:
        here = directory.resolve()
    except OSError:
        return None
    for candidate in [here, *here.parents][:MAX_TREE_DEPTH]:
        try:
            if not (candidate / "scripts").is_dir():
                continue
            if (candidate / "slime" / "utils" / "arguments.py").is_file():
                return candidate
            if (candidate / "train.py").is_file() and _fork_package(candidate) is not None:
                return candidate  # a fork that renames slime's package (miles)
        except OSError:
            return None
    return None


def _fork_package(directory: Path) -> str | None:
    from core.launch.catalog_build.build import package_of

    package = package_of(directory)
    return package if package != "slime" else None


def model_script_resolver(options: CheckOptions, script_text: str = "") -> ModelScriptResolver:
    """The resolver the bash reader calls for every `source`, with the missing targets it records."""
    return ModelScriptResolver(options, script_text)


def _build_report(words: list[ScriptWord], entry: str | None, options: CheckOptions, pre: list[Finding],
                  read: ReadScript | None) -> CheckReport:
    from core.launch.rules.versions import gate_for, version_findings
    from core.launch.versions import versions_of

    catalog, cat_findings = _load_catalog(options)
    parsed = parse_words(words, catalog)
    catalog, parsed, fn_findings = _with_function_flags(catalog, parsed, words, options)
    cat_findings = [*cat_findings, *fn_findings]
    ctx = RuleContext(parsed, catalog, options, entry, read.command.line if read and read.command else None)
    gate = gate_for(options, catalog)
    ctx.code_gate = gate  # the rules that judge slime code run only when the user's checkout has it
    rule_findings = run_rules(ctx)
    skipped_flags = {f.flag for f in rule_findings if f.code == "SCRIPT004"}
    covered = {id(v) for o in parsed.occurrences if o.flag in skipped_flags for v in o.values}
    findings = [*pre, *cat_findings, *unresolved_findings(words, covered), *parsed.findings, *flag_findings(ctx),
                *rule_findings]
    findings = version_findings(ctx, findings, gate)
    if any(f.code == "VER002" and f.flag and f.flag in {o.flag for o in parsed.occurrences} for f in fn_findings):
        findings = [f.model_copy(update={"severity": WARN, "message": f"{f.message} It may be one the named "
                                         "function adds at start-up."})
                    if f.code == "ARG001" and f.severity == Severity.ERROR and f.flag and ctx.spec(f.flag) is None
                    and not f.flag.startswith("--sglang-") else f for f in findings]
    if entry is None:
        findings.append(finding("ENTRY002", "No train.py / train_async.py given: the checks specific to the entry "
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
    fields: dict[str, Any] = {
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
        "versions": [v.model_dump(mode="json") | {"differs": v.differs}
                     for v in (versions_of(catalog) if not cat_findings else versions_of(None))],
        "pieces": [p.model_dump(mode="json") for p in getattr(catalog, "pieces", [])] if not cat_findings else [],
        "unresolved": [w.text for w in words if not w.resolved][:20],
    }
    if read is not None:
        fields["train_commands"] = len(read.commands)
    summary = ReportSummary(**fields)
    return CheckReport(findings=findings, categories=categories, values=values, entry=entry, summary=summary)


def _with_function_flags(catalog: Any, parsed: Any, words: list[ScriptWord], options: CheckOptions
                         ) -> tuple[Any, Any, list[Finding]]:
    """Add the flags that the functions the script names (e.g. --custom-generate-function-path) register with
    their add_arguments, read from the user's checkout, at commits whose parser calls it. A function that
    cannot be read leaves its flags unknown, said in a note."""
    dests = getattr(catalog, "function_flag_dests", None)
    if not dests or options.catalog_path is None or not Path(options.catalog_path).is_dir():
        return catalog, parsed, []
    from core.launch.catalog_build.functions import function_flags

    added, notes = [], []
    for o in parsed.occurrences:
        if o.spec is None or o.spec.dest not in dests or not o.resolved or not o.values:
            continue
        flags = function_flags(Path(options.catalog_path), o.values[0].text)
        if flags is None:
            notes.append(finding("VER002", f"{o.flag} {o.values[0].text}: that function is not in your checkout (or "
                                 "not readable statically), so the flags its add_arguments may add at start-up are "
                                 "not known here; unknown flags are warnings, not errors.", word=o.word,
                                 flag=o.flag))
        added.extend(f for f in flags or () if catalog.lookup(f.primary) is None)
    if not added:
        return catalog, parsed, notes
    extended = catalog.model_copy(update={"flags": [*catalog.flags, *added]})
    extended.reindex()
    return extended, parse_words(words, extended), notes


def check_launch_script(text: str, options: CheckOptions = CheckOptions()) -> CheckReport:  # noqa: B008
    """Check a whole launch script (or a pasted argument list) statically; nothing is executed."""
    if looks_like_arg_list(text):
        words, notes, _ = read_arg_list_text(text)
        return _build_report(words, options.entry, options, note_findings(notes), None)
    resolver = model_script_resolver(options, text)
    read = read_launch_script(text, resolver)
    pre = note_findings(read.notes, resolver.missing)
    for stray in read.stray_commands:
        shown = ", ".join(stray.flags[:4]) + (", ..." if len(stray.flags) > 4 else "")
        pre.append(finding("SCRIPT008", f"`{stray.raw}` starts a command of its own, so its flags ({shown}) never "
                           f"reach python: {stray.cause}.", line=stray.line,
                           flag=stray.flags[0] if stray.flags else None,
                           fix="join it to the train command: end the line above with '\\' (no trailing space, no "
                           "comment lines in between)"))
    cmd = read.command
    if cmd is None:
        if not any(f.code == "SCRIPT001" for f in pre):
            pre.append(finding("SCRIPT005", "No `python ... train.py` or `train_async.py` command was found, so no "
                               "flags were checked.", fix="paste the whole launch script, or just its arguments"))
        return CheckReport(findings=sort_and_dedupe(pre), categories={}, values={}, entry=None,
                           summary=ReportSummary(**count_by_severity(pre), flags=0, entry=None, batch=None,
                                                 gpu_layout=None, complete=False, train_commands=0))
    if len(read.commands) > 1:
        lines = ", ".join(str(c.line) for c in read.commands)
        pre.append(finding("SCRIPT006", f"The script has {len(read.commands)} train commands (lines {lines}); the "
                           f"last one (line {cmd.line}) is checked.", line=cmd.line))
    if cmd.conditional:
        pre.append(finding("SCRIPT009", "The train command is inside an if, loop or function; it is checked as if it "
                           "runs.", line=cmd.line))
    return _build_report(cmd.args, cmd.entry, options, pre, read)


def check_script_bytes(data: bytes, options: CheckOptions = CheckOptions()) -> CheckReport:  # noqa: B008
    """Check uploaded bytes: binary, oversized or non-UTF-8 input gets a specific finding, never a crash."""
    decoded = decode_script_bytes(data)
    pre = note_findings(decoded.notes)
    if decoded.text is None:
        findings = sort_and_dedupe(pre)
        return CheckReport(findings=findings, categories={}, values={}, entry=None,
                           summary=ReportSummary(**count_by_severity(findings), flags=0, entry=None, batch=None,
                                                 gpu_layout=None, complete=False))
    report = check_launch_script(decoded.text, options)
    if pre:
        findings = sort_and_dedupe([*pre, *report.findings])
        report = report.model_copy(update={"findings": findings,
                                           "summary": report.summary.recounted(findings)})
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



__all__ = ["CheckOptions", "CheckReport", "RULES", "RuleInfo", "catalog_for", "check_arg_list", "check_launch_script",
           "check_script_bytes", "list_rules", "parse_words", "rule_context"]
