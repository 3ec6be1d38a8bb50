"""How well a run uses its GPUs and when it will finish, from slime's own perf/* scalars: MON013 (MFU) and
MON014 (time to finish).

Facts at slime 624b824a (slime/observability/train_metric_utils.py:376-399):
- `perf/actor_train_tflops` is three forward passes' worth of slime's FLOPs formula (slime/utils/flops_utils.py)
  for the rollout's samples, divided by the world size and by `perf/actor_train_time`: TFLOP/s per training GPU;
- `perf/step_time` is `perf/train_wait_time + perf/train_time`: one rollout step as the trainer sees it,
  the wait for the rollout's data included;
- both are logged once per rollout with the rollout step (`rollout/step`).

Rules (this project's rules of thumb; slime sets none):
- MFU is the median of the last RECENT `perf/actor_train_tflops` points over the GPU's dense bf16 peak
  (knowledge/gpus.yaml). Under core.plan's LOW_MFU (15%, half the 30% the plan assumes) it warns, with the
  likely causes; above 100% of the peak the GPU named is not the one the run used, or it trains in fp8 (warns).
- The time to finish is the rollouts left (--num-rollout, else the W&B config's `num_rollout`, less the
  rollouts logged) times the median seconds per rollout over the last RECENT rollouts: the wall clock between
  consecutive rollouts when there are at least MIN_INTERVALS of them (it includes the weight updates, eval and
  checkpoint saves that `perf/step_time` leaves out), else `perf/step_time`.
Both are judged only when the caller names a GPU or a number of rollouts, so the checklist is otherwise unchanged.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

import numpy as np

from core.monitor.runs import RunData
from core.monitor.verdicts import Verdict
from core.monitor.views import rollout_alignment
from core.pins import slime_source

MFU_CODE, MFU_TITLE = "MON013", "Training uses the GPUs' compute"
ETA_CODE, ETA_TITLE = "MON014", "Time to finish"
RECENT = 20  # rollouts the medians look back over: the run as it runs now, after warm-up
MIN_INTERVALS = 3  # wall-clock intervals between rollouts needed before they set the pace
TFLOPS_TAG, TRAIN_TIME_TAG, STEP_TIME_TAG = "perf/actor_train_tflops", "perf/actor_train_time", "perf/step_time"
LOG_PROBS_TAG = "perf/log_probs_tflops"  # one forward pass's FLOPs over the log-prob pass's time
PACE_TAGS = (STEP_TIME_TAG, "rollout/raw_reward", "perf/rollout_time", "rollout/rewards")
SRC_TFLOPS = slime_source("slime/observability/train_metric_utils.py", 392)
SRC_STEP_TIME = slime_source("slime/observability/train_metric_utils.py", 395)
SRC_NUM_ROLLOUT = slime_source("slime/utils/arguments.py", 609)
CARDS = ["monitoring"]
# configuration keys of a W&B run (slime logs its parsed arguments) that explain a low MFU, most telling first
CONFIG_HINTS = (("optimizer_cpu_offload", True, "--optimizer-cpu-offload is on: Adam runs on the CPU"),
                ("recompute_granularity", "full", "full recompute is on: the forward pass runs twice"),
                ("use_dynamic_batch_size", False, "dynamic batching is off: micro-batches are padded and small"))
EVIDENCE_LABELS = {
    "gpu": "GPU", "peak_tflops_bf16": "GPU's dense bf16 peak (TFLOP/s)", "points": "points",
    "actor_train_tflops_median": "median perf/actor_train_tflops (TFLOP/s a GPU)", "mfu_pct": "MFU (%)",
    "mfu_whole_step_pct": "MFU over the whole step (%)", "log_probs_mfu_pct": "MFU of the log-prob pass (%)", "train_share_of_step_pct": "training's share of the step (%)",
    "low_mfu_below_pct": "warning below (%)", "plan_assumes_pct": "the plan assumes (%)",
    "num_rollout": "rollouts in the run", "num_rollout_from": "number of rollouts from",
    "rollouts_logged": "rollouts logged", "rollouts_left": "rollouts left",
    "seconds_per_rollout": "seconds per rollout", "pace_from": "pace from",
    "step_time_median_s": "median perf/step_time (s)", "wall_clock_median_s": "median wall clock per rollout (s)",
    "eta_s": "seconds left", "eta": "time left", "finishes_at_utc": "finishes at (UTC)",
}


def efficiency_verdicts(run: RunData, gpu: str | None = None, num_rollout: int | None = None) -> list[Verdict]:
    """MON013 and MON014 for one run, when a GPU or a number of rollouts is given; [] when neither is."""
    if gpu is None and num_rollout is None:
        return []
    return [mfu_verdict(run, gpu), eta_verdict(run, num_rollout)]


def _recent(run: RunData, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """The last RECENT finite, positive points of a tag (steps, values)."""
    s = run.series.get(tag)
    if s is None:
        return np.zeros(0, np.int64), np.zeros(0)
    ok = np.isfinite(s.values) & (s.values > 0)
    return s.steps[ok][-RECENT:], s.values[ok][-RECENT:].astype(np.float64)


def _pct(x: float) -> float:
    return round(100 * x, 1)


def mfu_verdict(run: RunData, gpu: str | None) -> Verdict:
    """MON013: the median recent perf/actor_train_tflops against the GPU's dense bf16 peak (rules above)."""
    from core.plan import DEFAULT_MFU, LOW_MFU, PlanError, find_gpu, low_mfu_fix

    def unknown(why: str) -> Verdict:
        return Verdict(code=MFU_CODE, title=MFU_TITLE, status="unknown", message=why, source=SRC_TFLOPS, cards=CARDS)

    if not gpu:
        return unknown("Name the GPU type the run trains on (--gpu, or the GPU model in your profile) to judge MFU.")
    try:
        spec = find_gpu(gpu)
    except PlanError as exc:
        return unknown(str(exc))
    _, tflops = _recent(run, TFLOPS_TAG)
    if not len(tflops):
        return unknown(f"This run logs no {TFLOPS_TAG}: slime logs it once per rollout after training, with "
                       f"{TRAIN_TIME_TAG}; a run before its first training step, or another slime version, has none.")
    median = float(np.median(tflops))
    peak = spec.bf16_flops / 1e12
    mfu = median / peak
    ev: dict = {"gpu": spec.name, "peak_tflops_bf16": round(peak, 1), "points": len(tflops),
                "actor_train_tflops_median": round(median, 1), "mfu_pct": _pct(mfu)}
    _, log_probs = _recent(run, LOG_PROBS_TAG)
    if len(log_probs):
        ev["log_probs_mfu_pct"] = _pct(float(np.median(log_probs)) / peak)
    share = _train_share(run)
    if share is not None:
        ev["train_share_of_step_pct"], ev["mfu_whole_step_pct"] = _pct(share), _pct(share * mfu)
    ev |= {"low_mfu_below_pct": _pct(LOW_MFU), "plan_assumes_pct": _pct(DEFAULT_MFU)}
    measured = (f"median {median:.0f} TFLOP/s a GPU over the last {len(tflops)} rollout(s), against "
                f"{peak:.0f} TFLOP/s bf16 dense on a {spec.name}")
    step = (f" Training takes {share:.0%} of each step (the rest waits for rollouts), so over the whole step "
            f"the GPUs run at about {share * mfu:.0%}." if share is not None else "")
    if mfu > 1:
        return Verdict(code=MFU_CODE, title=MFU_TITLE, status="warn", evidence=ev, source=SRC_TFLOPS, cards=CARDS,
                       message=f"Training reports {mfu:.0%} of the GPU's peak ({measured}): more than the GPU can do.",
                       fix=(f"Check the GPU type: the run did not train on a {spec.name} in bf16 (fp8 training counts "
                            "against the fp8 peak, about twice as high)."))
    if mfu < LOW_MFU:
        hints = _config_hints(run)
        fix = ("Your run's config: " + "; ".join(hints) + ". Also: " if hints else "") + low_mfu_fix()
        return Verdict(code=MFU_CODE, title=MFU_TITLE, status="warn", evidence=ev, source=SRC_TFLOPS, cards=CARDS,
                       fix=fix, message=(f"Training runs at about {mfu:.0%} MFU ({measured}), under {LOW_MFU:.0%}; "
                                         f"the plan assumes {DEFAULT_MFU:.0%}.{step}"))
    return Verdict(code=MFU_CODE, title=MFU_TITLE, status="ok", evidence=ev, source=SRC_TFLOPS, cards=CARDS,
                   message=f"Training runs at about {mfu:.0%} MFU ({measured}).{step}")


def _train_share(run: RunData) -> float | None:
    """Training's share of the step: the median of perf/actor_train_time / perf/step_time at shared steps."""
    train, step = run.series.get(TRAIN_TIME_TAG), run.series.get(STEP_TIME_TAG)
    if train is None or step is None:
        return None
    by_step = dict(zip(step.steps.tolist(), step.values.tolist(), strict=True))
    shares = [t / by_step[s] for s, t in zip(train.steps.tolist(), train.values.tolist(), strict=True)
              if s in by_step and math.isfinite(t) and math.isfinite(by_step[s]) and by_step[s] > 0 and 0 < t]
    shares = [min(x, 1.0) for x in shares[-RECENT:]]
    return float(np.median(shares)) if shares else None


def _config_value(run: RunData, key: str):
    if run.wandb is None or key not in run.wandb.config:
        return None
    value = run.wandb.config[key]
    return value.get("value") if isinstance(value, dict) else value


def _config_hints(run: RunData) -> list[str]:
    return [hint for key, bad, hint in CONFIG_HINTS if _config_value(run, key) == bad]


def _num_rollout_of(run: RunData, given: int | None) -> tuple[int | None, str]:
    if given is not None:
        return given, "--num-rollout"
    value = _config_value(run, "num_rollout")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, "the W&B run's config (num_rollout)"
    return None, ""


def _wall_pace(run: RunData, stride: int) -> float | None:
    """Median wall-clock seconds per rollout over the last RECENT intervals between logged rollouts."""
    tag = next((t for t in PACE_TAGS if t in run.series), None)
    if tag is None:
        return None
    s = run.series[tag]
    steps, walls = s.steps[-(RECENT + 1):].astype(np.int64), s.wall_times[-(RECENT + 1):].astype(np.float64)
    rollouts = np.diff(steps) // max(stride, 1)
    seconds = np.diff(walls)
    ok = (rollouts > 0) & (seconds > 0) & np.isfinite(seconds)
    if ok.sum() < MIN_INTERVALS:
        return None
    return float(np.median(seconds[ok] / rollouts[ok]))


def duration_text(seconds: float) -> str:
    """Seconds as '2 d 3 h', '3 h 20 min', '12 min' or '40 s'."""
    s = int(round(seconds))
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min" if minutes else f"{secs} s"


def _utc(timestamp: float) -> str | None:
    """A Unix time as 'YYYY-MM-DD HH:MM' in UTC; None when it is not a date (not finite, before 1970, past 9999)."""
    if not math.isfinite(timestamp) or timestamp <= 0:
        return None
    try:
        return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, ValueError, OSError):
        return None


def eta_verdict(run: RunData, num_rollout: int | None) -> Verdict:
    """MON014: rollouts left times the median recent seconds per rollout (rules above)."""
    from core.plan import eta_seconds

    total, total_from = _num_rollout_of(run, num_rollout)

    def unknown(why: str, ev: dict | None = None) -> Verdict:
        return Verdict(code=ETA_CODE, title=ETA_TITLE, status="unknown", message=why, evidence=ev or {},
                       source=SRC_STEP_TIME, cards=CARDS)

    if total is None:
        return Verdict(code=ETA_CODE, title=ETA_TITLE, status="unknown", source=SRC_NUM_ROLLOUT, cards=CARDS,
                       message="Give the run's --num-rollout (a W&B run's config holds it) to estimate when it "
                               "finishes.")
    alignment = rollout_alignment(run)
    tag = next((t for t in PACE_TAGS if t in run.series and len(run.series[t].steps)), None)
    if tag is None:
        return unknown("No rollout is logged yet (no perf/step_time or rollout/raw_reward point).")
    done = int(run.series[tag].steps[-1]) // max(alignment.stride, 1) + 1
    ev: dict = {"num_rollout": total, "num_rollout_from": total_from, "rollouts_logged": done,
                "rollouts_left": max(total - done, 0)}
    _, step_times = _recent(run, STEP_TIME_TAG)
    if len(step_times):
        ev["step_time_median_s"] = round(float(np.median(step_times)), 2)
    wall = _wall_pace(run, alignment.stride)
    if wall is not None:
        ev["wall_clock_median_s"] = round(wall, 2)
    if done >= total:
        return Verdict(code=ETA_CODE, title=ETA_TITLE, status="ok", evidence=ev, source=SRC_STEP_TIME, cards=CARDS,
                       message=f"All {total} rollouts are logged ({done} rollout(s)): the run has finished.")
    pace, pace_from = ((wall, "wall clock between the last rollouts") if wall is not None else
                       (ev.get("step_time_median_s"), "perf/step_time"))
    if pace is None:
        return unknown(f"{done} of {total} rollouts are logged, but neither perf/step_time nor {MIN_INTERVALS} "
                       "intervals between rollouts say how long one takes.", ev)
    eta = eta_seconds(total, done, [pace])
    ev |= {"seconds_per_rollout": round(pace, 2), "pace_from": pace_from, "eta_s": round(eta), "eta": duration_text(eta)}
    finish = _utc(float(run.series[tag].wall_times[-1]) + eta)
    if finish:
        ev["finishes_at_utc"] = finish
    outside = ""
    if wall is not None and "step_time_median_s" in ev and wall > 1.2 * ev["step_time_median_s"]:
        outside = (f" Each rollout takes {wall - ev['step_time_median_s']:.0f} s more than perf/step_time says "
                   "(weight updates, eval, checkpoint saves).")
    return Verdict(code=ETA_CODE, title=ETA_TITLE, status="ok", evidence=ev, source=SRC_STEP_TIME, cards=CARDS,
                   message=(f"{done} of {total} rollouts are logged; the {total - done} left take about "
                            f"{duration_text(eta)} at {pace:.0f} s a rollout ({pace_from})"
                            + (f", finishing about {ev['finishes_at_utc']} UTC" if "finishes_at_utc" in ev else "")
                            + f".{outside}"))
