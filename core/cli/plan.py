"""`slime-assistant plan SCRIPT --gpu NAME`: will the launch fit its GPUs, and how long will a rollout's training
take. Exit 0 when no verdict is an error, 1 when one is (e.g. PLAN001 training will not fit), 2 on a usage
problem (no such file, an unknown GPU, a script without the model's sizes). Nothing in the script is run."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from pathlib import Path

from core.cli.output import say, write_json, write_text
from core.paths import NotRegularFile, read_regular

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
MAX_SCRIPT_BYTES = 1 << 20


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="memory and time plan of a launch script on a GPU type: will it fit, how long a rollout takes",
        description=("Estimate training memory per GPU (largest pipeline stage), SGLang's weights and KV pool per "
                     "engine GPU, host memory and training time per rollout, each term with its formula and "
                     "source. Exit 0: fits; 1: a verdict is an error; 2: usage problem."),
    )
    parser.add_argument("path", help="the launch script, or - for standard input")
    parser.add_argument("--gpu", required=True, metavar="NAME", help="GPU type, e.g. H100-80GB, H200, A100-80GB")
    parser.add_argument("--gpus", type=int, default=None, metavar="N",
                        help="training GPUs, where the script computes them at run time")
    parser.add_argument("--gpus-per-node", type=int, default=None, metavar="N", help="GPUs a node has")
    parser.add_argument("--slime-checkout", type=Path, default=None, metavar="DIR",
                        help="read the script's flags against this slime checkout (and its scripts/models)")
    parser.add_argument("--mfu", type=float, default=None, metavar="F", help="model FLOPs utilisation for the time "
                        "estimate (default 0.3)")
    parser.add_argument("--node-ram-gib", type=float, default=None, metavar="GIB",
                        help="RAM of a node, to judge host memory (PLAN003)")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
    parser.set_defaults(func=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    from core.plan import DEFAULT_MFU, PlanError, plan_script, render_plan_text

    for name in ("gpus", "gpus_per_node"):
        value = getattr(args, name)
        if value is not None and not 1 <= value <= 65536:
            say(f"plan: --{name.replace('_', '-')} must be between 1 and 65536, not {value}")
            return EXIT_USAGE
    mfu = DEFAULT_MFU if args.mfu is None else args.mfu
    if not 0 < mfu <= 1:
        say(f"plan: --mfu is a fraction between 0 and 1, not {args.mfu}")
        return EXIT_USAGE
    if args.slime_checkout is not None and not args.slime_checkout.is_dir():
        say(f"plan: --slime-checkout {args.slime_checkout} is not a directory")
        return EXIT_USAGE
    data = _read_input(args.path)
    if data is None:
        return EXIT_USAGE
    try:
        plan = plan_script(data.decode("utf-8", errors="replace"), args.gpu, gpus=args.gpus,
                           gpus_per_node=args.gpus_per_node, script_path=None if args.path == "-" else Path(args.path),
                           slime_checkout=args.slime_checkout, mfu=mfu, node_ram_gib=args.node_ram_gib)
    except PlanError as exc:
        say(f"plan: {exc}")
        return EXIT_USAGE
    if args.output_format == "json":
        write_json(plan.model_dump(mode="json"))
    else:
        write_text(render_plan_text(plan))
    return EXIT_OK if plan.ok else EXIT_ERRORS


def _read_input(path: str) -> bytes | None:
    """A regular file's bytes (or standard input's), at most 1 MiB; the reason is said when it cannot be read."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_SCRIPT_BYTES + 1)
    else:
        try:
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                say(f"plan: {path} is not a regular file; give a script file, or pipe the text in with -")
                return None
            data = read_regular(path, MAX_SCRIPT_BYTES + 1)
        except FileNotFoundError:
            say(f"plan: no such file: {path}")
            return None
        except NotRegularFile:
            say(f"plan: {path} is not a regular file; give a script file, or pipe the text in with -")
            return None
        except (OSError, ValueError) as exc:
            say(f"plan: cannot read {path}: {getattr(exc, 'strerror', None) or exc}")
            return None
    if len(data) > MAX_SCRIPT_BYTES:
        say(f"plan: {path} is larger than 1 MiB; a launch script is much smaller")
        return None
    return data
