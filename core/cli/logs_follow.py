"""`slime-assistant logs DIR --follow [--interval S]`: the verdicts once, then one line per change until Ctrl-C.

Each run found is followed (core.monitor.follow): every interval, the files that grew are read from where the
last read ended, and each change is printed as it happens (a verdict's new status, a new restart, a new or
replaced file, a stalled run: no new step for --stall-after intervals, and a run that resumed or recorded its
exit). The GPU data is followed too: the run's W&B system metrics, the GPU logs in its folder and the --gpu-log
files are read on from where the last read ended, a GPU log that appears is a change line, and "GPUs are busy"
(MON012) is judged with the other verdicts, so its new status is one. With --format json the first line is the usual document on one line, then one JSON object per change.
On Ctrl-C the exit code is the one `logs` gives for the runs as they are then.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from core.cli.output import say, write_json, write_text

if TYPE_CHECKING:  # the monitor (numpy, pandas) is imported when a run is read, not for --help
    from core.monitor import Follower, FollowEvent, FoundRun

DEFAULT_INTERVAL = 10.0
MIN_INTERVAL = 0.2
_sleep = time.sleep  # tests replace this to append to the files between refreshes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--follow", action="store_true",
                        help="keep reading the runs as they are written: print the verdicts, then one line per "
                             "change (new status, restart, stalled run) until interrupted (Ctrl-C)")
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL, metavar="S",
                        help=f"with --follow: seconds between reads (default {DEFAULT_INTERVAL:g}, at least "
                             f"{MIN_INTERVAL:g})")
    parser.add_argument("--stall-after", type=int, default=5, metavar="N",
                        help="with --follow: call a run stalled after N intervals without a new step (default 5)")


def event_text(event: FollowEvent, now: datetime) -> str:
    when = now.astimezone().strftime("%H:%M:%S")
    if event.kind == "status":
        return f"{when} {event.run}: {event.code} {(event.old or '').upper()} -> {(event.new or '').upper()}: " \
               f"{event.message}"
    return f"{when} {event.run}: {event.kind.replace('_', ' ')}: {event.message}"


def event_json(event: FollowEvent, path: str, now: datetime) -> dict:
    out = {"time": now.astimezone(timezone.utc).isoformat(timespec="seconds"), "run": event.run, "path": path,
           "event": event.kind, "message": event.message}
    if event.kind == "status":
        out.update({"code": event.code, "from": event.old, "to": event.new})
    if event.step is not None:
        out["step"] = event.step
    return out


def follow(args: argparse.Namespace, followers: list[Follower], problems: list[str], *, render, exit_code) -> int:
    """Print the first report (`render(results)`), then follow; return the exit code when interrupted."""
    interval = max(MIN_INTERVAL, float(args.interval))
    results = [(f.run, f.verdicts) for f in followers]
    render(results, compact=True, gpus=[f.gpus for f in followers] if followers else None)
    if not followers:  # nothing could be read: nothing to follow
        return exit_code(results, problems)
    if args.format == "text":
        say(f"note: following {len(followers)} run(s), reading every {interval:g} s; press Ctrl-C to stop")
    try:
        while True:
            _sleep(interval)
            for f in followers:
                try:
                    refresh = f.refresh()
                except OSError as exc:
                    refresh = None
                    say(f"note: {f.run.path}: could not be read this time ({exc.strerror or exc})")
                now = datetime.now(timezone.utc)
                for event in refresh.events if refresh is not None else []:
                    if args.format == "json":
                        write_json(json.dumps(event_json(event, f.run.path, now), ensure_ascii=False,
                                              allow_nan=False))
                    else:
                        write_text(event_text(event, now))
    except KeyboardInterrupt:
        pass
    return exit_code([(f.run, f.verdicts) for f in followers], problems)


def opener(followers: list[Follower], cache, stall_after: int, gpu_logs: list[str] = ()):
    """An `open_found` for `collect_runs` that keeps a Follower of each run it opens (on the cache itself, not
    on the batch `collect_runs` gathers its writes in: a follower outlives that batch), following its GPU data
    with the `gpu_logs` named by the user."""
    base_cache = cache

    from core.monitor import Follower

    def open_found(found: FoundRun, cache=None):
        follower = Follower(found, cache=base_cache, stall_after=stall_after, gpu_logs=list(gpu_logs))
        followers.append(follower)
        return follower.run
    return open_found
