"""Values of the static interpreter (what an upstream expression evaluates to), its limits, and the small
helpers that keep every value within them."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from core.launch.catalog import FlagSpec
from core.launch.catalog_build.sources import SourceFile

# Limits that keep an unusual or hostile checkout from hanging or exhausting the static reader. The pinned
# trees need a small part of each: 54 files (1.4 MB, the largest 0.32 MB), about 15,000 steps, under 1 s.
MAX_STEPS = 300_000  # statements run plus expressions evaluated in one build
MAX_BUILD_SECONDS = 10.0
MAX_INT_BITS = 1024  # a larger integer is left unresolved
MAX_VALUE_SIZE = 100_000  # characters plus items in one value; a larger value is left unresolved
MAX_FORMAT_WIDTH = 999  # widths and precisions in format strings


_FLAG_PREFIX_CHARS = "-"


class Unresolved(Exception):
    """An expression whose value cannot be known without running upstream code."""


class BuildLimitExceeded(Exception):
    """The static reader ran past MAX_STEPS or MAX_BUILD_SECONDS; build_catalog turns it into CatalogError."""


@dataclass(frozen=True)
class Symbol:
    """A named thing we do not evaluate (a type, a function from another library, argparse.SUPPRESS)."""

    text: str


@dataclass(frozen=True)
class EnumMember:
    enum: str
    name: str


@dataclass
class Opaque:
    """An argument value that could not be evaluated; keeps its source text."""

    text: str


@dataclass
class FunctionRef:
    node: ast.FunctionDef
    module: SourceFile
    closure: dict[str, Any] | None = None
    owner_class: ClassRef | None = None


@dataclass
class ClassRef:
    node: ast.ClassDef
    module: SourceFile

    @property
    def qualname(self) -> str:
        return f"{self.module.dotted}.{self.node.name}"


@dataclass
class FieldCall:
    """A `dataclasses.field(...)` call: its evaluated keyword arguments."""

    kwargs: dict[str, Any]
    nodes: dict[str, ast.expr]


@dataclass
class FactoryValue:
    """Megatron's ArgumentGroupFactory(config_class, exclude=[...])."""

    cls: ClassRef
    exclude: set[str]
    line: int


@dataclass
class BoundAddArgument:
    """`parser.add_argument` saved in a variable (slime restores it after its sglang wrapper)."""

    parser: ParserModel


@dataclass
class RawFlag:
    names: list[str]
    kwargs: dict[str, Any]
    source: str
    patched: bool
    owner: str
    parser_key: str
    line: int
    notes: list[str] = field(default_factory=list)
    reset_source: str | None = None
    upstream_default: Any = None
    has_upstream_default: bool = False
    entry_point: str | None = None


@dataclass
class SglangWrapper:
    """slime's replacement of parser.add_argument while SGLang's ServerArgs registers its flags."""

    skip: set[str]
    flag_prefix: str
    dest_prefix: str
    source: str


@dataclass
class ParserModel:
    key: str
    source: str
    allow_abbrev: bool = True
    ignore_unknown: bool = False
    parse_source: str | None = None
    flags: list[RawFlag] = field(default_factory=list)
    wrapper: SglangWrapper | None = None
    skipped: list[tuple[list[str], str, str, str]] = field(default_factory=list)  # names, dest, source, prefixed

    def find_option(self, option: str) -> RawFlag | None:
        return next((f for f in self.flags if option in f.names), None)


@dataclass
class GroupRef:
    parser: ParserModel


UNKNOWN = object()
_BUILTIN_TYPES = {"int", "float", "str", "bool", "list", "dict", "tuple", "set", "bytes", "complex"}
_ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "enum.Enum", "enum.IntEnum", "enum.StrEnum"}


MISSING = Symbol("<missing>")


@dataclass
class DataclassField:
    name: str
    annotation: ast.expr
    default_node: ast.expr | None
    factory_node: ast.expr | None
    metadata_node: ast.expr | None
    init: bool
    module: SourceFile
    line: int
    notes: list[str] = field(default_factory=list)


def _truthy(value: Any) -> bool:
    if isinstance(value, (Symbol, Opaque, FunctionRef, ClassRef, ParserModel)) or value is UNKNOWN:
        raise Unresolved("truth of a non-static value")
    return bool(value)


def _require_plain(value: Any) -> None:
    if isinstance(value, (Symbol, Opaque, FunctionRef, ClassRef, ParserModel, GroupRef, EnumMember)) or value is UNKNOWN:
        raise Unresolved("arithmetic on a non-static value")


def _short_source(node: ast.AST, limit: int = 120) -> str:
    """The node's source text, cut short for messages."""
    text = ast.unparse(node)
    return text if len(text) <= limit else f"{text[:limit]}..."


def value_size(value: Any, limit: int = MAX_VALUE_SIZE) -> int:
    """Characters plus items in a plain value (an integer counts 1), counted only up to just past `limit`.

    An integer wider than MAX_INT_BITS counts as over the limit. Shared references are counted each time,
    so `["x" * 1000] * 1000` weighs a million: that is what printing or comparing it would cost.
    """
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        total += 1
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > MAX_INT_BITS:
                return limit + 1
        elif isinstance(item, (list, tuple, set, frozenset)):
            if total + len(item) > limit:
                return limit + 1
            stack.extend(item)
        elif isinstance(item, dict):
            if total + 2 * len(item) > limit:
                return limit + 1
            stack.extend(item.keys())
            stack.extend(item.values())
        if total > limit:
            return limit + 1
    return total


def _bounded(value: Any, node: ast.AST) -> Any:
    """The value itself, or Unresolved when it is larger than MAX_VALUE_SIZE / MAX_INT_BITS."""
    if value_size(value) > MAX_VALUE_SIZE:
        raise Unresolved(f"{_short_source(node)} (too large to evaluate statically)")
    return value


def _binop_within_limits(op: ast.operator, left: Any, right: Any) -> bool:
    """Whether computing `left op right` stays cheap: checked before the operation runs, by its result size."""
    if isinstance(op, ast.Pow) and isinstance(left, int) and isinstance(right, int) and right > 0:
        return abs(left) <= 1 or (abs(left).bit_length() - 1) * right <= MAX_INT_BITS
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(count, int):
                return len(seq) * max(count, 0) <= MAX_VALUE_SIZE
    if isinstance(op, ast.Mod) and isinstance(left, str):
        return _printf_widths_ok(left)
    return True


_PRINTF_FIELD = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?")


def _printf_widths_ok(text: str) -> bool:
    """No `*` or oversized width/precision in a %-format string (they would pad without limit)."""
    for m in _PRINTF_FIELD.finditer(text.replace("%%", "")):
        for part in m.groups():
            if part is not None and (part == "*" or _too_wide(part)):
                return False
    return True


def _too_wide(digits: str) -> bool:
    return len(digits) > len(str(MAX_FORMAT_WIDTH)) or int(digits) > MAX_FORMAT_WIDTH


def _str_method_within_limits(base: str, method: str, args: list[Any]) -> bool:
    """Whether a str.replace / str.format call stays within MAX_VALUE_SIZE, checked before it runs."""
    if method == "replace":
        if len(args) < 2 or not all(isinstance(a, str) for a in args[:2]):
            return True  # argument errors are reported by the call itself
        old, new = args[0], args[1]
        hits = base.count(old) if old else len(base) + 1
        return len(base) + hits * len(new) <= MAX_VALUE_SIZE
    if method == "format":
        for arg in args:
            _require_plain(arg)
        widest = max((len(str(a)) for a in args), default=0)
        fields = 0
        for _literal, name, spec, _conversion in string.Formatter().parse(base):
            if name is None:
                continue
            fields += 1
            if any(c in name for c in ".[") or "{" in (spec or "") or any(
                    _too_wide(n) for n in re.findall(r"\d+", spec or "")):
                return False
        return len(base) + fields * (widest + MAX_FORMAT_WIDTH) <= MAX_VALUE_SIZE
    return True


def _is_static(fn: ast.FunctionDef) -> bool:
    return any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)


def _assigned_names(body: list[ast.stmt]) -> Iterator[str]:
    for stmt in body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                yield sub.id


def _calls_add_argument(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
               for n in ast.walk(stmt))


def _format_flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _annotation_head(annotation: ast.expr) -> str:
    node = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return ast.unparse(node)


def _subscript_args(annotation: ast.expr) -> list[ast.expr]:
    if not isinstance(annotation, ast.Subscript):
        return []
    inner = annotation.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _is_none(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or ast.unparse(node) in {"None", "type(None)"}


def _union_members(annotation: ast.expr) -> list[ast.expr] | None:
    """Members of X | Y | ... or Union[X, Y, ...] in order; None when the annotation is not a union."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        left = _union_members(annotation.left) or [annotation.left]
        return [*left, annotation.right]
    if isinstance(annotation, ast.Subscript) and _annotation_head(annotation) in {"Union", "typing.Union"}:
        return _subscript_args(annotation)
    return None


def _sglang_inner_type(annotation: ast.expr) -> ast.expr:
    args = _subscript_args(annotation)
    return args[0] if args else annotation


def _strip_optional(annotation: ast.expr) -> ast.expr:
    """SGLang's _unwrap_optional: Optional[X] / Union[X, None] / X | None with exactly one non-None member."""
    if isinstance(annotation, ast.Subscript) and _annotation_head(annotation) in {"Optional", "typing.Optional"}:
        return _subscript_args(annotation)[0]
    members = _union_members(annotation)
    if members is not None:
        rest = [m for m in members if not _is_none(m)]
        if len(rest) == 1 and len(members) > 1:
            return rest[0]
    return annotation


def _sglang_scalar(value: Any) -> Symbol:
    """SGLang's _infer_type_func: str, int and float map to themselves, anything else to str."""
    if isinstance(value, Symbol) and value.text in {"int", "float", "str"}:
        return value
    return Symbol("str")


def _dest_of(names: list[str], kwargs: dict[str, Any]) -> str:
    dest = kwargs.get("dest")
    if isinstance(dest, str):
        return dest
    long = next((n for n in names if n.startswith("--")), None)
    chosen = long or (names[0] if names else "")
    return chosen.lstrip(_FLAG_PREFIX_CHARS).replace("-", "_")


def _reset_default(flag: RawFlag, value: Any, source: str) -> None:
    if not flag.has_upstream_default:
        flag.upstream_default = flag.kwargs.get("default", _IMPLICIT)
        flag.has_upstream_default = True
    flag.kwargs = dict(flag.kwargs)
    flag.kwargs["default"] = value
    flag.reset_source = source


_IMPLICIT = Symbol("<argparse default>")


def raw_from_spec(spec: FlagSpec, parser_key: str) -> RawFlag:
    """Rebuild a recorded flag from a committed catalog entry (with slime's default changes undone)."""
    kwargs: dict[str, Any] = {"dest": spec.dest, "action": spec.action}
    if spec.reset_source and spec.upstream_default_known:
        kwargs["default"] = spec.upstream_default
    elif spec.default_repr is not None:
        kwargs["default"] = Opaque(spec.default_repr)
    else:
        kwargs["default"] = spec.default
    if spec.type is not None:
        kwargs["type"] = Symbol(spec.type)
    if spec.choices is not None:
        kwargs["choices"] = spec.choices
    if spec.nargs is not None:
        kwargs["nargs"] = spec.nargs
    if spec.required:
        kwargs["required"] = True
    notes = [n for n in spec.notes if not n.startswith("slime sets the default")]
    return RawFlag(names=list(spec.option_strings), kwargs=kwargs, source=spec.source, patched=spec.patched,
                   owner=spec.owner, parser_key=parser_key, line=0, notes=notes, entry_point=spec.entry_point)
