"""The seed's second check, "GPUs are busy", on the GPU data of a run; and each GPU in numbers.

What a sample means: nvidia-smi's `utilization.gpu` (and W&B's `gpu.<i>.gpu`, read from the same NVML
counter) is the share of the last sample period in which at least one kernel ran on the GPU
(`nvidia-smi --help-query-gpu`). It says a kernel ran, not how much of the GPU it used, so a busy GPU can
still be slow; an idle one is certainly waiting.

The thresholds are this project's rules of thumb (slime defines none), in `THRESHOLDS`:
- a sample under 5% is idle;
- a GPU idle in 95% or more of its samples (at least 10 of them) stays idle: it is reserved and unused (fail);
- a role (training, rollout, colocated) whose median utilization is under 50%, or that is idle in more than
  half its samples, is not busy (warning), with the likely cause from when it idles;
- GPU memory used to 97% or more of the device on a training GPU leaves no headroom (warning); rollout GPUs
  are expected to be nearly full, as SGLang reserves a fixed share of the memory up front
  (`mem_fraction_static`, python/sglang/srt/server_args.py:631@v0.5.15.post1).
"""

from __future__ import annotations

import numpy as np

from core.monitor.gpu.models import SOURCE_LABELS, GpuData, GpuSeries, GpuSummary, HostSeries
from core.monitor.gpu.nvidia_smi import RECORD_COMMAND
from core.monitor.gpu.phases import (
    IDLE_UTILIZATION,
    SRC_COLOCATE,
    SRC_PLACEMENT,
    Phases,
    inside,
)
from core.monitor.gpu.wandb_stats import SETTINGS_HINT
from core.monitor.verdicts import Verdict
from core.pins import sglang_source

CODE, TITLE = "MON012", "GPUs are busy"
SRC_MEM_FRACTION = sglang_source("python/sglang/srt/server_args.py", 631)
UTILIZATION_DEFINITION = "nvidia-smi --help-query-gpu (utilization.gpu)"
THRESHOLDS = {"idle_below_pct": IDLE_UTILIZATION, "stays_idle_fraction": 0.95, "busy_median_pct": 50.0,
              "idle_fraction_warn": 0.5, "memory_full_fraction": 0.97, "min_samples": 10}
THRESHOLDS_FROM = ("this project's rules of thumb (slime sets none) on utilization.gpu, the share of time a kernel "
                   "ran (" + UTILIZATION_DEFINITION + ")")
PREFERRED_SOURCES = ("nvidia-smi", "wandb")


def _finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)] if len(values) else values


def summarize(s: GpuSeries) -> GpuSummary:
    util = _finite(s.utilization)
    mem = _finite(s.memory_used)
    total = _finite(s.memory_total)
    power = _finite(s.power)
    temp = _finite(s.temperature)
    out = GpuSummary(source=s.source, node=s.node, gpu=s.gpu, gpu_is_rank=s.gpu_is_rank, role=s.role,
                     samples=s.samples, first_time=float(s.times[0]) if s.samples else None,
                     last_time=float(s.times[-1]) if s.samples else None)
    if len(util):
        p10, p50, p90 = np.percentile(util, [10, 50, 90]).tolist()
        out.utilization_median, out.utilization_p10, out.utilization_p90 = p50, p10, p90
        out.idle_fraction = float((util < IDLE_UTILIZATION).mean())
    if len(mem):
        out.memory_max_mib = float(mem.max())
    if len(total):
        out.memory_total_mib = float(np.median(total))
        if out.memory_max_mib is not None and out.memory_total_mib > 0:
            out.memory_max_fraction = out.memory_max_mib / out.memory_total_mib
    if len(power):
        out.power_median_w = float(np.median(power))
    if len(temp):
        out.temperature_max_c = float(temp.max())
    return out


def summarize_host(h: HostSeries) -> dict:
    """One node's CPU and host memory in numbers (W&B system metrics, slime's Memory-Usage lines)."""
    cpu, mem = _finite(h.cpu_percent), _finite(h.memory_percent)
    return {"source": h.source, "node": h.node, "samples": int(len(h.times)),
            "cpu_percent_median": float(np.median(cpu)) if len(cpu) else None,
            "host_memory_percent_max": float(mem.max()) if len(mem) else None}


def judged_series(data: GpuData) -> tuple[str | None, list[GpuSeries]]:
    """The source the check reads (nvidia-smi before W&B: the same GPUs, sampled more often) and its series
    with enough utilization samples."""
    for source in PREFERRED_SOURCES:
        group = [s for s in data.series if s.source == source
                 and np.isfinite(s.utilization).sum() >= THRESHOLDS["min_samples"]]
        if group:
            return source, group
    return None, []


def unknown_message(looked_in: list[str]) -> str:
    where = ", ".join(looked_in) if looked_in else "the run's directory"
    return ("No GPU utilization found for this run. Looked for W&B system metrics (the stats records of the run's "
            ".wandb files), nvidia-smi CSV logs (*.csv that start as nvidia-smi writes them) and job logs with "
            f"slime's Memory-Usage lines (*.log, *.txt, *.out, *.err) in {where}, and in the files given with "
            "--gpu-log. To record utilization, run the nvidia-smi command below on every node for the length of "
            f"the run and keep its file beside the run; or log to W&B: {SETTINGS_HINT}.")


def check_gpus_busy(data: GpuData | None, phases: Phases | None = None, looked_in: list[str] | None = None,
                    ) -> Verdict:
    """MON012: median utilization per role, idle fractions, the GPUs that stay idle, memory headroom (see the
    module docstring for the thresholds and where they come from)."""
    phases = phases or Phases()
    cards = ["monitoring", "gpu-placement"]
    commands = [RECORD_COMMAND]
    data = data or GpuData()
    source, group = judged_series(data)
    memory_only = [s for s in data.series if s.source == "slime-log"]
    if source is None:
        message = unknown_message(looked_in or [])
        evidence: dict = {"sources_read": [SOURCE_LABELS[s] for s in data.sources()] or "none"}
        if memory_only:
            message = ("slime's Memory-Usage lines give each rank's memory, not utilization. " + message)
            evidence.update(_memory_evidence(memory_only))
        return Verdict(code=CODE, title=TITLE, status="unknown", message=message, evidence=evidence,
                       source=SRC_PLACEMENT, cards=cards, commands=commands)
    t = THRESHOLDS
    summaries = {id(s): summarize(s) for s in group}
    ev: dict = {"source": SOURCE_LABELS[source], "gpus": len(group), "samples": sum(s.samples for s in group)}
    roles = sorted({s.role for s in group}, key=["training", "rollout", "colocated", "unknown"].index)
    ev["layout"] = ("colocated: every GPU trains and generates in turn" if roles == ["colocated"] else
                    "disaggregated: training and rollout GPUs apart" if {"training", "rollout"} <= set(roles) else
                    "not told by the data (no phases, no --colocate, no placement that fits)"
                    if roles == ["unknown"] else "mixed: " + ", ".join(roles))
    problems, causes, status = [], [], "ok"
    for role in roles:
        members = [s for s in group if s.role == role]
        util = np.concatenate([_finite(s.utilization) for s in members])
        median = float(np.median(util))
        idle = float((util < t["idle_below_pct"]).mean())
        ev[f"{role}:utilization_median"] = round(median, 1)
        ev[f"{role}:idle_fraction"] = round(idle, 3)
        ev[f"{role}:gpus"] = len(members)
        if median < t["busy_median_pct"] or idle > t["idle_fraction_warn"]:
            status = "warn"
            problems.append(f"{_role_words(role, len(members))} {median:.0f}% median, idle {idle:.0%} of the time")
    idle_gpus = [s.label for s in group if (summaries[id(s)].idle_fraction or 0) >= t["stays_idle_fraction"]]
    ev["gpus_that_stay_idle"] = idle_gpus
    if idle_gpus:
        status = "fail"
        causes.append(f"{len(idle_gpus)} GPU(s) never do work ({', '.join(idle_gpus[:8])}"
                      + (" ..." if len(idle_gpus) > 8 else "") + "): they are reserved but unused. Check that "
                      "--actor-num-nodes x --actor-num-gpus-per-node plus --rollout-num-gpus (or the larger of the "
                      "two with --colocate) is what the job holds, and that every SGLang engine started "
                      f"({SRC_PLACEMENT}).")
    causes += _phase_causes(group, phases, ev)
    ev.update(_memory_evidence(group))
    full = [s.label for s in group if s.role in ("training", "colocated")
            and (summaries[id(s)].memory_max_fraction or 0) >= t["memory_full_fraction"]]
    if full:
        status = "warn" if status == "ok" else status
        causes.append(f"{', '.join(full[:8])} used {t['memory_full_fraction']:.0%} or more of their memory while "
                      "training: little headroom before an out-of-memory error; lower --max-tokens-per-gpu or "
                      "turn on recomputation (see the GPU memory card).")
        cards.append("gpu-memory")
    if any(s.role == "rollout" for s in group):
        ev["rollout_memory_note"] = f"near full is expected: SGLang reserves memory up front ({SRC_MEM_FRACTION})"
    ev["phases_from_run"] = "yes" if phases.known else "no (perf/rollout_time, perf/train_time not in this run)"
    ev["thresholds"] = (f"idle below {t['idle_below_pct']:g}%; stays idle at {t['stays_idle_fraction']:.0%} idle; "
                        f"busy median {t['busy_median_pct']:g}%; idle share warn above "
                        f"{t['idle_fraction_warn']:.0%}; memory full at {t['memory_full_fraction']:.0%}")
    ev["thresholds_from"] = THRESHOLDS_FROM
    if any("async" in c for c in causes):
        cards.append("async-training")
    other = [SOURCE_LABELS[x] for x in data.sources() if x != source]
    also = f" (also read: {', '.join(other)})" if other else ""
    medians = "; ".join(f"{_role_words(r, ev[f'{r}:gpus'])} {ev[f'{r}:utilization_median']:.0f}% median"
                        for r in roles)
    if status == "ok":
        return Verdict(code=CODE, title=TITLE, status="ok", evidence=ev, source=SRC_PLACEMENT, cards=cards,
                       message=f"From the {SOURCE_LABELS[source]}{also}: {medians}; no GPU stays idle.")
    fix = " ".join(causes) if causes else (
        "Look at when the GPUs idle in the chart below: between phases (weight updates, offloads), or all along "
        "(too small a batch for the GPUs).")
    head = "; ".join(problems) if problems else medians
    return Verdict(code=CODE, title=TITLE, status=status, evidence=ev, fix=fix, source=SRC_PLACEMENT,
                   cards=sorted(set(cards), key=cards.index),
                   message=f"From the {SOURCE_LABELS[source]}{also}: {head}.")


def _role_words(role: str, n: int) -> str:
    plural = "s" if n != 1 else ""
    return {"training": f"training GPU{plural}", "rollout": f"rollout GPU{plural}",
            "colocated": f"colocated GPU{plural} (train and generate in turn)",
            "unknown": f"GPU{plural} of unknown role"}[role] + f" ({n})"


def _phase_medians(members: list[GpuSeries], windows: list[tuple[float, float]]) -> float | None:
    parts = [s.utilization[inside(s.times, windows)] for s in members]
    values = _finite(np.concatenate(parts)) if parts else np.zeros(0)
    return float(np.median(values)) if len(values) else None


def _phase_causes(group: list[GpuSeries], phases: Phases, ev: dict) -> list[str]:
    """Who waits for whom, in a layout with separate training and rollout GPUs."""
    if not phases.known:
        return []
    out = []
    rollout = [s for s in group if s.role == "rollout"]
    training = [s for s in group if s.role == "training"]
    idle = IDLE_UTILIZATION
    if rollout:
        during_train = _phase_medians(rollout, phases.train)
        ev["rollout_gpus_while_training_median"] = during_train
        if during_train is not None and during_train < idle:
            out.append("The rollout GPUs wait while the run trains (a synchronous run with separate GPUs): "
                       "train_async.py overlaps the next rollout with training, or --colocate lets both share "
                       f"the same GPUs ({SRC_COLOCATE}); see the async training and GPU placement cards.")
    if training:
        during_rollout = _phase_medians(training, phases.rollout)
        ev["training_gpus_while_generating_median"] = during_rollout
        if during_rollout is not None and during_rollout < idle:
            out.append("The training GPUs wait for rollouts: more rollout GPUs (--rollout-num-gpus) or a shorter "
                       "--rollout-max-response-len shorten generation, and async training hides it.")
    return out


def _memory_evidence(series: list[GpuSeries]) -> dict:
    out: dict = {}
    for role in ("training", "rollout", "colocated", "unknown"):
        fractions = [summarize(s).memory_max_fraction for s in series if s.role == role]
        fractions = [f for f in fractions if f is not None]
        if fractions:
            out[f"{role}:memory_max_fraction"] = round(max(fractions), 3)
    return out
