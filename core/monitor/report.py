"""Reporters for the monitor: read problems as Findings, and the checklist as plain text for the record."""

from __future__ import annotations

from core.findings import Finding, Severity, sort_and_dedupe
from core.monitor.runs import RunData, restart_summary
from core.monitor.slime_metrics import REWARD_TAGS, SRC_TB
from core.monitor.verdicts import Verdict

TBPARSE_NOTE = ("tbparse (through TensorBoard's Python reader) stops at the first damaged record of a file; "
                "this reader drops only what is damaged and reads on.")


def read_findings(run: RunData) -> list[Finding]:
    """What could not be read in a run, what was recovered past damage, restarts, and a missing reward."""
    out: list[Finding] = []
    if not run.files:
        out.append(Finding(code="MON100", severity=Severity.ERROR, card="monitoring",
                           message=f"{run.name}: no event files (names containing 'tfevents') here."))
    for f in run.files:
        if not f.looks_like_events:
            out.append(Finding(code="MON101", severity=Severity.ERROR, card="monitoring",
                               message=f"{run.name}/{f.name}: not a {file_kind(run)}; nothing read from it."))
            continue
        if f.size == 0:
            out.append(Finding(code="MON102", severity=Severity.INFO, card="monitoring",
                               message=f"{run.name}/{f.name}: empty file (a writer that has not flushed yet)."))
        for d in f.damage:
            sev = Severity.INFO if d.kind == "truncated" else Severity.WARNING
            out.append(Finding(code="MON103" if d.kind == "truncated" else "MON104", severity=sev, card="monitoring",
                               message=f"{run.name}/{f.name}: {d.message}."))
        if f.lost_vs_tbparse:
            out.append(Finding(code="MON105", severity=Severity.INFO, card="monitoring",
                               message=(f"{run.name}/{f.name}: {f.lost_vs_tbparse} of {f.scalars} scalar(s) lie past "
                                        f"the damage. {TBPARSE_NOTE}")))
        if f.tbparse_would_raise:
            out.append(Finding(code="MON106", severity=Severity.WARNING, card="monitoring",
                               message=(f"{run.name}/{f.name}: a record with valid checksums is not an Event; "
                                        "tbparse would raise an error on this file. It was skipped here.")))
        if f.non_scalar_values:
            out.append(Finding(code="MON107", severity=Severity.INFO, card="monitoring",
                               message=(f"{run.name}/{f.name}: {f.non_scalar_values} non-scalar value(s) "
                                        "(histograms, text, tensors, media) are not plotted here; "
                                        + ("W&B shows them." if run.source == "wandb" else
                                           "tbparse or TensorBoard reads them."))))
    for r in restart_summary(run):
        out.append(Finding(code="MON110", severity=Severity.INFO, card="monitoring",
                           message=(f"{run.name}: restart in {r['file']} back to step {r['step']}: {r['replaced']} "
                                    f"older point(s) in {r['tags']} tag(s) replaced by the newer values, as "
                                    "TensorBoard does.")))
    if run.files and not any(t in run.series for t in REWARD_TAGS):
        out.append(Finding(code="MON120", severity=Severity.WARNING, card="monitoring", source=SRC_TB,
                           message=(f"{run.name}: no reward curve (rollout/raw_reward). Either this is not a slime "
                                    "run, the run has not finished its first rollout, or only some of its "
                                    "processes' event files are here (slime's rollout manager and trainer write "
                                    "separate files).")))
    return sort_and_dedupe(out)


def file_kind(run: RunData) -> str:
    return "W&B run file" if run.source == "wandb" else "TensorBoard event file"


def checklist_text(results: list[tuple[RunData, list[Verdict]]]) -> str:
    """The monitoring checklist of every run, as text (saved with the record of handled work)."""
    lines = []
    for run, verdicts in results:
        lines.append(f"Run {run.name} ({run.scalar_count()} scalars, {len(run.files)} file(s))")
        for v in verdicts:
            lines.append(f"  [{v.status.upper()}] {v.code} {v.title}: {v.message}")
            if v.fix and v.status in ("warn", "fail"):
                lines.append(f"      adjust: {v.fix}")
        lines.append("")
    return "\n".join(lines).strip() + "\n"
