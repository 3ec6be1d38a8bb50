import subprocess
import sys

from core.cli import build_parser, main


def test_every_documented_command_is_registered():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == {"check-args", "check-data", "logs", "draft"}


def test_usage_problems_exit_2(capsys):
    assert main([]) == 2
    assert main(["no-such-command"]) == 2
    assert "usage" in capsys.readouterr().err


def test_python_dash_m_core_is_the_same_entry():
    out = subprocess.run([sys.executable, "-m", "core", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "check-args" in out.stdout and "Nothing is ever executed" in out.stdout
