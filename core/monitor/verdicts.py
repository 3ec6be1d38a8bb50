""""Is it working?": one small check per question, each reading the stitched curves of one run.

Every check returns a `Verdict` with a status (ok, warn, fail, or unknown when the run has too little
data), the evidence (values and steps), what to adjust, the slime source the metric comes from, and the
knowledge cards behind it. Thresholds are this project's rules of thumb, stated in each docstring; slime
itself defines none of them.

Trends use the Mann-Kendall test (does the curve go up or down more often than chance allows) and the
Theil-Sen slope (median of pairwise slopes), both robust to noisy single points; long curves are first
averaged into at most 400 bins.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from core.monitor import slime_metrics as sm
from core.monitor.runs import RunData
from core.monitor.views import rollout_alignment

MIN_POINTS = 10
MAX_TREND_POINTS = 400
Z_SIGNIFICANT = 1.96  # two-sided 5%


class Verdict(BaseModel):
    code: str
    title: str
    status: str = Field(pattern="^(ok|warn|fail|unknown)$")
    message: str
    evidence: dict[str, float | int | str | list | None] = Field(default_factory=dict)
    fix: str | None = None
    source: str | None = None
    cards: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)


@dataclass
class Trend:
    n: int
    slope: float  # per step of the x used
    z: float
    first_mean: float
    last_mean: float

    @property
    def rising(self) -> bool:
        return self.z > Z_SIGNIFICANT and self.slope > 0

    @property
    def falling(self) -> bool:
        return self.z < -Z_SIGNIFICANT and self.slope < 0


def _finite(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(y)
    return x[ok].astype(np.float64), y[ok].astype(np.float64)


def _binned(x: np.ndarray, y: np.ndarray, bins: int = MAX_TREND_POINTS) -> tuple[np.ndarray, np.ndarray]:
    if len(y) <= bins:
        return x, y
    edges = np.linspace(0, len(y), bins + 1).astype(int)
    widths = np.diff(edges)
    xb = np.add.reduceat(np.asarray(x, dtype=np.float64), edges[:-1]) / widths  # each bin's mean, at once
    yb = np.add.reduceat(np.asarray(y, dtype=np.float64), edges[:-1]) / widths
    return xb, yb


@functools.lru_cache(maxsize=8)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair i < j of n points (the same few sizes come back on every check of a long run)."""
    i, j = np.triu_indices(n, k=1)
    i.setflags(write=False)
    j.setflags(write=False)
    return i, j


def mann_kendall_z(y: np.ndarray) -> float:
    """Mann-Kendall z of a sequence (tie-corrected variance, continuity correction); 0 when undefined.

    It compares every pair, so a sequence longer than MAX_TREND_POINTS is first averaged into that many
    bins: the cost stays bounded (about 80,000 pairs) whatever the length of the run."""
    y = np.asarray(y, dtype=np.float64)
    if len(y) > MAX_TREND_POINTS:  # every pair is built below: bound the cost by averaging into bins first
        y = _binned(np.arange(len(y), dtype=np.float64), y)[1]
    n = len(y)
    if n < 3:
        return 0.0
    i, j = _pairs(n)
    s = float(np.sign(y[j] - y[i]).sum())
    _, counts = np.unique(y, return_counts=True)
    var = (n * (n - 1) * (2 * n + 5) - float((counts * (counts - 1) * (2 * counts + 5)).sum())) / 18.0
    if var <= 0 or s == 0:
        return 0.0
    return (s - 1) / math.sqrt(var) if s > 0 else (s + 1) / math.sqrt(var)


def trend(x: np.ndarray, y: np.ndarray) -> Trend | None:
    """Mann-Kendall z (with the tie correction) and the Theil-Sen slope of y against x; None if < 10 points."""
    x, y = _finite(np.asarray(x), np.asarray(y))
    if len(y) < MIN_POINTS:
        return None
    tenth = max(1, len(y) // 10)
    first_mean, last_mean = float(y[:tenth].mean()), float(y[-tenth:].mean())
    xb, yb = _binned(x, y)
    i, j = _pairs(len(yb))
    dy = yb[j] - yb[i]
    dx = xb[j] - xb[i]
    z = mann_kendall_z(yb)
    ok = dx != 0
    slope = float(np.median(dy[ok] / dx[ok])) if ok.any() else 0.0
    return Trend(n=len(y), slope=slope, z=z, first_mean=first_mean, last_mean=last_mean)


def _fmt(v: float) -> str:
    if v is None or not math.isfinite(v):
        return str(v)
    return f"{v:.4g}"


def _series(run: RunData, candidates) -> tuple[str | None, np.ndarray, np.ndarray]:
    tag = sm.first_present(run.tags, candidates)
    if tag is None:
        return None, np.zeros(0), np.zeros(0)
    s = run.series[tag]
    return tag, s.steps, s.values


def _unknown(code: str, title: str, why: str, cards: list[str], source: str | None = None) -> Verdict:
    return Verdict(code=code, title=title, status="unknown", message=why, cards=cards, source=source)


# -- the checks ---------------------------------------------------------------------------------------

def check_reward_rising(run: RunData) -> Verdict:
    """Reward should rise: a significant upward Mann-Kendall trend in rollout/raw_reward is ok; no significant
    trend over >= 10 rollouts is a warning; a significant fall is a failure. rollout/rewards is only a
    fallback, because for GRPO-style estimators with reward normalization its mean is ~0 by construction
    (slime/ray/rollout.py:608-633@624b824a)."""
    code, title, cards = "MON001", "Reward is rising", ["monitoring"]
    tag, steps, values = _series(run, sm.REWARD_TAGS)
    if tag is None:
        return _unknown(code, title, "No reward curve (rollout/raw_reward or rollout/rewards) in this run.",
                        cards, sm.SRC_RAW_REWARD)
    t = trend(steps, values)
    if t is None:
        return _unknown(code, title, f"{tag} has fewer than {MIN_POINTS} finite points; too early to tell.",
                        cards, sm.SRC_RAW_REWARD)
    ev = {"tag": tag, "points": t.n, "first_step": int(steps[0]), "last_step": int(steps[-1]),
          "first_10pct_mean": round(t.first_mean, 6), "last_10pct_mean": round(t.last_mean, 6),
          "theil_sen_slope_per_step": t.slope, "mann_kendall_z": round(t.z, 3)}
    note = (" Note: rollout/rewards is the normalized reward the loss sees; its mean stays near 0 under "
            "GRPO-style normalization, so read rollout/raw_reward when you have it.") if tag == "rollout/rewards" else ""
    fix = ("Check the reward on a handful of samples first; then lower --lr, raise --n-samples-per-prompt or "
           "--rollout-batch-size for a less noisy signal, and make sure prompts are neither all solved nor all "
           "failed (zero_std counts).")
    if t.rising:
        return Verdict(code=code, title=title, status="ok", evidence=ev, source=sm.SRC_RAW_REWARD, cards=cards,
                       message=(f"{tag} rises: {_fmt(t.first_mean)} (first tenth) to {_fmt(t.last_mean)} (last "
                                f"tenth), slope {_fmt(t.slope)}/step, Mann-Kendall z = {t.z:.2f} over steps "
                                f"{int(steps[0])}-{int(steps[-1])}.{note}"))
    if t.falling:
        return Verdict(code=code, title=title, status="fail", evidence=ev, source=sm.SRC_RAW_REWARD, cards=cards,
                       fix=fix, message=(f"{tag} is falling: {_fmt(t.first_mean)} to {_fmt(t.last_mean)}, "
                                         f"z = {t.z:.2f}.{note}"))
    return Verdict(code=code, title=title, status="warn", evidence=ev, source=sm.SRC_RAW_REWARD, cards=cards,
                   fix=fix, message=(f"No significant trend in {tag} over {t.n} points ({_fmt(t.first_mean)} to "
                                     f"{_fmt(t.last_mean)}, z = {t.z:.2f}).{note}"))


def check_reward_flat_zero(run: RunData) -> Verdict:
    """A reward that is exactly 0 at every logged rollout (or one constant value) from the first rollout on
    means no learning signal: usually the reward function never matches (wrong --label-key, answer format,
    --rm-type) rather than a hard task. GRPO advantages are zero when every sample of a group scores the same."""
    code, title, cards = "MON002", "Reward is not stuck at zero", ["monitoring"]
    tag, steps, values = _series(run, ("rollout/raw_reward",))
    if tag is None:
        return _unknown(code, title, "No rollout/raw_reward in this run.", cards, sm.SRC_RAW_REWARD)
    finite = values[np.isfinite(values)]
    if len(finite) < 3:
        return _unknown(code, title, "Fewer than 3 finite reward points.", cards, sm.SRC_RAW_REWARD)
    ev = {"tag": tag, "points": int(len(finite)), "first_step": int(steps[0]), "last_step": int(steps[-1]),
          "min": float(finite.min()), "max": float(finite.max())}
    fix = ("Score a few rollouts by hand with your reward function; check --label-key matches the data, the "
           "answer format the reward expects, and --rm-type / --custom-rm-path.")
    if np.all(finite == 0):
        return Verdict(code=code, title=title, status="fail", evidence=ev, fix=fix, source=sm.SRC_RAW_REWARD,
                       cards=cards + ["getting-started"],
                       message=(f"{tag} is exactly 0 at all {len(finite)} points from step {int(steps[0])}: the "
                                "reward function most likely never matches (label or format mismatch)."))
    if np.all(finite == finite[0]):
        return Verdict(code=code, title=title, status="warn", evidence=ev, fix=fix, source=sm.SRC_RAW_REWARD,
                       cards=cards, message=(f"{tag} is the constant {_fmt(float(finite[0]))} at every point: with "
                                             "identical rewards in a group, GRPO has no advantage to learn from."))
    return Verdict(code=code, title=title, status="ok", evidence=ev, source=sm.SRC_RAW_REWARD, cards=cards,
                   message=f"{tag} varies ({_fmt(float(finite.min()))} to {_fmt(float(finite.max()))}).")


def _growth_check(run: RunData, code: str, title: str, candidates, source: str, fix: str, what: str,
                  ratio_warn: float = 3.0, ratio_fail: float = 10.0, floor: float = 1e-4,
                  level_warn: float | None = None, level_fail: float | None = None) -> Verdict:
    """A curve that rises significantly to `ratio_warn`/`ratio_fail` times its start; with `level_warn` /
    `level_fail` it must also end at or above that absolute level (a growth far below it is only noted)."""
    cards = ["monitoring"]
    tag, steps, values = _series(run, candidates)
    if tag is None:
        return _unknown(code, title, f"None of {', '.join(candidates)} is in this run.", cards, source)
    t = trend(steps, values)
    if t is None:
        return _unknown(code, title, f"{tag} has fewer than {MIN_POINTS} finite points.", cards, source)
    base = max(abs(t.first_mean), floor)
    ratio = abs(t.last_mean) / base
    level = abs(t.last_mean)
    ev = {"tag": tag, "points": t.n, "first_step": int(steps[0]), "last_step": int(steps[-1]),
          "first_10pct_mean": t.first_mean, "last_10pct_mean": t.last_mean, "ratio_last_to_first": round(ratio, 3),
          "mann_kendall_z": round(t.z, 3)}
    fail_level_ok = level_fail is None or level >= level_fail
    warn_level_ok = level_warn is None or level >= level_warn
    if level_warn is not None:
        ev["level_warn"] = level_warn
        ev["level_fail"] = level_fail
    span = f"between steps {int(steps[0])} and {int(steps[-1])}"
    if t.rising and ratio >= ratio_fail and fail_level_ok:
        status, rule = "fail", f"rule: >= {ratio_fail:g}x its start" + (
            f" and at least {level_fail:g}" if level_fail is not None else "")
    elif t.rising and ratio >= ratio_warn and warn_level_ok:
        status, rule = "warn", f"rule: >= {ratio_warn:g}x its start" + (
            f" and at least {level_warn:g}" if level_warn is not None else "")
    elif t.rising and ratio >= ratio_warn:
        ev["threshold_applied"] = f"level below {level_warn:g}"
        return Verdict(code=code, title=title, status="ok", evidence=ev, source=source, cards=cards,
                       message=(f"{tag} grew {ratio:.1f}x ({_fmt(t.first_mean)} to {_fmt(t.last_mean)}, "
                                f"z = {t.z:.2f}) {span}, but stays below {level_warn:g}, the level at which this "
                                f"checklist starts to worry about {what} (our rule of thumb); watch it."))
    else:
        ev["threshold_applied"] = f"growth below {ratio_warn:g}x or not significant"
        return Verdict(code=code, title=title, status="ok", evidence=ev, source=source, cards=cards,
                       message=(f"{tag} is not growing out of bounds ({_fmt(t.first_mean)} to "
                                f"{_fmt(t.last_mean)}, z = {t.z:.2f})."))
    ev["threshold_applied"] = rule.removeprefix("rule: ")
    return Verdict(code=code, title=title, status=status, evidence=ev, fix=fix, source=source, cards=cards,
                   message=(f"{what} keeps growing: {tag} went from {_fmt(t.first_mean)} to {_fmt(t.last_mean)} "
                            f"({ratio:.1f}x, z = {t.z:.2f}) {span} ({rule})."))


KL_LEVEL_WARN = 0.01
KL_LEVEL_FAIL = 0.1


def check_kl_growth(run: RunData) -> Verdict:
    """KL to the reference model (train/kl_loss, logged with --use-kl-loss, loss.py:1153) or the drift from
    the rollout policy (train/ppo_kl, old log-probs minus log-probs, loss.py:1033 and 1147) is judged on
    trend AND magnitude: rising significantly to >= 3x its start and ending at >= 0.01 is a warning,
    >= 10x and >= 0.1 a failure. A KL that grows but stays below 0.01 (e.g. 0.00016 to 0.00067) is ok with
    a note: such values do not move the policy far. Both levels are this project's rules of thumb."""
    source = sm.SRC_KL_LOSS if "train/kl_loss" in run.series else sm.SRC_PPO_KL
    return _growth_check(run, "MON003", "KL is not running away", sm.KL_TAGS, source,
                         "Lower --lr; with --use-kl-loss raise --kl-loss-coef; keep --eps-clip / --eps-clip-high "
                         "modest.", "KL", level_warn=KL_LEVEL_WARN, level_fail=KL_LEVEL_FAIL)


def check_logprob_diff(run: RunData) -> Verdict:
    """train/train_rollout_logprob_abs_diff (mean |training log-prob - rollout log-prob|, logged when rollout
    log-probs are kept) that rises significantly to >= 3x its start is a warning, >= 10x a failure: the
    trainer and SGLang disagree more and more about the same tokens."""
    return _growth_check(run, "MON004", "Training and rollout log-probs agree", sm.LOGPROB_DIFF_TAGS,
                         sm.SRC_LOGPROB_DIFF,
                         "Check that weights reach the rollout engines every rollout (perf/update_weights_time), "
                         "that both sides use the same precision, and consider --use-tis (truncated importance "
                         "sampling) or a lower --lr.", "The train/rollout log-prob gap", floor=1e-3)


def check_entropy(run: RunData) -> Verdict:
    """Token entropy (train/entropy_loss is the mean entropy, loss.py:1112) falling significantly to below 20%
    of its start is a warning (collapse under way), below 5% a failure (the policy has become near-greedy)."""
    code, title, cards = "MON005", "Entropy is not collapsing", ["monitoring"]
    tag, steps, values = _series(run, sm.ENTROPY_TAGS)
    if tag is None:
        return _unknown(code, title, "No train/entropy_loss in this run.", cards, sm.SRC_ENTROPY)
    t = trend(steps, values)
    if t is None:
        return _unknown(code, title, f"{tag} has fewer than {MIN_POINTS} finite points.", cards, sm.SRC_ENTROPY)
    frac = t.last_mean / t.first_mean if t.first_mean > 0 else float("nan")
    ev = {"tag": tag, "points": t.n, "first_step": int(steps[0]), "last_step": int(steps[-1]),
          "first_10pct_mean": t.first_mean, "last_10pct_mean": t.last_mean, "fraction_left": round(frac, 4),
          "mann_kendall_z": round(t.z, 3)}
    fix = ("Add a small --entropy-coef (default 0), raise --rollout-temperature, use a looser --eps-clip-high "
           "(clip-higher), or lower --lr.")
    if t.falling and frac < 0.05:
        status = "fail"
    elif t.falling and frac < 0.2:
        status = "warn"
    else:
        return Verdict(code=code, title=title, status="ok", evidence=ev, source=sm.SRC_ENTROPY, cards=cards,
                       message=f"{tag} holds up ({_fmt(t.first_mean)} to {_fmt(t.last_mean)}).")
    return Verdict(code=code, title=title, status=status, evidence=ev, fix=fix, source=sm.SRC_ENTROPY, cards=cards,
                   message=(f"Entropy is collapsing: {tag} fell from {_fmt(t.first_mean)} to {_fmt(t.last_mean)} "
                            f"({frac:.1%} left) by step {int(steps[-1])}; exploration is drying up."))


def check_length_and_truncation(run: RunData) -> Verdict:
    """Response length falling significantly below half its start is a warning (length collapse); a
    truncation ratio that rises significantly to >= 0.2 is a warning and >= 0.5 a failure (answers hit
    --rollout-max-response-len and are cut)."""
    code, title, cards = "MON006", "Response length is healthy", ["monitoring", "batch-size"]
    ltag, lsteps, lvals = _series(run, sm.LENGTH_TAGS)
    ttag, tsteps, tvals = _series(run, sm.TRUNCATION_TAGS)
    if ltag is None and ttag is None:
        return _unknown(code, title, "No response-length or truncation curve in this run.", cards,
                        sm.SRC_RESPONSE_LEN)
    lt = trend(lsteps, lvals) if ltag else None
    tt = trend(tsteps, tvals) if ttag else None
    if lt is None and tt is None:
        return _unknown(code, title, "Too few length/truncation points yet.", cards, sm.SRC_RESPONSE_LEN)
    ev: dict = {}
    problems = []
    status = "ok"
    if lt is not None:
        ev.update({"length_tag": ltag, "length_first_10pct_mean": lt.first_mean,
                   "length_last_10pct_mean": lt.last_mean, "length_z": round(lt.z, 3)})
        if lt.falling and lt.first_mean > 0 and lt.last_mean < 0.5 * lt.first_mean:
            status = "warn"
            problems.append(f"{ltag} collapsed from {_fmt(lt.first_mean)} to {_fmt(lt.last_mean)} tokens")
    if tt is not None:
        ev.update({"truncation_tag": ttag, "truncation_first_10pct_mean": tt.first_mean,
                   "truncation_last_10pct_mean": tt.last_mean, "truncation_z": round(tt.z, 3),
                   "truncation_last_step": int(tsteps[-1])})
        if tt.rising and tt.last_mean >= 0.5:
            status = "fail"
            problems.append(f"{ttag} climbed to {tt.last_mean:.0%} of responses")
        elif tt.rising and tt.last_mean >= 0.2:
            status = "warn" if status == "ok" else status
            problems.append(f"{ttag} climbed to {tt.last_mean:.0%} of responses")
    if status == "ok":
        return Verdict(code=code, title=title, status="ok", evidence=ev, source=sm.SRC_TRUNCATED, cards=cards,
                       message="Response length and truncation look steady.")
    return Verdict(code=code, title=title, status=status, evidence=ev, source=sm.SRC_TRUNCATED, cards=cards,
                   fix=("If truncation climbs: raise --rollout-max-response-len (and the training token budget "
                        "with it) or penalise overlong answers. If length collapses: look for reward hacking by "
                        "short answers and lower --lr."),
                   message="; ".join(problems) + ".")


def check_grad_spikes(run: RunData) -> Verdict:
    """train/grad_norm points above both 5x the median and median + 10 MAD are spikes (warning); a
    non-finite grad norm is a failure."""
    code, title, cards = "MON007", "No gradient-norm spikes", ["monitoring"]
    tag, steps, values = _series(run, sm.GRAD_NORM_TAGS)
    if tag is None:
        return _unknown(code, title, "No train/grad_norm in this run.", cards, sm.SRC_GRAD_NORM)
    finite = np.isfinite(values)
    if finite.sum() < MIN_POINTS:
        return _unknown(code, title, f"Fewer than {MIN_POINTS} grad-norm points.", cards, sm.SRC_GRAD_NORM)
    fix = "Lower --lr or tighten --clip-grad (default 1.0); look at the rollouts of the spiking steps."
    if not finite.all():
        bad = steps[~finite][:10].tolist()
        return Verdict(code=code, title=title, status="fail", fix=fix, source=sm.SRC_GRAD_NORM, cards=cards,
                       evidence={"tag": tag, "non_finite_steps": bad},
                       message=f"{tag} is NaN or infinite at step(s) {bad}: training has diverged there.")
    med = float(np.median(values))
    mad = float(np.median(np.abs(values - med)))
    limit = max(5 * med, med + 10 * mad)
    spikes = np.flatnonzero(values > limit)
    ev = {"tag": tag, "points": int(len(values)), "median": med, "mad": mad, "spike_threshold": limit,
          "spike_steps": steps[spikes][:20].tolist(), "spike_values": [round(float(v), 4) for v in values[spikes][:20]]}
    if len(spikes):
        return Verdict(code=code, title=title, status="warn", evidence=ev, fix=fix, source=sm.SRC_GRAD_NORM,
                       cards=cards, message=(f"{len(spikes)} spike(s) in {tag} above {_fmt(limit)} (median "
                                             f"{_fmt(med)}), first at step {int(steps[spikes[0]])}."))
    return Verdict(code=code, title=title, status="ok", evidence=ev, source=sm.SRC_GRAD_NORM, cards=cards,
                   message=f"{tag} stays below {_fmt(limit)} (median {_fmt(med)}).")


def check_eval_tracks_training(run: RunData) -> Verdict:
    """When the training reward rises significantly but an eval/<dataset> score (>= 5 points) shows no
    significant rise, training gains are not transferring (overfitting or reward hacking): warning."""
    code, title, cards = "MON008", "Eval follows the training reward", ["monitoring"]
    evals = sm.eval_score_tags(run.tags)
    if not evals:
        return _unknown(code, title, "No eval/<dataset> curve: set --eval-interval and eval data to get one.",
                        cards, sm.SRC_EVAL)
    tag, steps, values = _series(run, sm.REWARD_TAGS)
    train_t = trend(steps, values) if tag else None
    ev: dict = {"eval_tags": evals}
    stalled = []
    for e in evals:
        s = run.series[e]
        finite = np.isfinite(s.values)
        if finite.sum() < 5:
            continue
        x, y = s.steps[finite], s.values[finite]
        z_y = mann_kendall_z(y)  # binned to MAX_TREND_POINTS inside: bounded cost on any eval series
        ev[f"{e}:first"] = float(y[0])
        ev[f"{e}:last"] = float(y[-1])
        ev[f"{e}:z"] = round(float(z_y), 3)
        ev[f"{e}:steps"] = f"{int(x[0])}-{int(x[-1])}"
        if z_y <= Z_SIGNIFICANT:
            stalled.append(e)
    if train_t is None or len(ev) == 1:
        return _unknown(code, title, "Too few eval or reward points to compare (need 5 eval points).", cards,
                        sm.SRC_EVAL)
    if train_t.rising and stalled:
        return Verdict(code=code, title=title, status="warn", evidence=ev, source=sm.SRC_EVAL, cards=cards,
                       fix=("Look at eval samples for reward hacking; add harder or more varied training prompts, "
                            "and keep the checkpoint where eval peaked."),
                       message=(f"The training reward rises (z = {train_t.z:.2f}) but {', '.join(stalled)} does "
                                "not: gains are not transferring to held-out data."))
    return Verdict(code=code, title=title, status="ok", evidence=ev, source=sm.SRC_EVAL, cards=cards,
                   message="Eval and the training reward move together.")


def check_time_split(run: RunData) -> Verdict:
    """perf/wait_time_ratio is the share of each step the trainer spends waiting for rollouts
    (train_metric_utils.py:395-399, actor.py:433). A median above 0.5 means generation dominates: a warning,
    where async training can overlap the two (not with --colocate, where they share GPUs). A training time
    more than 2x the rollout time means training dominates: a warning pointing at batch sizes."""
    code, title, cards = "MON009", "Rollout and training time are balanced", ["monitoring", "async-training",
                                                                              "batch-size"]
    _, _, ratio = _series(run, sm.WAIT_RATIO_TAGS)
    rtag, _, rtime = _series(run, ("perf/rollout_time",))
    ttag, _, ttime = _series(run, ("perf/train_time",))
    ev: dict = {}
    if len(ratio[np.isfinite(ratio)]):
        ev["wait_time_ratio_median"] = float(np.nanmedian(ratio))
    if rtag and len(rtime[np.isfinite(rtime)]):
        ev["rollout_time_median_s"] = float(np.nanmedian(rtime))
    if ttag and len(ttime[np.isfinite(ttime)]):
        ev["train_time_median_s"] = float(np.nanmedian(ttime))
    if not ev:
        return _unknown(code, title, "No perf/wait_time_ratio, perf/rollout_time or perf/train_time in this run.",
                        cards, sm.SRC_WAIT_RATIO)
    w = ev.get("wait_time_ratio_median")
    rt, tt = ev.get("rollout_time_median_s"), ev.get("train_time_median_s")
    if (w is not None and w > 0.5) or (w is None and rt and tt and rt > tt):
        share = f"the trainer waits for rollouts {w:.0%} of each step" if w is not None else (
            f"rollout takes {rt:.0f}s against {tt:.0f}s of training")
        return Verdict(code=code, title=title, status="warn", evidence=ev, source=sm.SRC_WAIT_RATIO, cards=cards,
                       fix=("Async training (train_async.py) overlaps generation with training when rollout and "
                            "training have their own GPUs; otherwise give rollout more GPUs or shorten "
                            "--rollout-max-response-len."),
                       message=f"Rollout generation dominates: {share}.")
    if rt and tt and tt > 2 * rt:
        return Verdict(code=code, title=title, status="warn", evidence=ev, source=sm.SRC_PERF, cards=cards,
                       fix="Training dominates: revisit micro-batch / --max-tokens-per-gpu and parallelism "
                           "(see the batch-size card), or give training more GPUs.",
                       message=f"Training dominates: {tt:.0f}s of training against {rt:.0f}s of rollout per step.")
    return Verdict(code=code, title=title, status="ok", evidence=ev, source=sm.SRC_WAIT_RATIO, cards=cards,
                   message="Neither side dominates the step time.")


def check_gpu_signals(run: RunData) -> Verdict:
    """GPU use is not logged directly; perf/tokens_per_gpu_per_sec (rollout throughput per rollout GPU),
    perf/actor_train_tflops and perf/actor_train_tok_per_s (training throughput) and perf/wait_time_ratio
    (idle trainer) speak to it. This check reports them and drafts nvidia-smi commands to watch GPUs live."""
    code, title, cards = "MON010", "GPU utilization signals", ["monitoring"]
    ev = {}
    for tag in sm.GPU_PERF_TAGS:
        s = run.series.get(tag)
        if s is not None and np.isfinite(s.values).any():
            ev[f"{tag}:median"] = float(np.nanmedian(s.values))
    msg = ("slime logs no GPU-utilization metric; the perf/* throughput numbers above stand in for it. Watch the "
           "GPUs live with the drafted commands (run them yourself on the training nodes).")
    return Verdict(code=code, title=title, status="ok" if ev else "unknown", evidence=ev, source=sm.SRC_PERF,
                   cards=cards, commands=list(sm.GPU_WATCH_COMMANDS), message=msg)


NON_FINITE_TAGS = ("rollout/raw_reward", "train/loss", "train/pg_loss", "train/grad_norm", "train/kl_loss")


def check_non_finite(run: RunData) -> Verdict:
    """NaN or infinite values in reward, loss or grad-norm curves are a failure: the run has diverged or a
    metric is broken at those steps. With none of those curves there is nothing to judge (unknown)."""
    code, title, cards = "MON011", "No NaN or infinite values", ["monitoring"]
    bad: dict = {}
    checked: list[str] = []
    for tag in NON_FINITE_TAGS:
        s = run.series.get(tag)
        if s is not None and len(s.values):
            checked.append(tag)
            nf = ~np.isfinite(s.values)
            if nf.any():
                bad[tag] = s.steps[nf][:10].tolist()
    if not checked:
        return _unknown(code, title, f"None of {', '.join(NON_FINITE_TAGS)} has any point in this run.", cards,
                        sm.SRC_LOSS_KEYS)
    if bad:
        first = ", ".join(f"{t} at step(s) {v}" for t, v in bad.items())
        return Verdict(code=code, title=title, status="fail", evidence=bad, cards=cards, source=sm.SRC_LOSS_KEYS,
                       fix="Find the first bad step and its rollouts; lower --lr; check rewards for NaN.",
                       message=f"Non-finite values: {first}.")
    return Verdict(code=code, title=title, status="ok", cards=cards, source=sm.SRC_LOSS_KEYS,
                   evidence={"tags_checked": checked},
                   message=f"Every point of {', '.join(checked)} is finite.")


CHECKS = (check_reward_rising, check_reward_flat_zero, check_kl_growth, check_logprob_diff, check_entropy,
          check_length_and_truncation, check_grad_spikes, check_eval_tracks_training, check_time_split,
          check_gpu_signals, check_non_finite)


GPU_VERDICT_CODE = "MON012"  # "GPUs are busy", judged on GPU data by core.monitor.gpu.judge


def with_gpu_verdict(verdicts: list[Verdict], gpu: Verdict) -> list[Verdict]:
    """The checklist with the "GPUs are busy" verdict (MON012) added after the others.

    One verdict never contradicts another: when MON012 judged GPU data (its status is not unknown), MON010
    no longer says that slime logs no GPU-utilization metric and drafts commands to record one; it refers to
    MON012, which judges the utilization read, and keeps the perf/* numbers as its evidence."""
    out = list(verdicts)
    if gpu.status != "unknown":
        where = gpu.evidence.get("source")
        read = f"GPU utilization from the {where}" if isinstance(where, str) else "The GPU utilization read"
        for i, v in enumerate(out):
            if v.code == "MON010":
                perf = ("; the perf/* throughput numbers above add to it" if v.evidence else
                        "; this run has no perf/* throughput numbers to add to it")
                out[i] = v.model_copy(update={
                    "commands": [],
                    "message": f"{read} is judged in {GPU_VERDICT_CODE} ({gpu.title}) below{perf}."})
    return [*out, gpu]


def run_verdicts(run: RunData) -> list[Verdict]:
    """Every check on one run, in checklist order."""
    out = [check(run) for check in CHECKS]
    align = rollout_alignment(run)
    for v in out:
        if v.code == "MON001" and v.status != "unknown":
            v.evidence["optimizer_steps_per_rollout"] = align.steps_per_rollout
    return out
