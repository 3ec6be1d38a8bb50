"""The layout's promises, checked on the source: core/ never imports streamlit, and dependencies point one
way (cli -> capabilities -> shared vocabulary), with capabilities meeting only at each other's package root."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"
SHARED = {"core", "core.findings", "core.pins", "core.paths", "core.model_scripts", "core.batch", "core.text",
          "core.resources", "core.exports"}
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


# -- the front-ends: pages/, ui/, streamlit_app.py and the command line (core/cli/) --------------------------

# What a front-end may import from core/: a capability's package root, and the shared vocabulary below.
FRONT_END_SHARED = {"core.findings", "core.text", "core.paths", "core.pins", "core.resources", "core.model_scripts",
                    "core.batch"}
FRONT_END_FILES = sorted([*ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), *(CORE / "cli").glob("*.py"),
                          ROOT / "streamlit_app.py"])


def _front_end(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return "app" if rel.parts[0] == "streamlit_app.py" else "cli" if rel.parts[:2] == ("core", "cli") else rel.parts[0]


def front_end_problems(me: str, imports: list[tuple[int, str]]) -> list[str]:
    """Why these imports of a front-end (`me`: pages, ui, cli or app) break its rule, one line each."""
    problems = []
    for line, target in imports:
        top = target.split(".")[0]
        if top in ("pages", "ui"):
            if me == "cli" or top == "pages" or (top == "ui" and me not in ("pages", "ui", "app")):
                problems.append(f"line {line}: imports {target}; front-ends never import each other")
            continue
        if top == "streamlit" and me == "cli":
            problems.append(f"line {line}: the command line imports streamlit")
            continue
        if top != "core" or target == "core" or target in FRONT_END_SHARED:
            continue
        owner = _owner(target)
        if owner == "cli":
            if me != "cli":
                problems.append(f"line {line}: imports {target}; a page or ui/ never imports the command line")
        elif owner == "shared":
            problems.append(f"line {line}: imports {target}, not part of the front-ends' shared vocabulary")
        elif target != f"core.{owner}":
            problems.append(f"line {line}: imports {target}, an internal of core.{owner}; use its package root")
    return problems


@pytest.mark.parametrize("path", FRONT_END_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_front_ends_use_only_the_capabilities_public_faces(path: Path):
    problems = front_end_problems(_front_end(path), _imports(path))
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems)


def test_the_front_end_checker_sees_what_it_forbids(tmp_path: Path):
    """The rule above is not vacuous: each forbidden import is recognised."""
    assert front_end_problems("pages", [(1, "core.monitor.sources")])
    assert front_end_problems("pages", [(1, "core.cli.check_args")])
    assert front_end_problems("ui", [(1, "pages.monitor")])
    assert front_end_problems("cli", [(1, "ui.common")]) and front_end_problems("cli", [(1, "streamlit")])
    assert front_end_problems("pages", [(1, "core.exports")])
    assert not front_end_problems("pages", [(1, "core.monitor"), (1, "core.findings"), (1, "ui.monitor")])
    assert not front_end_problems("cli", [(1, "core.cli.output"), (1, "core.launch")])
    (tmp_path / "page.py").write_text("from core.monitor import gpu\n", encoding="utf-8")
    assert front_end_problems("pages", _imports(tmp_path / "page.py")) == [
        "line 1: imports core.monitor.gpu, an internal of core.monitor; use its package root"]


def _exports(package: str) -> dict[str, str]:
    """A capability root's lazy public names (name -> defining module), read from its source."""
    tree = ast.parse((ROOT.joinpath(*package.split(".")) / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets):
            return {k.value: v.value.split(":")[0] for k, v in zip(node.value.keys, node.value.values, strict=True)}
    return {}


@pytest.mark.parametrize("name", CAPABILITIES)
def test_a_capability_root_is_a_cheap_lazy_face(name: str):
    """Importing a root loads none of its modules; no public name is also a submodule's (importing that submodule
    would shadow it); every public name resolves."""
    import importlib
    import subprocess
    import sys

    code = (f"import sys, core.{name}\n"
            f"print(sorted(m for m in sys.modules if m.startswith('core.{name}.')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
    exports = _exports(f"core.{name}")
    assert exports, f"core/{name}/__init__.py declares no _EXPORTS"
    clashes = [n for n in exports if _is_package_module(f"core.{name}.{n}")]
    assert not clashes, f"core.{name} exports names of its own submodules: {clashes}"
    package = importlib.import_module(f"core.{name}")
    assert sorted(exports) == sorted(n for n in package.__all__ if n in exports)
    for public in exports:
        assert getattr(package, public) is not None


# -- inside the monitor: the shared core reaches a log source only through core/monitor/sources.py ------------

MONITOR_SOURCES = ("core.monitor.tensorboard", "core.monitor.wandb", "core.monitor.gpu")
MONITOR_SHARED = sorted(p for p in (CORE / "monitor").glob("*.py") if p.name not in ("__init__.py", "sources.py"))


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    """_imports without those under `if TYPE_CHECKING:` (names for annotations only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {n.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING"
                   for stmt in node.body for n in ast.walk(stmt) if hasattr(n, "lineno")}
    return [(line, target) for line, target in _imports(path) if line not in typing_only]


@pytest.mark.parametrize("path", MONITOR_SHARED, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_monitor_core_reaches_its_sources_only_through_sources_py(path: Path):
    exports = _exports("core.monitor")
    problems = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    via_root = [(node.lineno, exports.get(a.name, "")) for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module == "core.monitor" for a in node.names]
    for line, target in [*_runtime_imports(path), *via_root]:
        if any(target == s or target.startswith(s + ".") for s in MONITOR_SOURCES):
            problems.append(f"line {line}: imports {target}; go through core.monitor.sources")
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems)
