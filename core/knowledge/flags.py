"""The flag reference: every flag of the argument catalog with its help text, group and how slime's own
launch scripts use it.

The catalog (core.launch) says who owns a flag, its type, default, choices and where it is registered. The
reference data (knowledge/catalog/flag_reference.json, written by tools/build_flag_reference.py) adds what
the catalog does not keep: the source's help text and argument group, read with `ast` at the cited line,
and the usage in slime's launch scripts at the pin, read with the static bash reader. For a user's own
checkout the usage and slime's help texts are read from that checkout instead.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from pydantic import BaseModel, Field

from core.paths import TreeReader, describe_skipped
from core.pins import SLIME_SHORT
from core.resources import knowledge_path

REFERENCE_PATH = knowledge_path("catalog", "flag_reference.json")
OUR_HELP_PATH = REFERENCE_PATH.with_name("flag_help.json")
FLAGS_PAGE = "flags"  # url path of pages/flags.py
MAX_VALUES_KEPT = 8
MAX_HELP_CHARS = 700
SCRIPT_DIRS = ("scripts", "examples")
MAX_SCRIPTS = 500
# What is read from a checkout's scripts/ and examples/ (slime at the pin: 83 *.sh files, 215 KB in all,
# the largest 11 KB), and from the files help texts are read in.
MAX_SCRIPT_BYTES = 262_144
MAX_SCRIPT_FILES = 2000
MAX_SCRIPTS_TOTAL_BYTES = 8_000_000
MAX_HELP_SOURCE_BYTES = 4_000_000
MAX_HELP_TOTAL_BYTES = 40_000_000
SWITCH_GIVEN = "(switch given)"
UNRESOLVED_VALUE = "(set by the shell at run time)"
_ENTRY_RE = re.compile(r"python[0-9.]*\s+(?:-u\s+)?\S*train(?:_async)?\.py")


class FlagUsage(BaseModel):
    """How many launch scripts set a flag, and the values they give it (most used first)."""

    scripts: int = 0
    values: dict[str, int] = Field(default_factory=dict)
    examples: list[str] = Field(default_factory=list, description="a few scripts that set it")


class FlagExtra(BaseModel):
    help: str | None = None
    group: str | None = None
    usage: FlagUsage = Field(default_factory=FlagUsage)


class FlagReference(BaseModel):
    commit: str = SLIME_SHORT
    scripts_read: int = 0
    flags: dict[str, FlagExtra] = Field(default_factory=dict, description="keyed by the flag's first option")
    scripts_not_read: list[str] = Field(default_factory=list, description="a checkout's scripts left out, and why")


class FlagRow(BaseModel):
    """One flag as the reference page shows it."""

    flag: str
    aliases: list[str]
    owner: str
    type: str
    default: str
    choices: list[str]
    help: str | None = Field(description="the source's own help text")
    our_help: str | None = Field(default=None, description="our words: the catalog's description or flag_help.json")
    our_help_source: str | None = Field(default=None, description="what flag_help.json's text rests on")
    group: str
    source: str
    reset_source: str | None
    deprecated: str | None
    notes: list[str]
    usage: FlagUsage


# --------------------------------------------------------------------------------------------------
# Reading help texts and groups from the source (used by the tool and for a user's checkout)
# --------------------------------------------------------------------------------------------------
def _text_of(node: ast.AST | None) -> str | None:
    """A help string as written: literals, f-strings (holes as {expr}), `+` and implicit concatenation."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                       for v in node.values if isinstance(v, ast.Constant | ast.FormattedValue))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        left = _text_of(node.left)
        right = _text_of(node.right) if isinstance(node.op, ast.Add) else ""
        return None if left is None else left + (right or "")
    return None


def _arg_help(node: ast.AST) -> str | None:
    """The help of SGLang's `Arg(help=...)` metadata in an `A[T, Arg(...)]` field annotation
    (python/sglang/srt/arg_groups/arg_utils.py@v0.5.15.post1); None for anything else."""
    if not (isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "Arg"):
        return None
    return next((_text_of(k.value) for k in node.keywords if k.arg == "help"), None)


def _clean_help(text: str | None) -> str | None:
    if not text or text == "==SUPPRESS==":
        return None
    text = " ".join(text.replace("%%", "%").split())
    return text if len(text) <= MAX_HELP_CHARS else text[: MAX_HELP_CHARS - 1] + "…"


def _group_from_function(name: str) -> str | None:
    core = re.sub(r"^_?add_|_?(arguments|args)$", "", name)
    return core.replace("_", " ").strip() or None


_SECTION_RE = re.compile(r"^\s*#\s*([A-Za-z][^#\n]{1,60}?)\s*$")
_RULE_RE = re.compile(r"^\s*#\s*-{5,}\s*$")


def _section_above(lines: list[str], line: int, floor: int = 1) -> str | None:
    """The nearest `# Title` above the line (not above line `floor`, the enclosing class or function) that
    sits under or over a `# -----` rule (SGLang's layout)."""
    for i in range(min(line - 2, len(lines) - 1), max(floor - 1, 0), -1):
        m = _SECTION_RE.match(lines[i])
        if m and not re.match(r"(TODO|NOTE|FIXME|XXX)\b", m.group(1)) and (_RULE_RE.match(lines[i - 1]) or (i + 1 < len(lines) and _RULE_RE.match(lines[i + 1]))):
            return m.group(1)
    return None


def _registers_flag(call: ast.Call) -> bool:
    """`x.add_argument(...)`, or slime's `reset_arg(parser, "--flag", ...)` that re-registers one."""
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "add_argument") or \
        (isinstance(func, ast.Name) and func.id == "reset_arg")


class _FileFacts:
    """help and group per line of one parsed Python file."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.by_line: dict[int, tuple[str | None, str | None]] = {}
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return
        self._walk(tree, [], {})

    def _walk(self, node: ast.AST, scopes: list[ast.AST], groups: dict[str, list[tuple[int, str]]]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if isinstance(child, ast.ClassDef):
                    self._class_fields(child)
                self._walk(child, [*scopes, child], {})
                continue
            if isinstance(child, ast.Assign) and isinstance(child.value, ast.Call):
                call = child.value
                if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument_group":
                    title = _text_of(call.args[0]) if call.args else None
                    title = title or next((_text_of(k.value) for k in call.keywords if k.arg == "title"), None)
                    for target in child.targets:
                        if isinstance(target, ast.Name) and title:
                            groups.setdefault(target.id, []).append((child.lineno, title))
            if isinstance(child, ast.Call) and _registers_flag(child):
                self._argument(child, scopes, groups)
            self._walk(child, scopes, groups)

    def _argument(self, call: ast.Call, scopes: list[ast.AST], groups: dict[str, list[tuple[int, str]]]) -> None:
        help_text = _clean_help(next((_text_of(k.value) for k in call.keywords if k.arg == "help"), None))
        group = None
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(receiver, ast.Name):
            titles = [t for ln, t in groups.get(receiver.id, []) if ln <= call.lineno]
            group = titles[-1] if titles else None
        function = next((s for s in reversed(scopes) if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)), None)
        if group is None and function is not None and function.name not in ("add_cli_args", "add_args"):
            group = _group_from_function(function.name)
        if group is None:
            group = _section_above(self.lines, call.lineno, function.lineno if function is not None else 1)
        for ln in range(call.lineno, (call.end_lineno or call.lineno) + 1):
            self.by_line.setdefault(ln, (help_text, group))

    def _class_fields(self, cls: ast.ClassDef) -> None:
        body = cls.body
        for i, stmt in enumerate(body):
            if not isinstance(stmt, ast.AnnAssign):
                continue
            help_text = None
            ann = stmt.annotation
            if isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Tuple):
                help_text = next((t for e in ann.slice.elts[1:] if (t := _text_of(e) or _arg_help(e))), None)
            if help_text is None and i + 1 < len(body) and isinstance(body[i + 1], ast.Expr):
                help_text = _text_of(body[i + 1].value)
            group = _section_above(self.lines, stmt.lineno, cls.lineno) or cls.name
            for ln in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1):
                self.by_line.setdefault(ln, (_clean_help(help_text), group))


_SOURCE_RE = re.compile(r"^(?P<path>[^:@]+):(?P<line>\d+)(?:-\d+)?@(?P<pin>\S+)$")


def help_and_groups(flags: Iterable[Any], roots: dict[str, Path]) -> dict[str, tuple[str | None, str | None]]:
    """Per flag (first option string), its help text and group, read at the line its source cites.

    `roots` maps a source's pin (the text after `@`) to the directory holding that tree; citations of other
    pins, of files that are not Python, or of lines with no add_argument call or field give (None, None).
    """
    files: dict[Path, _FileFacts | None] = {}
    out: dict[str, tuple[str | None, str | None]] = {}
    readers: dict[Path, TreeReader] = {}
    for flag in flags:
        m = _SOURCE_RE.match(flag.source or "")
        root = roots.get(m.group("pin")) if m else None
        if m is None or root is None or not m.group("path").endswith(".py"):
            continue
        path = root / m.group("path")
        if not path.is_file():
            path = root / m.group("path").removeprefix("python/")
        if path not in files:
            reader = readers.get(root) or readers.setdefault(root, TreeReader(
                root, max_file_bytes=MAX_HELP_SOURCE_BYTES, max_total_bytes=MAX_HELP_TOTAL_BYTES, max_files=0))
            text = reader.read_text(path)  # inside that tree only, regular files only, bounded
            files[path] = _FileFacts(text) if text is not None else None
        facts = files[path]
        if facts is not None:
            found = facts.by_line.get(int(m.group("line")))
            if found:
                out[flag.primary] = found
    return out


# --------------------------------------------------------------------------------------------------
# Usage in slime's launch scripts
# --------------------------------------------------------------------------------------------------
def launch_scripts(slime: Path) -> list[Path]:
    """Every *.sh under scripts/ and examples/ of a checkout that launches train.py or train_async.py."""
    return [path for path, _ in _launch_script_texts(slime)]


def script_reader(slime: Path) -> TreeReader:
    """The guarded reader of a checkout's launch scripts (core.paths.TreeReader): regular files inside the
    checkout only, never through a link that leads out, each and all of them bounded."""
    return TreeReader(slime, max_file_bytes=MAX_SCRIPT_BYTES, max_total_bytes=MAX_SCRIPTS_TOTAL_BYTES,
                      max_files=MAX_SCRIPT_FILES)


def _launch_script_texts(slime: Path, reader: TreeReader | None = None) -> list[tuple[Path, str]]:
    reader = reader if reader is not None else script_reader(slime)
    found = []
    for sub in SCRIPT_DIRS:
        for path in reader.files(sub, suffix=".sh"):
            text = reader.read_text(path)
            if text is not None and _ENTRY_RE.search(text):
                found.append((path, text))
                if len(found) >= MAX_SCRIPTS:
                    return found
    return found


def script_usage(slime: Path, checkout_catalog: bool = False, sglang: Path | None = None,
                 megatron: Path | None = None, reader: TreeReader | None = None) -> tuple[int, dict[str, FlagUsage]]:
    """(scripts read, per flag its usage) over a checkout's launch scripts, read statically (never run).

    Each script is read the way the launch-script checker reads it (sourced model scripts included); a flag
    counts once per script, with the value it ends up with (unresolved values are shown as written).
    `sglang` and `megatron` are the user's own sources, used with the checkout's catalog.
    """
    from core.launch import CheckOptions, catalog_for, check_launch_script

    options = CheckOptions(catalog_path=Path(slime) if checkout_catalog else None,
                           sglang_source=sglang if checkout_catalog else None,
                           megatron_source=megatron if checkout_catalog else None)
    catalog, _ = catalog_for(options.catalog_path, options.sglang_source, options.megatron_source)
    scripts = _launch_script_texts(slime, reader)
    counts: dict[str, Counter[str]] = {}
    used_in: dict[str, list[str]] = {}
    for path, text in scripts:
        report = check_launch_script(text, options)
        rel = path.relative_to(Path(slime).resolve()).as_posix()
        for flag, value in report.values.items():
            if report.categories.get(flag) == "unknown":
                continue
            spec = catalog.lookup(flag) if catalog is not None else None
            if value is None:
                value = SWITCH_GIVEN if spec is not None and not spec.takes_value else UNRESOLVED_VALUE
            counts.setdefault(flag, Counter())[value] += 1
            used_in.setdefault(flag, []).append(rel)
    usage = {}
    for flag, counter in counts.items():
        usage[flag] = FlagUsage(scripts=sum(counter.values()),
                                values=dict(counter.most_common(MAX_VALUES_KEPT)),
                                examples=used_in[flag][:3])
    return len(scripts), usage


def reference_to_json(reference: FlagReference) -> bytes:
    doc = reference.model_dump(mode="json", exclude={"scripts_not_read"} if not reference.scripts_not_read else None)
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


@lru_cache(maxsize=2)
def _load(path_text: str, mtime_ns: int) -> FlagReference:
    return FlagReference.model_validate(orjson.loads(Path(path_text).read_bytes()))


def load_flag_reference(path: Path = REFERENCE_PATH) -> FlagReference:
    """The committed reference data; an empty one when the file is missing or unreadable."""
    try:
        return _load(str(path), Path(path).stat().st_mtime_ns)
    except (OSError, ValueError):
        return FlagReference()


@lru_cache(maxsize=2)
def _checkout_reference(path_text: str, stamp: float, sglang: Path | None = None,
                        megatron: Path | None = None) -> FlagReference:
    from core.launch import catalog_for

    slime = Path(path_text)
    catalog, _ = catalog_for(slime, sglang, megatron)
    reader = script_reader(slime)
    read, usage = script_usage(slime, checkout_catalog=True, sglang=sglang, megatron=megatron, reader=reader)
    bundled = load_flag_reference()
    slime_flags = [f for f in catalog.flags if f.owner == "slime"] if catalog is not None else []
    helps = help_and_groups(slime_flags, {SLIME_SHORT: slime, **{f.source.rsplit("@", 1)[-1]: slime
                                                                  for f in slime_flags}})
    flags = {}
    for spec in catalog.flags if catalog is not None else []:
        base = bundled.flags.get(spec.primary, FlagExtra())
        help_text, group = helps.get(spec.primary, (base.help, base.group))
        flags[spec.primary] = FlagExtra(help=help_text, group=group,
                                        usage=merged_usage(spec.option_strings, usage))
    return FlagReference(commit="your checkout", scripts_read=read, flags=flags,
                         scripts_not_read=describe_skipped(reader.skipped))


def checkout_reference(slime: Path, sglang: Path | None = None, megatron: Path | None = None) -> FlagReference:
    """The reference for a user's own slime checkout: its catalog, its scripts' usage, its help texts."""
    try:
        stamp = (Path(slime) / "slime" / "utils" / "arguments.py").stat().st_mtime
    except OSError:
        stamp = 0.0
    return _checkout_reference(str(Path(slime).resolve()), stamp, sglang, megatron)


def checkout_flag_rows(slime: Path, sglang: Path | None = None, megatron: Path | None = None
                       ) -> tuple[list[FlagRow], FlagReference, list[str]]:
    """The flag reference of a user's checkout (with their SGLang / Megatron sources when given): its rows,
    the reference data, and the messages of any problem reading it (the bundled catalog then stands in)."""
    rows, reference, problems, _ = checkout_flag_view(slime, sglang, megatron)
    return rows, reference, problems


def checkout_flag_view(slime: Path, sglang: Path | None = None, megatron: Path | None = None
                       ) -> tuple[list[FlagRow], FlagReference, list[str], list[dict]]:
    """checkout_flag_rows plus the versions the flags were read from (as a report's summary holds them)."""
    from core.launch import catalog_for, versions_of

    catalog, problems = catalog_for(Path(slime), sglang, megatron)
    reference = checkout_reference(Path(slime), sglang, megatron)
    shown = versions_of(catalog if not problems else None)
    versions = [v.model_dump(mode="json") | {"differs": v.differs} for v in shown]
    messages = [p.message for p in problems]
    messages += [f"{p.name}: not understood in your checkout ({p.detail}); {p.effect or 'see the checker'}."
                 for p in (catalog.not_understood() if catalog is not None and not problems else [])]
    return flag_rows(catalog, reference), reference, messages, versions


def merged_usage(options: list[str], usage: dict[str, FlagUsage]) -> FlagUsage:
    found = [usage[o] for o in options if o in usage]
    if not found:
        return FlagUsage()
    if len(found) == 1:
        return found[0]
    values: Counter[str] = Counter()
    for u in found:
        values.update(u.values)
    return FlagUsage(scripts=sum(u.scripts for u in found), values=dict(values.most_common(MAX_VALUES_KEPT)),
                     examples=[e for u in found for e in u.examples][:3])


# --------------------------------------------------------------------------------------------------
# What the page shows
# --------------------------------------------------------------------------------------------------
REQUIRED_TEXT = "required (no default: the run does not start without it)"


def default_text(spec: Any) -> str:
    """The default as the source gives it: the source text when it is not a literal, 'unset' for None;
    'required' for a flag the parser requires (it has no default: the run does not start without it)."""
    if getattr(spec, "required", False):
        return REQUIRED_TEXT
    if spec.default_repr:
        return spec.default_repr
    if spec.default is None:
        return "unset"
    if isinstance(spec.default, str):
        return repr(spec.default)
    return orjson.dumps(spec.default).decode() if isinstance(spec.default, list | dict) else str(spec.default)


def deprecation_of(spec: Any) -> str | None:
    if spec.action.startswith("Deprecated"):
        note = next((n for n in spec.notes if "deprecated" in n.lower()), None)
        return note or "deprecated upstream"
    return next((n for n in spec.notes if n.lower().startswith("deprecated")), None)


class OurHelp(BaseModel):
    help: str
    source: str


@lru_cache(maxsize=1)
def load_our_help(path: Path = OUR_HELP_PATH) -> dict[str, OurHelp]:
    """Our own help for flags whose source gives none (knowledge/catalog/flag_help.json, hand-written)."""
    try:
        raw = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {flag: OurHelp.model_validate(item) for flag, item in raw.get("flags", {}).items()}


def flag_rows(catalog: Any, reference: FlagReference | None = None) -> list[FlagRow]:
    """Every catalog flag joined with its help (the source's, and ours where we wrote some), group and usage,
    sorted by flag."""
    reference = reference if reference is not None else load_flag_reference()
    ours = load_our_help()
    rows = []
    for spec in catalog.flags:
        extra = reference.flags.get(spec.primary, FlagExtra())
        usage = extra.usage if extra.usage.scripts else merged_usage(spec.option_strings, {})
        own = ours.get(spec.primary)
        rows.append(FlagRow(
            flag=spec.primary, aliases=spec.option_strings[1:], owner=spec.owner,
            type=spec.type or ("switch" if not spec.takes_value else "str"),
            default=default_text(spec), choices=[str(c) for c in spec.choices or []],
            help=extra.help, our_help=spec.description or (own.help if own else None),
            our_help_source=own.source if own and not spec.description else None,
            group=extra.group or ("slime's Docker patches" if spec.patched else "other"), source=spec.source,
            reset_source=spec.reset_source, deprecated=deprecation_of(spec),
            notes=[n for n in spec.notes if n != deprecation_of(spec)], usage=usage))
    return sorted(rows, key=lambda r: r.flag)


def normalise_flag(text: str) -> str:
    """`--rollout-batch-size`, `rollout_batch_size` and `rollout batch size` all become `--rollout-batch-size`."""
    words = re.split(r"[\s_\-]+", (text or "").strip().split("=", 1)[0].lower())
    words = [w for w in words if w]
    return "--" + "-".join(words) if words else ""


def find_flag(text: str, options: Iterable[str]) -> str | None:
    """The option string the text names whole (any of the three spellings), or None."""
    wanted = normalise_flag(text)
    if not wanted:
        return None
    lowered = {o.lower(): o for o in options}
    return lowered.get(wanted)


def close_flags(text: str, options: list[str], n: int = 3) -> list[str]:
    """Typo tolerance: the option strings closest to the text, best first."""
    wanted = normalise_flag(text)
    if len(wanted) < 5:
        return []
    return difflib.get_close_matches(wanted, options, n=n, cutoff=0.75)


def filter_rows(rows: list[FlagRow], query: str = "", owners: Iterable[str] = (), types: Iterable[str] = (),
                groups: Iterable[str] = (), deprecated_only: bool = False) -> list[FlagRow]:
    """Rows matching every filter; the query matches flag names (any spelling), help and group text."""
    owners, types, groups = set(owners), set(types), set(groups)
    out = [r for r in rows if (not owners or r.owner in owners) and (not types or r.type in types)
           and (not groups or r.group in groups) and (not deprecated_only or r.deprecated)]
    words = [w for w in re.split(r"\s+", (query or "").strip().lower()) if w]
    if not words:
        return out
    wanted = normalise_flag(query)
    exact = [r for r in out if r.flag == wanted or wanted in r.aliases]
    name_hits = [r for r in out if r not in exact and wanted[2:] and wanted[2:] in r.flag]
    text_hits = [r for r in out if r not in exact and r not in name_hits
                 and all(w in f"{r.flag} {r.help or ''} {r.our_help or ''} {r.group}".lower() for w in words)]
    return exact + name_hits + text_hits


def flag_url(flag: str) -> str:
    """The relative link to a flag on the reference page (query parameter `flag`)."""
    return f"{FLAGS_PAGE}?flag={quote(flag, safe='')}"


_CODE_FLAG_RE = re.compile(r"(?<!\[)`(--[a-z0-9][a-z0-9\-]*)(?:[ =][^`\n]*)?`")


def link_flags(markdown: str, known: Iterable[str]) -> str:
    """Our own markdown with every inline-code flag the catalog knows linked to the reference page.

    Only for text we wrote (cards): user text is escaped instead and never passes through here.
    """
    known = set(known)

    def repl(m: re.Match[str]) -> str:
        return f"[{m.group(0)}]({flag_url(m.group(1))})" if m.group(1) in known else m.group(0)

    parts = re.split(r"(```.*?```)", markdown, flags=re.S)
    return "".join(p if p.startswith("```") else _CODE_FLAG_RE.sub(repl, p) for p in parts)
