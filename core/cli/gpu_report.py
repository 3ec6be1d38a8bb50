"""The GPU part of `slime-assistant logs`: `--gpu-log FILE` (repeatable), the GPU data of each run (the run's W&B
system metrics, the logs found in its directory, the named files), `runs[].gpus` in JSON and a few lines in text.
"""

from __future__ import annotations

import argparse
import os
import stat
from typing import TYPE_CHECKING

from core.paths import expand_user, file_kind, no_such_file

if TYPE_CHECKING:  # the monitor (numpy) is imported when GPU data is read, not for --help
    from core.monitor import RunData, RunGpus

MAX_GPUS_LISTED = 16


def add_gpu_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu-log", action="append", default=[], metavar="FILE",
                        help="an nvidia-smi CSV log (nvidia-smi --query-gpu=... --format=csv -l N > FILE) or a job "
                             "log with slime's Memory-Usage lines, kept beside the run; repeat it for several "
                             "files (one per node). Such files inside a run's directory are found without it")


def named_gpu_logs(paths: list[str], problems: list[str]) -> list[str]:
    """The --gpu-log files that can be read at all; the others become problems (as the run paths do)."""
    out = []
    for raw in paths:
        try:
            p = expand_user(raw)
            mode = os.stat(p).st_mode
        except FileNotFoundError:
            problems.append(f"--gpu-log {no_such_file(raw)}")
            continue
        except (OSError, ValueError) as exc:
            problems.append(f"--gpu-log {raw}: cannot be read ({getattr(exc, 'strerror', None) or exc})")
            continue
        if not stat.S_ISREG(mode):
            problems.append(f"--gpu-log {raw}: {file_kind(mode)}, not a regular file; nothing was read from it")
            continue
        out.append(str(p))
    return out


def gpus_of(runs: list[RunData], gpu_logs: list[str]) -> list[RunGpus]:
    """Each run's GPU data, in the order of `runs`."""
    from core.monitor import read_run_gpus

    return [read_run_gpus(run, gpu_logs) for run in runs]


def gpus_json(g: RunGpus) -> list[dict]:
    """`runs[].gpus`: one entry per GPU (per source), with its numbers."""
    out = []
    for s, summary in zip(g.data.series, g.summaries(), strict=True):
        entry = summary.model_dump()
        entry["files"] = s.files
        entry["role_how"] = s.role_how
        out.append(entry)
    return out


def gpu_files_json(g: RunGpus) -> dict:
    """`runs[].gpu_data`: the files read, what was skipped, where it looked, and each node's CPU and memory."""
    from core.monitor import summarize_host

    return {"files": [f.model_dump() for f in g.data.files], "notes": g.data.notes, "looked_in": g.looked_in,
            "hosts": [summarize_host(h) for h in g.data.host]}


def render_gpus_text(g: RunGpus) -> list[str]:
    """A few lines per run: the files read, then one line per GPU."""
    from core.monitor import SOURCE_LABELS

    lines = []
    for f in g.data.files:
        what = SOURCE_LABELS.get(f.kind, "nothing GPU-related")
        lines.append(f"   gpu data: {f.path}: {what}, {f.gpus} GPU(s), {f.samples} sample(s)")
        lines += [f"   ! {f.path}: {n}" for n in f.notes]
    lines += [f"   ! gpu data: {n}" for n in g.data.notes]
    summaries = g.summaries()
    for s in summaries[:MAX_GPUS_LISTED]:
        where = f"{s.node} {'rank' if s.gpu_is_rank else 'GPU'} {s.gpu}"
        util = (f"utilization median {s.utilization_median:.0f}% (p10 {s.utilization_p10:.0f}, p90 "
                f"{s.utilization_p90:.0f}), idle {s.idle_fraction:.0%}") if s.utilization_median is not None else \
            "no utilization"
        mem = (f", memory max {s.memory_max_mib / 1024:.1f} GiB" if s.memory_max_mib is not None else "") + (
            f" of {s.memory_total_mib / 1024:.1f}" if s.memory_total_mib else "")
        lines.append(f"     {where} [{SOURCE_LABELS[s.source]}, {s.role}]: {s.samples} samples, {util}{mem}")
    if len(summaries) > MAX_GPUS_LISTED:
        lines.append(f"     ... and {len(summaries) - MAX_GPUS_LISTED} more GPU series (--format json lists every one)")
    return lines
