"""Following a run while it is written: each refresh reads only the bytes appended since the last one.

A `Follower` opens a found run once (through the cache), keeps each file's scan state in memory (where its
last whole record ended, a digest of the bytes before that point, and for W&B the step metrics carried
over), and on `refresh` seeks every grown file to that offset and scans only the new bytes
(core.monitor.stream). The new points are added to the stitched series in place, so a refresh costs what
was appended, not the run's size. A record still being written at the end of a growing file is held as
pending (not damage) and read whole on a later refresh; a file that shrank, changed without growing, or no
longer matches the bytes before its saved offset was replaced, and the run is read again from the start.

Each refresh says what changed (`FollowEvent`s): a verdict's new status, a new restart, a new or replaced
file, a run that stalled (no new step for `stall_after` refreshes) and one that resumed.

Given `gpu_logs` (the files the user named; the run's own folders and W&B files are looked in too), the
follower also keeps the run's GPU data (core.monitor.gpu): GPU logs that grew are read on from their saved
offsets, one that appears is a `gpu_file` event, and "GPUs are busy" (MON012) joins the verdicts, so its
status change is a change like any other. `RunSnapshot` and
`changes_since` give the page's "since you last looked" paragraph.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from core.monitor import slime_metrics as sm
from core.monitor.runs import RestartMark, RunData, Series, restart_summary
from core.monitor.scan import Damage, FileScan
from core.monitor.sources import (
    FoundRun,
    file_format,
    list_gpu_files,
    list_run_files,
    merge_file_infos,
    open_run,
    read_file_scan,
    read_gpu_files,
)
from core.monitor.stream import scan_stream, tail_digest
from core.monitor.verdicts import Verdict, run_verdicts, with_gpu_verdict
from core.paths import open_regular

STALL_AFTER = 5  # refreshes without a new step before a run is called stalled
PENDING_MAX = 4 * 1024 * 1024  # a record being written is far smaller (a scalar event is ~100 bytes)
KEEP_TAIL = 64 * 1024
MAX_DAMAGE_KEPT = 200  # per file: a file that keeps growing with junk is summed up past this
EMPTY = {"steps": np.int64, "tag_ids": np.int32, "values": np.float64, "wall_times": np.float64,
         "event_steps": np.int64, "event_kinds": np.int8, "event_first": np.int64, "event_counts": np.int32}


class FollowEvent(BaseModel):
    """One change seen by a refresh, said in one line."""

    kind: str  # status | restart | new_file | replaced | stalled | resumed | finished | gpu_file
    run: str
    message: str
    code: str | None = None
    old: str | None = None
    new: str | None = None
    step: int | None = None


class Refresh(BaseModel):
    """What one refresh read and what changed."""

    new_scalars: int = 0
    bytes_read: int = 0
    files_grown: int = 0
    reread: bool = False  # the run was read again from the start (a file replaced or added)
    pending_bytes: int = 0  # bytes of records still being written at the ends of files
    last_step: int | None = None
    gpu_samples: int = 0  # new GPU samples (when GPU logs are followed)
    events: list[FollowEvent] = []


@dataclass
class _FileState:
    path: Path
    size: int
    mtime_ns: int
    clean_end: int
    digest: str
    carry: FileScan  # the scan's state without its columns (what reading on from clean_end needs)
    tags: set[str] = field(default_factory=set)
    damage: list[Damage] = field(default_factory=list)
    pending: Damage | None = None  # the last record, still being written


def _carry(scan: FileScan) -> FileScan:
    """The scan without its columns and damage: what `scan_stream` needs to read on after it."""
    empty = {name: np.zeros(0, dtype) for name, dtype in EMPTY.items()}
    return replace(scan, tags=[], damage=[], records=0, non_scalar_values=0, compat_scalars=0, compat_events=0,
                   **empty)


def _bounded(damage: list[Damage]) -> list[Damage]:
    """At most MAX_DAMAGE_KEPT reports: the first ones, then one that says how many more there were."""
    if len(damage) <= MAX_DAMAGE_KEPT:
        return damage
    head = [d for d in damage[:MAX_DAMAGE_KEPT - 1] if d.kind != "more"]
    rest = damage[len(head):]
    lost = sum(int(d.message.split()[0]) if d.kind == "more" else 1 for d in rest)
    first = rest[0].offset
    return head + [Damage(kind="more", offset=first, length=rest[-1].offset + rest[-1].length - first,
                          message=f"{lost} more damaged stretches after byte {first} (the first "
                                  f"{len(head)} are listed); the file keeps growing with bytes that are not records")]


def _split_pending(damage: list[Damage], end: int) -> tuple[list[Damage], Damage | None]:
    """The damage of a scan, and the 'truncated' report of a record cut by the end of the file (if any)."""
    if damage and damage[-1].kind == "truncated" and damage[-1].offset + damage[-1].length >= end:
        return damage[:-1], damage[-1]
    return damage, None


class Follower:
    """One run, followed: opened once, then refreshed from each file's saved offset."""

    def __init__(self, found: FoundRun, *, cache=None, stall_after: int = STALL_AFTER,
                 clock: Callable[[], float] = time.time, on_progress=None,
                 gpu_logs: list[str | Path] | None = None) -> None:
        self.found = found
        self.gpu_logs = None if gpu_logs is None else list(gpu_logs)  # None: the GPU data is not followed
        self.gpu_cursors: dict = {}  # each GPU log's saved offset and parser state (core.monitor.gpu)
        self.gpus = None  # RunGpus, when followed
        self._gpu_ident: tuple = ()
        self._on_progress = on_progress
        self.cache = cache
        self.stall_after = max(1, stall_after)
        self.clock = clock
        self.quiet_refreshes = 0
        self.stalled = False
        self.last_growth = clock()
        self._open()

    # -- opening -------------------------------------------------------------------------------------------

    def _open(self) -> None:
        run = open_run(self.found, cache=self.cache, on_progress=self._on_progress)
        self._on_progress = None  # a progress bar of the first read only
        paths = list_run_files(self.found)
        scans = run.scans
        if len(scans) != len(paths):  # the run came whole from the cache: fetch its files' scans
            scans = [read_file_scan(self.found.kind, p, self.cache)[0] for p in paths]
        self.run = run
        self.base_name = run.name  # the name the run was opened with (a page may number runs of one name)
        self.states: list[_FileState] = []
        by_name = {f.name: i for i, f in enumerate(run.files)}
        ordered: list[_FileState | None] = [None] * len(run.files)
        for scan in scans:
            p = Path(scan.path)
            state = _FileState(path=p, size=scan.size, mtime_ns=scan.mtime_ns, clean_end=scan.clean_end,
                               digest=self._digest(p, scan.clean_end), carry=_carry(scan), tags=set(scan.tags))
            state.damage, state.pending = _split_pending(list(scan.damage), scan.size)
            idx = by_name.get(self._report_name(p))
            if idx is not None and ordered[idx] is None:
                ordered[idx] = state
        self.states = [s for s in ordered if s is not None]
        self._apply_damage()
        self._refresh_gpus(run_changed=True)
        self.verdicts = self._verdicts()
        self.restarts_seen = len(restart_summary(run))
        self.exit_code = run.wandb.exit_code if run.wandb is not None else None

    def _verdicts(self) -> list[Verdict]:
        verdicts = run_verdicts(self.run)
        return verdicts if self.gpus is None else with_gpu_verdict(verdicts, self.gpus.verdict())

    def _refresh_gpus(self, *, run_changed: bool, out: Refresh | None = None) -> bool:
        """Read the GPU logs again when one grew or appeared (from their saved offsets), or when the run grew
        (the GPU samples are put on the run's clock and phases); True when the GPU data was read again."""
        if self.gpu_logs is None:
            return False
        try:
            files = list_gpu_files(self.run, self.gpu_logs)
        except OSError:
            files = []
        ident = tuple((str(p), *_stat(p)) for p in files)
        if self.gpus is not None and (ident == self._gpu_ident and not run_changed or not ident
                                      and not self._gpu_ident):
            return False
        known = {entry[0] for entry in self._gpu_ident}
        before = self.gpu_sample_count()
        first = self.gpus is None
        self._gpu_ident = ident
        self.gpus = read_gpu_files(self.run, self.gpu_logs, self.gpu_cursors)
        if out is not None and not first:
            out.gpu_samples = max(0, self.gpu_sample_count() - before)
            read = {f.path for f in self.gpus.data.files}
            for name in [p for p, *_ in ident if p not in known and p in read]:
                out.events.append(FollowEvent(kind="gpu_file", run=self.run.name, message=(
                    f"a GPU log appeared: {name}; its samples are read from now on")))
        return True

    def gpu_sample_count(self) -> int:
        return sum(s.samples for s in self.gpus.data.series) if self.gpus is not None else 0

    def _report_name(self, p: Path) -> str:
        if self.found.kind == "wandb":
            location = Path(self.run.path)
            try:
                return str(p.relative_to(location))
            except ValueError:
                return p.name
        return p.name

    @staticmethod
    def _digest(p: Path, end: int) -> str:
        try:
            with open_regular(p) as fh:
                return tail_digest(fh, end)
        except OSError:
            return ""

    def _apply_damage(self) -> None:
        """Each file's damage as the run shows it: a record being written is not damage unless stalled."""
        for state, report in zip(self.states, self.run.files, strict=False):
            shown = list(state.damage)
            if state.pending is not None and self.stalled:
                shown.append(state.pending)
            report.damage = shown

    # -- refreshing ----------------------------------------------------------------------------------------

    def refresh(self) -> Refresh:
        """Read what was appended since the last refresh; say what changed."""
        out = Refresh()
        if self._files_changed():
            return self._reread(out, "new_file", "a new file appeared (a restart, or another process "
                                                 "started writing); the run was read again")
        fmt = file_format(self.found.kind)
        grown: list[tuple[int, FileScan]] = []
        for fi, state in enumerate(self.states):
            try:
                st = os.stat(state.path)
            except OSError:
                return self._reread(out, "replaced", f"{state.path.name} disappeared; the run was read again")
            if st.st_size == state.size and st.st_mtime_ns == state.mtime_ns:
                continue
            if st.st_size <= state.size:
                return self._reread(out, "replaced", f"{state.path.name} shrank or was rewritten; the run was "
                                                     "read again from the start")
            try:
                with open_regular(state.path) as fh:
                    st = os.fstat(fh.fileno())
                    if tail_digest(fh, state.clean_end) != state.digest:
                        return self._reread(out, "replaced", f"{state.path.name} was replaced; the run was read "
                                                             "again from the start")
                    part = scan_stream(fh, fmt, path=str(state.path), size=st.st_size, mtime_ns=st.st_mtime_ns,
                                       pos=state.clean_end, prior=state.carry)
                    out.bytes_read += st.st_size - state.clean_end
                    state.digest = tail_digest(fh, part.clean_end)
            except OSError:
                return self._reread(out, "replaced", f"{state.path.name} could not be read again; the run was "
                                                     "read again")
            state.size, state.mtime_ns, state.clean_end = st.st_size, st.st_mtime_ns, part.clean_end
            state.carry = _carry(part)
            new_damage, state.pending = _split_pending(list(part.damage), st.st_size)
            if state.pending is not None and state.pending.length > PENDING_MAX:
                # no record ends in this much: not a record being written but bytes that are none; skip them
                # (keeping the last KEEP_TAIL, where the next record may begin) so refreshes stay cheap
                skip = state.pending.length - KEEP_TAIL
                new_damage.append(Damage(kind="bad_length", offset=state.pending.offset, length=skip, message=(
                    f"bytes {state.pending.offset}-{state.pending.offset + skip - 1} ({skip} bytes) hold no whole "
                    "record; skipped them and read on")))
                state.clean_end = state.pending.offset + skip
                state.pending = None
                with open_regular(state.path) as fh:
                    state.digest = tail_digest(fh, state.clean_end)
            state.damage = _bounded([d for d in state.damage if d.kind != "truncated"] + new_damage)
            state.tags.update(part.tags)
            report = self.run.files[fi]
            report.size = st.st_size
            report.scalars += len(part.steps)
            report.tags = len(state.tags)
            report.how = "appended"
            report.non_scalar_values += part.non_scalar_values
            out.files_grown += 1
            grown.append((fi, part))
        self._add(grown)
        out.new_scalars = sum(len(p.steps) for _, p in grown)
        return self._finish(out)

    def _files_changed(self) -> bool:
        try:
            now = [str(p) for p in list_run_files(self.found)]
        except OSError:
            return True
        return sorted(now) != sorted(str(s.path) for s in self.states)

    def _reread(self, out: Refresh, kind: str, message: str) -> Refresh:
        before = {v.code: v.status for v in self.verdicts}
        scalars_before = self.run.scalar_count()
        restarts_seen = self.restarts_seen
        self._open()
        self.restarts_seen = restarts_seen
        out.reread = True
        out.new_scalars = max(0, self.run.scalar_count() - scalars_before)
        out.events.append(FollowEvent(kind=kind, run=self.run.name, message=message))
        return self._finish(out, before=before)

    def _add(self, grown: list[tuple[int, FileScan]]) -> None:
        """Add the new points to the stitched series in place (or stitch again where order demands it)."""
        if not grown:
            return
        run = self.run
        later_tags = [set().union(*(s.tags for s in self.states[fi + 1:])) for fi in range(len(self.states))]
        restitch = False
        additions: dict[str, list[tuple[int, FileScan, np.ndarray]]] = {}
        for fi, part in grown:
            if not len(part.steps):
                continue
            order = np.argsort(part.tag_ids, kind="stable")
            ids_sorted = part.tag_ids[order]
            for chunk in np.split(order, np.flatnonzero(np.diff(ids_sorted)) + 1):
                tag = part.tags[int(part.tag_ids[chunk[0]])]
                if tag in later_tags[fi]:
                    restitch = True  # a later file holds this tag too: file order decides, stitch it all
                additions.setdefault(tag, []).append((fi, part, chunk))
        if restitch:
            self._restitch()
            return
        for tag, pieces in additions.items():
            for fi, part, idx in pieces:
                self._extend(tag, part.steps[idx], part.values[idx], part.wall_times[idx], fi)
        walls = [float(np.nanmin(p.wall_times)) for _, p in grown if len(p.wall_times)
                 and np.isfinite(p.wall_times).any()]
        if walls:
            run.start_time = min([run.start_time, *walls]) if run.start_time is not None else min(walls)

    def _extend(self, tag: str, steps: np.ndarray, values: np.ndarray, walls: np.ndarray, fi: int) -> None:
        """Append one file's new points of a tag; a step that goes back replaces the points at or after it."""
        run = self.run
        files = np.full(len(steps), fi, dtype=np.int32)
        old = run.series.get(tag)
        if old is None:
            old = Series(tag=tag, steps=np.zeros(0, np.int64), values=np.zeros(0), wall_times=np.zeros(0),
                         files=np.zeros(0, np.int32))
        increasing = len(steps) < 2 or bool(np.all(np.diff(steps) > 0))
        if increasing and (not len(old.steps) or steps[0] > old.steps[-1]):
            run.series[tag] = Series(tag=tag, steps=np.concatenate([old.steps, steps]),
                                     values=np.concatenate([old.values, values]),
                                     wall_times=np.concatenate([old.wall_times, walls]),
                                     files=np.concatenate([old.files, files]))
            return
        # the points kept are always a prefix of the old ones followed by some new ones (a step that goes
        # back cuts a suffix): track both, as `runs._restart_marks` does over the whole sequence
        alive = old.steps.tolist()
        keep_old = len(alive)
        name = run.files[fi].name
        new_keep: list[int] = []
        for j, step in enumerate(steps.tolist()):
            if alive and step <= alive[-1]:
                cut = bisect.bisect_left(alive, step)
                run.restarts.append(RestartMark(tag=tag, step=step, file=name, replaced=len(alive) - cut,
                                                wall_time=float(walls[j])))
                del alive[cut:]
                if cut < keep_old:
                    keep_old, new_keep = cut, []
                else:
                    del new_keep[cut - keep_old:]
            alive.append(step)
            new_keep.append(j)
        sel = np.asarray(new_keep, dtype=np.int64)
        run.series[tag] = Series(tag=tag, steps=np.concatenate([old.steps[:keep_old], steps[sel]]),
                                 values=np.concatenate([old.values[:keep_old], values[sel]]),
                                 wall_times=np.concatenate([old.wall_times[:keep_old], walls[sel]]),
                                 files=np.concatenate([old.files[:keep_old], files[sel]]))

    def _restitch(self) -> None:
        """Read every file's scan again (the cache makes this cheap) and stitch from scratch."""
        self._open()

    def _finish(self, out: Refresh, before: dict[str, str] | None = None) -> Refresh:
        run = self.run
        now = self.clock()
        if out.new_scalars:
            self.quiet_refreshes = 0
            self.last_growth = now
            if self.stalled:
                self.stalled = False
                out.events.append(FollowEvent(kind="resumed", run=run.name, message="new steps again after a "
                                              "stall", step=last_step(run)))
        else:
            self.quiet_refreshes += 1
            if not self.stalled and self.quiet_refreshes >= self.stall_after:
                self.stalled = True
                out.events.append(FollowEvent(
                    kind="stalled", run=run.name, step=last_step(run),
                    message=(f"no new step for {self.quiet_refreshes} refreshes (last step "
                             f"{last_step(run) if last_step(run) is not None else 'none'}); the run may have "
                             "stopped or hung")))
        self._apply_damage()
        out.pending_bytes = sum(s.pending.length for s in self.states if s.pending is not None)
        out.last_step = last_step(run)
        if self.found.kind == "wandb" and self.states and not out.reread and out.files_grown:
            run.wandb = merge_file_infos([s.carry for s in self.states])
        gpus_read = self._refresh_gpus(run_changed=bool(out.files_grown), out=out) if not out.reread else False
        if out.files_grown or out.reread or gpus_read:
            verdicts = self._verdicts()
            old = before if before is not None else {v.code: v.status for v in self.verdicts}
            for v in verdicts:
                if old.get(v.code) is not None and old[v.code] != v.status:
                    out.events.append(FollowEvent(kind="status", run=run.name, code=v.code, old=old[v.code],
                                                  new=v.status, message=f"{v.title}: {v.message}"))
            self.verdicts = verdicts
        restarts = restart_summary(run)
        for r in restarts[self.restarts_seen:] if len(restarts) > self.restarts_seen else []:
            out.events.append(FollowEvent(kind="restart", run=run.name, step=int(r["step"]), message=(
                f"{r['file']} went back to step {r['step']} ({r['tags']} tag(s), {r['replaced']} older point(s) "
                "replaced)")))
        self.restarts_seen = len(restarts)
        code = run.wandb.exit_code if run.wandb is not None else None
        if code is not None and code != self.exit_code:
            out.events.append(FollowEvent(kind="finished", run=run.name, message=f"the run recorded its exit "
                                          f"(exit code {code})"))
        self.exit_code = code
        return out


def _stat(p: Path) -> tuple[int, int]:
    try:
        st = os.stat(p)
    except OSError:
        return (-1, 0)
    return (st.st_size, st.st_mtime_ns)


def last_step(run: RunData) -> int | None:
    steps = [int(s.steps[-1]) for s in run.series.values() if len(s.steps)]
    return max(steps) if steps else None


# -- "what changed since you last looked" --------------------------------------------------------------------

class RunSnapshot(BaseModel):
    """What a user saw of a run: enough to say later what changed since."""

    seen_at: float
    scalars: int = 0
    rollouts: int = 0  # points of the reward curve (one per rollout)
    last_step: int | None = None
    reward_tag: str | None = None
    reward: float | None = None  # mean of the reward's last points
    statuses: dict[str, str] = {}
    titles: dict[str, str] = {}
    restarts: int = 0


REWARD_WINDOW = 5


def snapshot(run: RunData, verdicts: list[Verdict], now: float) -> RunSnapshot:
    tag = sm.first_present(run.tags, sm.REWARD_TAGS)
    reward = None
    rollouts = 0
    if tag is not None:
        values = run.series[tag].values
        rollouts = len(values)
        tail = values[-REWARD_WINDOW:]
        tail = tail[np.isfinite(tail)]
        reward = float(tail.mean()) if len(tail) else None
    return RunSnapshot(seen_at=now, scalars=run.scalar_count(), rollouts=rollouts, last_step=last_step(run),
                       reward_tag=tag, reward=reward, statuses={v.code: v.status for v in verdicts},
                       titles={v.code: v.title for v in verdicts}, restarts=len(restart_summary(run)))


def _ago(seconds: float) -> str:
    if seconds < 90:
        return f"{max(0, int(seconds))} s ago"
    if seconds < 5400:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h ago"
    return f"{int(seconds // 86400)} days ago"


def changes_since(old: RunSnapshot | None, new: RunSnapshot) -> str | None:
    """One short paragraph: new rollouts, the reward's change, verdicts whose status changed; None when the
    user has not looked at this run before."""
    if old is None:
        return None
    parts: list[str] = []
    gained = new.rollouts - old.rollouts
    if gained > 0:
        parts.append(f"{gained} new rollout{'s' if gained != 1 else ''} ({old.rollouts} -> {new.rollouts})")
    elif new.scalars > old.scalars:
        parts.append(f"{new.scalars - old.scalars} new values, no new rollout")
    elif new.scalars < old.scalars:
        parts.append("the run was read again and holds fewer values than before (a file was replaced)")
    else:
        parts.append("no new data")
    if new.reward is not None and old.reward is not None and new.reward_tag == old.reward_tag and gained > 0:
        delta = new.reward - old.reward
        parts.append(f"the reward ({new.reward_tag}, mean of the last {REWARD_WINDOW}) went from {old.reward:.4g} to "
                     f"{new.reward:.4g} ({'+' if delta >= 0 else ''}{delta:.3g})")
    changed = [f"{code} {new.titles.get(code, '')} {old.statuses[code]} -> {status}".replace("  ", " ")
               for code, status in new.statuses.items() if code in old.statuses and old.statuses[code] != status]
    if changed:
        parts.append("changed: " + "; ".join(changed))
    if new.restarts > old.restarts:
        n = new.restarts - old.restarts
        parts.append(f"{n} new restart{'s' if n != 1 else ''}")
    return f"Since you last looked ({_ago(new.seen_at - old.seen_at)}): " + "; ".join(parts) + "."
