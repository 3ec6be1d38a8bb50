import subprocess
import sys

from core.cli import build_parser, main


def test_every_documented_command_is_registered():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == {"check-args", "check-data", "logs", "draft", "batch", "plan", "ask"}


def test_usage_problems_exit_2(capsys):
    assert main([]) == 2
    assert main(["no-such-command"]) == 2
    assert "usage" in capsys.readouterr().err


def test_python_dash_m_core_is_the_same_entry():
    out = subprocess.run([sys.executable, "-m", "core", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "check-args" in out.stdout and "Nothing is ever executed" in out.stdout


def test_a_closed_pipe_ends_quietly():
    """`slime-assistant ... | head`: the reader goes away; no traceback, a non-zero exit."""
    code = (
        "import sys\n"
        "import core.cli as cli\n"
        "parser = cli.build_parser()\n"
        "def flood(args):\n"
        "    for _ in range(100000):\n"
        "        print('x' * 100)\n"
        "    return 0\n"
        "cli.build_parser = lambda argv=None: parser\n"
        "parser.set_defaults(func=flood)\n"
        "raise SystemExit(cli.main([]))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(1000)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 1
    assert "Traceback" not in err, err


def test_only_the_chosen_command_is_imported():
    """`check-args` starts like a linter: the monitor (and pandas) is never imported for it."""
    code = ("import sys\nfrom core.cli import main\nmain(['check-args', '--list-rules'])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('core.monitor', 'pandas', 'core.cli.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # the chosen command and the shared output helper every command prints through
    assert out.stdout.strip().splitlines()[-1] == "['core.cli.check_args', 'core.cli.output']"


def test_help_lines_match_each_commands_own_parser():
    full = next(a for a in build_parser()._actions if a.dest == "command")
    for name in full.choices:
        light = next(a for a in build_parser(["--help"])._actions if a.dest == "command")
        assert [c.help for c in light._choices_actions if c.dest == name] == \
            [c.help for c in full._choices_actions if c.dest == name]
