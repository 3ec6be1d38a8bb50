"""`slime-assistant check-args PATH|-`: check a slime launch script (or argument list) from the shell.

Exit 0 when the checker finds no errors, 1 when it finds at least one, 2 on a usage problem (no such
file, a directory, a named pipe or device, a bad option). The script is read as text; nothing in it is
ever run.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

from core.cli.output import say, write_json, write_text
from core.findings import Severity
from core.launch import (
    MAX_SCRIPT_CHARS,
    CheckOptions,
    CheckReport,
    check_script_bytes,
    render_report_text,
    render_rules,
    report_json,
    rules_json,
)
from core.memory import MAX_GPUS
from core.paths import NotRegularFile, no_such_file, read_regular

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check-args",
        help="check a slime launch script or argument list before submitting it",
        description=("Read a launch script (or a bare argument list) as text, classify every flag, and run the "
                     "checks slime, Megatron and SGLang would run on the cluster. Nothing is executed. Exit 0: no "
                     "errors; 1: errors found; 2: usage problem."),
    )
    parser.add_argument("path", nargs="*", help="the script or argument-list file(s), or - for standard input; "
                        "several files (as pre-commit passes them) are checked one after another")
    parser.add_argument("--entry", choices=("train.py", "train_async.py"), default=None,
                        help="the entry point, for a bare argument list (a script names its own)")
    parser.add_argument("--gpus", type=int, default=None, metavar="N", help="GPUs you have, to check the layout")
    parser.add_argument("--gpus-per-node", type=int, default=None, metavar="N",
                        help="GPUs each of your nodes has, to check multi-node placement (GPU004: "
                        "--num-gpus-per-node against it)")
    parser.add_argument("--slime-checkout", type=Path, default=None, metavar="DIR",
                        help="check against this slime checkout (any commit, or a fork with slime's layout) instead "
                        "of the bundled catalog; default: $SLIME_ASSISTANT_SLIME_CHECKOUT")
    parser.add_argument("--sglang-source", type=Path, default=None, metavar="DIR",
                        help="the SGLang you run (an installed sglang package directory or a checkout): its flags "
                        "are read from there; needs --slime-checkout; default: $SLIME_ASSISTANT_SGLANG_SOURCE")
    parser.add_argument("--megatron-source", type=Path, default=None, metavar="DIR",
                        help="the Megatron-LM checkout you run: its flags are read from there; needs "
                        "--slime-checkout; default: $SLIME_ASSISTANT_MEGATRON_SOURCE")
    parser.add_argument("--gpu", default=None, metavar="NAME",
                        help="also judge memory on this GPU type (the plan's PLAN001-PLAN003 and PLAN005, as `slime-assistant plan`)")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
    parser.add_argument("--list-rules", action="store_true", help="print every finding code and exit")
    parser.set_defaults(func=run_check_args)


def run_check_args(args: argparse.Namespace) -> int:
    """Handler: read the input, check it, print the report, return the exit code."""
    if args.list_rules:
        if args.output_format == "json":
            write_json(rules_json())
        else:
            write_text(render_rules())
        return EXIT_OK
    if not args.path:
        say("check-args: give a script path, or - to read standard input")
        return EXIT_USAGE
    if args.gpus is not None and not 1 <= args.gpus <= MAX_GPUS:
        say(f"check-args: --gpus must be between 1 and {MAX_GPUS}, not {args.gpus}")
        return EXIT_USAGE
    if getattr(args, "gpus_per_node", None) is not None and not 1 <= args.gpus_per_node <= MAX_GPUS:
        say(f"check-args: --gpus-per-node must be between 1 and {MAX_GPUS}, not {args.gpus_per_node}")
        return EXIT_USAGE
    problem = _sources_problem(args)
    if problem:
        say(f"check-args: {problem}")
        return EXIT_USAGE
    checkout = args.slime_checkout
    if len(args.path) == 1:
        return _check_one(args, args.path[0], checkout)
    if "-" in args.path:
        say("check-args: standard input (-) can only be checked alone")
        return EXIT_USAGE
    return _check_many(args, checkout)


def _sources_problem(args: argparse.Namespace) -> str | None:
    """Fill the user's sources from the environment, and say why one is unusable (None when all are fine)."""
    from core.launch import SourceError, megatron_root, sglang_root, slime_problem, sources_from_env

    sources = sources_from_env(slime=args.slime_checkout, sglang=args.sglang_source, megatron=args.megatron_source)
    args.slime_checkout, args.sglang_source, args.megatron_source = sources.slime, sources.sglang, sources.megatron
    if sources.slime is None:
        if sources.sglang is not None or sources.megatron is not None:
            return ("--sglang-source and --megatron-source need --slime-checkout (or SLIME_ASSISTANT_SLIME_CHECKOUT): "
                    "the flags slime passes on to SGLang and Megatron are decided by slime's own code")
        return None
    problem = slime_problem(sources.slime)
    if problem:
        return problem
    try:
        if sources.sglang is not None:
            sglang_root(sources.sglang)
        if sources.megatron is not None:
            megatron_root(sources.megatron)
    except SourceError as exc:
        return str(exc)
    return None


def _check_one(args: argparse.Namespace, path: str, checkout: Path | None) -> int:
    report = _checked(args, path, checkout)
    if report is None:
        return EXIT_USAGE
    if args.output_format == "json":
        write_json(report_json(report))
    else:
        write_text(render_report_text(report))
    return EXIT_OK if report.ok else EXIT_ERRORS


def _check_many(args: argparse.Namespace, checkout: Path | None) -> int:
    """Several files: each report under its name; exit 2 if one could not be read, else 1 if one has errors."""
    results, worst = [], EXIT_OK
    for path in args.path:
        report = _checked(args, path, checkout)
        if report is None:
            worst = EXIT_USAGE
            results.append({"path": path, "readable": False})
            continue
        if not report.ok and worst == EXIT_OK:
            worst = EXIT_ERRORS
        if args.output_format == "json":
            results.append({"path": path, "readable": True, **report_json(report)})
        else:
            write_text(f"== {path}\n{render_report_text(report)}\n")
    if args.output_format == "json":
        write_json({"files": results})
    return worst


def _checked(args: argparse.Namespace, path: str, checkout: Path | None) -> CheckReport | None:
    """The report on one file, or None when it cannot be read (the reason is already said)."""
    data = _read_input(path)
    if data is None:
        return None
    script_path = None if path == "-" else Path(path)
    options = CheckOptions(entry=args.entry, gpus=args.gpus, gpus_per_node=getattr(args, "gpus_per_node", None),
                           catalog_path=checkout, script_path=script_path,
                           sglang_source=getattr(args, "sglang_source", None),
                           megatron_source=getattr(args, "megatron_source", None),
                           gpus_from=f"--gpus {args.gpus}",
                           gpus_per_node_from=f"--gpus-per-node {getattr(args, 'gpus_per_node', None)}")
    report = not_a_launch_script_is_an_error(check_script_bytes(data, options), path, data)
    return _with_plan(report, args) if getattr(args, "gpu", None) else report


def _with_plan(report: CheckReport, args: argparse.Namespace) -> CheckReport:
    """The report with the memory plan's verdicts for --gpu beside the checker's findings (core.plan's
    `report_with_plan`, which the checker page calls too)."""
    from core.plan import report_with_plan

    return report_with_plan(report, args.gpu, args.gpus, getattr(args, "gpus_per_node", None))


def not_a_launch_script_is_an_error(report: CheckReport, path: str, data: bytes) -> CheckReport:
    """A file with no train command and no flag at all (a JSONL data file, a README) is not a launch script: on
    the command line that is an error (exit 1), so a pre-commit hook given the wrong file does not pass it."""
    if report.summary.flags or not any(f.code == "SCRIPT005" for f in report.findings):
        return report
    head = data.lstrip()[:1]
    what = "it looks like JSON data (for a data file, run check-data)" if head in (b"{", b"[") else \
        "give the launch script that runs train.py or train_async.py, or its arguments"
    name = "the input" if path == "-" else path
    findings = [f.model_copy(update={"severity": Severity.ERROR, "message": f"{name} is not a launch script: no "
                                     f"`python ... train.py` or `train_async.py` command and no flags in it; {what}."})
                if f.code == "SCRIPT005" else f for f in report.findings]
    return report.model_copy(update={"findings": findings, "summary": report.summary.recounted(findings)})


def _read_input(path: str) -> bytes | None:
    """The input's bytes, reading one byte past the limit so that oversize input is reported, not truncated.

    Only regular files are read: a directory is refused, and so is a named pipe, socket or device, which
    could block forever or never end (pipe such input to `-` instead). The file is opened without blocking
    and checked again once open, so a path swapped for a pipe after the first look is refused too.
    """
    limit = MAX_SCRIPT_CHARS + 1
    if path == "-":
        return sys.stdin.buffer.read(limit)
    try:
        problem = _not_a_script_file(path, os.stat(path).st_mode)
        if problem:
            say(f"check-args: {problem}")
            return None
        return read_regular(path, limit)  # the one rule: regular files only, opened without blocking
    except FileNotFoundError:
        say(f"check-args: {no_such_file(path)}")
    except NotRegularFile as exc:
        say(f"check-args: {path} is {exc.strerror}; give a script file, or pipe the text in with -")
    except OSError as exc:
        say(f"check-args: cannot read {path}: {exc.strerror or exc}")
    except ValueError:  # an embedded NUL byte in the path
        say(f"check-args: cannot read {path!r}: the path contains a NUL byte")
    return None


def _not_a_script_file(path: str, mode: int) -> str | None:
    """Why `path` (with this st_mode) is not something to read as a script, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"{path} is a directory; give a script file"
    kind = ("a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    return (f"{path} is {kind}, not a regular file; give a script file, or pipe the text in with "
            "- (e.g. `... | slime-assistant check-args -`)")
