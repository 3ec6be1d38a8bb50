"""slime's phases in wall time, GPU clocks put on the run's clock, and which GPUs train and which generate.

Phases come from the run's own curves: `perf/rollout_time` is logged when a rollout's generation ends
(`log_rollout_data`, slime/observability/rollout_metrics.py:256-267@624b824a), so generation ran from that
point's wall time minus its value; `perf/train_time` is the actor's "train" timer, opened beside the
`inverse_timer` of its wait (slime/backends/megatron_utils/actor.py:433@624b824a), logged when training ends. In train.py a step is
generate, train, then `update_weights` before the next rollout (train.py:49-85@624b824a), and the update's
timer is logged with the next step's perf values, so an update is placed just before the next generation.
slime's Memory-Usage lines around `update_weights` (slime/backends/megatron_utils/actor.py:639-641@624b824a)
give the updates exactly where a job log was read.

Roles: with `--colocate` every GPU trains and generates in turn (slime/utils/arguments.py:71-80@624b824a);
otherwise a GPU busy while the run trains and idle while it generates is a training GPU, and the other way
round a rollout GPU. Without phases, the placement decides: slime sorts the GPUs it reserves by node and
index and gives the first `--actor-num-nodes` x `--actor-num-gpus-per-node` to training, the next
`--rollout-num-gpus` to SGLang (`_get_placement_group_layout`, slime/ray/placement_group.py:100-137@624b824a).
"""

from __future__ import annotations

import time

import numpy as np
from pydantic import BaseModel, Field

from core.monitor.gpu.models import GpuData, GpuSeries
from core.monitor.runs import RunData
from core.pins import slime_source

SRC_ROLLOUT_TIME = slime_source("slime/observability/rollout_metrics.py", 267)
SRC_TRAIN_TIME = slime_source("slime/backends/megatron_utils/actor.py", 433)
SRC_STEP_ORDER = slime_source("train.py", 85)
SRC_PLACEMENT = slime_source("slime/ray/placement_group.py", 114)
SRC_COLOCATE = slime_source("slime/utils/arguments.py", 71)
IDLE_UTILIZATION = 5.0  # percent; a sample below it is idle (see judge.THRESHOLDS)
ROLE_RATIO = 3.0  # a phase's median at least this many times the other's (and busy) decides the role
MAX_WINDOWS = 100_000
HALF_HOUR = 1800.0
MAX_SHIFT_STEPS = 28  # +-14 hours, every time zone


class Phases(BaseModel):
    """Windows (start, end) in seconds since the epoch."""

    rollout: list[tuple[float, float]] = Field(default_factory=list)
    train: list[tuple[float, float]] = Field(default_factory=list)
    update: list[tuple[float, float]] = Field(default_factory=list)
    update_exact: bool = False  # from Memory-Usage lines rather than placed from perf/update_weights_time

    @property
    def known(self) -> bool:
        return bool(self.rollout and self.train)

    def span(self) -> tuple[float, float] | None:
        every = self.rollout + self.train + self.update
        return (min(a for a, _ in every), max(b for _, b in every)) if every else None


def _windows(run: RunData, tag: str) -> list[tuple[float, float]]:
    s = run.series.get(tag)
    if s is None:
        return []
    ok = np.isfinite(s.values) & np.isfinite(s.wall_times) & (s.values >= 0)
    ends, lengths = s.wall_times[ok][-MAX_WINDOWS:], s.values[ok][-MAX_WINDOWS:]
    return [(float(e - d), float(e)) for e, d in zip(ends.tolist(), lengths.tolist(), strict=True)]


def run_phases(run: RunData | None, data: GpuData | None = None) -> Phases:
    """The run's rollout, training and weight-update windows (empty where the run does not log them)."""
    out = Phases()
    if run is not None:
        out.rollout = _windows(run, "perf/rollout_time")
        out.train = _windows(run, "perf/train_time")
        updates = run.series.get("perf/update_weights_time")
        if updates is not None and out.rollout:
            starts = np.array(sorted(a for a, _ in out.rollout))
            ok = np.isfinite(updates.values) & np.isfinite(updates.wall_times)
            for wall, length in zip(updates.wall_times[ok].tolist(), updates.values[ok].tolist(), strict=True):
                nxt = starts[starts > wall]
                if len(nxt) and length >= 0:
                    out.update.append((float(nxt[0] - length), float(nxt[0])))
    if data is not None and data.marks:
        exact = _updates_from_marks(data)
        if exact:
            out.update, out.update_exact = exact, True
    return out


def _updates_from_marks(data: GpuData) -> list[tuple[float, float]]:
    """Weight updates from the Memory-Usage lines printed before and after them (the lowest rank's)."""
    marks = [m for m in data.marks if m.what in ("before update_weights", "after update_weights")]
    if not marks:
        return []
    first = min((m.node, m.rank if m.rank is not None else 0) for m in marks)
    out, start = [], None
    for m in marks:
        if (m.node, m.rank if m.rank is not None else 0) != first:
            continue
        if m.what.startswith("before"):
            start = m.time
        elif start is not None:
            out.append((start, max(m.time, start + 1.0)))  # the log's clock counts whole seconds
            start = None
    return out


def shift_to_run(data: GpuData, phases: Phases, run_span: tuple[float, float] | None) -> list[str]:
    """Put local-time sources (nvidia-smi, job logs) on the run's clock: when a source's samples miss the
    run's time span, the shift by whole half-hours that overlaps it best is applied. Returns notes."""
    span = phases.span() or run_span
    if span is None:
        return []
    notes = []
    for source in ("nvidia-smi", "slime-log"):
        group = [s for s in data.series if s.source == source and s.samples]
        if not group:
            continue
        times = np.concatenate([s.times for s in group])
        best, best_cover = 0.0, _cover(times, span)
        if best_cover >= 0.5:
            continue
        for k in range(-MAX_SHIFT_STEPS, MAX_SHIFT_STEPS + 1):
            cover = _cover(times + k * HALF_HOUR, span)
            if cover > best_cover + 1e-9:
                best, best_cover = k * HALF_HOUR, cover
        if best_cover < 0.1:
            notes.append(f"the {source} samples ({_when(times.min())} to {_when(times.max())} UTC) hardly overlap the "
                         f"run ({_when(span[0])} to {_when(span[1])}): are they of another run? They are shown, but "
                         "not placed against its phases")
            continue
        if best and best_cover >= 0.5:
            for s in group:
                s.times = s.times + best
            if source == "slime-log":
                for m in data.marks:
                    m.time += best
            notes.append(f"the {source} times (the node's local time, read as UTC) were moved by {best / 3600:+g} h "
                         "to match the run's own clock")
    return notes


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(float(t)))


def _cover(times: np.ndarray, span: tuple[float, float]) -> float:
    if not len(times):
        return 0.0
    return float(((times >= span[0] - 60) & (times <= span[1] + 60)).mean())


def inside(times: np.ndarray, windows: list[tuple[float, float]]) -> np.ndarray:
    """Which samples fall inside any of the windows."""
    if not windows or not len(times):
        return np.zeros(len(times), dtype=bool)
    w = np.array(sorted(windows))
    idx = np.searchsorted(w[:, 0], times, side="right") - 1
    ok = idx >= 0
    out = np.zeros(len(times), dtype=bool)
    out[ok] = times[ok] < w[idx[ok], 1]
    return out


def _median(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(np.median(values)) if len(values) else None


def phase_medians(s: GpuSeries, phases: Phases) -> tuple[float | None, float | None]:
    """A GPU's median utilization while the run trains, and while it generates."""
    return (_median(s.utilization[inside(s.times, phases.train)]),
            _median(s.utilization[inside(s.times, phases.rollout)]))


def assign_roles(data: GpuData, run: RunData | None, phases: Phases) -> None:
    """Set each utilization series' role (training, rollout, colocated or unknown) and how it was decided."""
    config = run.wandb.config if run is not None and run.wandb is not None else {}
    colocate = config.get("colocate")
    with_util = [s for s in data.series if s.source != "slime-log"]
    if colocate is True:
        for s in with_util:
            s.role, s.role_how = "colocated", "the run's config sets --colocate"
        return
    undecided = []
    for s in with_util:
        if not phases.known:
            undecided.append(s)
            continue
        during_train, during_rollout = phase_medians(s, phases)
        if during_train is None or during_rollout is None:
            undecided.append(s)
            continue
        busy_train, busy_rollout = during_train >= IDLE_UTILIZATION, during_rollout >= IDLE_UTILIZATION
        how = f"median {during_train:.0f}% while training, {during_rollout:.0f}% while generating"
        if busy_train and during_train >= ROLE_RATIO * max(during_rollout, 1.0):
            s.role, s.role_how = "training", how
        elif busy_rollout and during_rollout >= ROLE_RATIO * max(during_train, 1.0):
            s.role, s.role_how = "rollout", how
        elif busy_train and busy_rollout:
            s.role, s.role_how = "colocated", how + " (busy in both phases)"
        else:
            undecided.append(s)
    _roles_from_placement(undecided, config)


def _roles_from_placement(series: list[GpuSeries], config: dict) -> None:
    try:
        actor = int(config.get("actor_num_nodes") or 0) * int(config.get("actor_num_gpus_per_node") or 0)
        rollout = int(config.get("rollout_num_gpus") or 0)
    except (TypeError, ValueError):
        return
    if not actor or config.get("colocate") is not False:
        return
    for source in {s.source for s in series}:
        group = sorted((s for s in series if s.source == source), key=lambda s: (s.node, s.gpu))
        if len(group) != actor + rollout:
            continue
        for i, s in enumerate(group):
            s.role = "training" if i < actor else "rollout"
            s.role_how = (f"slime's placement: the first {actor} GPUs by node and index train, the next "
                          f"{rollout} generate")
