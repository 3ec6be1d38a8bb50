"""The longest sample a launch's flags allow, and the longest one a training micro-batch can hold.

slime's micro-batch scheduler never splits a sample: under dynamic batching a sample longer than
`--max-tokens-per-gpu` x CP lands alone in a micro-batch of its own, the one micro-batch allowed over the cap
(slime/utils/dp_schedule.py:28-31), and without dynamic batching a micro-batch is `--micro-batch-size` samples
whatever their length. So the longest sample sets the largest micro-batch, and its fp32 logits and log-prob
workspace (4 x vocabulary / TP bytes a token each) grow with it.

What bounds a sample: slime's own generation caps each request's new tokens at `--rollout-max-response-len`
(slime/rollout/sglang_rollout.py:99) on a prompt that `--rollout-max-prompt-len` may filter
(slime/utils/arguments.py:2027-2035). A custom generate function (`--custom-generate-function-path`) or rollout
function (`--rollout-function-path`) makes samples of whatever length its code makes, e.g. a multi-turn loop
that appends turns and tool output; no flag bounds them unless that code reads one. slime's multi-turn examples
read `--rollout-max-context-len` (examples/retool/generate_with_retool.py:244-268 clamps every turn to it and
trims tool output, falling back to CP x `--max-tokens-per-gpu`), which slime's own generation never reads."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from core.pins import slime_source
from core.plan.models import SampleLimit
from core.plan.shape import Reader
from core.plan.training import TrainingInputs

DEFAULT_ROLLOUT = "slime.rollout.sglang_rollout.generate_rollout"  # slime/utils/arguments.py:331
SFT_ROLLOUT = "slime.rollout.sft_rollout.generate_rollout"
SCHEDULE_SOURCE = slime_source("slime/utils/dp_schedule.py", 28)
MAX_TOKENS = 1 << 26  # above any context a model is trained on; the search stops here


def custom_generation(r: Reader) -> str | None:
    """The flag that hands generation (or the samples) to code other than slime's own generation, or None.
    slime's own rollout functions other than the SFT one generate through slime.rollout.sglang_rollout."""
    if r.text("--custom-generate-function-path"):
        return "--custom-generate-function-path"
    rollout_fn = r.text("--rollout-function-path") or DEFAULT_ROLLOUT
    if rollout_fn == SFT_ROLLOUT or not rollout_fn.startswith("slime.rollout."):
        return "--rollout-function-path"
    return None


def sample_bound(r: Reader, context_len: int | None) -> tuple[int | None, str]:
    """(the longest sample in tokens the flags allow, or None when no flag bounds it; how that was read)."""
    custom = custom_generation(r)
    if custom is None:
        if context_len is None:
            return None, ("no --rollout-max-response-len: slime's generation stops only at the engine's context "
                          "length")
        return context_len, "prompt + response lengths (--rollout-max-prompt-len + --rollout-max-response-len)"
    if r.text("--rollout-function-path") == SFT_ROLLOUT:
        return None, ("slime's SFT rollout (slime.rollout.sft_rollout) trains on the data's samples as they are: "
                      "the longest one in the data sets the largest micro-batch, and no flag bounds it")
    context = r.integer("--rollout-max-context-len", None)
    if context:
        return context, (f"--rollout-max-context-len {context}, if the function given by {custom} stops there "
                         "(slime's multi-turn examples do)")
    return None, (f"{custom} hands generation to your code (multi-turn, tool calls): a sample is as long as that "
                  "code makes it, and no flag bounds it (--rollout-max-response-len caps one request, not the "
                  "turns appended to a sample)")


def _one_sample(inp: TrainingInputs, tokens: int, logprob_cap: int) -> TrainingInputs:
    """The inputs of a micro-batch of `tokens` tokens a GPU holding the longest sample; its log-prob pass packs
    to `logprob_cap` tokens (--log-probs-max-tokens-per-gpu, by default --max-tokens-per-gpu) or holds the
    sample alone when it is longer."""
    return dataclasses.replace(inp, tokens=tokens, logprob_tokens=max(logprob_cap, tokens),
                               tokens_why=f"one sample of {tokens} tokens a GPU in a micro-batch of its own")


def _largest_fitting(peak: Callable[[int], int], memory: int, start: int, at_start: int) -> int:
    """The most tokens t with peak(t) <= memory (0 when none), for a peak that never falls as t grows: bracket by
    doubling from `start`, then close the bracket by false position and halving in turns (a linear stretch of the
    peak is solved in one step)."""
    lo, p_lo, hi, p_hi = 0, peak(0), start, at_start
    if p_lo > memory:
        return 0
    while p_hi <= memory:
        if hi >= MAX_TOKENS:
            return MAX_TOKENS
        lo, p_lo = hi, p_hi
        hi = min(hi * 2, MAX_TOKENS)
        p_hi = peak(hi)
    for i in range(64):
        if hi - lo <= 1:
            break
        if i % 2 == 0 and p_hi > p_lo:
            t = lo + int((memory - p_lo) * (hi - lo) / (p_hi - p_lo))
        else:
            t = (lo + hi) // 2
        t = min(max(t, lo + 1), hi - 1)
        p = peak(t)
        if p <= memory:
            lo, p_lo = t, p
        else:
            hi, p_hi = t, p
    return lo


def sample_limit(r: Reader, inp: TrainingInputs, context_len: int | None, cp: int, memory_bytes: int,
                 peak_of: Callable[[TrainingInputs], tuple[int, dict[str, int]]]) -> SampleLimit:
    """The longest sample whose one-sample micro-batch's training peak (central estimate) still fits
    `memory_bytes`, found on the peak's own arithmetic (`peak_of`: inputs -> (peak bytes, terms)); the peak is
    piecewise linear and never falls as the tokens grow, so a bracket closes in a few steps."""
    bound, why = sample_bound(r, context_len)
    dynamic = r.switch("--use-dynamic-batch-size")
    samples = 1 if dynamic else max(r.integer("--micro-batch-size", 1) or 1, 1)
    cap = r.integer("--log-probs-max-tokens-per-gpu", None) or (r.integer("--max-tokens-per-gpu", None) or 0
                                                                  if dynamic else 0)
    t1 = max(min(inp.tokens, 1 << 20), 1024)
    lo = _largest_fitting(lambda t: peak_of(_one_sample(inp, t, cap))[0], memory_bytes, t1,
                          peak_of(_one_sample(inp, t1, cap))[0])
    ref = max(lo, t1)  # the per-token costs where the long sample's own micro-batch sets the peak
    p_ref, terms = peak_of(_one_sample(inp, ref, cap))
    per_token = max((peak_of(_one_sample(inp, 2 * ref, cap))[0] - p_ref) / ref, 1.0)
    fits_tokens = lo * cp // samples
    logits = terms.get("logits", 0) / ref
    workspace = terms.get("logprob_workspace", 0) / ref
    activations = terms.get("activations", 0) / ref
    longest_per_gpu = math.ceil(bound * samples / cp) if bound else None
    return SampleLimit(
        bound_tokens=bound, bound_why=why, fits_tokens=fits_tokens, gpu_tokens=lo,
        custom_generation=custom_generation(r),
        peak_at_bound=peak_of(_one_sample(inp, longest_per_gpu, cap))[0] if longest_per_gpu else None,
        bytes_per_token=int(per_token), logits_per_token=int(logits), workspace_per_token=int(workspace),
        activations_per_token=int(activations), samples_per_micro_batch=samples, dynamic=dynamic, cp=cp,
        source=SCHEDULE_SOURCE)
