"""The monitor's one face for front-ends, in the manner of TensorBoard's data provider: a page asks it for runs,
verdicts and chart figures, and never touches a reader; the readers never know the page.

A `MonitorProvider` lives as long as a browser session (the page keeps it in its session state). It opens each
source once (`open`: a `Follower` per run, read through the cache), then every later look only refreshes
(`refresh`: the bytes appended since, nothing when no file changed). So a revisit of the page reads nothing
again. It also names the runs (runs of one name are told apart by a number), remembers what the user saw of
each run for "since you last looked", and keeps that record bounded.

Chart figures are kept too (`figure`), keyed by the runs' data versions and the chart's settings: a rerun of the
page that changed nothing the chart shows (a widget elsewhere, a refresh that read nothing) builds no figure again.
A run's data version changes whenever it is opened or a refresh reads anything for it.
"""

from __future__ import annotations

import itertools
import json
from collections import OrderedDict
from collections.abc import Callable

from pydantic import BaseModel

from core.monitor.cache import CacheBatch
from core.monitor.downsample import PLOT_COLUMNS
from core.monitor.follow import Follower, Refresh, RunSnapshot, changes_since, snapshot
from core.monitor.plots import scalar_figure
from core.monitor.runs import RunData
from core.monitor.sources import UNREADABLE_SOURCE, FoundRun, describe_found
from core.monitor.verdicts import Verdict, with_gpu_verdict
from core.monitor.views import RolloutAlignment, XAxis, rollout_alignment, shown_table
from core.paths import PathRefused, resolve_allowed

MAX_SEEN = 200  # runs whose last look is remembered per profile
MAX_FIGURES = 96  # chart figures kept per session (40 charts at two or three settings); oldest use dropped first
_VERSIONS = itertools.count(1)  # data versions, never reused in a process (a replaced source gets a new one)


class OpenProblem(BaseModel):
    """A source that could not be opened, said for people."""

    label: str
    message: str
    kind: str  # "unreadable" | "wandb_proto"


def source_key(source: dict) -> str:
    """The identity of a source (a FoundRun as data): its fields, in a stable order."""
    return json.dumps(source, sort_keys=True, default=str)


def still_allowed(entries: list) -> list[dict]:
    """The remembered sources that may be read again: those whose folder and files are still inside the
    configured roots (anything that is not a source's data is left out too)."""
    kept = []
    for entry in entries:
        try:
            run = FoundRun.model_validate(entry)
            resolve_allowed(run.path, want="dir")
            for file in run.files:
                resolve_allowed(file, want="file")
        except (ValueError, PathRefused):  # pydantic's ValidationError is a ValueError
            continue
        kept.append(entry)
    return kept


def seen_after(seen: dict[str, dict], key: str, snap: RunSnapshot, limit: int = MAX_SEEN) -> dict[str, dict] | None:
    """The record of what was seen with `snap` for `key`, keeping the `limit` latest looks; None when the record
    already holds this look (same number of values), so nothing needs saving."""
    if key in seen and seen[key].get("scalars") == snap.scalars:
        return None
    out = {**seen, key: snap.model_dump()}
    if len(out) > limit:
        out = dict(sorted(out.items(), key=lambda kv: kv[1].get("seen_at", 0))[-limit:])
    return out


class MonitorProvider:
    """The runs of one session's sources, opened once and followed; see the module docstring."""

    def __init__(self) -> None:
        self._followers: dict[str, Follower] = {}
        self._wanted: list[str] = []
        self._refreshes: dict[str, Refresh] = {}
        self._baselines: dict[str, RunSnapshot | None] = {}
        self._versions: dict[str, int] = {}  # source key -> data version (see the module docstring)
        self._figures: OrderedDict[tuple, object] = OrderedDict()
        self.figures_built = 0  # figures built (not taken from the kept ones) in this session
        self.sources: list[dict] = []

    # -- opening and refreshing ------------------------------------------------------------------------------

    def to_open(self, sources: list[dict]) -> int:
        """How many of `sources` are not open yet (a front-end shows a progress bar when some are)."""
        return sum(source_key(s) not in self._followers for s in sources)

    def open(self, sources: list[dict], *, cache=None,
             on_progress: Callable[[float, str], None] | None = None) -> list[OpenProblem]:
        """Follow exactly `sources` (FoundRun data): the new ones are read (their cache writes made together),
        those no longer given are dropped, the others kept as they are. `on_progress(fraction, file name)` is
        told how far the first reads are. Returns the sources that could not be read."""
        self.sources = list(sources)
        wanted = {source_key(s): s for s in sources}
        for key in [k for k in self._followers if k not in wanted]:
            del self._followers[key]  # a source removed or replaced
            self._refreshes.pop(key, None)
            self._versions.pop(key, None)
        missing = [k for k in wanted if k not in self._followers]
        problems: list[OpenProblem] = []
        batch = CacheBatch(cache) if cache is not None else None
        for i, key in enumerate(missing):
            src = wanted[key]

            def progress(frac: float, name: str, i: int = i) -> None:
                if on_progress is not None:
                    on_progress(min(1.0, (i + frac) / len(missing)), name)

            try:
                self._followers[key] = Follower(FoundRun(**src), cache=batch, on_progress=progress)
                self._versions[key] = next(_VERSIONS)
            except OSError as exc:
                problems.append(OpenProblem(label=src["label"], message=f"cannot be read ({exc})", kind="unreadable"))
            except UNREADABLE_SOURCE as exc:  # W&B run files without the wandb package's definitions
                problems.append(OpenProblem(label=src["label"], message=str(exc), kind="wandb_proto"))
        if batch is not None:
            batch.flush()
        for follower in self._followers.values():
            follower.cache = cache  # a follower outlives the batch it was opened with
        self._wanted = [k for k in wanted if k in self._followers]
        return problems

    def refresh(self) -> list[tuple[str, str]]:
        """Read what each run wrote since the last look (nothing when no file changed), then name the runs.
        Returns (run name, reason) for the runs that could not be read this time."""
        failed = []
        self._refreshes = {}
        for key, follower in self._pairs():
            try:
                self._refreshes[key] = refresh = follower.refresh()
            except OSError as exc:
                failed.append((follower.run.name, str(exc)))
                self._versions[key] = next(_VERSIONS)  # what it holds now is not known for sure
                continue
            if refresh.reread or refresh.files_grown or refresh.new_scalars:
                self._versions[key] = next(_VERSIONS)
            if self._refreshes[key].reread:
                follower.base_name = follower.run.name
        self._name_runs()
        return failed

    def _pairs(self) -> list[tuple[str, Follower]]:
        return [(k, self._followers[k]) for k in self._wanted if k in self._followers]

    def _name_runs(self) -> None:
        """Runs of the same name are told apart by a number (from each follower's own name, every time)."""
        seen: dict[str, int] = {}
        for _, follower in self._pairs():
            base = follower.base_name
            seen[base] = seen.get(base, 0) + 1
            follower.run.name = base if seen[base] == 1 else f"{base} ({seen[base]})"

    # -- what a front-end shows ------------------------------------------------------------------------------

    def followers(self) -> list[Follower]:
        """The followed runs, in the order of the sources."""
        return [f for _, f in self._pairs()]

    def runs(self) -> list[RunData]:
        return [f.run for _, f in self._pairs()]

    def described(self) -> str:
        """What the sources hold, in a few words ("2 TensorBoard runs")."""
        return describe_found([FoundRun(**s) for s in self.sources])

    @staticmethod
    def _checklist(follower: Follower, gpu: dict[str, Verdict]) -> list[Verdict]:
        """A run's checklist as the last refresh left it, with the GPU check judged beside it (the one place the
        two are put together)."""
        extra = gpu.get(follower.run.name)
        return with_gpu_verdict(list(follower.verdicts), extra) if extra is not None else list(follower.verdicts)

    def verdicts(self, gpu: dict[str, Verdict] | None = None) -> list[tuple[RunData, list[Verdict]]]:
        """Each run with its checklist; `gpu` holds the "GPUs are busy" verdict by run name (a front-end reads
        GPU logs it lists, so it judges that check)."""
        return [(f.run, self._checklist(f, gpu or {})) for _, f in self._pairs()]

    def events(self) -> list[tuple[str, str]]:
        """(run name, one line) for each run whose last refresh saw changes (its first six)."""
        out = []
        for key, follower in self._pairs():
            refresh = self._refreshes.get(key)
            if refresh is not None and refresh.events:
                out.append((follower.run.name, "; ".join(
                    f"{e.code + ' ' if e.code else ''}{e.kind}: {e.old + ' -> ' + e.new if e.old else e.message}"
                    for e in refresh.events[:6])))
        return out

    def since_last_look(self, seen: dict[str, dict], gpu: dict[str, Verdict], now: float
                        ) -> tuple[list[tuple[str, str]], dict[str, dict] | None]:
        """What changed in each run since the user last looked, and the record of looks to save (None: nothing
        new to save). `seen` is the saved record (source key -> RunSnapshot data); the first look of this session
        compares with it, later ones with the same baseline."""
        changes, record = [], dict(seen)
        changed = False
        for key, follower in self._pairs():
            if key not in self._baselines:
                saved = seen.get(key)
                try:
                    self._baselines[key] = RunSnapshot.model_validate(saved) if saved else None
                except ValueError:
                    self._baselines[key] = None
            snap = snapshot(follower.run, self._checklist(follower, gpu), now)
            text = changes_since(self._baselines[key], snap)
            if text:
                changes.append((follower.run.name, text))
            updated = seen_after(record, key, snap)
            if updated is not None:
                record, changed = updated, True
        return changes, record if changed else None

    def alignments(self, steps_per_rollout: int | None) -> dict[str, RolloutAlignment]:
        """Each run's rollout index (from the logs, or the steps per rollout the user gave)."""
        return {run.name: rollout_alignment(run, steps_per_rollout) for run in self.runs()}

    def data_version(self) -> tuple:
        """What the charts' data is now: each followed run's name, data version and number of values."""
        return tuple((f.run.name, self._versions.get(k, 0), f.run.scalar_count()) for k, f in self._pairs())

    def figure(self, tag: str, *, axis: XAxis, weight: float, ignore_outliers: bool,
               alignments: dict[str, RolloutAlignment], columns: int = PLOT_COLUMNS):
        """The chart of one tag over every run, smoothed and ranged as TensorBoard draws it, with the points a
        chart `columns` pixels wide shows. The same figure object is returned while the runs' data and these
        settings stay the same (the caller must not change it); at most MAX_FIGURES are kept."""
        runs = self.runs()
        aligned = tuple((r.name, alignments[r.name].stride, alignments[r.name].steps_per_rollout)
                        for r in runs if r.name in alignments)
        key = (self.data_version(), tag, XAxis(axis).value, float(weight), bool(ignore_outliers), aligned,
               int(columns))
        fig = self._figures.get(key)
        if fig is not None:
            self._figures.move_to_end(key)
            return fig
        fig = scalar_figure(runs, tag, axis=axis, weight=weight, ignore_outliers=ignore_outliers,
                            alignments=alignments, columns=columns)
        self.figures_built += 1
        self._figures[key] = fig
        while len(self._figures) > MAX_FIGURES:
            self._figures.popitem(last=False)
        return fig

    def table(self, tags: list[str], *, axis: XAxis, weight: float, alignments: dict[str, RolloutAlignment]):
        """The values the charts of `tags` show, one row per point (a pandas frame, for a CSV download)."""
        return shown_table(self.runs(), tags, axis, weight, alignments)
