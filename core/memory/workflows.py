"""The workflows the app offers, and how to summarise their status for a profile."""

from __future__ import annotations

from pydantic import BaseModel

from core.memory.profile import WorkflowRecord


class Workflow(BaseModel):
    id: str
    title: str
    page: str
    icon: str
    what_done_means: str


WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(id="grpo", title="GRPO setup", page="pages/grpo.py", icon=":material/rocket_launch:",
             what_done_means="a GRPO launch script drafted with no checker errors"),
    Workflow(id="async", title="Async training", page="pages/async_training.py", icon=":material/sync:",
             what_done_means="a train_async.py launch script drafted with no checker errors"),
    Workflow(id="multi_turn", title="Multi-turn agent", page="pages/multi_turn.py", icon=":material/forum:",
             what_done_means="the generate-function checklist confirmed and a launch script drafted"),
    Workflow(id="check_args", title="Check launch script", page="pages/check_args.py",
             icon=":material/fact_check:", what_done_means="a launch script checked with no errors"),
    Workflow(id="check_data", title="Check my data", page="pages/check_data.py", icon=":material/dataset:",
             what_done_means="a data sample checked with no rows slime would skip or crash on"),
    Workflow(id="model_checkpoint", title="Model and checkpoint", page="pages/model_checkpoint.py",
             icon=":material/memory:", what_done_means="model script chosen and conversion command drafted"),
    Workflow(id="alternatives", title="Alternatives", page="pages/alternatives.py", icon=":material/alt_route:",
             what_done_means="your needs answered with a recommendation"),
    Workflow(id="monitor", title="Monitor training", page="pages/monitor.py", icon=":material/monitoring:",
             what_done_means="a run's logs read and the health checklist produced"),
)

WORKFLOW_BY_ID = {w.id: w for w in WORKFLOWS}


class WorkflowStatusRow(BaseModel):
    workflow: Workflow
    status: str  # "done", "started", "not started"
    record: WorkflowRecord | None = None


def status_rows(records: dict[str, WorkflowRecord]) -> list[WorkflowStatusRow]:
    """One row per workflow, in the app's order, saying done / started / not started."""
    rows = []
    for wf in WORKFLOWS:
        rec = records.get(wf.id)
        rows.append(WorkflowStatusRow(workflow=wf, status=rec.status if rec else "not started", record=rec))
    return rows
