"""`slime-assistant logs PATH... [--format text|json]`: read slime TensorBoard or W&B runs and check their health.

Each PATH is an event file, a W&B run file (`run-<id>.wandb`), a run directory, or a directory holding several
runs (`tensorboard_log/<project>`, a `wandb/` directory). For every run it prints
the tags with their step ranges and point counts, what could not be read, restarts, and the verdicts with
their evidence. The exit codes are listed in EXIT_CODES_HELP (shown by --help). This reads files the caller
names on their own machine; it never runs anything.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import stat
from typing import TYPE_CHECKING

from core.cli.output import say, write_json, write_text
from core.paths import PathRefused, expand_user, file_kind, no_such_file

if TYPE_CHECKING:  # the monitor (numpy, pandas) is imported when a run is read, not for --help or a bad path
    from core.monitor import RunData, Verdict

EXIT_OK = 0
EXIT_FAILED_VERDICT = 1
EXIT_UNREADABLE = 2
EXIT_NOTHING_JUDGED = 3
EXIT_CODES_HELP = f"""exit codes:
  {EXIT_OK}  every path was read, every run had data for at least one check, and no check failed
  {EXIT_FAILED_VERDICT}  a check failed (a FAIL line in the checklist)
  {EXIT_UNREADABLE}  a path could not be read: it does not exist, is not a regular file or directory (a device,
     pipe or socket), holds no event files or W&B run files, holds a file that is not a TensorBoard event
     file (or W&B run file), or
     yielded no scalar value at all (for example an empty file)
  {EXIT_NOTHING_JUDGED}  everything was read, but some run had too little data for any check (every verdict is
     UNKNOWN): a run before its first rollout, or TensorBoard logs that are not slime's
When several apply, the exit code is the first that applies in the order {EXIT_UNREADABLE}, {EXIT_FAILED_VERDICT}, \
{EXIT_NOTHING_JUDGED}, {EXIT_OK}."""
STATUS_MARK = {"ok": "OK     ", "warn": "WARN   ", "fail": "FAIL   ", "unknown": "UNKNOWN"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "logs", help="read slime TensorBoard or W&B logs: tags, step ranges, health verdicts",
        description="Read one or more slime TensorBoard or W&B runs (event files, .wandb run files, or "
                    "directories such as wandb/) and print their tags and the monitoring checklist.",
        epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="event file, .wandb run file, run directory, or directory of runs")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--no-cache", action="store_true",
                        help="read every file afresh instead of reusing the parsed logs the app keeps in its cache "
                             "(the same cache as the Monitor page, under SLIME_ASSISTANT_HOME)")
    from core.cli.gpu_report import add_gpu_arguments

    add_gpu_arguments(parser)
    parser.add_argument("--gpu", default=None, metavar="NAME",
                        help="the GPU type the run trains on (e.g. H100-80GB): judge its MFU from "
                             "perf/actor_train_tflops against the GPU's bf16 peak (MON013)")
    parser.add_argument("--num-rollout", type=_positive_int, default=None, metavar="N",
                        help="the run's --num-rollout: estimate when it finishes from its step times (MON014; a W&B "
                             "run's config holds it)")
    from core.cli import logs_follow

    logs_follow.add_arguments(parser)
    parser.set_defaults(func=handle_logs)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if not 1 <= value <= 10**9:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and 1,000,000,000")
    return value


def _with_efficiency(args: argparse.Namespace, results: list) -> list:
    """Each run's verdicts with MON013 and MON014 when --gpu or --num-rollout is given (else unchanged)."""
    if args.gpu is None and args.num_rollout is None:
        return results
    from core.monitor import efficiency_verdicts

    return [(run, verdicts + efficiency_verdicts(run, args.gpu, args.num_rollout)) for run, verdicts in results]


# Run files read by one command, over every path and run (each run reads at most its own limit: 200 event files
# or W&B run files). A parent folder of many runs is then read in seconds and its memory is bounded; the runs
# past the limit are named in a note.
MAX_FILES_PER_CALL = 600


def _within_file_limit(raw: str, found: list, files_left: list[int], notes: list[str] | None) -> list:
    """The found runs whose files fit in what is left of MAX_FILES_PER_CALL; the others said in `notes`."""
    from core.monitor import list_run_files

    kept, left_out = [], []
    for f in found:
        n = len(list_run_files(f))
        if n <= files_left[0]:
            files_left[0] -= n
            kept.append(f)
        else:
            files_left[0] = 0
            left_out.append(f.label)
    if left_out and notes is not None:
        shown = ", ".join(left_out[:3]) + (f" and {len(left_out) - 3:,} more" if len(left_out) > 3 else "")
        notes.append(f"{raw}: {len(left_out):,} run(s) were not read ({shown}): one command reads at most "
                     f"{MAX_FILES_PER_CALL} run files; name the runs' own folders to read them")
    return kept


def collect_runs(paths: list[str], *, cache=None, notes: list[str] | None = None,
                 open_found=None) -> tuple[list[RunData], list[str]]:
    """Read every run under the given paths; problems with a path become messages, not exceptions.

    Only regular files are read, opened without blocking (core.paths.open_regular); directories are walked
    without recursion and with bounds (core.monitor.tensorboard.run.walk_runs), whose notes go to `notes`.
    """
    _import_lazily("pandas")  # the monitor's modules import it, reading needs it only for tables, later
    from core.monitor import WandbProtoUnavailable, batched, find_runs, open_run

    open_found = open_found or open_run

    runs: list[RunData] = []
    problems: list[str] = []
    files_left = [MAX_FILES_PER_CALL]
    for raw in paths:
        try:
            p = expand_user(raw)
            mode = os.stat(p).st_mode
            if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
                found = find_runs(p, notes=notes)
                if not found:
                    problems.append(f"{raw}: no event files (names containing 'tfevents') and no W&B run files "
                                    "(*.wandb) in this directory or below")
                    continue
                found = _within_file_limit(raw, found, files_left, notes)
                with batched(cache) as writes:  # one cache transaction per path, however many files
                    read = [open_found(f, cache=writes) for f in found]
            else:
                problems.append(f"{raw}: {file_kind(mode)}, not a regular file or directory; nothing was read "
                                "from it")
                continue
        except PathRefused as exc:
            problems.append(str(exc))
            continue
        except FileNotFoundError:
            dangling = os.path.islink(raw)
            problems.append(f"{raw}: a symbolic link whose target does not exist" if dangling else no_such_file(raw))
            continue
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
            reason = getattr(exc, "strerror", None) or str(exc)
            problems.append(f"{raw}: cannot be read ({reason})")
            continue
        except WandbProtoUnavailable as exc:
            problems.append(f"{raw}: {exc}")
            continue
        for run in read:
            problems.extend(unreadable_parts(run))
        runs.extend(read)
    return runs, problems


def _import_lazily(name: str) -> None:
    """Let `import name` give a stand-in that imports the real module when one of its attributes is first
    used, unless the module is loaded already. Only this command does it, in its own single-threaded process:
    the monitor's modules import pandas, and `logs` needs it only for tables, if at all, so it starts reading
    files first. (importlib.util.LazyLoader cannot do this on Python 3.11: a second `import` loads it.)"""
    import importlib
    import importlib.util
    import sys
    import types

    if name in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None:
        return

    class _StandIn(types.ModuleType):
        def __getattr__(self, attr: str):
            if sys.modules.get(name) is self:
                del sys.modules[name]
            real = importlib.import_module(name)
            return getattr(real, attr)

    stand_in = _StandIn(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in


def open_cache(enabled: bool, notes: list[str]):
    """The page's own parsed-log cache (the store's bulk cache), or None when disabled or unusable."""
    if not enabled:
        return None
    try:
        from core.memory import Store

        store = Store()
        notes.extend(n.message for n in store.notices)
        return store.bulk_cache
    except Exception as exc:  # noqa: BLE001 - a cache that cannot open only costs speed
        notes.append(f"the cache could not be opened ({type(exc).__name__}); logs were read without it")
        return None


def unreadable_parts(run: RunData) -> list[str]:
    """What in a run could not be read: files that are not event files, and a run with no scalar at all."""
    kind = "W&B run file" if run.source == "wandb" else "TensorBoard event file"
    out = [f"{run.path}/{f.name}: not a {kind}; nothing was read from it"
           for f in run.files if not f.looks_like_events]
    if not run.scalar_count() and not out:
        where = f"{run.path}/{run.files[0].name}" if len(run.files) == 1 else f"{run.path} ({len(run.files)} files)"
        empty = run.files and all(f.size == 0 for f in run.files)
        out.append(f"{where}: no scalar value could be read"
                   + (" (empty: a writer that has not flushed yet?)" if empty else ""))
    return out


def exit_code(results: list[tuple[RunData, list[Verdict]]], problems: list[str]) -> int:
    """The documented exit code (EXIT_CODES_HELP) for what was read and judged."""
    if problems or not results:
        return EXIT_UNREADABLE
    if any(v.status == "fail" for _, vs in results for v in vs):
        return EXIT_FAILED_VERDICT
    if any(all(v.status == "unknown" for v in vs) for _, vs in results):
        return EXIT_NOTHING_JUDGED
    return EXIT_OK


def run_to_json(run: RunData, verdicts: list[Verdict]) -> dict:
    from core.monitor import ordered_tags, restart_summary

    tags = {}
    for tag in ordered_tags(run.tags):
        s = run.series[tag]
        if len(s.steps):
            tags[tag] = {"first_step": int(s.steps[0]), "last_step": int(s.steps[-1]), "points": int(len(s.steps))}
        else:
            tags[tag] = {"first_step": None, "last_step": None, "points": 0}
    return {
        "path": run.path,
        "name": run.name,
        "source": run.source,
        "tags": tags,
        "verdicts": [{"code": v.code, "status": v.status, "message": v.message, "evidence": v.evidence}
                     for v in verdicts],
        "files": [{"name": f.name, "size": f.size, "scalars": f.scalars,
                   "damage": [d.model_dump() for d in f.damage],
                   "recovered_beyond_tbparse": f.lost_vs_tbparse} for f in run.files],
        "restarts": restart_summary(run),
        "notes": run.notes,
    }


def render_run_text(run: RunData, verdicts: list[Verdict]) -> str:
    from core.monitor import (
        MAX_RESTARTS_LISTED,
        SOURCE_NAMES,
        damage_lines,
        evidence_rows,
        ordered_tags,
        restart_summary,
    )

    kind = "W&B run file(s)" if run.source == "wandb" else "event file(s)"
    lines = [f"== {run.name}  ({run.path})  [{SOURCE_NAMES.get(run.source, run.source)}]",
             f"   {len(run.files)} {kind}, {run.scalar_count()} scalars"]
    if run.wandb is not None:
        info = run.wandb
        facts = [f"W&B run {info.run_id or '?'}"] + [f"project {info.project}"] * bool(info.project)
        facts += ["offline" if info.offline else "online"] * (info.offline is not None)
        facts += [f"exit code {info.exit_code}" if info.exit_code is not None else "no exit recorded"]
        facts += [f"{len(info.config)} config value(s)"]
        lines.append("   " + ", ".join(facts))
    lines += [f"   ! {note}" for note in run.notes]
    lines += [f"   ! {line}" for line in damage_lines(run)]
    restarts = restart_summary(run)
    for r in restarts[:MAX_RESTARTS_LISTED]:
        lines.append(f"   restart: {r['file']} went back to step {r['step']} ({r['tags']} tag(s), "
                     f"{r['replaced']} older point(s) replaced)")
    if len(restarts) > MAX_RESTARTS_LISTED:
        lines.append(f"   ... and {len(restarts) - MAX_RESTARTS_LISTED} more restarts ({len(restarts)} in all; "
                     "--format json lists every one)")
    lines.append("   tags:")
    width = max((len(t) for t in run.tags), default=10)
    for tag in ordered_tags(run.tags):
        s = run.series[tag]
        rng = f"{int(s.steps[0])}..{int(s.steps[-1])}" if len(s.steps) else "-"
        lines.append(f"     {tag:<{width}}  steps {rng:<14} {len(s.steps)} point(s)")
    lines.append("   checklist:")
    for v in verdicts:
        lines.append(f"     {STATUS_MARK[v.status]} {v.code} {v.title}: {v.message}")
        if v.evidence:
            shown = "; ".join(f"{row['what']} {row['value']}" for row in evidence_rows(v.evidence))
            lines.append(f"             evidence: {shown}")
        if v.fix and v.status in ("warn", "fail"):
            lines.append(f"             adjust: {v.fix}")
        for c in v.commands:
            lines.append(f"             draft (run it yourself): {c}")
    return "\n".join(lines)


def handle_logs(args: argparse.Namespace) -> int:
    if args.gpu is not None:
        from core.plan import PlanError, find_gpu

        try:
            find_gpu(args.gpu)
        except PlanError as exc:
            say(f"logs: --gpu: {exc}")
            return EXIT_UNREADABLE
    notes: list[str] = []
    cache = open_cache(not args.no_cache, notes)
    from core.cli.gpu_report import gpus_of, named_gpu_logs

    if getattr(args, "follow", False):
        from core.cli import logs_follow

        followers: list = []
        _, problems = collect_runs(args.paths, cache=cache, notes=notes,
                                   open_found=logs_follow.opener(followers, cache, args.stall_after,
                                                                 gpu_logs=named_gpu_logs(args.gpu_log, [])))
        named_gpu_logs(args.gpu_log, problems)  # the --gpu-log files that cannot be read, said once
        return logs_follow.follow(args, followers, problems, exit_code=exit_code,
                                  render=lambda results, compact, gpus: _report(
                                      args, _with_efficiency(args, results), problems, notes, compact, gpus=gpus))
    runs, problems = collect_runs(args.paths, cache=cache, notes=notes)
    from core.monitor import run_verdicts, with_gpu_verdict

    gpus = gpus_of(runs, named_gpu_logs(args.gpu_log, problems))  # GPU data: the run's, found, and --gpu-log
    results = _with_efficiency(args, [(run, with_gpu_verdict(run_verdicts(run), g.verdict()))
                                      for run, g in zip(runs, gpus, strict=True)])
    return _report(args, results, problems, notes, gpus=gpus)


def _report(args: argparse.Namespace, results: list[tuple[RunData, list[Verdict]]], problems: list[str],
            notes: list[str], compact: bool = False, gpus: list | None = None) -> int:
    """Print what was read and judged (text, or one JSON document; on one line when `compact`); with `gpus`,
    each run's GPU data after it (`runs[].gpus`, `runs[].gpu_data`)."""
    from core.cli.gpu_report import gpu_files_json, gpus_json, render_gpus_text

    per_run = gpus if gpus is not None else [None] * len(results)
    code = exit_code(results, problems)
    if args.format == "json":
        payload = {"runs": [_finite_json({**run_to_json(r, v), **({} if g is None else {
            "gpus": gpus_json(g), "gpu_data": gpu_files_json(g)})}) for (r, v), g in zip(results, per_run, strict=True)],
            "exit_code": code}
        if problems:
            payload["problems"] = problems
        if notes:
            payload["notes"] = notes
        write_json(json.dumps(payload, indent=None if compact else 2, allow_nan=False, ensure_ascii=False,
                              default=_json_default))
    else:
        for problem in problems:
            say(f"logs: {problem}")
        for note in notes:
            say(f"note: {note}")
        if results:
            write_text("\n\n".join("\n".join([render_run_text(r, v), *(render_gpus_text(g) if g else [])])
                                     for (r, v), g in zip(results, per_run, strict=True)))
        for run, verdicts in results:
            if run.scalar_count() and all(v.status == "unknown" for v in verdicts):
                say(f"note: {run.path}: no check had enough data to judge this run")
    return code


def _json_default(obj):
    return str(obj)


def _finite_json(obj):
    """JSON has no NaN or Infinity: such numbers become null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_json(v) for v in obj]
    return obj
