"""Command-line entry: `slime-assistant <command>` (also `python -m core <command>`).

A front-end: it may import every capability; no capability imports it.

Each feature module owns its sub-command through a `register(subparsers)` function that adds a parser
and sets `func` to a handler returning the exit code. Nothing here ever runs a drafted command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Modules that contribute a sub-command, in the order shown by --help.
COMMAND_MODULES = (
    "core.cli.check_args",
    "core.cli.check_data",
    "core.cli.logs",
    "core.cli.draft",
    "core.cli.ask",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="slime-assistant",
        description="Checks and drafts for slime RL training runs. Nothing is ever executed.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
