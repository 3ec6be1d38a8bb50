"""Flags added at start-up by the functions a command line names.

Some commits (miles, for one) let the function named by `--custom-generate-function-path` or
`--rollout-function-path` register flags of its own: slime's parser loads that function and calls its
`add_arguments(parser)` attribute. Which flags exist then depends on the script, so the builder only records
that the checkout has this step (`function_flag_dests`), and the checker reads the named function's
`add_arguments` from the user's checkout with the same static interpreter (nothing is imported or run).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from core.launch.catalog import FlagSpec
from core.launch.catalog_build.interpreter import Interpreter
from core.launch.catalog_build.sources import PackageRoot, SourceFile, SourceTree, allowed_roots
from core.launch.catalog_build.specs import spec_from_raw
from core.launch.catalog_build.values import FunctionRef, ParserModel, Unresolved

MAX_FUNCTION_PATH = 300


def function_flag_dests(module: SourceFile) -> list[str]:
    """The flags (dests) whose named functions may add flags: `for path in [args.a_path, args.b_path]: ...
    fn = load_function(path) ... fn.add_arguments(parser)` in slime's argument module."""
    dests: list[str] = []
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.For) and isinstance(node.iter, (ast.List, ast.Tuple))):
            continue
        calls = any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "add_arguments"
                    for c in ast.walk(node))
        if calls:
            dests.extend(e.attr for e in node.iter.elts if isinstance(e, ast.Attribute) and e.attr not in dests)
    return dests


def _module_and_name(path: str) -> tuple[str, str] | None:
    text = path.strip()
    if ":" in text:
        module, _, name = text.partition(":")
    else:
        module, _, name = text.rpartition(".")
    parts = module.split(".")
    if not module or not name.isidentifier() or not all(p.isidentifier() for p in parts):
        return None
    return module, name


@lru_cache(maxsize=32)
def _function_flags(checkout_text: str, path: str, stamp: float) -> tuple[FlagSpec, ...] | None:
    checkout = Path(checkout_text)
    found = _module_and_name(path)
    if found is None:
        return None
    module_name, name = found
    top = module_name.split(".")[0]
    if not (checkout / top).is_dir():
        return None
    tree = SourceTree([PackageRoot(top, checkout, "", "checkout", "slime")], allowed=allowed_roots([checkout]))
    interp = Interpreter(tree, None)
    interp.home_package = top
    try:
        module = tree.module(module_name)
        if module is None:
            return None
        target = None
        for stmt in module.tree.body:  # `generate.add_arguments = _add_arguments`
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "add_arguments"
                                                    and isinstance(t.value, ast.Name) and t.value.id == name
                                                    for t in stmt.targets):
                target = interp.evaluate(stmt.value, {}, module)
        if not isinstance(target, FunctionRef):
            return ()
        parser = ParserModel(key="main", source=f"{module.cite_path}", allow_abbrev=False, ignore_unknown=True)
        interp.parsers.append(parser)
        interp.call_function(target, [parser], {})
        specs = [spec_from_raw(raw, interp) for raw in parser.flags if raw.names]
    except Exception:  # noqa: BLE001 - any shape the reader cannot follow (limits included): not known
        return None
    for spec in specs:
        spec.notes.append(f"added at start-up by {path} (its add_arguments), which this script names")
    return tuple(specs)


def function_flags(checkout: Path, path: str) -> tuple[FlagSpec, ...] | None:
    """The flags the function at `path` (e.g. `pkg.module.generate`) adds with its `add_arguments`, read from
    the checkout; () when it adds none, None when it cannot be read (outside the checkout, not static)."""
    if len(path) > MAX_FUNCTION_PATH:
        return None
    found = _module_and_name(path)
    if found is None:
        return None
    rel = Path(*found[0].split("."))
    stamp = 0.0
    for candidate in (rel.with_suffix(".py"), rel / "__init__.py"):
        try:
            stamp = max(stamp, (Path(checkout) / candidate).stat().st_mtime)
        except OSError:
            continue
    try:
        return _function_flags(str(Path(checkout).resolve()), path, stamp)
    except (OSError, RecursionError, Unresolved):
        return None
