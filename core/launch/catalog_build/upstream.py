"""Upstream-specific helpers: flags generated from config dataclasses (Megatron's ArgumentGroupFactory,
SGLang's `add_cli_args_from_dataclass`), enums, and annotations read as argparse types."""

from __future__ import annotations

import ast
from typing import Any

from core.launch.catalog_build.sources import SourceFile
from core.launch.catalog_build.values import (
    _ENUM_BASES,
    MISSING,
    ClassRef,
    DataclassField,
    EnumMember,
    FactoryValue,
    GroupRef,
    Opaque,
    ParserModel,
    Symbol,
    Unresolved,
    _annotation_head,
    _format_flag,
    _is_none,
    _sglang_inner_type,
    _sglang_scalar,
    _strip_optional,
    _subscript_args,
    _union_members,
)


class UpstreamFlags:
    """Flags that Megatron-LM and SGLang generate from dataclass fields instead of add_argument calls."""

    # -- flags generated from dataclasses -----------------------------------------------------------
    def dataclass_fields(self, cls: ClassRef, seen: frozenset = frozenset()) -> list[DataclassField]:
        if cls.qualname in seen:
            return []
        seen = seen | {cls.qualname}
        ordered: dict[str, DataclassField] = {}
        for base in cls.node.bases:
            try:
                base_value = self.evaluate(base, {}, cls.module)
            except Unresolved:
                continue
            if isinstance(base_value, ClassRef):
                for f in self.dataclass_fields(base_value, seen):
                    ordered[f.name] = f
        for stmt in cls.node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            annotation = stmt.annotation
            if _annotation_head(annotation) in {"ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar"}:
                continue
            name = stmt.target.id
            default_node, factory_node, metadata_node, init = stmt.value, None, None, True
            if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value.func) in {"field", "dataclasses.field"}:
                kw = {k.arg: k.value for k in stmt.value.keywords if k.arg}
                default_node = kw.get("default")
                factory_node = kw.get("default_factory")
                metadata_node = kw.get("metadata")
                if "init" in kw and isinstance(kw["init"], ast.Constant) and kw["init"].value is False:
                    init = False
            previous = ordered.get(name)
            entry = DataclassField(name=name, annotation=annotation, default_node=default_node,
                                   factory_node=factory_node, metadata_node=metadata_node, init=init,
                                   module=cls.module, line=stmt.lineno)
            if previous is not None and previous.module is cls.module and previous.line != stmt.lineno:
                entry.notes.append(f"declared twice in {cls.node.name} (lines {cls.module.cite(previous.line)[0]} "
                                   f"and {cls.module.cite(stmt.lineno)[0]}); the later declaration wins")
            ordered[name] = entry
        return list(ordered.values())

    def field_default(self, f: DataclassField) -> Any:
        """The field's default value, Opaque when not static, or MISSING when it has none."""
        if f.factory_node is not None:
            node = f.factory_node
            if isinstance(node, ast.Name) and node.id in {"list", "dict", "set", "tuple"}:
                return {"list": [], "dict": {}, "set": [], "tuple": ()}[node.id]
            if isinstance(node, ast.Lambda):
                try:
                    return self.evaluate(node.body, {}, f.module)
                except Unresolved:
                    return Opaque(ast.unparse(node.body))
            return Opaque(f"{ast.unparse(node)}()")
        if f.default_node is None:
            return MISSING
        try:
            return self.evaluate(f.default_node, {}, f.module)
        except Unresolved:
            return Opaque(ast.unparse(f.default_node))

    def is_enum(self, cls: ClassRef) -> bool:
        for base in cls.node.bases:
            text = ast.unparse(base)
            if text in _ENUM_BASES or text.split(".")[-1] in {"Enum", "IntEnum", "StrEnum"}:
                return True
        return False

    def enum_members(self, cls: ClassRef) -> list[str]:
        names = []
        for stmt in cls.node.body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name) and not target.id.startswith("_"):
                        names.append(target.id)
        return names

    def megatron_dataclass_flags(self, parser: ParserModel, factory: FactoryValue, module: SourceFile) -> None:
        """Megatron's ArgumentGroupFactory: one flag per init field of a config dataclass.

        Rule (megatron/training/argument_utils.py@1dcf0daf): the flag is --<field-name>; Optional[X] uses X,
        list[X] adds nargs '+', Literal gives choices, an Enum gives its member names as choices; a bool
        field becomes store_true when its default is False and otherwise store_false spelled --no-<name>
        and --disable-<name>; metadata["argparse_meta"] overrides everything, including the names.
        """
        cls_name = factory.cls.node.name
        build_source = module.cite(factory.line)[0]
        for f in self.dataclass_fields(factory.cls):
            if f.name in factory.exclude or not f.init:
                continue
            default = self.field_default(f)
            kwargs: dict[str, Any] = {"dest": f.name, "default": None if default is MISSING else default}
            names = [_format_flag(f.name)]
            notes = [f"generated from {cls_name}.{f.name} by Megatron's ArgumentGroupFactory ({build_source})",
                     *f.notes]
            meta = self.argparse_meta(f)
            try:
                kwargs.update(self.megatron_type(f.annotation, f.module))
                if kwargs.get("type") == Symbol("bool"):
                    kwargs.pop("type")
                    is_false = not isinstance(default, Opaque) and default is not MISSING and default == False  # noqa: E712
                    kwargs["action"] = "store_true" if is_false else "store_false"
                    if kwargs["action"] == "store_false":
                        names = [_format_flag(f"no_{f.name}"), _format_flag(f"disable_{f.name}")]
            except Unresolved as exc:
                if meta is None:
                    notes.append(f"Megatron cannot infer an argparse type for this field ({exc}); "
                                 "registering it would fail")
            if meta is not None:
                meta = dict(meta)
                names = list(meta.pop("arg_names", names))
                kwargs.update(meta)
            self.add_flag(parser, names, kwargs, None, f.module, owner=f.module.owner, notes=notes, line=f.line)

    def dataclass_loop_flags(self, stmt: ast.For, env: dict[str, Any], module: SourceFile) -> bool:
        """A loop `for f in dataclasses.fields(Cls): parser.add_argument(f"--{f.name...}", ...)`: one flag per field.

        slime's FSDP backend declared its arguments this way (a dataclass, then a loop registering each
        field): a bool field becomes a store_true switch, any other field takes a value of its annotated
        type (Optional[X] and X | None read as X) with the field's default. Fields the loop skips with
        `if f.name == "...": continue` get no flag. Returns False when the loop has another shape.
        """
        it = stmt.iter
        if not (isinstance(it, ast.Call) and ast.unparse(it.func) in {"dataclasses.fields", "fields"}
                and len(it.args) == 1 and isinstance(stmt.target, ast.Name)):
            return False
        cls = self.safe_evaluate(it.args[0], env, module)
        calls = [c for c in ast.walk(stmt) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                 and c.func.attr == "add_argument"]
        parser = self.safe_evaluate(calls[0].func.value, env, module) if calls else None
        parser = parser.parser if isinstance(parser, GroupRef) else parser
        if not isinstance(cls, ClassRef) or not isinstance(parser, ParserModel):
            return False
        var = stmt.target.id
        dashes = any(".replace(" in ast.unparse(c.args[0]) for c in calls if c.args)
        skipped: set[str] = set()
        for sub in ast.walk(stmt):
            if (isinstance(sub, ast.If) and any(isinstance(b, ast.Continue) for b in sub.body)
                    and isinstance(sub.test, ast.Compare) and ast.unparse(sub.test.left) == f"{var}.name"):
                for comp in sub.test.comparators:
                    value = self.safe_evaluate(comp, env, module)
                    if isinstance(value, str):
                        skipped.add(value)
                    elif isinstance(value, (list, tuple, set)):
                        skipped.update(v for v in value if isinstance(v, str))
        loop_source = module.cite(stmt.lineno)[0]
        for f in self.dataclass_fields(cls):
            if f.name in skipped or not f.init:
                continue
            default = self.field_default(f)
            inner = _strip_optional(f.annotation)
            name = f"--{f.name.replace('_', '-')}" if dashes else f"--{f.name}"
            if isinstance(inner, ast.Name) and inner.id == "bool":
                kwargs: dict[str, Any] = {"action": "store_true"}
            else:
                kwargs = {"type": Symbol(ast.unparse(inner)), "default": None if default is MISSING else default}
            notes = [f"generated from the {cls.node.name}.{f.name} field by the loop at {loop_source}", *f.notes]
            self.add_flag(parser, [name], kwargs, None, f.module, owner=f.module.owner, notes=notes, line=f.line)
        return True

    def argparse_meta(self, f: DataclassField) -> dict[str, Any] | None:
        if f.metadata_node is None:
            return None
        try:
            meta = self.evaluate(f.metadata_node, {}, f.module)
        except Unresolved:
            return None
        if isinstance(meta, dict) and isinstance(meta.get("argparse_meta"), dict):
            return meta["argparse_meta"]
        return None

    def megatron_type(self, annotation: ast.expr, module: SourceFile) -> dict[str, Any]:
        members = _union_members(annotation)
        if members is not None:
            if len(members) >= 2 and _is_none(members[1]):
                return self.megatron_type(members[0], module)
            raise Unresolved(f"union {ast.unparse(annotation)}")
        head = _annotation_head(annotation)
        if isinstance(annotation, ast.Subscript):
            args = _subscript_args(annotation)
            if head in {"Optional", "typing.Optional"}:
                return self.megatron_type(args[0], module)
            if head in {"list", "List", "typing.List"}:
                if len(args) != 1:
                    raise Unresolved(f"multi-type list {ast.unparse(annotation)}")
                inner = self.megatron_type(args[0], module)
                inner["nargs"] = "+"
                return inner
            if head in {"Literal", "typing.Literal"}:
                values = [self.evaluate(a, {}, module) for a in args]
                return {"type": Symbol(type(values[0]).__name__) if values else Symbol("str"), "choices": values}
            raise Unresolved(f"unsupported type {ast.unparse(annotation)}")
        try:
            value = self.evaluate(annotation, {}, module)
        except Unresolved:
            value = Symbol(ast.unparse(annotation))
        if isinstance(value, ClassRef) and self.is_enum(value):
            return {"type": Symbol(value.node.name), "choices": [EnumMember(value.node.name, n)
                                                                 for n in self.enum_members(value)]}
        if isinstance(value, ClassRef):
            return {"type": Symbol(value.node.name)}
        if isinstance(value, Symbol):
            return {"type": Symbol(value.text)}
        return {"type": Symbol(ast.unparse(annotation))}

    def sglang_dataclass_flags(self, args: list[Any], kwargs: dict[str, Any], node: ast.Call,
                               module: SourceFile) -> None:
        """SGLang's add_cli_args_from_dataclass: one flag per field annotated A[T, "help" | Arg(...)].

        Rule (python/sglang/srt/arg_groups/arg_utils.py@v0.5.15.post1): --<field-name> (or Arg.cli_name)
        plus Arg.aliases; dest is the field name; a custom Arg.action is used as given; Optional[X] uses X;
        Literal gives choices; List[X] gets nargs '+' (or Arg.nargs) unless a type_parser is set; bool
        becomes store_true whatever its default; other types take Arg.type_parser or str/int/float; a field
        with no default is required. Fields without Arg metadata, or with no_cli, get no flag.
        """
        parser = args[0] if args else kwargs.get("parser")
        parser = parser.parser if isinstance(parser, GroupRef) else parser
        cls = args[1] if len(args) > 1 else kwargs.get("cls")
        if not isinstance(parser, ParserModel) or not isinstance(cls, ClassRef):
            return None
        for f in self.dataclass_fields(cls):
            meta = self.sglang_arg_meta(f)
            if meta is None or meta.get("no_cli") is True:
                continue
            cli_name = meta.get("cli_name") or _format_flag(f.name)
            names = [cli_name, *(meta.get("aliases") or [])]
            default = self.field_default(f)
            auto_dest = cli_name.lstrip("-").replace("-", "_")
            flag_kwargs: dict[str, Any] = {"dest": f.name} if f.name != auto_dest else {}
            if default is not MISSING:
                flag_kwargs["default"] = default
            inner = _sglang_inner_type(f.annotation)
            if meta.get("action") is not None:
                flag_kwargs["action"] = meta["action"]
                flag_kwargs.update(meta.get("action_kwargs") or {})
            else:
                stripped = _strip_optional(inner)
                head = _annotation_head(stripped)
                if head in {"Literal", "typing.Literal"}:
                    values = [self.safe_evaluate(a, {}, f.module) for a in _subscript_args(stripped)]
                    flag_kwargs["choices"] = meta.get("choices") or values
                    flag_kwargs["type"] = meta.get("type_parser") or _sglang_scalar(
                        Symbol(type(values[0]).__name__) if values else Symbol("str"))
                    if meta.get("const") is not None:
                        flag_kwargs["const"] = meta["const"]
                elif head in {"List", "list", "typing.List"} and meta.get("type_parser") is None:
                    elem = _subscript_args(stripped)
                    flag_kwargs["type"] = _sglang_scalar(self.safe_evaluate(elem[0], {}, f.module) if elem else None)
                    flag_kwargs["nargs"] = meta.get("nargs") or "+"
                    if meta.get("choices"):
                        flag_kwargs["choices"] = meta["choices"]
                    if meta.get("const") is not None:
                        flag_kwargs["const"] = meta["const"]
                elif isinstance(stripped, ast.Name) and stripped.id == "bool":
                    flag_kwargs["action"] = "store_true"
                else:
                    scalar = self.safe_evaluate(stripped, {}, f.module) if isinstance(stripped, ast.Name) else None
                    flag_kwargs["type"] = meta.get("type_parser") or _sglang_scalar(scalar)
                    if meta.get("choices"):
                        flag_kwargs["choices"] = meta["choices"]
                    if meta.get("nargs"):
                        flag_kwargs["nargs"] = meta["nargs"]
                    if meta.get("const") is not None:
                        flag_kwargs["const"] = meta["const"]
                    required = meta.get("required")
                    if required is True or (required is None and default is MISSING):
                        flag_kwargs["required"] = True
            self.add_flag(parser, names, flag_kwargs, None, f.module, owner=f.module.owner,
                          notes=list(f.notes), line=f.line)
        return None

    def sglang_arg_meta(self, f: DataclassField) -> dict[str, Any] | None:
        annotation = f.annotation
        if not (isinstance(annotation, ast.Subscript) and _annotation_head(annotation) in {"A", "Annotated",
                                                                                          "typing.Annotated"}):
            return None
        for extra in _subscript_args(annotation)[1:]:
            if isinstance(extra, ast.JoinedStr):
                return {}
            if not isinstance(extra, ast.Call):
                try:
                    help_text = self.evaluate(extra, {}, f.module)
                except Unresolved:
                    continue
                if isinstance(help_text, str):
                    return {}
                continue
            if ast.unparse(extra.func).split(".")[-1] == "Arg":
                meta: dict[str, Any] = {}
                for kw in extra.keywords:
                    if kw.arg is None or kw.arg == "help":
                        continue
                    try:
                        meta[kw.arg] = self.evaluate(kw.value, {}, f.module)
                    except Unresolved:
                        meta[kw.arg] = Opaque(ast.unparse(kw.value))
                return meta
        return None

    def action_init_default(self, action: Any, param_name: str) -> Any:
        """A keyword default of a custom argparse.Action subclass's __init__ (e.g. nargs=0), if any."""
        if not isinstance(action, ClassRef):
            return None
        for stmt in action.node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                params = stmt.args
                positional = list(params.args)
                for param, default in zip(positional[len(positional) - len(params.defaults):], params.defaults, strict=True):
                    if param.arg == param_name:
                        return self.safe_evaluate(default, {}, action.module)
                for param, default in zip(params.kwonlyargs, params.kw_defaults, strict=True):
                    if param.arg == param_name and default is not None:
                        return self.safe_evaluate(default, {}, action.module)
        return None
