"""The core of the static interpreter: name resolution, expressions, calls into upstream functions, and
statements, counted against the build's step and time limits."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable
from typing import Any

from core.launch.catalog import Catalog, CatalogError
from core.launch.catalog_build.sources import SourceFile, SourceTree
from core.launch.catalog_build.values import (
    _BUILTIN_TYPES,
    MAX_BUILD_SECONDS,
    MAX_STEPS,
    MAX_VALUE_SIZE,
    UNKNOWN,
    BoundAddArgument,
    BuildLimitExceeded,
    ClassRef,
    EnumMember,
    FactoryValue,
    FieldCall,
    FunctionRef,
    GroupRef,
    Opaque,
    ParserModel,
    Symbol,
    Unresolved,
    _assigned_names,
    _binop_within_limits,
    _bounded,
    _calls_add_argument,
    _is_static,
    _require_plain,
    _short_source,
    _str_method_within_limits,
    _truthy,
)

PARSER_KEYS = {
    ("_pre_parse_mode", "temp_parser"): "pre",
    ("sglang_parse_args", "parser"): "sglang",
    ("sglang_parse_args", "temp_parser"): "sglang_tp",
    ("parse_args", "parser"): "main",
    ("parse_fsdp_cli", "parser"): "fsdp",
    ("_parse_fsdp_cli", "parser"): "fsdp",
}


class ReturnSignal(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class Evaluator:
    """Walks argparse-building functions statement by statement, recording flags on ParserModels."""

    MAX_DEPTH = 30

    def __init__(self, tree: SourceTree, fallback: Catalog | None = None) -> None:
        self.tree = tree
        self.fallback = fallback
        self.parsers: list[ParserModel] = []
        self.conditions: list[str] = []
        self.function_stack: list[str] = []
        self.entry_point: str | None = None
        self.home_package = "slime"  # the package holding slime's parser (a fork may rename it)
        self.notes: list[str] = []
        self.steps = 0
        self.deadline = time.monotonic() + MAX_BUILD_SECONDS

    def dataclass_loop_flags(self, stmt: ast.For, env: dict[str, Any], module: SourceFile) -> bool:
        """Overridden by UpstreamFlags: flags a loop over a dataclass's fields registers."""
        return False

    def tick(self) -> None:
        """Count one step; stop the build once it runs past MAX_STEPS or MAX_BUILD_SECONDS."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise BuildLimitExceeded(f"the static reader stopped after {MAX_STEPS:,} steps "
                                     "(a loop or recursion it cannot finish)")
        if time.monotonic() > self.deadline:
            raise BuildLimitExceeded(f"the static reader stopped after {MAX_BUILD_SECONDS:.0f} s")

    # -- name resolution ----------------------------------------------------------------------------
    def module_lookup(self, module: SourceFile, name: str, seen: frozenset = frozenset()) -> Any:
        key = (module.dotted, name)
        if key in seen:
            raise Unresolved(name)
        seen = seen | {key}
        for stmt in module.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return FunctionRef(stmt, module)
            if isinstance(stmt, ast.ClassDef) and stmt.name == name:
                return ClassRef(stmt, module)
        value: Any = None
        found = False
        for stmt in module.tree.body:  # the last top-level assignment wins
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        value, found = stmt.value, True
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                if stmt.value is not None:
                    value, found = stmt.value, True
        if found:
            return self.evaluate(value, {}, module, seen)
        for stmt in module.tree.body:
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if (alias.asname or alias.name) == name:
                        return self.import_lookup(module, stmt, alias.name, seen)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if (alias.asname or alias.name.split(".")[0]) == name:
                        return Symbol(alias.name if alias.asname else alias.name.split(".")[0])
        if name in _BUILTIN_TYPES or name in {"None", "True", "False", "object"}:
            return Symbol(name)
        raise Unresolved(name)

    def import_lookup(self, module: SourceFile, stmt: ast.ImportFrom, name: str, seen: frozenset) -> Any:
        base = stmt.module or ""
        if stmt.level:
            parts = module.dotted.split(".")
            is_package = module.cite_path.endswith("__init__.py")
            keep = len(parts) - stmt.level + (1 if is_package else 0)
            base = ".".join(parts[:keep] + ([base] if base else []))
        target = self.tree.module(base)
        if target is None:
            sub = self.tree.module(f"{base}.{name}")
            if sub is not None:
                return Symbol(f"{base}.{name}")
            return Symbol(f"{base}.{name}" if base else name)
        try:
            return self.module_lookup(target, name, seen)
        except Unresolved:
            return Symbol(f"{base}.{name}")

    def lookup(self, name: str, env: dict[str, Any], module: SourceFile, seen: frozenset = frozenset()) -> Any:
        scope: dict[str, Any] | None = env
        while scope is not None:
            if name in scope:
                value = scope[name]
                if value is UNKNOWN:
                    raise Unresolved(name)
                return value
            scope = scope.get("__closure__")
        return self.module_lookup(module, name, seen)

    # -- expressions --------------------------------------------------------------------------------
    def evaluate(self, node: ast.expr, env: dict[str, Any], module: SourceFile, seen: frozenset = frozenset()) -> Any:
        """The static value of an expression; Unresolved when it needs running code or exceeds the size caps."""
        self.tick()
        try:
            return self._evaluate(node, env, module, seen)
        except CatalogError:
            raise
        except (TypeError, ValueError, ArithmeticError, LookupError) as exc:  # e.g. sorted() of mixed types
            raise Unresolved(_short_source(node)) from exc

    def _evaluate(self, node: ast.expr, env: dict[str, Any], module: SourceFile, seen: frozenset) -> Any:
        if isinstance(node, ast.Constant):
            return _bounded(node.value, node)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if len(node.elts) > MAX_VALUE_SIZE:  # told before evaluating (or printing) any of its items
                raise Unresolved(f"a {type(node).__name__.lower()} of {len(node.elts):,} items (too large)")
            items: list[Any] = []
            for elt in node.elts:
                if isinstance(elt, ast.Starred):
                    items.extend(self.iterate(self.evaluate(elt.value, env, module, seen)))
                else:
                    items.append(self.evaluate(elt, env, module, seen))
                if len(items) > MAX_VALUE_SIZE:
                    raise Unresolved(f"{_short_source(node)} (too large)")
            return _bounded(tuple(items) if isinstance(node, ast.Tuple) else items, node)
        if isinstance(node, ast.Dict):
            if len(node.keys) > MAX_VALUE_SIZE:
                raise Unresolved(f"a dict of {len(node.keys):,} items (too large)")
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    extra = self.evaluate(v, env, module, seen)
                    if not isinstance(extra, dict):
                        raise Unresolved(_short_source(v))
                    out.update(extra)
                else:
                    out[self.evaluate(k, env, module, seen)] = self.evaluate(v, env, module, seen)
                if len(out) > MAX_VALUE_SIZE:
                    raise Unresolved(f"{_short_source(node)} (too large)")
            return _bounded(out, node)
        if isinstance(node, ast.Name):
            return self.lookup(node.id, env, module, seen)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.evaluate(node.value, env, module, seen), node.attr)
        if isinstance(node, ast.UnaryOp):
            operand = self.evaluate(node.operand, env, module, seen)
            if isinstance(node.op, ast.Not):
                return not _truthy(operand)
            _require_plain(operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return +operand
            raise Unresolved(ast.unparse(node))
        if isinstance(node, ast.BinOp):
            left = self.evaluate(node.left, env, module, seen)
            right = self.evaluate(node.right, env, module, seen)
            _require_plain(left)
            _require_plain(right)
            ops: dict[type, Callable[[Any, Any], Any]] = {
                ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
                ast.Pow: lambda a, b: a ** b,
            }
            op = ops.get(type(node.op))
            if op is None or not _binop_within_limits(node.op, left, right):
                raise Unresolved(_short_source(node))
            try:
                result = op(left, right)
            except Exception as exc:  # noqa: BLE001 - any failure means "not statically known"
                raise Unresolved(_short_source(node)) from exc
            return _bounded(result, node)
        if isinstance(node, ast.BoolOp):
            values = [self.evaluate(v, env, module, seen) for v in node.values]
            if isinstance(node.op, ast.And):
                return all(_truthy(v) for v in values)
            return any(_truthy(v) for v in values)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self.evaluate(node.left, env, module, seen)
            right = self.evaluate(node.comparators[0], env, module, seen)
            op = node.ops[0]
            if isinstance(op, ast.Is):
                return left is right
            if isinstance(op, ast.IsNot):
                return left is not right
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.In):
                return left in right
            if isinstance(op, ast.NotIn):
                return left not in right
            raise Unresolved(ast.unparse(node))
        if isinstance(node, ast.IfExp):
            test = self.evaluate(node.test, env, module, seen)
            return self.evaluate(node.body if _truthy(test) else node.orelse, env, module, seen)
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            length = 0
            for value in node.values:
                if isinstance(value, ast.Constant):
                    part = str(value.value)
                elif isinstance(value, ast.FormattedValue):
                    inner = self.evaluate(value.value, env, module, seen)
                    _require_plain(inner)
                    part = str(inner)
                else:
                    continue
                parts.append(part)
                length += len(part)
                if length > MAX_VALUE_SIZE:
                    raise Unresolved(f"{_short_source(node)} (too large)")
            return "".join(parts)
        if isinstance(node, ast.Subscript):
            base = self.evaluate(node.value, env, module, seen)
            index = self.evaluate(node.slice, env, module, seen)
            _require_plain(base)
            try:
                return base[index]
            except Exception as exc:  # noqa: BLE001
                raise Unresolved(ast.unparse(node)) from exc
        if isinstance(node, ast.Call):
            return self.evaluate_call(node, env, module, seen)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1:
            gen = node.generators[0]
            if not isinstance(gen.target, ast.Name) or gen.ifs:
                raise Unresolved(ast.unparse(node))
            iterable = self.iterate(self.evaluate(gen.iter, env, module, seen))
            return _bounded([self.evaluate(node.elt, {gen.target.id: item, "__closure__": env}, module, seen)
                             for item in iterable], node)
        if isinstance(node, ast.Lambda):
            raise Unresolved(ast.unparse(node))
        raise Unresolved(ast.unparse(node))

    def iterate(self, value: Any) -> list[Any]:
        if isinstance(value, ClassRef) and self.is_enum(value):
            return [EnumMember(value.node.name, n) for n in self.enum_members(value)]
        if isinstance(value, (list, tuple, set, dict, str)):
            return list(value)
        raise Unresolved("iteration")

    def attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, Symbol):
            return Symbol(f"{base.text}.{attr}")
        if isinstance(base, ClassRef):
            if self.is_enum(base) and attr in self.enum_members(base):
                return EnumMember(base.node.name, attr)
            for stmt in base.node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == attr:
                    return FunctionRef(stmt, base.module, owner_class=base)
            for f in self.dataclass_fields(base):
                if f.name == attr:
                    if f.default_node is None or f.factory_node is not None:
                        raise Unresolved(f"{base.node.name}.{attr}")
                    return self.evaluate(f.default_node, {}, f.module)
            for stmt in base.node.body:
                if isinstance(stmt, ast.Assign):
                    for target in stmt.targets:
                        if isinstance(target, ast.Name) and target.id == attr:
                            return self.evaluate(stmt.value, {}, base.module)
            raise Unresolved(f"{base.node.name}.{attr}")
        if isinstance(base, EnumMember):
            if attr == "name":
                return base.name
            raise Unresolved(f"{base.enum}.{base.name}.{attr}")
        if isinstance(base, ParserModel) or isinstance(base, GroupRef):
            return ("method", base, attr)
        if isinstance(base, FactoryValue):
            return ("method", base, attr)
        if isinstance(base, str) and attr in {"lower", "upper", "replace", "strip", "lstrip", "rstrip", "format"}:
            return ("strmethod", base, attr)
        if isinstance(base, dict) and attr in {"keys", "values", "items", "get"}:
            return ("dictmethod", base, attr)
        raise Unresolved(attr)

    def evaluate_call(self, node: ast.Call, env: dict[str, Any], module: SourceFile, seen: frozenset) -> Any:
        func = self.evaluate(node.func, env, module, seen)
        if isinstance(func, tuple) and func and func[0] == "strmethod":
            args = [self.evaluate(a, env, module, seen) for a in node.args]
            if not _str_method_within_limits(func[1], func[2], args):
                raise Unresolved(f"{_short_source(node)} (too large)")
            return _bounded(getattr(func[1], func[2])(*args), node)
        if isinstance(func, tuple) and func and func[0] == "dictmethod":
            args = [self.evaluate(a, env, module, seen) for a in node.args]
            result = getattr(func[1], func[2])(*args)
            return _bounded(list(result), node) if func[2] != "get" else result
        if isinstance(func, Symbol):
            name = func.text
            if name in {"field", "dataclasses.field"}:
                kwargs, nodes = {}, {}
                for kw in node.keywords:
                    if kw.arg is None:
                        continue
                    nodes[kw.arg] = kw.value
                    try:
                        kwargs[kw.arg] = self.evaluate(kw.value, env, module, seen)
                    except Unresolved:
                        kwargs[kw.arg] = Opaque(ast.unparse(kw.value))
                return FieldCall(kwargs, nodes)
            args = [self.evaluate(a, env, module, seen) for a in node.args]
            if name in {"list", "tuple", "sorted", "set"} and len(args) <= 1 and not node.keywords:
                items = self.iterate(args[0]) if args else []
                return _bounded({"list": list, "tuple": tuple, "sorted": sorted, "set": list}[name](items), node)
            if name == "dict" and not args:
                return _bounded({kw.arg: self.evaluate(kw.value, env, module, seen) for kw in node.keywords
                                 if kw.arg}, node)
            if name in {"int", "float", "str", "bool"} and len(args) == 1:
                try:
                    value = {"int": int, "float": float, "str": str, "bool": bool}[name](args[0])
                except (TypeError, ValueError) as exc:
                    raise Unresolved(ast.unparse(node)) from exc
                if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
                    raise Unresolved(ast.unparse(node))
                return _bounded(value, node)
        raise Unresolved(ast.unparse(node))

    # -- statements ---------------------------------------------------------------------------------
    def call_function(self, fn: FunctionRef, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if len(self.function_stack) >= self.MAX_DEPTH:
            return UNKNOWN
        env: dict[str, Any] = {"__closure__": fn.closure}
        params = fn.node.args
        positional = list(params.posonlyargs) + list(params.args)
        if fn.owner_class is not None and not _is_static(fn.node) and positional:
            positional = positional[1:]
        defaults = list(params.defaults)
        first_default = len(positional) - len(defaults)
        for index, param in enumerate(positional):
            if index < len(args):
                env[param.arg] = args[index]
            elif param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            elif index >= first_default:
                env[param.arg] = self.safe_evaluate(defaults[index - first_default], {}, fn.module)
            else:
                env[param.arg] = UNKNOWN
        for param, default in zip(params.kwonlyargs, params.kw_defaults, strict=True):
            if param.arg in kwargs:
                env[param.arg] = kwargs[param.arg]
            elif default is not None:
                env[param.arg] = self.safe_evaluate(default, {}, fn.module)
            else:
                env[param.arg] = UNKNOWN
        self.function_stack.append(fn.node.name)
        try:
            self.run_block(fn.node.body, env, fn.module)
        except ReturnSignal as ret:
            return ret.value
        finally:
            self.function_stack.pop()
        return None

    def safe_evaluate(self, node: ast.expr, env: dict[str, Any], module: SourceFile) -> Any:
        try:
            return self.evaluate(node, env, module)
        except Unresolved:
            return UNKNOWN

    def run_block(self, body: list[ast.stmt], env: dict[str, Any], module: SourceFile) -> None:
        for stmt in body:
            self.run_statement(stmt, env, module)

    def run_statement(self, stmt: ast.stmt, env: dict[str, Any], module: SourceFile) -> None:
        self.tick()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env[stmt.name] = FunctionRef(stmt, module, closure=env)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.run_call(stmt.value, env, module)
        elif isinstance(stmt, ast.Assign):
            value = self.run_value(stmt.value, env, module)
            for target in stmt.targets:
                self.assign(target, value, env, module, stmt)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self.assign(stmt.target, self.run_value(stmt.value, env, module), env, module, stmt)
        elif isinstance(stmt, ast.Return):
            raise ReturnSignal(self.run_value(stmt.value, env, module) if stmt.value is not None else None)
        elif isinstance(stmt, ast.If):
            self.run_if(stmt, env, module)
        elif isinstance(stmt, ast.Try):
            self.run_block(stmt.body, env, module)
            for handler in stmt.handlers:
                for name in _assigned_names(handler.body):
                    env[name] = UNKNOWN
            self.run_block(stmt.orelse, env, module)
            self.run_block(stmt.finalbody, env, module)
        elif isinstance(stmt, ast.For):
            try:
                items = self.iterate(self.evaluate(stmt.iter, env, module))
            except Unresolved:
                items = None
            if items is not None and isinstance(stmt.target, ast.Name):
                for item in items:
                    env[stmt.target.id] = item
                    self.run_block(stmt.body, env, module)
            elif _calls_add_argument(stmt) and self.dataclass_loop_flags(stmt, env, module):
                pass
            elif _calls_add_argument(stmt):
                self.conditions.append(f"inside a loop over {ast.unparse(stmt.iter)}")
                try:
                    self.run_block(stmt.body, env, module)
                finally:
                    self.conditions.pop()
        elif isinstance(stmt, ast.With):
            self.run_block(stmt.body, env, module)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                env[alias.asname or alias.name] = self.import_lookup(module, stmt, alias.name, frozenset())
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                env[alias.asname or alias.name.split(".")[0]] = Symbol(alias.name)

    def run_if(self, stmt: ast.If, env: dict[str, Any], module: SourceFile) -> None:
        try:
            test = self.evaluate(stmt.test, env, module)
            known = not isinstance(test, (Symbol, Opaque, FunctionRef, ClassRef))
        except Unresolved:
            known = False
        if known:
            self.run_block(stmt.body if _truthy(test) else stmt.orelse, env, module)
            return
        text = ast.unparse(stmt.test)
        returned: list[Any] = []
        for branch, label in ((stmt.body, f"only when `{text}`"), (stmt.orelse, f"only when not `{text}`")):
            if not branch:
                continue
            self.conditions.append(label)
            try:
                self.run_block(branch, env, module)
            except ReturnSignal as ret:
                returned.append(ret.value)
            finally:
                self.conditions.pop()
        # Both ways return the same parser (`if have_x: ...; return parser` / `else: return parser`): so does the
        # function, whichever way the unknown test goes.
        if len(returned) == 2 and returned[0] is returned[1] and isinstance(returned[0], ParserModel):
            raise ReturnSignal(returned[0])

    def assign(self, target: ast.expr, value: Any, env: dict[str, Any], module: SourceFile, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, ParserModel) and value.key.startswith("?"):
                fn_name = self.function_stack[-1] if self.function_stack else ""
                value.key = PARSER_KEYS.get((fn_name, target.id), f"{fn_name}:{target.id}")
                for flag in value.flags:
                    flag.parser_key = value.key
            env[target.id] = value
        elif isinstance(target, ast.Tuple):
            for elt in target.elts:
                if isinstance(elt, ast.Name):
                    env[elt.id] = UNKNOWN
        elif isinstance(target, ast.Attribute) and target.attr == "add_argument":
            parser = self.safe_evaluate(target.value, env, module)
            if isinstance(parser, ParserModel):
                if isinstance(value, FunctionRef):
                    parser.wrapper = self.read_sglang_wrapper(value, env, module)
                elif isinstance(value, BoundAddArgument):
                    parser.wrapper = None

    def run_value(self, node: ast.expr, env: dict[str, Any], module: SourceFile) -> Any:
        if isinstance(node, ast.Call):
            return self.run_call(node, env, module)
        if isinstance(node, ast.Attribute) and node.attr == "add_argument":
            parser = self.safe_evaluate(node.value, env, module)
            if isinstance(parser, ParserModel):
                return BoundAddArgument(parser)
        return self.safe_evaluate(node, env, module)
