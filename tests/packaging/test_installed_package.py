"""The package as a user gets it: the wheel built from this checkout, installed in a fresh venv outside it.

The wheel must carry every knowledge file (cards, catalogs, tables), and the installed commands must answer
exactly as the checkout does (`check-args`, `check-data`, `logs`, `ask`, and `plan` where it exists). The
pre-commit hook of .pre-commit-hooks.yaml is tried the way pre-commit installs it (`pip install .` of this
repository): a bad launch script fails, a good one passes.

Slow (a venv with every dependency, three times): `-m installed` selects these tests, `-m "not installed"`
leaves them out. They need the package registry and nothing else; pip's own cache makes a second run quick.
Everything they write lies under the test's temporary folder (the build too: a copy of the sources is built,
so no build/ or .egg-info appears in the checkout).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.installed

FIXTURES = ROOT / "tests" / "fixtures"
GOOD_SCRIPT = FIXTURES / "scripts" / "good_colocate.sh"
BAD_SCRIPT = FIXTURES / "scripts" / "typo_and_batch.sh"  # ARG001 (a misspelt flag) and BATCH004: errors
DATA_FILE = FIXTURES / "data" / "mixed_problems.jsonl"
BUILD_INPUTS = ("core", "knowledge", "pyproject.toml", "setup.py", "README.md")  # what the wheel is built from
# Generous: a CI machine has 2 cores, and on a fresh one pip downloads every dependency first.
BUILD_TIMEOUT_S = 900
INSTALL_TIMEOUT_S = 2400
COMMAND_TIMEOUT_S = 300


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: none of this checkout on the path, none of the test's settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SLIME_ASSISTANT_") and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    tmp.mkdir(parents=True, exist_ok=True)
    env.update({"SLIME_ASSISTANT_HOME": str(tmp / "home"), "TMPDIR": str(tmp), "PIP_NO_COMPILE": "1",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"})
    env.update(extra)
    return env


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _ok(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    assert done.returncode == 0, f"{what} failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def _copy_sources(dest: Path) -> Path:
    for name in BUILD_INPUTS:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def _knowledge_files() -> set[str]:
    return {p.relative_to(ROOT / "knowledge").as_posix() for p in (ROOT / "knowledge").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = _copy_sources(work / "src")
    _ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(src)],
             cwd=work, env=_env(work / "tmp"), timeout=BUILD_TIMEOUT_S), "pip wheel --no-deps")
    (found,) = (work / "dist").glob("slime_assistant-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The bin/ folder of a fresh venv (outside the checkout) holding the wheel and its dependencies."""
    work = tmp_path_factory.mktemp("venv")
    venv = work / "venv"
    _ok(_run([sys.executable, "-m", "venv", str(venv)], cwd=work, env=_env(work / "tmp"), timeout=300), "venv")
    _ok(_run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], cwd=work,
             env=_env(work / "tmp"), timeout=INSTALL_TIMEOUT_S), "pip install of the wheel")
    return venv / "bin"


def test_the_wheel_holds_every_knowledge_file_and_no_test_or_page(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.removeprefix("core/_knowledge/") for n in names if n.startswith("core/_knowledge/")}
    assert shipped == _knowledge_files()
    assert len(shipped) > 50 and "catalog/arguments.json" in shipped
    others = {n.split("/")[0] for n in names} - {"core"}  # the code and data, then the wheel's own metadata
    assert len(others) == 1 and others.pop().endswith(".dist-info")


def _normalised(out: str) -> object:
    """The JSON output without the seconds it took (the one field that differs from run to run)."""
    def drop(value):
        if isinstance(value, dict):
            return {k: drop(v) for k, v in value.items() if k != "seconds"}
        if isinstance(value, list):
            return [drop(v) for v in value]
        return value

    return drop(json.loads(out))


def test_installed_commands_answer_as_the_checkout_does(installed, tmp_path):
    from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run

    run_dir = tmp_path / "runs" / "grpo-run"
    write_slime_like_run(str(run_dir), Scenario(rollouts=12))
    outside = tmp_path / "cwd"
    outside.mkdir()

    where = _ok(_run([str(installed / "python"), "-c", "from core.resources import knowledge_path as k; "
                      "import core; print(k()); print(core.__file__)"],
                     cwd=outside, env=_env(tmp_path / "where"), timeout=COMMAND_TIMEOUT_S), "import core")
    knowledge, package = where.stdout.split()
    venv = installed.parent.resolve()
    assert Path(knowledge).resolve().is_relative_to(venv) and Path(package).resolve().is_relative_to(venv)
    assert not Path(package).resolve().is_relative_to(ROOT)

    commands = [
        ["check-args", "--format", "json", str(GOOD_SCRIPT)],
        ["check-data", "--format", "json", str(DATA_FILE)],
        ["logs", "--no-cache", "--format", "json", str(run_dir.parent)],
        ["ask", "--format", "json", "colocate"],
    ]
    helped = _ok(_run([str(installed / "slime-assistant"), "--help"], cwd=outside, env=_env(tmp_path / "help"),
                      timeout=COMMAND_TIMEOUT_S), "slime-assistant --help")
    if re.search(r"^    plan\s", helped.stdout, re.MULTILINE):  # another change adds `plan`; checked once there
        commands.append(["plan", "--format", "json", "--gpu", "H100-80GB", str(GOOD_SCRIPT)])

    for i, args in enumerate(commands):
        mine = _run([str(installed / "slime-assistant"), *args], cwd=outside, env=_env(tmp_path / f"i{i}"),
                    timeout=COMMAND_TIMEOUT_S)
        ours = _run([sys.executable, "-m", "core", *args], cwd=outside,
                    env=_env(tmp_path / f"c{i}", PYTHONPATH=str(ROOT)), timeout=COMMAND_TIMEOUT_S)
        what = " ".join(args[:1])
        assert "Traceback" not in mine.stderr, mine.stderr
        assert (mine.returncode, mine.stderr) == (ours.returncode, ours.stderr), what
        assert _normalised(mine.stdout) == _normalised(ours.stdout), what

        if args[0] == "check-args":  # the bundled catalog is there: a good script has no unknown flag
            report = json.loads(mine.stdout)
            assert mine.returncode == 0 and report["findings"]
            assert not [f for f in report["findings"] if f["severity"] == "error" or f["code"] == "ARG001"]
        elif args[0] == "check-data":
            codes = {f["code"] for f in json.loads(mine.stdout)["findings"]}
            assert mine.returncode == 1 and {"DATA003", "DATA030"} <= codes
        elif args[0] == "logs":
            assert mine.returncode == 0 and [r["name"] for r in json.loads(mine.stdout)["runs"]] == ["grpo-run"]
        elif args[0] == "ask":
            assert mine.returncode == 0 and "--colocate" in mine.stdout
        elif args[0] == "plan":
            assert mine.returncode in (0, 1), mine.stdout + mine.stderr


def test_editable_install_reads_knowledge_beside_core(tmp_path):
    """`pip install -e .` (what `make test` uses) reads knowledge/ of the checkout, where people edit it."""
    src = _copy_sources(tmp_path / "src")
    venv = tmp_path / "venv"
    env = _env(tmp_path / "tmp")
    _ok(_run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env, timeout=300), "venv")
    _ok(_run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(src)],
             cwd=tmp_path, env=env, timeout=BUILD_TIMEOUT_S), "pip install -e")
    done = _ok(_run([str(venv / "bin" / "python"), "-c",
                     "from core.resources import knowledge_path as k; print(k('catalog', 'arguments.json'))"],
                    cwd=tmp_path, env=env, timeout=COMMAND_TIMEOUT_S), "import core.resources")
    assert Path(done.stdout.strip()) == src / "knowledge" / "catalog" / "arguments.json"


def test_pre_commit_hook_fails_a_bad_launch_script_and_passes_a_good_one(tmp_path):
    """`pre-commit try-repo` of this checkout's hook, as pre-commit installs it (`pip install .`, in a venv of
    its own), on a scratch git repository holding a launch script with errors and one without."""
    repo = tmp_path / "project"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy2(BAD_SCRIPT, repo / "scripts" / "run-bad.sh")
    shutil.copy2(GOOD_SCRIPT, repo / "scripts" / "run-good.sh")
    git_env = _env(tmp_path / "git", GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    _ok(_run(["git", "init", "--quiet"], cwd=repo, env=git_env, timeout=60), "git init")
    _ok(_run(["git", "add", "."], cwd=repo, env=git_env, timeout=60), "git add")

    # try-repo installs the hook afresh each time (its own store): the two run side by side to halve the wait.
    started = {}
    for name in ("bad", "good"):
        cmd = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "slime-check-args",
               "--files", f"scripts/run-{name}.sh"]
        env = _env(tmp_path / name, PRE_COMMIT_HOME=str(tmp_path / name / "pre-commit"),
                   VIRTUALENV_OVERRIDE_APP_DATA=str(tmp_path / name / "virtualenv"),
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
        started[name] = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, text=True)
    out = {}
    try:
        for name, proc in started.items():
            out[name] = proc.communicate(timeout=INSTALL_TIMEOUT_S)[0]
    finally:
        for proc in started.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    bad, good = started["bad"], started["good"]
    assert bad.returncode == 1, out["bad"][-4000:]
    assert "Failed" in out["bad"] and "ARG001" in out["bad"] and "--n-sample-per-prompt" in out["bad"]
    assert "Traceback" not in out["bad"] and "CatalogError" not in out["bad"]
    assert good.returncode == 0, out["good"][-4000:]
    assert "Passed" in out["good"]
