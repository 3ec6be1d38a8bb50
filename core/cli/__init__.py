"""Command-line entry: `slime-assistant <command>` (also `python -m core <command>`).

A front-end: it imports the capabilities' package roots and the shared vocabulary (never an inner module of a
capability, never pages/ or ui/); no capability imports it.

Each feature module owns its sub-command through a `register(subparsers)` function that adds a parser
and sets `func` to a handler returning the exit code. Nothing here ever runs a drafted command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from core.cli.output import guard_streams

# Sub-commands in the order shown by --help: name -> (module that registers it, one-line help).
# Only the module of the command being run is imported, so `check-args` never pays for the monitor.
COMMANDS: dict[str, tuple[str, str]] = {
    "check-args": ("core.cli.check_args", "check a slime launch script or argument list before submitting it"),
    "check-data": ("core.cli.check_data", "check a .jsonl/.parquet prompt file the way slime's loader reads it"),
    "logs": ("core.cli.logs", "read slime TensorBoard or W&B logs: tags, step ranges, health verdicts"),
    "draft": ("core.cli.draft", "draft a GRPO or async launch script (printed, never run)"),
    "batch": ("core.cli.batch", "work out what slime does with a set of batch sizes and a GPU layout"),
    "plan": ("core.cli.plan", "memory and time plan of a launch script on a GPU type: will it fit, how long a rollout takes"),
    "ask": ("core.cli.ask", "search cards, flags, rules, error messages of slime/Megatron-LM/SGLang, slime's log lines and model scripts"),
}


def _chosen_command(argv: list[str]) -> str | None:
    """The sub-command named on the command line: the first word that is not an option."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; the chosen command's module registers its full parser, the others only a help line.

    With `argv=None` every command registers fully (for tests and documentation)."""
    parser = argparse.ArgumentParser(
        prog="slime-assistant",
        description="Checks and drafts for slime RL training runs. Nothing is ever executed.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = None if argv is None else _chosen_command(argv)
    for name, (module, help_line) in COMMANDS.items():
        if argv is None or name == chosen:
            importlib.import_module(module).register(sub)
        else:
            sub.add_parser(name, help=help_line, add_help=False)
    return parser


# The command line uses no pydantic plugin: without this, the first model of every process looks through the
# entry points of every installed distribution for one (a few ms of each `ask`). An explicit setting is kept.
NO_PYDANTIC_PLUGINS = ("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault(*NO_PYDANTIC_PLUGINS)
    guard_streams()
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and getattr(args, "extra_words", None) is not None:
            args.extra_words.extend(extra)  # e.g. `ask --rollout-batch-size`: a flag is the query, not an option
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args))
    except BrokenPipeError:  # e.g. `slime-assistant check-data big.jsonl | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
