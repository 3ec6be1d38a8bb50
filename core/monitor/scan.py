"""What every reader of the monitor returns for one file: columnar scalars, events, and the damage found.

A TensorBoard event file (core.monitor.tensorboard) and a W&B run file (core.monitor.wandb) are both read
into a `FileScan`; a scan of the bytes appended to a file is joined to the scan of its beginning with
`merge_appended`; `accumulator_keep_mask` applies TensorBoard's purge rules to any scan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel

KIND_OTHER = 0
KIND_SUMMARY = 1
KIND_START = 2



class Damage(BaseModel):
    """A stretch of an event file that could not be read, and what it cost."""

    kind: str  # "truncated" | "bad_payload_crc" | "bad_length" | "bad_proto" | "not_event_file"
    offset: int
    length: int
    message: str


@dataclass
class FileScan:
    """Everything read from one event file, in record order (cacheable: only numpy arrays and plain data)."""

    path: str
    size: int
    mtime_ns: int
    tags: list[str] = field(default_factory=list)
    # one entry per scalar value, in the order written
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    tag_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    wall_times: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    # one entry per event (record): step, kind, index of its first scalar, how many scalars it holds
    event_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    event_kinds: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    event_first: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    event_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    file_version: float | None = None
    file_version_text: str | None = None
    compat_scalars: int = 0  # scalars before the first damage (what tbparse sees, before purges)
    compat_events: int = 0
    tbparse_would_raise: bool = False  # a checksum-valid record that is not an Event: tbparse raises there
    damage: list[Damage] = field(default_factory=list)
    clean_end: int = 0  # byte offset just past the last record read (where an appended file resumes)
    records: int = 0
    non_scalar_values: int = 0
    looks_like_events: bool = True


def merge_appended(old: FileScan, tail: FileScan) -> FileScan:
    """Join a cached scan of a file's beginning with a scan of the bytes appended since."""
    tag_index = {t: i for i, t in enumerate(old.tags)}
    tags = list(old.tags)
    remap = np.zeros(len(tail.tags), np.int32)
    for i, t in enumerate(tail.tags):
        if t not in tag_index:
            tag_index[t] = len(tags)
            tags.append(t)
        remap[i] = tag_index[t]
    base = len(old.steps)
    merged = FileScan(
        path=tail.path, size=tail.size, mtime_ns=tail.mtime_ns, tags=tags,
        steps=np.concatenate([old.steps, tail.steps]),
        tag_ids=np.concatenate([old.tag_ids, remap[tail.tag_ids] if len(tail.tag_ids) else tail.tag_ids]),
        values=np.concatenate([old.values, tail.values]),
        wall_times=np.concatenate([old.wall_times, tail.wall_times]),
        event_steps=np.concatenate([old.event_steps, tail.event_steps]),
        event_kinds=np.concatenate([old.event_kinds, tail.event_kinds]),
        event_first=np.concatenate([old.event_first, tail.event_first + base]),
        event_counts=np.concatenate([old.event_counts, tail.event_counts]),
        file_version=old.file_version if old.file_version_text is not None else tail.file_version,
        file_version_text=old.file_version_text if old.file_version_text is not None else tail.file_version_text,
        damage=[d for d in old.damage if d.kind != "truncated"] + tail.damage,
        clean_end=tail.clean_end, records=old.records + tail.records,
        non_scalar_values=old.non_scalar_values + tail.non_scalar_values,
        looks_like_events=old.looks_like_events,
        tbparse_would_raise=old.tbparse_would_raise or tail.tbparse_would_raise,
    )
    old_clean = not any(d.kind != "truncated" for d in old.damage) and not old.tbparse_would_raise
    if old_clean:
        merged.compat_events = len(old.event_steps) + tail.compat_events
        merged.compat_scalars = base + tail.compat_scalars
    else:
        merged.compat_events = old.compat_events
        merged.compat_scalars = old.compat_scalars
    return merged


def accumulator_keep_mask(scan: FileScan, *, compatible: bool) -> np.ndarray:
    """Which scalars TensorBoard's EventAccumulator keeps after its purge rules (per file).

    With file_version >= 2 (what torch and tensorboardX write) a SessionLog START at step s drops every
    earlier value with step >= s; without it, an event whose step is below the most recent step drops the
    earlier values of its own tags with step >= its step
    (tensorboard/backend/event_processing/event_accumulator.py, `_MaybePurgeOrphanedData`).
    """
    n_scalars = scan.compat_scalars if compatible else len(scan.steps)
    n_events = scan.compat_events if compatible else len(scan.event_steps)
    keep = np.ones(n_scalars, dtype=bool)
    kinds = scan.event_kinds[:n_events]
    v2 = scan.file_version is not None and scan.file_version >= 2
    if v2 and not (kinds == KIND_START).any():
        return keep
    steps = scan.event_steps[:n_events]
    if not v2:
        summary_steps = steps[kinds == KIND_SUMMARY]
        if len(summary_steps) < 2 or bool(np.all(np.diff(summary_steps) >= 0)) and bool(np.all(np.diff(steps) >= 0)):
            return keep
    scalar_steps = scan.steps[:n_scalars]
    scalar_tags = scan.tag_ids[:n_scalars]
    firsts = scan.event_first[:n_events]
    if v2:
        # a START at step s drops every earlier scalar (index < its first) with step >= s: keep a scalar iff
        # its step is below the smallest START step among the STARTs after it (suffix minimum, O(n))
        starts = np.flatnonzero(kinds == KIND_START)
        limit = np.full(n_scalars + 1, np.iinfo(np.int64).max, dtype=np.int64)
        where = firsts[starts] - 1
        ok = where >= 0
        np.minimum.at(limit, where[ok], steps[starts][ok])
        limit = np.minimum.accumulate(limit[::-1])[::-1]
        return scalar_steps < limit[:n_scalars]
    # without file_version 2: an event whose step is below the most recent step purges the earlier values of
    # its own tags with step >= its step. Which events purge depends only on the event order; the purge itself
    # is a per-tag suffix minimum, so the cost is O(n log n) whatever the order of steps.
    purging = np.zeros(n_events, dtype=bool)
    most_recent = -1
    for e, (kind, step) in enumerate(zip(kinds.tolist(), steps.tolist(), strict=True)):
        if step < most_recent and kind == KIND_SUMMARY:
            purging[e] = True
        else:
            most_recent = step
    if not purging.any():
        return keep
    counts = scan.event_counts[:n_events]
    purge_events = np.flatnonzero(purging & (counts > 0))
    # one (tag, last index it reaches, step) entry per scalar of a purging event
    idx = np.concatenate([np.arange(firsts[e], firsts[e] + counts[e]) for e in purge_events.tolist()]) \
        if len(purge_events) else np.zeros(0, np.int64)
    entry_tags = scalar_tags[idx]
    entry_reach = np.repeat(firsts[purge_events] - 1, counts[purge_events])
    entry_steps = np.repeat(steps[purge_events], counts[purge_events])
    order_s = np.argsort(scalar_tags, kind="stable")
    tag_bounds = np.flatnonzero(np.diff(scalar_tags[order_s])) + 1
    scalar_groups = {int(scalar_tags[g[0]]): g for g in np.split(order_s, tag_bounds) if len(g)}
    for tid in np.unique(entry_tags).tolist():
        sel = entry_tags == tid
        reach, limit_steps = entry_reach[sel], entry_steps[sel]
        order = np.argsort(reach, kind="stable")
        reach, limit_steps = reach[order], limit_steps[order]
        suffix_min = np.minimum.accumulate(limit_steps[::-1])[::-1]
        members = scalar_groups.get(tid)
        if members is None:
            continue
        first_reaching = np.searchsorted(reach, members, side="left")  # entries with reach >= index
        has = first_reaching < len(reach)
        dropped = np.zeros(len(members), dtype=bool)
        dropped[has] = scalar_steps[members[has]] >= suffix_min[first_reaching[has]]
        keep[members[dropped]] = False
    return keep
