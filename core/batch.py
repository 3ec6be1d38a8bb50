"""The batch equation of a slime run, checked exactly, with what slime would do and exact integer fixes.

One rollout produces `rollout_batch_size x n_samples_per_prompt` samples; training splits them into
`num_steps_per_rollout` optimizer steps of `global_batch_size` samples each. So a run is consistent when

    rollout_batch_size x n_samples_per_prompt == global_batch_size x num_steps_per_rollout

slime derives the global batch with floor division when `--num-steps-per-rollout` is given, and asserts only
when both that and `--global-batch-size` are given. Otherwise it trains `samples // global_batch_size` steps per
rollout and drops the remainder. Everything here is integer arithmetic: no rounding, no floats.
"""

from __future__ import annotations

from fractions import Fraction
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
    """One exact way to satisfy the equation by changing a single value (value None: no integer works)."""

    variable: str
    flag: str
    current: int | None
    value: int | None
    message: str


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


def nearest_whole_step_batches(samples: int, global_batch_size: int) -> list[BatchFix]:
    """The divisors of the rollout's sample count just below and above a global batch that does not divide it."""
    divs = divisors(samples)
    below = [d for d in divs if d < global_batch_size]
    above = [d for d in divs if d > global_batch_size]
    out = []
    for d in ([below[-1]] if below else []) + ([above[0]] if above else []):
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
            shown = str(target) if target.denominator != 1 else str(int(target))
            fixes.append(BatchFix(variable=name, flag=flag, current=current[name], value=None, message=(
                f"no whole value of {flag} works with the others unchanged (it would have to be {shown})")))
    return fixes


def check_batch_equation(rollout_batch_size: int, n_samples_per_prompt: int | None, global_batch_size: int | None,
                         num_steps_per_rollout: int | None, *, num_rollout: int | None = None,
                         default_global_batch_size: int | None = None) -> BatchResult:
    """Check the batch equation exactly and say what slime would do with these numbers.

    `default_global_batch_size` is Megatron's fallback (micro batch x data-parallel size) when neither
    `--global-batch-size` nor `--num-steps-per-rollout` is given, if the caller can work it out.
    Raises BatchInputError when a value is not a positive whole number.
    """
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
    if dropped == 0:
        # whole steps, but not the number given (a warning) or assumed (a note)
        return BatchResult(
            **base, status="warning" if steps_given else "info", code="BATCH002", source=src,
            fixes=exact_fixes(rbs, n, gbs, steps, steps_given=steps_given),
            slime_behaviour=(f"{how}; each rollout of {samples} samples is {taken} optimizer steps of {gbs}, not "
                             f"{steps}."))
    fixes = exact_fixes(rbs, n, gbs, steps, steps_given=steps_given)
    if not steps_given:
        fixes.extend(nearest_whole_step_batches(samples, gbs))
    return BatchResult(
        **base, status="warning", code="BATCH001", source=src, fixes=fixes,
        slime_behaviour=(f"{how}; each rollout of {samples} samples makes {taken} optimizer step(s) of {gbs} and "
                         f"the last {dropped} samples of every rollout are never trained on."))


# --------------------------------------------------------------------------------------------------
# How a step's samples split into micro-batches over the data-parallel ranks
# --------------------------------------------------------------------------------------------------
SRC_CALCULATOR_INIT = slime_source("slime/backends/megatron_utils/initialize.py", 79)
SRC_CALCULATOR_DIVISIBLE = megatron_source("megatron/core/num_microbatches_calculator.py", 340)
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


def _good_global_batches(unit: int, near: int, samples: int | None) -> list[int]:
    """Global batches that are multiples of `unit`, nearest to `near` (divisors of `samples` when known)."""
    if samples:
        fits = [d for d in divisors(samples) if d % unit == 0]
        below = [d for d in fits if d <= near]
        above = [d for d in fits if d > near]
        picked = ([below[-1]] if below else []) + ([above[0]] if above else [])
        if picked:
            return picked
    low = near // unit * unit
    return [v for v in (low, low + unit) if v > 0]


def _good_steps(unit: int, samples: int, steps: int) -> list[int]:
    """Steps per rollout that leave nothing over and give a global batch that is a multiple of `unit`."""
    fits = [s for s in divisors(samples) if (samples // s) % unit == 0]
    below = [s for s in fits if s < steps]
    above = [s for s in fits if s > steps]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])


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
    suggestions = _good_global_batches(unit, gbs, samples_per_rollout)
    fix = f"use a global batch that is a multiple of {unit} (micro batch {mbs} x data-parallel size {dp})"
    if suggestions:
        fix += ", e.g. " + " or ".join(str(v) for v in suggestions)
    if num_steps_per_rollout is not None and samples_per_rollout:
        steps = _good_steps(unit, samples_per_rollout, num_steps_per_rollout)
        if steps:
            fix += "; or --num-steps-per-rollout " + " or ".join(str(s) for s in steps)
    if gbs < unit:
        return base.model_copy(update=dict(
            code="BATCH007", source=SRC_CALCULATOR_AT_LEAST_ONE if decrease_if_needed else SRC_CALCULATOR_DIVISIBLE,
            fix=fix, message=(
                f"The global batch {shown} is smaller than micro batch {mbs} x data-parallel size {dp} = {unit}: "
                "not one micro-batch per rank. Megatron's micro-batch calculator, which slime sets up when the "
                f"actor starts, stops with an assertion ({mode}).")))
    if gbs % unit and not decrease_if_needed:
        return base.model_copy(update=dict(
            code="BATCH008", source=SRC_CALCULATOR_DIVISIBLE, fix=fix, message=(
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
