"""The layout's promises, checked on the source: core/ never imports streamlit, and dependencies point one
way (cli -> capabilities -> shared vocabulary), with capabilities meeting only at each other's package root."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"
SHARED = {"core", "core.findings", "core.pins", "core.paths", "core.model_scripts", "core.batch", "core.text",
          "core.resources"}
CAPABILITIES = sorted(p.name for p in CORE.iterdir() if (p / "__init__.py").is_file() and p.name != "cli")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, at any depth (function-level imports and import_module("...") too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            # `from core.x import y` imports the submodule core.x.y when y is one
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                      if _is_package_module(f"{node.module}.{a.name}")]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


def _owner(module: str) -> str:
    """'shared', 'cli', a capability name, or 'external'."""
    if module in SHARED:
        return "shared"
    if module == "core.__main__":  # `python -m core` is the command line
        return "cli"
    parts = module.split(".")
    if parts[0] != "core":
        return "external"
    return parts[1]


CORE_FILES = sorted(CORE.rglob("*.py"))


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_imports_point_one_way(path: Path):
    me = _module_name(path)
    mine = _owner(me)
    problems = []
    for line, target in _imports(path):
        if target.split(".")[0] == "streamlit":
            problems.append(f"line {line}: core/ imports streamlit")
            continue
        theirs = _owner(target)
        if theirs in ("external", mine) or theirs == "shared":
            continue
        if mine == "shared":
            problems.append(f"line {line}: shared vocabulary imports {target}")
        elif theirs == "cli":
            problems.append(f"line {line}: a capability imports the command line ({target})")
        elif mine != "cli" and target != f"core.{theirs}":
            problems.append(f"line {line}: imports {target}, an internal of core.{theirs}; use its package root")
    assert not problems, f"{me}: " + "; ".join(problems)


def test_every_capability_says_what_it_owns_and_may_import():
    for name in CAPABILITIES + ["cli"]:
        doc = ast.get_docstring(ast.parse((CORE / name / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, f"core/{name}/__init__.py needs a docstring saying what it owns"
        if name != "cli":
            assert "May import" in doc, f"core/{name}/__init__.py should say what it may import"


def test_the_checker_sees_internal_imports():
    """The rule above is not vacuous: an import of another capability's module is recognised as one."""
    assert _owner("core.launch.check") == "launch" and _owner("core.findings") == "shared"
    assert _is_package_module("core.launch.check") and not _is_package_module("core.launch.CheckOptions")


MAX_MODULE_LINES = 800


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_too_long_to_read(path: Path):
    """A module a newcomer can read in one sitting; split by concern past about 800 lines."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it by concern"
