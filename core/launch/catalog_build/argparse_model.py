"""The argparse model: parsers, groups, `add_argument`, `set_defaults`, and slime's helpers around them
(`reset_arg` and the `--sglang-` renaming wrapper), recorded as RawFlags on ParserModels."""

from __future__ import annotations

import ast
from typing import Any

from core.launch.catalog_build.sources import SourceFile
from core.launch.catalog_build.values import (
    UNKNOWN,
    ClassRef,
    FactoryValue,
    FunctionRef,
    GroupRef,
    Opaque,
    ParserModel,
    RawFlag,
    SglangWrapper,
    Symbol,
    Unresolved,
    _dest_of,
    _reset_default,
    raw_from_spec,
)


class ArgparseCalls:
    """What the interpreter does when upstream code builds or changes an argparse parser."""

    def run_call(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> Any:
        try:
            func = self.evaluate(node.func, env, module)
        except Unresolved:
            func = None
        if func is None and isinstance(node.func, ast.Attribute):
            text = ast.unparse(node.func)
            if text.endswith("ServerArgs.add_cli_args") or text.endswith("RouterArgs.add_cli_args"):
                func = Symbol(text)
        if isinstance(func, tuple) and func and func[0] == "method":
            return self.run_method(func[1], func[2], node, env, module)
        if isinstance(func, Symbol):
            if func.text in {"argparse.ArgumentParser", "ArgumentParser"}:
                return self.new_parser(node, env, module)
            if func.text.endswith(("ServerArgs.add_cli_args", "RouterArgs.add_cli_args")):
                return self.fallback_flags(func.text, node, env, module)
            try:
                return self.evaluate_call(node, env, module, frozenset())
            except Unresolved:
                return UNKNOWN
        if isinstance(func, ClassRef):
            if func.qualname.endswith("argument_utils.ArgumentGroupFactory"):
                args = [self.safe_evaluate(a, env, module) for a in node.args]
                kwargs = {kw.arg: self.safe_evaluate(kw.value, env, module) for kw in node.keywords if kw.arg}
                cls = args[0] if args else kwargs.get("src_cfg_class")
                exclude = args[1] if len(args) > 1 else kwargs.get("exclude")
                if isinstance(cls, ClassRef):
                    return FactoryValue(cls, set(exclude or []) if isinstance(exclude, (list, tuple)) else set(),
                                        node.lineno)
            return UNKNOWN
        if isinstance(func, FunctionRef):
            qual = f"{func.module.dotted}.{func.node.name}"
            args = [self.run_value(a, env, module) if isinstance(a, ast.Call) else self.safe_evaluate(a, env, module)
                    for a in node.args]
            kwargs = {kw.arg: self.safe_evaluate(kw.value, env, module) for kw in node.keywords if kw.arg}
            home = getattr(self, "home_package", "slime")  # slime, or a fork's renamed package
            if qual == f"{home}.utils.arguments.reset_arg" or (func.node.name == "reset_arg" and func.closure is None
                                                               and func.module.dotted.startswith(home)):
                return self.reset_arg(node, env, module)
            if func.node.name == "add_cli_args_from_dataclass" and "arg_groups" in func.module.dotted:
                return self.sglang_dataclass_flags(args, kwargs, node, module)
            relevant = any(isinstance(v, (ParserModel, GroupRef, FunctionRef)) for v in [*args, *kwargs.values()])
            if relevant or (func.closure is not None and not args and not kwargs):
                return self.call_function(func, args, kwargs)
            return UNKNOWN
        return UNKNOWN

    # -- argparse emulation -------------------------------------------------------------------------
    def new_parser(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> ParserModel:
        kwargs = {kw.arg: self.safe_evaluate(kw.value, env, module) for kw in node.keywords if kw.arg}
        source, _ = module.cite(node.lineno)
        allow_abbrev = kwargs.get("allow_abbrev", True)
        parser = ParserModel(key="?", source=source, allow_abbrev=allow_abbrev is not False)
        self.parsers.append(parser)
        if kwargs.get("add_help", True) is not False:
            self.add_flag(parser, ["-h", "--help"], {"action": "help"}, node, module, owner=module.owner,
                          notes=["added by argparse itself (add_help is on)"])
        return parser

    def run_method(self, target: Any, method: str, node: ast.Call, env: dict[str, Any], module: SourceFile) -> Any:
        if isinstance(target, FactoryValue):
            if method == "build_group":
                parser = self.safe_evaluate(node.args[0], env, module) if node.args else None
                parser = parser.parser if isinstance(parser, GroupRef) else parser
                if isinstance(parser, ParserModel):
                    self.megatron_dataclass_flags(parser, target, module)
                    return GroupRef(parser)
            return UNKNOWN
        parser = target.parser if isinstance(target, GroupRef) else target
        if method == "add_argument":
            names = []
            for arg in node.args:
                value = self.safe_evaluate(arg, env, module)
                if not isinstance(value, str):
                    self.notes.append(f"{module.cite(node.lineno)[0]}: option name not evaluable")
                    return None
                names.append(value)
            kwargs = self.evaluate_kwargs(node, env, module)
            self.add_flag(parser, names, kwargs, node, module, owner=module.owner)
            return None
        if method in {"add_argument_group", "add_mutually_exclusive_group"}:
            return GroupRef(parser)
        if method == "set_defaults":
            kwargs = self.evaluate_kwargs(node, env, module)
            source, _ = module.cite(node.lineno)
            for dest, value in kwargs.items():
                for flag in parser.flags:
                    if _dest_of(flag.names, flag.kwargs) == dest:
                        _reset_default(flag, value, source)
            return None
        if method in {"parse_known_args", "parse_args"}:
            parser.ignore_unknown = method == "parse_known_args"
            parser.parse_source = module.cite(node.lineno)[0]
            return UNKNOWN
        return UNKNOWN

    def evaluate_kwargs(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                value = self.safe_evaluate(kw.value, env, module)
                if isinstance(value, dict):
                    kwargs.update(value)
                continue
            try:
                kwargs[kw.arg] = self.evaluate(kw.value, env, module)
            except Unresolved:
                kwargs[kw.arg] = Opaque(ast.unparse(kw.value))
        return kwargs

    def add_flag(self, parser: ParserModel, names: list[str], kwargs: dict[str, Any], node: ast.AST,
                 module: SourceFile, owner: str, notes: list[str] | None = None, line: int | None = None) -> None:
        line = line or getattr(node, "lineno", 0)
        source, patched = module.cite(line)
        notes = list(notes or []) + list(self.conditions)
        if parser.wrapper is not None:
            wrapper = parser.wrapper
            dest = kwargs.get("dest")
            canonical = dest if "dest" in kwargs else next(
                (n[2:].replace("-", "_") for n in names if n.startswith("--")), None)
            renamed = [f"{wrapper.flag_prefix}{n.lstrip('-')}" if n.startswith("-") else n for n in names]
            if isinstance(canonical, str) and canonical in wrapper.skip:
                parser.skipped.append((names, canonical, source, renamed[0] if renamed else ""))
                return
            names = renamed
            kwargs = dict(kwargs)
            if isinstance(kwargs.get("dest"), str) and not kwargs["dest"].startswith(wrapper.dest_prefix):
                kwargs["dest"] = f"{wrapper.dest_prefix}{kwargs['dest']}"
        parser.flags.append(RawFlag(names=names, kwargs=kwargs, source=source, patched=patched, owner=owner,
                                    parser_key=parser.key, line=line, notes=notes, entry_point=self.entry_point))

    def reset_arg(self, node: ast.Call, env: dict[str, Any], module: SourceFile) -> None:
        """slime's reset_arg: change the default of an existing flag, or add the flag when it is missing."""
        args = [self.safe_evaluate(a, env, module) for a in node.args]
        parser = args[0] if args else None
        parser = parser.parser if isinstance(parser, GroupRef) else parser
        name = args[1] if len(args) > 1 else None
        if not isinstance(parser, ParserModel) or not isinstance(name, str):
            return None
        kwargs = self.evaluate_kwargs(node, env, module)
        source, _ = module.cite(node.lineno)
        existing = parser.find_option(name)
        if existing is None:
            self.add_flag(parser, [name], kwargs, node, module, owner=module.owner,
                          notes=["registered through slime's reset_arg because Megatron does not define it"])
        elif "default" in kwargs:
            _reset_default(existing, kwargs["default"], source)
        else:
            existing.notes.append(f"slime calls reset_arg on it without a default, which changes nothing ({source})")
        return None

    def read_sglang_wrapper(self, fn: FunctionRef, env: dict[str, Any], module: SourceFile) -> SglangWrapper:
        """Read the skip list and the prefixes from slime's replacement for parser.add_argument."""
        skip: set[str] = set()
        for sub in ast.walk(fn.node):
            if isinstance(sub, ast.Compare) and any(isinstance(op, ast.In) for op in sub.ops):
                for comp in sub.comparators:
                    value = self.safe_evaluate(comp, env, module)
                    if isinstance(value, (list, tuple, set)) and all(isinstance(v, str) for v in value):
                        skip.update(value)
        flag_prefix, dest_prefix = "--sglang-", "sglang_"
        for sub in ast.walk(fn.node):
            if isinstance(sub, ast.JoinedStr) and sub.values and isinstance(sub.values[0], ast.Constant):
                head = str(sub.values[0].value)
                if head.startswith("--"):
                    flag_prefix = head
                elif head.endswith("_"):
                    dest_prefix = head
        source, _ = module.cite(fn.node.lineno)
        return SglangWrapper(skip=skip, flag_prefix=flag_prefix, dest_prefix=dest_prefix, source=source)

    def fallback_flags(self, text: str, node: ast.Call, env: dict[str, Any], module: SourceFile) -> None:
        """SGLang or the router was not given: reuse their flags from the committed catalog."""
        if self.fallback is None or not node.args:
            return None
        parser = self.safe_evaluate(node.args[0], env, module)
        parser = parser.parser if isinstance(parser, GroupRef) else parser
        if not isinstance(parser, ParserModel):
            return None
        owner = "sglang" if text.endswith("ServerArgs.add_cli_args") else "router"
        for spec in self.fallback.flags:
            if spec.owner == owner and "sglang" in spec.parsers:
                parser.flags.append(raw_from_spec(spec, parser.key))
        if owner == "sglang":
            for skipped in self.fallback.skipped:
                parser.skipped.append((skipped.upstream_option_strings, skipped.dest, skipped.source,
                                       skipped.option_strings[0]))
            parser.wrapper = None
        return None
