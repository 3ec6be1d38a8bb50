"""The batch equation of a slime run, checked exactly, with what slime would do and exact integer fixes.

One rollout produces `rollout_batch_size x n_samples_per_prompt` samples; training splits them into
`num_steps_per_rollout` optimizer steps of `global_batch_size` samples each. So a run is consistent when

    rollout_batch_size x n_samples_per_prompt == global_batch_size x num_steps_per_rollout

slime derives the global batch with floor division when `--num-steps-per-rollout` is given, and asserts only
when both that and `--global-batch-size` are given. Otherwise it trains `samples // global_batch_size` steps per
rollout and drops the remainder. Everything here is integer arithmetic: no rounding, no floats.
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import gcd
from typing import Literal

from pydantic import BaseModel, Field

from core.pins import megatron_source, slime_source

BATCH_CARD = "batch-size"
MAX_BATCH_VALUE = 10**9

SRC_DERIVE = slime_source("slime/utils/arguments.py", 1971)
SRC_ASSERT = slime_source("slime/utils/arguments.py", 1974)
SRC_STEPS = slime_source("slime/utils/dp_schedule.py", 135)
SRC_TRAIN_ITERS = slime_source("slime/backends/megatron_utils/model.py", 203)
SRC_MEGATRON_DEFAULT = megatron_source("megatron/training/arguments.py", 498)
SRC_MEGATRON_POSITIVE = megatron_source("megatron/training/arguments.py", 500)

Status = Literal["ok", "info", "warning", "error"]

FLAG_OF = {
    "rollout_batch_size": "--rollout-batch-size",
    "n_samples_per_prompt": "--n-samples-per-prompt",
    "global_batch_size": "--global-batch-size",
    "num_steps_per_rollout": "--num-steps-per-rollout",
}


class BatchFix(BaseModel):
    """One exact way to satisfy the equation: one value changed, or two together when no single one works
    (`value` None only for advice with no number, such as removing a flag)."""

    variable: str
    flag: str
    current: int | None
    value: int | None
    message: str
    second_flag: str | None = Field(default=None, description="the flag changed together with `flag`")
    second_value: int | None = None
    second_current: int | None = Field(default=None, description="the second flag's value before the fix")


class BatchResult(BaseModel):
    rollout_batch_size: int
    n_samples_per_prompt: int
    global_batch_size: int | None = Field(description="as given; None when absent")
    num_steps_per_rollout: int | None = Field(description="as given; None when absent")
    steps_assumed: bool = Field(description="--num-steps-per-rollout was absent and 1 was assumed")
    samples_per_rollout: int
    effective_global_batch_size: int | None = Field(description="the global batch slime would train with")
    steps_per_rollout: int | None = Field(description="optimizer steps slime would take per rollout")
    dropped_samples_per_rollout: int | None
    total_train_steps: int | None = None
    holds: bool = Field(description="the equation holds exactly with the given (or assumed) steps")
    status: Status
    code: str | None = Field(default=None, description="the BATCH finding code for this outcome")
    slime_behaviour: str
    assumptions: list[str] = Field(default_factory=list)
    fixes: list[BatchFix] = Field(default_factory=list)
    source: str

    @property
    def equation(self) -> str:
        gbs = next((v for v in (self.effective_global_batch_size, self.global_batch_size) if v is not None), "?")
        steps = self.num_steps_per_rollout if self.num_steps_per_rollout is not None else 1
        left = self.samples_per_rollout
        right = gbs * steps if isinstance(gbs, int) else "?"
        sign = "==" if self.holds else "!="
        return (f"{self.rollout_batch_size} x {self.n_samples_per_prompt} = {left} {sign} {gbs} x {steps}"
                f" = {right}")


class BatchInputError(ValueError):
    """A batch value is not a usable positive integer; the message names it."""


def _check_positive(name: str, value: int | None, *, required: bool) -> None:
    if value is None:
        if required:
            raise BatchInputError(f"{FLAG_OF[name]} is required.")
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise BatchInputError(f"{FLAG_OF[name]} must be a whole number, not {value!r}.")
    if value < 1:
        raise BatchInputError(f"{FLAG_OF[name]} must be at least 1, not {value}.")
    if value > MAX_BATCH_VALUE:
        raise BatchInputError(f"{FLAG_OF[name]} = {value} is beyond any real run (limit {MAX_BATCH_VALUE:,}).")


def _samples(count: int) -> str:
    return f"{count} sample" if count == 1 else f"{count} samples"


def divisors(value: int) -> list[int]:
    """The positive divisors of a value, ascending (value <= MAX_BATCH_VALUE squared keeps this fast)."""
    small, large = [], []
    d = 1
    while d * d <= value:
        if value % d == 0:
            small.append(d)
            if d * d != value:
                large.append(value // d)
        d += 1
    return small + large[::-1]


def _nearest_divisors(value: int, around: int) -> list[int]:
    """The divisors of `value` just below and just above `around` (those that exist)."""
    divs = divisors(value)
    below = [d for d in divs if d < around]
    above = [d for d in divs if d > around]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])


def nearest_whole_step_batches(samples: int, global_batch_size: int) -> list[BatchFix]:
    """The divisors of the rollout's sample count just below and above a global batch that does not divide it."""
    out = []
    for d in _nearest_divisors(samples, global_batch_size):
        out.append(BatchFix(variable="global_batch_size", flag="--global-batch-size", current=global_batch_size,
                            value=d, message=(f"or set --global-batch-size {d}: {samples // d} whole optimizer "
                                              f"step(s) per rollout, nothing dropped")))
    return out


def exact_fixes(rollout_batch_size: int, n_samples_per_prompt: int, global_batch_size: int,
                num_steps_per_rollout: int, *, steps_given: bool) -> list[BatchFix]:
    """Every single-value change that makes `rbs x n == gbs x steps` hold exactly, or says none exists."""
    rbs, n, gbs, steps = rollout_batch_size, n_samples_per_prompt, global_batch_size, num_steps_per_rollout
    wanted = {
        "rollout_batch_size": Fraction(gbs * steps, n),
        "n_samples_per_prompt": Fraction(gbs * steps, rbs),
        "global_batch_size": Fraction(rbs * n, steps),
        "num_steps_per_rollout": Fraction(rbs * n, gbs),
    }
    current = {"rollout_batch_size": rbs, "n_samples_per_prompt": n, "global_batch_size": gbs,
               "num_steps_per_rollout": steps}
    fixes = []
    for name, target in wanted.items():
        flag = FLAG_OF[name]
        if target.denominator == 1 and target >= 1:
            value = int(target)
            if value == current[name] and (name != "num_steps_per_rollout" or steps_given):
                continue
            if name == "num_steps_per_rollout" and not steps_given:
                msg = f"add {flag} {value} (slime would then take {value} optimizer steps per rollout)"
            else:
                msg = f"set {flag} {value} (now {current[name]})"
            fixes.append(BatchFix(variable=name, flag=flag, current=current[name], value=value, message=msg))
        else:
            fixes.extend(_pair_fixes(name, rbs, n, gbs, steps))
    return fixes


def _nearest_steps_with(step_unit: int, steps: int) -> list[int]:
    """Step counts that are multiples of `step_unit`, the nearest below (if at least 1) and above `steps`."""
    below = (steps // step_unit) * step_unit
    if below == steps:
        below -= step_unit
    above = (steps // step_unit + 1) * step_unit
    return [s for s in (below, above) if s >= 1]


def _pair_fixes(name: str, rbs: int, n: int, gbs: int, steps: int) -> list[BatchFix]:
    """When no whole value of one flag works, the nearest exact pairs: that flag with the step count (or, for
    the step count, with the global batch), so every fix offered is a usable pair of integers."""
    samples = rbs * n
    flag = FLAG_OF[name]
    current = {"rollout_batch_size": rbs, "n_samples_per_prompt": n, "global_batch_size": gbs,
               "num_steps_per_rollout": steps}[name]
    out = []
    if name == "global_batch_size":
        for s in _nearest_divisors(samples, steps):
            out.append(BatchFix(variable=name, flag=flag, current=current, value=samples // s,
                                second_flag="--num-steps-per-rollout", second_value=s, second_current=steps,
                                message=f"set --global-batch-size {samples // s} with --num-steps-per-rollout {s}"))
    elif name == "num_steps_per_rollout":
        for g in _nearest_divisors(samples, gbs):
            out.append(BatchFix(variable=name, flag=flag, current=current, value=samples // g,
                                second_flag="--global-batch-size", second_value=g, second_current=gbs,
                                message=f"set --num-steps-per-rollout {samples // g} with --global-batch-size {g}"))
    else:
        other = n if name == "rollout_batch_size" else rbs
        unit = other // gcd(gbs, other)  # steps must make gbs x steps a multiple of the unchanged factor
        for s in _nearest_steps_with(unit, steps):
            value = gbs * s // other
            out.append(BatchFix(variable=name, flag=flag, current=current, value=value,
                                second_flag="--num-steps-per-rollout", second_value=s, second_current=steps,
                                message=f"set {flag} {value} with --num-steps-per-rollout {s}"))
    # a pair that leaves one of its two values as it is, is a single-value fix already offered
    return [f for f in out if f.value != current and f.second_value != {"--num-steps-per-rollout": steps,
                                                                       "--global-batch-size": gbs}[f.second_flag]]


def derived_batch_fixes(rollout_batch_size: int, n_samples_per_prompt: int, steps: int) -> list[BatchFix]:
    """When slime derives the global batch from --num-steps-per-rollout and the division leaves a remainder:
    the nearest step counts that divide the rollout, and the nearest rollout batch that the steps divide."""
    rbs, n = rollout_batch_size, n_samples_per_prompt
    samples = rbs * n
    fixes = [BatchFix(variable="num_steps_per_rollout", flag="--num-steps-per-rollout", current=steps, value=s,
                      message=f"set --num-steps-per-rollout {s} (global batch {samples // s})")
             for s in _nearest_divisors(samples, steps)]
    unit = steps // gcd(n, steps)  # rollout batches that make rbs x n a multiple of the steps
    for value in _nearest_steps_with(unit, rbs):
        fixes.append(BatchFix(variable="rollout_batch_size", flag="--rollout-batch-size", current=rbs, value=value,
                              message=f"or set --rollout-batch-size {value} (global batch {value * n // steps})"))
    return fixes


FIX_PLAUSIBLE_CHANGE = 3.0  # a fix whose changes add up to more than 2**3 = 8x is left out, unless it is the best
FIX_NEAR_BEST = 1.0  # ... or within one doubling of the best fix offered


def fix_cost(fix: BatchFix) -> float:
    """How much a fix changes the user's values: the sum of |log2(new / current)| over the values it changes
    (0 for advice with no number, or for a flag that was absent)."""
    def change(current: int | None, value: int | None) -> float:
        if current is None or value is None or current <= 0 or value <= 0:
            return 0.0
        return abs(math.log2(value / current))

    cost = change(fix.current, fix.value)
    if fix.second_flag is not None and fix.second_value is not None:
        cost += change(fix.second_current, fix.second_value)
    return cost


def rank_fixes(fixes: list[BatchFix]) -> list[BatchFix]:
    """Exact fixes, the smallest change to the user's values first; fixes that change them far more than the
    best one does (16x more prompts with 15x the steps, say) are left out: exact, but no one would choose them."""
    advice = [f for f in fixes if f.value is None]
    numbers = sorted((f for f in fixes if f.value is not None), key=fix_cost)
    if numbers:
        best = fix_cost(numbers[0])
        numbers = [f for i, f in enumerate(numbers)
                   if i == 0 or fix_cost(f) <= max(FIX_PLAUSIBLE_CHANGE, best + FIX_NEAR_BEST)]
    ranked = [*advice, *numbers]
    return [f.model_copy(update={"message": f.message.removeprefix("or ")}) if f.message.startswith("or ") else f
            for f in ranked]


def check_batch_equation(rollout_batch_size: int, n_samples_per_prompt: int | None, global_batch_size: int | None,
                         num_steps_per_rollout: int | None, *, num_rollout: int | None = None,
                         default_global_batch_size: int | None = None) -> BatchResult:
    """Check the batch equation exactly and say what slime would do with these numbers.

    `default_global_batch_size` is Megatron's fallback (micro batch x data-parallel size) when neither
    `--global-batch-size` nor `--num-steps-per-rollout` is given, if the caller can work it out.
    Raises BatchInputError when a value is not a positive whole number. The exact fixes come ranked by how
    little they change the given values (rank_fixes).
    """
    result = _check_batch_equation(rollout_batch_size, n_samples_per_prompt, global_batch_size,
                                   num_steps_per_rollout, num_rollout=num_rollout,
                                   default_global_batch_size=default_global_batch_size)
    return result.model_copy(update={"fixes": rank_fixes(result.fixes)}) if result.fixes else result


def _check_batch_equation(rollout_batch_size: int, n_samples_per_prompt: int | None, global_batch_size: int | None,
                          num_steps_per_rollout: int | None, *, num_rollout: int | None,
                          default_global_batch_size: int | None) -> BatchResult:
    assumptions: list[str] = []
    if n_samples_per_prompt is None:
        n_samples_per_prompt = 1
        assumptions.append("--n-samples-per-prompt is absent: slime's default 1 is used.")
    _check_positive("rollout_batch_size", rollout_batch_size, required=True)
    _check_positive("n_samples_per_prompt", n_samples_per_prompt, required=True)
    _check_positive("global_batch_size", global_batch_size, required=False)
    _check_positive("num_steps_per_rollout", num_steps_per_rollout, required=False)
    rbs, n = rollout_batch_size, n_samples_per_prompt
    samples = rbs * n
    steps_given = num_steps_per_rollout is not None
    steps = num_steps_per_rollout if steps_given else 1
    if not steps_given:
        assumptions.append("--num-steps-per-rollout is absent: the equation is checked with 1 step per rollout.")

    common = dict(rollout_batch_size=rbs, n_samples_per_prompt=n, global_batch_size=global_batch_size,
                  num_steps_per_rollout=num_steps_per_rollout, steps_assumed=not steps_given,
                  samples_per_rollout=samples, assumptions=assumptions)

    # 1. what global batch slime trains with
    if steps_given:
        derived = samples // steps
        if global_batch_size is not None and global_batch_size != derived:
            fixes = exact_fixes(rbs, n, global_batch_size, steps, steps_given=True)
            if samples % steps == 0:
                fixes.insert(0, BatchFix(variable="global_batch_size", flag="--global-batch-size",
                                         current=global_batch_size, value=None,
                                         message=f"or remove --global-batch-size and slime derives {derived}"))
            return BatchResult(
                **common, effective_global_batch_size=None, steps_per_rollout=None, dropped_samples_per_rollout=None,
                holds=False, status="error", code="BATCH001", source=SRC_ASSERT, fixes=fixes,
                slime_behaviour=(
                    f"slime computes the global batch as {rbs} x {n} // {steps} = {derived} and stops with an "
                    f"assertion because --global-batch-size is {global_batch_size}."))
        if derived == 0:
            options = ", ".join(str(d) for d in divisors(samples)[:12])
            return BatchResult(
                **common, effective_global_batch_size=0, steps_per_rollout=0, dropped_samples_per_rollout=samples,
                holds=False, status="error", code="BATCH004", source=SRC_MEGATRON_POSITIVE,
                fixes=[BatchFix(variable="num_steps_per_rollout", flag="--num-steps-per-rollout", current=steps,
                                value=None, message=(f"set --num-steps-per-rollout to a divisor of {samples} "
                                                     f"(e.g. {options})"))],
                slime_behaviour=(f"{samples} samples per rollout cannot make {steps} steps: slime derives a global "
                                 "batch of 0 and Megatron stops (global batch must be > 0)."))
        gbs = derived
        how = (f"slime derives --global-batch-size = {rbs} x {n} // {steps} = {gbs}"
               + (" (matching the value given)" if global_batch_size is not None else ""))
        src = SRC_DERIVE
    elif global_batch_size is not None:
        gbs = global_batch_size
        how = f"slime uses --global-batch-size {gbs} and does not check it against the rollout size"
        src = SRC_STEPS
    elif default_global_batch_size is not None:
        gbs = default_global_batch_size
        how = (f"neither --global-batch-size nor --num-steps-per-rollout is given, so Megatron falls back to "
               f"micro batch x data-parallel size = {gbs}")
        src = SRC_MEGATRON_DEFAULT
    else:
        return BatchResult(
            **common, effective_global_batch_size=None, steps_per_rollout=None, dropped_samples_per_rollout=None,
            holds=False, status="warning", code="BATCH003", source=SRC_MEGATRON_DEFAULT,
            fixes=[BatchFix(variable="global_batch_size", flag="--global-batch-size", current=None, value=samples,
                            message=f"set --global-batch-size {samples} for one optimizer step per rollout")],
            slime_behaviour=("neither --global-batch-size nor --num-steps-per-rollout is given, so Megatron falls "
                             "back to micro batch x data-parallel size, which is rarely what an RL run wants."))

    # 2. what training does with one rollout
    taken = samples // gbs
    dropped = samples - taken * gbs
    total = None
    if num_rollout is not None and num_rollout >= 0:
        total = num_rollout * samples // gbs
    holds = samples == gbs * steps
    base = dict(**common, effective_global_batch_size=gbs, steps_per_rollout=taken, dropped_samples_per_rollout=dropped,
                total_train_steps=total, holds=holds)
    if taken == 0:
        return BatchResult(
            **base, status="error", code="BATCH004", source=SRC_STEPS,
            fixes=exact_fixes(rbs, n, gbs, steps, steps_given=steps_given),
            slime_behaviour=(f"{how}; a rollout has only {samples} samples, fewer than one global batch of {gbs}, "
                             "so the first training step stops with an assertion."))
    if holds:
        behaviour = f"{how}; each rollout is exactly {taken} optimizer step(s) of {gbs} samples."
        return BatchResult(**base, status="ok", source=src, slime_behaviour=behaviour)
    if dropped == 0 and not steps_given:
        # nothing was said about steps: slime simply takes as many whole steps as fit, which is valid
        return BatchResult(
            **base, status="ok", source=src,
            slime_behaviour=(f"{how}; with --num-steps-per-rollout absent the check above assumes 1 step, but slime "
                             f"itself takes {samples} // {gbs} = {taken} optimizer steps of {gbs} per rollout and "
                             "drops nothing, which is a valid setting."))
    if dropped == 0:
        # whole steps, but not the number given
        return BatchResult(
            **base, status="warning", code="BATCH002", source=src,
            fixes=exact_fixes(rbs, n, gbs, steps, steps_given=steps_given),
            slime_behaviour=(f"{how}; each rollout of {samples} samples is {taken} optimizer steps of {gbs}, not "
                             f"{steps}."))
    if steps_given and global_batch_size is None:
        fixes = derived_batch_fixes(rbs, n, steps)
    else:
        fixes = exact_fixes(rbs, n, gbs, steps, steps_given=steps_given)
    if not steps_given:
        fixes.extend(nearest_whole_step_batches(samples, gbs))
    return BatchResult(
        **base, status="warning", code="BATCH001", source=src, fixes=fixes,
        slime_behaviour=(f"{how}; each rollout of {samples} samples makes {taken} optimizer step(s) of {gbs} and "
                         f"the last {_samples(dropped)} of every rollout {'is' if dropped == 1 else 'are'} never trained on."))


# ---------------------------------------------------------------------------------------------------
# The batch-size calculator: the equation plus the parallel layout Megatron checks at start-up
# ---------------------------------------------------------------------------------------------------

SRC_MICRO_DEFAULT = slime_source("slime/utils/arguments.py", 717)
SRC_CALCULATOR_INIT = slime_source("slime/backends/megatron_utils/initialize.py", 79)
SRC_MICRO_DIVISIBLE = megatron_source("megatron/core/num_microbatches_calculator.py", 340)
SRC_WORLD_DIVISIBLE = megatron_source("megatron/training/arguments.py", 317)
SRC_DATA_PARALLEL = megatron_source("megatron/training/arguments.py", 328)


class BatchPlanInputs(BaseModel):
    """What the calculator is given; any value may be absent (None) except the rollout batch size."""

    rollout_batch_size: int | None = None
    n_samples_per_prompt: int | None = None
    global_batch_size: int | None = None
    num_steps_per_rollout: int | None = None
    training_gpus: int | None = None
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    context_parallel: int = 1
    micro_batch_size: int | None = None
    dynamic_batching: bool = False
    num_rollout: int | None = None


class LayoutCheck(BaseModel):
    """One start-up check of the parallel layout: what holds or fails, with exact fixes and the source."""

    status: Status
    message: str
    fixes: list[str] = Field(default_factory=list)
    source: str


class BatchPlan(BaseModel):
    """What slime and Megatron do with exactly these numbers."""

    inputs: BatchPlanInputs
    problem: str | None = Field(default=None, description="an input that is not usable, in plain words")
    equation: BatchResult | None = None
    data_parallel_size: int | None = None
    micro_batches_per_step: int | None = None
    layout: list[LayoutCheck] = Field(default_factory=list)
    total_optimizer_steps: int | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def status(self) -> Status:
        """The worst status of the equation and the layout checks ("error" when an input is unusable)."""
        if self.problem:
            return "error"
        statuses = [c.status for c in self.layout] + ([self.equation.status] if self.equation else [])
        for s in ("error", "warning", "info"):
            if s in statuses:
                return s
        return "ok"


def _micro_fixes(samples: int, gbs: int, mbs: int, dp: int, steps: int | None) -> list[str]:
    """Exact ways to make the global batch a multiple of micro batch x data-parallel size."""
    unit = mbs * dp
    fixes = []
    if steps is not None:  # the global batch is derived: change the step count
        near = [s for s in range(max(1, steps - 8), steps + 9)
                if s != steps and samples // s >= unit and (samples // s) % unit == 0]
        below = [s for s in near if s < steps][-1:]
        above = [s for s in near if s > steps][:1]
        fixes += [f"set --num-steps-per-rollout {s} (global batch {samples // s})" for s in below + above]
    else:
        choices = [v for v in ((gbs // unit) * unit, (gbs // unit + 1) * unit) if v >= unit]
        fixes.append(f"set --global-batch-size {' or '.join(str(v) for v in choices)} "
                     f"(multiples of {mbs} x {dp} = {unit})")
    good_mbs = [d for d in divisors(gbs) if d <= mbs and (gbs // d) % dp == 0]
    if good_mbs and good_mbs[-1] != mbs:
        fixes.append(f"or set --micro-batch-size {good_mbs[-1]}")
    if not fixes:
        fixes.append(f"make the global batch a multiple of {unit}, or use fewer data-parallel ranks")
    return fixes


def plan_batch(inputs: BatchPlanInputs) -> BatchPlan:
    """Run the batch equation and Megatron's start-up checks of the layout on exactly these numbers."""
    plan = BatchPlan(inputs=inputs)
    if inputs.rollout_batch_size is None:
        plan.problem = "Enter --rollout-batch-size: slime requires it."
        return plan
    for name, value, low in (("training GPUs", inputs.training_gpus, 1), ("TP", inputs.tensor_parallel, 1),
                             ("PP", inputs.pipeline_parallel, 1), ("CP", inputs.context_parallel, 1),
                             ("--micro-batch-size", inputs.micro_batch_size, 1), ("--num-rollout", inputs.num_rollout, 0)):
        if value is not None and not (low <= value <= MAX_BATCH_VALUE):
            plan.problem = f"{name} must be a whole number from {low} to {MAX_BATCH_VALUE:,}, not {value}."
            return plan
    mbs = inputs.micro_batch_size if inputs.micro_batch_size is not None else 1
    model_parallel = inputs.tensor_parallel * inputs.pipeline_parallel * inputs.context_parallel
    dp = None
    if inputs.training_gpus is not None and inputs.training_gpus % model_parallel == 0:
        dp = inputs.training_gpus // model_parallel
    try:
        eq = check_batch_equation(inputs.rollout_batch_size, inputs.n_samples_per_prompt, inputs.global_batch_size,
                                  inputs.num_steps_per_rollout, num_rollout=inputs.num_rollout,
                                  default_global_batch_size=mbs * dp if dp else None)
    except BatchInputError as exc:
        plan.problem = str(exc)
        return plan
    plan.equation = eq
    if inputs.num_rollout is not None and eq.steps_per_rollout is not None:
        plan.total_optimizer_steps = eq.steps_per_rollout * inputs.num_rollout
        if eq.total_train_steps is not None and eq.total_train_steps != plan.total_optimizer_steps:
            plan.notes.append(
                f"slime sizes the learning-rate schedule for {eq.total_train_steps} steps (--num-rollout x samples "
                f"per rollout // global batch), while training takes {plan.total_optimizer_steps} "
                f"({SRC_TRAIN_ITERS}); set --lr-decay-iters to control the decay exactly.")
    if inputs.micro_batch_size is None:
        plan.notes.append(f"--micro-batch-size is absent: slime's default 1 is used ({SRC_MICRO_DEFAULT}).")
    if inputs.training_gpus is None:
        plan.notes.append("Enter the training GPUs to check Megatron's start-up rules for this layout.")
        return plan
    if dp is None:
        fits = [g for g in _nearest_divisors(inputs.training_gpus, model_parallel) if g >= 1]
        plan.layout.append(LayoutCheck(
            status="error", source=SRC_WORLD_DIVISIBLE,
            message=(f"{inputs.training_gpus} training GPUs do not split into model replicas of TP x PP x CP = "
                     f"{model_parallel}: Megatron stops at start-up."),
            fixes=[f"use a multiple of {model_parallel} training GPUs"]
            + ([f"or a TP x PP x CP product that divides {inputs.training_gpus}, e.g. {', '.join(map(str, fits))}"]
               if fits else [])))
        return plan
    plan.data_parallel_size = dp
    plan.layout.append(LayoutCheck(
        status="ok", source=SRC_DATA_PARALLEL,
        message=f"data-parallel size = {inputs.training_gpus} GPUs / (TP x PP x CP = {model_parallel}) = {dp}."))
    gbs = eq.effective_global_batch_size
    if gbs is None or gbs < 1:
        return plan
    unit = mbs * dp
    when = ("even with dynamic batching on: slime still starts Megatron's micro-batch calculator with "
            "--micro-batch-size" if inputs.dynamic_batching else "")
    if check_micro_batch_split(gbs, mbs, dp, dynamic=inputs.dynamic_batching).code is not None:
        plan.layout.append(LayoutCheck(
            status="error", source=SRC_MICRO_DIVISIBLE,
            message=(f"The global batch {gbs} is not a multiple of micro batch {mbs} x data-parallel size {dp} = "
                     f"{unit}: Megatron's micro-batch calculator stops at start-up ({SRC_CALCULATOR_INIT})"
                     + (f", {when}." if when else ".")),
            fixes=_micro_fixes(eq.samples_per_rollout, gbs, mbs, dp, inputs.num_steps_per_rollout)))
        return plan
    plan.micro_batches_per_step = gbs // unit
    plan.layout.append(LayoutCheck(
        status="ok", source=SRC_MICRO_DIVISIBLE,
        message=(f"The global batch {gbs} = {plan.micro_batches_per_step} micro-batch(es) of {mbs} on each of "
                 f"{dp} data-parallel ranks" + (" (with dynamic batching, samples are packed by tokens instead, "
                                                 "but this start-up check still applies)." if when else "."))))
    return plan


# --------------------------------------------------------------------------------------------------
# How a step's samples split into micro-batches over the data-parallel ranks
# --------------------------------------------------------------------------------------------------
SRC_CALCULATOR_AT_LEAST_ONE = megatron_source("megatron/core/num_microbatches_calculator.py", 348)
SRC_STATIC_SPLIT = slime_source("slime/utils/dp_schedule.py", 178)


class MicroBatchSplit(BaseModel):
    """What Megatron's micro-batch calculator (at start-up) and slime's static schedule (at each step) make of
    a global batch, a micro-batch size and a data-parallel size. `code` is None when both accept it."""

    global_batch_size: int
    micro_batch_size: int
    data_parallel_size: int
    code: str | None = Field(default=None, description="BATCH007, BATCH008 or BATCH006")
    message: str = ""
    fix: str | None = None
    source: str | None = None


def check_micro_batch_split(global_batch_size: int, micro_batch_size: int, data_parallel_size: int, *,
                            dynamic: bool, decrease_if_needed: bool = False, derived_from: str | None = None,
                            samples_per_rollout: int | None = None,
                            num_steps_per_rollout: int | None = None) -> MicroBatchSplit:
    """Whether a global batch splits into whole micro-batches over the data-parallel ranks.

    At start-up slime initialises Megatron's micro-batch calculator (initialize.py:79-86), which asserts that
    the global batch is a multiple of micro batch x data-parallel size (num_microbatches_calculator.py:340),
    or, with --decrease-batch-size-if-needed, rounds it down and asserts at least one micro-batch (:348).
    Both hold whether or not --use-dynamic-batch-size is on. At each step the static schedule then needs the
    step's micro-batch count to be a multiple of the data-parallel size (dp_schedule.py:178-185); the dynamic
    one splits bins until it is. `derived_from` says how the global batch was obtained, for the message.
    """
    gbs, mbs, dp = global_batch_size, micro_batch_size, data_parallel_size
    unit = mbs * dp
    shown = f"{gbs} ({derived_from})" if derived_from else str(gbs)
    base = MicroBatchSplit(global_batch_size=gbs, micro_batch_size=mbs, data_parallel_size=dp)
    mode = "with or without --use-dynamic-batch-size"
    fix = "; ".join(_micro_fixes(samples_per_rollout or gbs, gbs, mbs, dp, num_steps_per_rollout))
    if gbs < unit:
        return base.model_copy(update=dict(
            code="BATCH007", source=SRC_CALCULATOR_AT_LEAST_ONE if decrease_if_needed else SRC_MICRO_DIVISIBLE,
            fix=fix, message=(
                f"The global batch {shown} is smaller than micro batch {mbs} x data-parallel size {dp} = {unit}: "
                "not one micro-batch per rank. Megatron's micro-batch calculator, which slime sets up when the "
                f"actor starts, stops with an assertion ({mode}).")))
    if gbs % unit and not decrease_if_needed:
        return base.model_copy(update=dict(
            code="BATCH008", source=SRC_MICRO_DIVISIBLE, fix=fix, message=(
                f"The global batch {shown} is not a multiple of micro batch {mbs} x data-parallel size {dp} = "
                f"{unit}: Megatron's micro-batch calculator, which slime sets up when the actor starts, stops with "
                f"an assertion ({mode}).")))
    if not dynamic and -(-gbs // mbs) % dp:
        chunks = -(-gbs // mbs)
        return base.model_copy(update=dict(
            code="BATCH006", source=SRC_STATIC_SPLIT, fix=fix, message=(
                f"Static batching: a step of {gbs} samples makes {chunks} micro-batches of {mbs}, not a multiple "
                f"of the data-parallel size {dp}; Megatron started (--decrease-batch-size-if-needed rounds its own "
                "count down) but slime's static schedule stops at the first training step.")))
    return base


# The calculator's inputs, by the launch flag that sets each (a switch for dynamic batching).
PLAN_FLAGS = {
    "rollout_batch_size": "--rollout-batch-size",
    "n_samples_per_prompt": "--n-samples-per-prompt",
    "global_batch_size": "--global-batch-size",
    "num_steps_per_rollout": "--num-steps-per-rollout",
    "tensor_parallel": "--tensor-model-parallel-size",
    "pipeline_parallel": "--pipeline-model-parallel-size",
    "context_parallel": "--context-parallel-size",
    "micro_batch_size": "--micro-batch-size",
    "num_rollout": "--num-rollout",
}
DYNAMIC_FLAG = "--use-dynamic-batch-size"


def plan_inputs_from_flags(values: dict[str, str | None], *, training_gpus: int | None) -> BatchPlanInputs:
    """The calculator's inputs exactly as a launch script sets them: every input from the script, and the ones
    it does not set (or sets to a value the reader could not resolve) left absent, never kept from elsewhere.

    `values` maps each flag the script passes to its value text (None for a switch or an unresolved value).
    """
    fields: dict[str, int | bool | None] = {}
    for name, flag in PLAN_FLAGS.items():
        text = (values.get(flag) or "").strip()
        number = int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else None
        if number is not None and name in ("tensor_parallel", "pipeline_parallel", "context_parallel"):
            fields[name] = max(number, 1)
        elif number is not None and number <= MAX_BATCH_VALUE:
            fields[name] = number
    parallel = {k: fields.pop(k, 1) for k in ("tensor_parallel", "pipeline_parallel", "context_parallel")}
    return BatchPlanInputs(**fields, **parallel, training_gpus=training_gpus, dynamic_batching=DYNAMIC_FLAG in values)
