"""pyproject.toml declares what the app's code imports, each dependency once.

Every third-party module that core/, pages/, ui/ and streamlit_app.py import at module level comes from a
distribution in `dependencies` (not from one that another package happens to bring); one imported only inside
a function or an `except ImportError` guard may come from an optional extra instead (the code says how to
install it when it is missing); and every runtime dependency is imported by the code. Import names are mapped
to distributions with importlib.metadata.packages_distributions(), so the dev install must be complete.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions

import pytest

from tests.conftest import ROOT

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

CODE = ("core", "pages", "ui", "streamlit_app.py")
FIRST_PARTY = {"core", "pages", "ui", "streamlit_app"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> list[str]:
    return [_norm(re.match(r"[A-Za-z0-9._-]+", r.strip()).group(0)) for r in requirements]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _guards_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        names = [handler.type] if not isinstance(handler.type, ast.Tuple) else handler.type.elts
        if handler.type is None or any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
                                       for n in names):
            return True
    return False


def _imports(tree: ast.AST, lazy: bool = False):
    """(top-level module name, lazy) for each absolute import; lazy: inside a function or an ImportError guard."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], lazy
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], lazy
        inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(node, ast.Try) and _guards_import_error(node):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), True)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                yield from _imports(part, inner)
        else:
            yield from _imports(node, inner)


def _third_party_imports() -> dict[str, dict[str, bool]]:
    """Import name -> {file: imported only lazily there}."""
    found: dict[str, dict[str, bool]] = {}
    files = [p for name in CODE for p in ((ROOT / name).rglob("*.py") if (ROOT / name).is_dir() else [ROOT / name])]
    for path in sorted(files):
        rel = path.relative_to(ROOT).as_posix()
        for name, lazy in _imports(ast.parse(path.read_text(encoding="utf-8"), rel)):
            if name in sys.stdlib_module_names or name in FIRST_PARTY:
                continue
            where = found.setdefault(name, {})
            where[rel] = where.get(rel, True) and lazy
    return found


def test_the_import_scan_sees_module_level_and_lazy_imports():
    tree = ast.parse("import numpy\nfrom pandas import DataFrame\ndef f():\n    import pyarrow.parquet\n"
                     "try:\n    import wandb\nexcept ImportError:\n    wandb = None\n"
                     "try:\n    import yaml\nexcept ValueError:\n    pass\n")
    assert sorted(_imports(tree)) == [("numpy", False), ("pandas", False), ("pyarrow", True), ("wandb", True),
                                      ("yaml", False)]


def test_every_import_of_the_app_is_declared_and_every_dependency_is_imported():
    project = _project()
    runtime = _requirement_names(project["dependencies"])
    extras = {name: _requirement_names(reqs) for name, reqs in project["optional-dependencies"].items()}
    optional = {d for names in extras.values() for d in names}
    dists = {name: {_norm(d) for d in ds} for name, ds in packages_distributions().items()}

    problems, imported = [], set()
    for name, files in sorted(_third_party_imports().items()):
        provided = dists.get(name)
        if not provided:
            problems.append(f"{name} (imported by {', '.join(files)}) comes from no installed distribution: "
                            "install the dev extra")
            continue
        imported |= provided
        eager = sorted(f for f, lazy in files.items() if not lazy)
        if eager and not provided & set(runtime):
            problems.append(f"{name} is imported at module level by {', '.join(eager)}, but none of "
                            f"{sorted(provided)} is in pyproject's dependencies")
        elif not provided & (set(runtime) | optional):
            problems.append(f"{name} (imported by {', '.join(files)}) is declared neither in dependencies nor in "
                            f"an extra ({sorted(provided)})")
    problems += [f"dependency {d} is imported by none of {', '.join(CODE)}" for d in runtime if d not in imported]
    assert not problems, "\n".join(problems)


def test_each_dependency_is_listed_once():
    project = _project()
    lists = {"dependencies": project["dependencies"], **{f"extra {k}": v
                                                         for k, v in project["optional-dependencies"].items()}}
    for where, requirements in lists.items():
        names = _requirement_names(requirements)
        assert len(names) == len(set(names)), f"{where} lists {sorted({n for n in names if names.count(n) > 1})} twice"
