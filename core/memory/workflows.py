"""The workflows the app offers, what marks each one done, and how to summarise their status for a profile.

A workflow is *done* once the user accepted an output of it (a draft accepted or downloaded, a check run on
their own input), *started* once they changed something on its page, and *not started* otherwise: visiting a
page changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from core.memory.profile import AcceptedOutput, WorkflowRecord


class Workflow(BaseModel):
    id: str
    title: str
    page: str
    icon: str
    what_done_means: str
    last_done: str = Field(default="Last accepted", description="how the latest output is introduced: a check "
                           "nobody accepts says when it last ran")


_DRAFT_DONE = "you accept a ready draft, or download its script"

WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(id="grpo", title="GRPO setup", page="pages/grpo.py", icon=":material/rocket_launch:",
             what_done_means=_DRAFT_DONE),
    Workflow(id="async", title="Async training", page="pages/async_training.py", icon=":material/sync:",
             what_done_means=_DRAFT_DONE),
    Workflow(id="multi_turn", title="Multi-turn agent", page="pages/multi_turn.py", icon=":material/forum:",
             what_done_means=_DRAFT_DONE + " (once the checklist is confirmed)"),
    Workflow(id="check_args", title="Check launch script", page="pages/check_args.py",
             icon=":material/fact_check:", what_done_means="a check runs on a script you pasted or uploaded",
             last_done="Last checked"),
    Workflow(id="check_data", title="Check my data", page="pages/check_data.py", icon=":material/dataset:",
             what_done_means="you press Check and the check of your data file finishes", last_done="Last checked"),
    Workflow(id="model_checkpoint", title="Model and checkpoint", page="pages/model_checkpoint.py",
             icon=":material/memory:",
             what_done_means="you accept a ready conversion command, or download it"),
    Workflow(id="alternatives", title="Alternatives", page="pages/alternatives.py", icon=":material/alt_route:",
             what_done_means="you accept the recommendation, or download it"),
    Workflow(id="monitor", title="Monitor training", page="pages/monitor.py", icon=":material/monitoring:",
             what_done_means="a checklist is produced for runs you loaded (uploaded or added as a folder)",
             last_done="Last checklist"),
)

WORKFLOW_BY_ID = {w.id: w for w in WORKFLOWS}


class WorkflowStatusRow(BaseModel):
    workflow: Workflow
    status: str  # "done", "started", "not started"
    record: WorkflowRecord | None = None
    accepted: list[AcceptedOutput] = []


def status_rows(records: dict[str, WorkflowRecord], accepted: dict[str, list[AcceptedOutput]] | None = None,
                touched: set[str] | frozenset[str] = frozenset()) -> list[WorkflowStatusRow]:
    """One row per workflow, in the app's order: done (an accepted output), started (the user changed
    something: progress saved or inputs kept), or not started."""
    accepted = accepted or {}
    rows = []
    for wf in WORKFLOWS:
        history = accepted.get(wf.id, [])
        rec = records.get(wf.id)
        status = "done" if history else "started" if rec is not None or wf.id in touched else "not started"
        rows.append(WorkflowStatusRow(workflow=wf, status=status, record=rec, accepted=history))
    return rows


# -- what marks the monitor done ------------------------------------------------------------------------------

MISSING_NO_SCALARS = ("no scalar value could be read (not an event file or W&B run file, empty, or damaged); "
                      "load slime's event files or W&B run files")
MISSING_NOTHING_JUDGED = ("no check had enough data (no slime metrics yet, or too few points); load more of "
                          "the run")


class CheckedRun(Protocol):
    """A run as the monitor hands it over (core.monitor's RunData): its shown name and how many values it has."""

    name: str

    def scalar_count(self) -> int: ...


class RunCheck(Protocol):
    """One line of a run's checklist (core.monitor's Verdict)."""

    code: str
    title: str
    status: str  # ok | warn | fail | unknown


class MonitorProgress(BaseModel):
    """Where the monitor stands for the runs loaded: `status` is "done" once some run had a check with enough
    data to judge, else "started"; what was read, what to look at, and one line for the record."""

    status: str
    done: list[str]
    todo: list[str]
    summary: str


def monitor_progress(results: Sequence[tuple[CheckedRun, Sequence[RunCheck]]]) -> MonitorProgress:
    """The monitor is done when a checklist was produced: a run with values and at least one check that is not
    "unknown". Its warnings and failures, and the runs with nothing judged, are what is left to look at."""
    judged = [(r, vs) for r, vs in results if r.scalar_count() and any(v.status != "unknown" for v in vs)]
    done = [f"{r.name}: checklist read ({sum(v.status == 'ok' for v in vs)} ok)" for r, vs in judged]
    todo = [f"{r.name}: {v.code} {v.title} ({v.status})" for r, vs in judged for v in vs
            if v.status in ("warn", "fail")]
    judged_names = {r.name for r, _ in judged}  # the monitor names runs uniquely
    todo += [f"{r.name}: {MISSING_NO_SCALARS if not r.scalar_count() else MISSING_NOTHING_JUDGED}"
             for r, _ in results if r.name not in judged_names]
    return MonitorProgress(status="done" if judged else "started", done=done, todo=todo,
                           summary=checklist_summary(results))

def checklist_summary(results: Sequence[tuple[CheckedRun, Sequence[RunCheck]]]) -> str:
    """One line for people on what the checklist of these runs found (the status line of the Monitor page and
    What's done): 'Run "a": 1 check fails and 2 warn' or 'Run "a": every check that could judge it is fine'."""
    if not results:
        return "No run loaded"
    names = ", ".join(f'"{run.name}"' for run, _ in results)
    where = ("Run " if len(results) == 1 else "Runs ") + names
    fails = sum(v.status == "fail" for _, vs in results for v in vs)
    warns = sum(v.status == "warn" for _, vs in results for v in vs)
    unjudged = sum(not run.scalar_count() or all(v.status == "unknown" for v in vs) for run, vs in results)
    parts = []
    if fails:
        parts.append(f"{fails} check{' fails' if fails == 1 else 's fail'}")
    if warns:
        parts.append(f"{warns} {'warns' if warns == 1 else 'warn'}" if fails else
                     f"{warns} check{' warns' if warns == 1 else 's warn'}")
    if unjudged:
        who = "it has" if len(results) == 1 else f"{unjudged} of them {'has' if unjudged == 1 else 'have'}"
        parts.append(f"{who} too little data to judge")
    if not parts:
        return f"{where}: every check that could judge {'it' if len(results) == 1 else 'them'} is fine"
    return f"{where}: " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1])


def input_changes(newer: AcceptedOutput, older: AcceptedOutput, *, limit: int = 8) -> list[str]:
    """What differs between the answers behind two accepted outputs, in words: "label: old → new".

    Inputs are named by the label they had on the page (as saved with the newer output) when known."""
    shown = newer.inputs_shown is not None and older.inputs_shown is not None
    new, old = (newer.inputs_shown, older.inputs_shown) if shown else (newer.inputs, older.inputs)
    if new is None or old is None:
        return []
    labels = {**(older.input_labels or {}), **(newer.input_labels or {})}
    changes = []
    for name in sorted(set(new) | set(old), key=lambda n: (n not in labels, labels.get(n, n))):
        if name not in old or name not in new:
            continue  # not kept with one of them (an older release, or a widget not shown then)
        before, after = old[name], new[name]
        if before != after:
            changes.append(f"{labels.get(name, name.replace('_', ' '))}: {_shown(before)} → {_shown(after)}")
    return changes if len(changes) <= limit else [*changes[:limit], f"and {len(changes) - limit} more"]


def _shown(value: object, width: int = 60) -> str:
    if value is None or value == "":
        return "empty"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"
