"""Issue 22, start-up: `logs` imports the monitor only when it reads a run, and pandas only when it is used;
`ask` reads its saved index image. Each check runs in a fresh process, as a user starts the command."""

from __future__ import annotations

import json
import subprocess
import sys

from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run
from tests.conftest import ROOT

HEAVY = ("pandas.core", "numpy", "plotly", "tbparse", "streamlit", "transformers")


def _python(code: str, tmp_path) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "SLIME_ASSISTANT_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=120)


def test_logs_help_and_a_path_with_nothing_to_read_import_nothing_heavy(tmp_path):
    (tmp_path / "empty").mkdir()
    code = ("import sys\nfrom core.cli import main\n"
            "try:\n    main(['logs', '--help'])\nexcept SystemExit:\n    pass\n"
            f"after_help = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
            f"code = main(['logs', '--no-cache', {str(tmp_path / 'empty')!r}])\n"
            f"print(after_help, code, sorted(m for m in {HEAVY!r} if m in sys.modules and m != 'numpy'))")
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[] 2 []"  # numpy comes with the readers; pandas does not


def test_logs_reads_a_run_the_same_with_pandas_loaded_late_or_early(tmp_path):
    run = tmp_path / "run"
    write_slime_like_run(str(run), Scenario(rollouts=12))
    late = _python(f"from core.cli import main; main(['logs', '--no-cache', '--format', 'json', {str(run)!r}])",
                   tmp_path)
    early = _python("import pandas\nfrom core.cli import main\n"
                    f"main(['logs', '--no-cache', '--format', 'json', {str(run)!r}])", tmp_path)
    assert late.returncode == 0 and early.returncode == 0, late.stderr + early.stderr
    assert json.loads(late.stdout) == json.loads(early.stdout) and json.loads(late.stdout)["runs"]


def test_ask_read_from_its_image_answers_the_same_without_yaml_the_planner_or_the_catalog(tmp_path):
    """The second `ask` reads the image the first saved: no YAML parser, no planner (a sizing question is told
    by a few patterns) and no argument catalog are loaded for a question that needs none of them."""
    lazy = ("yaml", "core.plan.models", "core.plan.sizing", "core.plan.oom", "core.launch.catalog", "core.launch.rules")
    code = ("import contextlib, io, json, sys\nfrom core.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n    code = main(['ask', 'rollout', 'batch', 'size'])\n"
            f"print(json.dumps([code, out.getvalue(), sorted(m for m in {lazy!r} if m in sys.modules)]))")
    first, second = _python(code, tmp_path), _python(code, tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    built, read = (json.loads(done.stdout.strip().splitlines()[-1]) for done in (first, second))
    assert read[0] == built[0] == 0 and read[1] == built[1] and "--rollout-batch-size" in read[1]
    assert read[2] == []
