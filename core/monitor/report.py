"""Reporters for the monitor: read problems as Findings, and the checklist as plain text for the record."""

from __future__ import annotations

from core.findings import Finding, Severity, sort_and_dedupe
from core.monitor.efficiency import EVIDENCE_LABELS as EFFICIENCY_LABELS
from core.monitor.runs import RunData, restart_summary
from core.monitor.slime_metrics import REWARD_TAGS, SRC_TB
from core.monitor.verdicts import Verdict

MAX_RESTARTS_LISTED = 20
MAX_FILES_PER_DAMAGE = 3  # past this many files with one kind of damage, one line (one finding) counts them
DAMAGE_TITLES = {
    "truncated": "end inside a record (a run still being written, or a copy cut short)",
    "bad_payload_crc": "hold records whose checksum does not match (damaged bytes)",
    "bad_length": "hold bytes that are not a whole record (damaged or cut)",
    "bad_proto": "hold records that do not decode",
    "too_large": "hold a record larger than this reader takes",
    "skipped_value": "hold values this reader skips",
    "not_event_file": "are not TensorBoard event files",
    "not_wandb_file": "are not W&B run files",
}


def damage_groups(run: RunData) -> list[tuple[str, list[tuple[str, str]]]]:
    """The damage of a run's files by kind, in first-seen order: (kind, [(file name, message)])."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for f in run.files:
        for d in f.damage:
            groups.setdefault(d.kind, []).append((f.name, d.message))
    return list(groups.items())


def damage_lines(run: RunData) -> list[str]:
    """One line per damaged file while few are; past MAX_FILES_PER_DAMAGE files, one line per kind of damage
    with the count and the first file as an example (linear in the files, whatever their number)."""
    lines = []
    for kind, items in damage_groups(run):
        if len(items) <= MAX_FILES_PER_DAMAGE:
            lines += [f"{name}: {message}" for name, message in items]
            continue
        files = len({name for name, _ in items})
        name, message = items[0]
        lines.append(f"{files:,} files {DAMAGE_TITLES.get(kind, f'have damage of kind {kind}')}; the first, "
                     f"{name}: {message}")
    past = [(f.name, f.lost_vs_tbparse) for f in run.files if f.lost_vs_tbparse]
    if len(past) <= MAX_FILES_PER_DAMAGE:
        lines += [f"{name}: {n} scalar(s) read past damage (tbparse would stop before them)" for name, n in past]
    else:
        lines.append(f"{sum(n for _, n in past):,} scalar(s) in {len(past):,} files read past damage (tbparse would "
                     "stop before them)")
    return lines
TBPARSE_NOTE = ("tbparse (through TensorBoard's Python reader) stops at the first damaged record of a file; "
                "this reader drops only what is damaged and reads on.")


def read_findings(run: RunData) -> list[Finding]:
    """What could not be read in a run, what was recovered past damage, restarts, and a missing reward."""
    out: list[Finding] = []
    grouped = {kind: len(items) for kind, items in damage_groups(run)}
    for kind, items in damage_groups(run):
        if len(items) > MAX_FILES_PER_DAMAGE:
            name, message = items[0]
            out.append(Finding(
                code="MON103" if kind == "truncated" else "MON104", card="monitoring",
                severity=Severity.INFO if kind == "truncated" else Severity.WARNING,
                message=(f"{run.name}: {len({n for n, _ in items}):,} files "
                         f"{DAMAGE_TITLES.get(kind, f'have damage of kind {kind}')}; the first, {name}: {message}.")))
    for note in run.notes:
        out.append(Finding(code="MON108", severity=Severity.INFO, card="monitoring", message=f"{run.name}: {note}."))
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
        for d in [x for x in f.damage if grouped.get(x.kind, 0) <= MAX_FILES_PER_DAMAGE]:
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
    restarts = restart_summary(run)
    for r in restarts[:MAX_RESTARTS_LISTED]:
        out.append(Finding(code="MON110", severity=Severity.INFO, card="monitoring",
                           message=(f"{run.name}: restart in {r['file']} back to step {r['step']}: {r['replaced']} "
                                    f"older point(s) in {r['tags']} tag(s) replaced by the newer values, as "
                                    "TensorBoard does.")))
    if len(restarts) > MAX_RESTARTS_LISTED:
        out.append(Finding(code="MON111", severity=Severity.WARNING, card="monitoring",
                           message=(f"{run.name}: {len(restarts) - MAX_RESTARTS_LISTED} more restarts after the "
                                    f"{MAX_RESTARTS_LISTED} listed ({len(restarts)} in all): steps go back again and "
                                    "again, which a slime run resumed from checkpoints does not do; are several "
                                    "runs logging into one directory?")))
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




EVIDENCE_LABELS = {
    "tag": "curve", "points": "points", "first_step": "first step", "last_step": "last step",
    "first_10pct_mean": "mean of the first tenth", "last_10pct_mean": "mean of the last tenth",
    "theil_sen_slope_per_step": "slope per step (Theil-Sen)", "mann_kendall_z": "trend z (Mann-Kendall)",
    "ratio_last_to_first": "last tenth / first tenth", "fraction_left": "share left of the start",
    "level_warn": "warning level", "level_fail": "failure level", "threshold_applied": "threshold applied",
    "optimizer_steps_per_rollout": "optimizer steps per rollout", "min": "lowest", "max": "highest",
    "median": "median", "mad": "median absolute deviation", "spike_threshold": "spike threshold",
    "spike_steps": "spike steps", "spike_values": "spike values", "non_finite_steps": "NaN/inf at steps",
    "eval_tags": "eval curves", "tags_checked": "curves checked",
    "wait_time_ratio_median": "median share of the step waiting for rollouts",
    "rollout_time_median_s": "median rollout time (s)", "train_time_median_s": "median training time (s)",
    "length_tag": "length curve", "length_first_10pct_mean": "length, first tenth",
    "length_last_10pct_mean": "length, last tenth", "length_z": "length trend z",
    "truncation_tag": "truncation curve", "truncation_first_10pct_mean": "truncation, first tenth",
    "truncation_last_10pct_mean": "truncation, last tenth", "truncation_z": "truncation trend z",
    "truncation_last_step": "truncation, last step",
}
SUFFIX_LABELS = {"first": "first value", "last": "last value", "z": "trend z (Mann-Kendall)", "steps": "steps",
                 "median": "median"}
# the GPU check's evidence (MON012): per-role keys are "<role>:<what>"
GPU_EVIDENCE_LABELS = {
    "source": "GPU data from", "gpus": "GPUs judged", "samples": "samples", "sources_read": "GPU sources read",
    "gpus_that_stay_idle": "GPUs that stay idle", "phases_from_run": "phases from the run's perf/ curves",
    "rollout_gpus_while_training_median": "rollout GPUs' median utilization while training (%)",
    "training_gpus_while_generating_median": "training GPUs' median utilization while generating (%)",
    "rollout_memory_note": "rollout GPU memory", "thresholds": "thresholds", "thresholds_from": "thresholds from",
    "layout": "GPU layout",
}
GPU_SUFFIX_LABELS = {"utilization_median": "median utilization (%)", "idle_fraction": "share of samples idle",
                     "gpus": "GPUs", "memory_max_fraction": "most memory used (share of the device)"}
EVIDENCE_LABELS.update({k: v for k, v in GPU_EVIDENCE_LABELS.items() if k not in EVIDENCE_LABELS})
EVIDENCE_LABELS.update({k: v for k, v in EFFICIENCY_LABELS.items() if k not in EVIDENCE_LABELS})  # MON013, MON014
SUFFIX_LABELS.update(GPU_SUFFIX_LABELS)
MAX_LISTED = 10


def evidence_value(value) -> str:
    """One evidence value as short text: numbers to 4 significant digits, lists shortened."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        shown = ", ".join(evidence_value(v) for v in value[:MAX_LISTED])
        return shown + (f" (and {len(value) - MAX_LISTED} more)" if len(value) > MAX_LISTED else "")
    text = str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def evidence_label(key: str) -> str:
    """A verdict's evidence key in words ('eval/aime:z' -> 'eval/aime: trend z (Mann-Kendall)')."""
    if key in EVIDENCE_LABELS:
        return EVIDENCE_LABELS[key]
    head, sep, tail = key.rpartition(":")
    if sep and tail in SUFFIX_LABELS:
        return f"{head}: {SUFFIX_LABELS[tail]}"
    return key.replace("_", " ")


def evidence_rows(evidence: dict) -> list[dict[str, str]]:
    """A verdict's evidence as a small two-column table (what, value), in the verdict's order."""
    return [{"what": evidence_label(k), "value": evidence_value(v)} for k, v in evidence.items()]
