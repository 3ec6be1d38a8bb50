"""The plan as text for people (the CLI's --format text)."""

from __future__ import annotations

from core.findings import render_text
from core.plan.models import GIB, Plan


def _g(n: float) -> str:
    return f"{n / GIB:7.2f} GiB"


def sample_line(plan: Plan) -> str | None:
    """The longest sample the flags allow against the longest one a micro-batch of its own holds (PLAN005's
    numbers), in one sentence; None when the plan did not search it."""
    sl = plan.sample
    if sl is None:
        return None
    allowed = f"{sl.bound_tokens} tokens ({sl.bound_why})" if sl.bound_tokens else "not bounded by any flag"
    alone = (f"in a micro-batch of {sl.samples_per_micro_batch} such samples" if sl.samples_per_micro_batch > 1
             else "in a micro-batch of its own")
    held = (f"a {plan.gpu.name} holds a sample of up to {sl.fits_tokens} tokens {alone} "
            f"({sl.bytes_per_token / (1 << 20):.2f} MiB a token)" if sl.fits_tokens > 0 else
            f"a {plan.gpu.name} holds no sample: the weights, gradients and optimizer fill it")
    return f"Longest sample: {allowed}; {held} ({sl.source})."


def render_plan_text(plan: Plan) -> str:
    tr, g = plan.training, plan.gpu
    p = tr.parallel
    lines = [f"GPU: {g.name}, {g.memory_bytes / GIB:.1f} GiB, {g.peak_flops / 1e12:.0f} TFLOP/s bf16 dense ({g.source})",
             f"Model: {plan.model['params'] / 1e9:.2f}B parameters, {plan.model['layers']} layers",
             f"Training per GPU (largest stage {tr.stage}; TP {p['tp']} PP {p['pp']} CP {p['cp']} EP {p['ep']} "
             f"DP {p['dp']}, {p['world']} GPUs):"]
    for t in tr.detail:
        lines.append(f"  {t.name:18} {_g(t.bytes)}  {t.formula}")
        lines.append(f"  {'':18} {'':11}  source: {t.source}")
    lines.append(f"  {'peak':18} {_g(tr.peak_bytes)}  band {tr.low_bytes / GIB:.1f}-{tr.high_bytes / GIB:.1f} GiB "
                 f"(±{tr.uncertainty:.0%}: fragmentation, NCCL buffers and kernels' workspaces are estimates)")
    ro = plan.rollout
    if ro is not None:
        lines.append(f"Rollout per engine GPU ({ro.engines} engine(s) of TP {ro.engine_tp}, mem fraction "
                     f"{ro.mem_fraction_static}):")
        for t in ro.detail:
            lines.append(f"  {t.name:18} {_g(t.bytes) if t.name != 'kv_bytes_per_token' else f'{t.bytes:>7} B  '}"
                         f"  {t.formula}")
        lines.append(f"  {ro.kv_pool_tokens} tokens in the pool; {ro.concurrent_sequences} sequences of "
                     f"{ro.context_len} tokens at once across engines (one rollout asks for {ro.requested_sequences})")
    for ph in plan.phases:
        parts = ", ".join(f"{k} {v / GIB:.1f}" for k, v in ph.resident.items() if v)
        lines.append(f"Phase {ph.name}: {ph.total_bytes / GIB:.1f} GiB a GPU ({parts})")
    lines.append(f"Host per node: {plan.host.bytes_per_node / GIB:.1f} GiB "
                 + ", ".join(f"{k} {v / GIB:.1f}" for k, v in plan.host.terms.items()))
    if (line := sample_line(plan)) is not None:
        lines.append(line)
    tm = plan.time
    lines.append(f"Time: {tm.flops_per_rollout / 1e15:.1f} PFLOP a rollout ({tm.samples_per_rollout} samples of "
                 f"{tm.sample_tokens} tokens), about {tm.seconds_per_rollout:.0f} s of training at {tm.mfu:.0%} MFU "
                 f"({tm.source})")
    for a in plan.assumptions:
        lines.append(f"Assumed: {a}")
    lines.append("Verdicts:" if plan.verdicts else "Verdicts: fits (no PLAN finding)")
    if plan.verdicts:
        lines.append(render_text(plan.verdicts))
    return "\n".join(lines)
