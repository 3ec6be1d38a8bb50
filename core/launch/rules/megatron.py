"""Megatron-LM rules that need no model files (MEG0xx): parallel sizes, model shape, removed flags."""

from __future__ import annotations

from collections.abc import Iterable

from core.batch import divisors
from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.derivations import parallel_sizes
from core.launch.rules.registry import WARN, rule
from core.launch.rules.registry import msrc as _msrc
from core.pins import megatron_source, slime_source


def _megatron_runs(ctx: RuleContext) -> bool:
    return not ctx.is_set("--debug-rollout-only")


@rule("MEG001", _msrc(317))
def world_size_divisible(ctx: RuleContext) -> Iterable[Finding]:
    """The training world (actor nodes x GPUs per node, slime/backends/megatron_utils/arguments.py:206) must
    divide by TP x PP x CP: Megatron's validate_args asserts it, and its initialize_model_parallel raises the
    same in parallel_state (megatron/core/parallel_state.py:740-743@1dcf0daf, where `model_size` is the product);
    the quotient is the data-parallel size."""
    if not _megatron_runs(ctx):
        return
    world = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
    tp, pp, cp = parallel_sizes(ctx)
    if world % (tp * pp * cp):
        yield ctx.hit("MEG001", f"The training world is {world} GPUs (--actor-num-nodes x --actor-num-gpus-per-node), "
                      f"not divisible by TP {tp} x PP {pp} x CP {cp} = {tp * pp * cp}; Megatron stops at start-up "
                      "(its parallel state needs a whole data-parallel size).", flag="--tensor-model-parallel-size",
                      fix=grid_fix(world, tp * pp * cp, "TP, PP and CP"))


def grid_fix(world: int, product: int, sizes: str) -> str:
    """How to make a parallel grid fit the training world: whole multiples of the product near the world,
    or sizes whose product divides it."""
    lower = world // product * product
    gpus = " or ".join(str(n) for n in (lower, lower + product) if n > 0)
    return (f"train on a multiple of {product} GPUs ({gpus}, as --actor-num-nodes x --actor-num-gpus-per-node), "
            f"or pick {sizes} whose product divides {world} (one of {', '.join(map(str, divisors(world)))})")


@rule("MEG013", megatron_source("megatron/core/parallel_state.py", 794))
def expert_grid_divides_world(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron lays the MoE layers on their own grid, expert parallel x expert tensor parallel x pipeline
    parallel, and raises when `expert_tensor_model_pipeline_parallel_size` does not divide the world size.
    An unset expert_tensor_parallel_size is the tensor-parallel size (megatron/core/parallel_state.py:788-789@1dcf0daf).
    Validate_args does not check the grid, so the run fails only inside the training actors, after Ray has
    placed them. slime passes expert_model_parallel_size and expert_tensor_parallel_size through
    (slime/backends/megatron_utils/initialize.py:44-46@624b824a). With --use-tp-pp-dp-mapping the rank order
    no longer ends in pp (megatron/training/initialize.py:378@1dcf0daf), and with PP > 1 Megatron then asserts
    that the MoE layers' data-parallel size equals the attention layers' (megatron/core/parallel_state.py:810-814@1dcf0daf):
    world / (ETP x EP x PP) must equal world / (TP x CP x PP)."""
    if not _megatron_runs(ctx):
        return
    ep = ctx.need("--expert-model-parallel-size", 1) or 1
    tp, pp, cp = parallel_sizes(ctx)
    etp = ctx.need("--expert-tensor-parallel-size") or tp
    if ep * etp * pp == 1:
        return
    world = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
    implied = " (the TP size: --expert-tensor-parallel-size is not given)" if ctx.need(
        "--expert-tensor-parallel-size") is None else ""
    if world % (ep * etp * pp):
        yield ctx.hit("MEG013", f"The training world is {world} GPUs, not divisible by the expert grid EP {ep} x "
                      f"ETP {etp}{implied} x PP {pp} = {ep * etp * pp}; Megatron's parallel state raises when the "
                      "training actors start.", flag="--expert-model-parallel-size",
                      fix=grid_fix(world, ep * etp * pp, "EP, ETP and PP"))
        return
    if pp > 1 and ctx.is_set("--use-tp-pp-dp-mapping") and not world % (tp * cp * pp):
        edp, dp = world // (ep * etp * pp), world // (tp * cp * pp)
        if edp != dp:
            yield ctx.hit("MEG013", f"With --use-tp-pp-dp-mapping and PP {pp}, Megatron asserts that the MoE "
                          f"layers' data-parallel size equals the attention layers': here {world} / (EP {ep} x ETP "
                          f"{etp}{implied} x PP {pp}) = {edp} but {world} / (TP {tp} x CP {cp} x PP {pp}) = {dp}, so "
                          "the training actors stop at start-up (megatron/core/parallel_state.py:810-814@1dcf0daf).",
                          flag="--use-tp-pp-dp-mapping",
                          fix=f"drop --use-tp-pp-dp-mapping (the default order ends in pp), or make EP x ETP equal "
                          f"TP x CP ({tp * cp})")


@rule("MEG002", _msrc(570))
def layers_divisible_by_pp(ctx: RuleContext) -> Iterable[Finding]:
    """Without uneven or virtual pipeline options, --num-layers must divide by the pipeline size."""
    if not _megatron_runs(ctx):
        return
    pp = ctx.need("--pipeline-model-parallel-size", 1) or 1
    if pp == 1:
        return
    for f in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
              "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
              "--pipeline-model-parallel-layout"):
        if ctx.need(f) is not None:
            return
    layers = ctx.need("--num-layers")
    if layers is None:
        return
    extra = int(bool(ctx.is_set("--account-for-embedding-in-pipeline-split"))) + int(
        bool(ctx.is_set("--account-for-loss-in-pipeline-split")))
    if (layers + extra) % pp:
        yield ctx.hit("MEG002", f"--num-layers {layers}{f' (+{extra} for embedding/loss)' if extra else ''} is not "
                      f"divisible by --pipeline-model-parallel-size {pp}; Megatron stops.",
                      flag="--pipeline-model-parallel-size",
                      fix="pick a pipeline size that divides the layer count, or set "
                      "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers")


@rule("MEG003", _msrc(813))
def heads_divide_hidden(ctx: RuleContext) -> Iterable[Finding]:
    """Without --kv-channels, Megatron derives it as hidden / heads and asserts the division is exact."""
    if not _megatron_runs(ctx) or ctx.need("--kv-channels") is not None:
        return
    hidden, heads = ctx.need("--hidden-size"), ctx.need("--num-attention-heads")
    if hidden and heads and hidden % heads:
        yield ctx.hit("MEG003", f"--hidden-size {hidden} is not divisible by --num-attention-heads {heads} and "
                      "--kv-channels is not given; Megatron stops.", flag="--num-attention-heads",
                      fix="add --kv-channels (the model's head dimension)")


@rule("MEG004", _msrc(835))
def min_lr_below_lr(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron requires --min-lr <= --lr."""
    if not _megatron_runs(ctx):
        return
    lr, min_lr = ctx.need("--lr", 1e-6), ctx.need("--min-lr", 0.0)
    if lr is not None and min_lr is not None and min_lr > lr:
        yield ctx.hit("MEG004", f"--min-lr {min_lr} is above --lr {lr}; Megatron stops.", flag="--min-lr",
                      fix=f"set --min-lr {lr} or lower")


@rule("MEG005", _msrc(837))
def save_needs_interval(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron asserts a positive --save-interval whenever --save is given (--release-train sets 1 itself)."""
    if not _megatron_runs(ctx) or ctx.need("--save") is None or ctx.is_set("--release-train"):
        return
    si = ctx.need("--save-interval")
    if si is None:
        yield ctx.hit("MEG005", "--save is given without --save-interval; Megatron's assertion fails.", flag="--save",
                      fix="add --save-interval N (rollouts between checkpoints)")
    elif si <= 0:
        yield ctx.hit("MEG005", f"--save-interval {si} must be positive.", flag="--save-interval", source=_msrc(838))


@rule("MEG006", _msrc(798))
def model_shape_given(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron requires --num-layers, --hidden-size and --num-attention-heads (usually from MODEL_ARGS)."""
    if not _megatron_runs(ctx):
        return
    missing = [f for f in ("--num-layers", "--hidden-size", "--num-attention-heads") if ctx.need(f) is None]
    if missing and not (missing == ["--num-layers"] and ctx.need("--encoder-num-layers") is not None):
        yield ctx.hit("MEG006", f"{', '.join(missing)} missing: Megatron needs the model shape (slime's "
                      "scripts/models/*.sh provide it as MODEL_ARGS).", flag=missing[0],
                      fix="source the model's scripts/models/X.sh and pass ${MODEL_ARGS[@]}")


_REMOVED = {
    "--batch-size": (414, "use --micro-batch-size (slime: --global-batch-size / --rollout-batch-size)"),
    "--warmup": (417, "use --lr-warmup-fraction or --lr-warmup-iters"),
    "--model-parallel-size": (420, "use --tensor-model-parallel-size"),
    "--checkpoint-activations": (424, "use --recompute-granularity / --recompute-method (Megatron exits silently)"),
}
_NO_EFFECT = {
    "--use-dist-ckpt": 1127, "--dist-ckpt-format": 1130, "--ckpt-fully-parallel-save": 1115,
}


@rule("MEG007", _msrc(414))
def removed_megatron_flags(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron still parses these old flags but refuses (or exits on) them; a few others are accepted and ignored."""
    if not _megatron_runs(ctx):
        return
    for flag, (line, fix) in _REMOVED.items():
        f = ctx.fact(flag)
        if f.present and f.value not in (None, False):
            yield ctx.hit("MEG007", f"{flag} is no longer accepted by Megatron; it stops at start.", flag=flag,
                          fix=fix, source=_msrc(line))
    for flag, line in _NO_EFFECT.items():
        f = ctx.fact(flag)
        if f.present and f.value not in (None, False):
            yield ctx.hit("MEG007", f"{flag} is deprecated in Megatron and has no effect.", flag=flag, severity=WARN,
                          source=_msrc(line), fix="remove it")


@rule("MEG008", _msrc(817))
def seq_length_fits_cp(ctx: RuleContext) -> Iterable[Finding]:
    """With context parallelism, --seq-length (slime's default 4096) must be a multiple of 2 x CP."""
    if not _megatron_runs(ctx):
        return
    cp = ctx.need("--context-parallel-size", 1) or 1
    seq = ctx.need("--seq-length") or 4096
    if cp > 1 and seq % (2 * cp):
        yield ctx.hit("MEG008", f"--seq-length {seq} is not a multiple of 2 x --context-parallel-size {cp}.",
                      flag="--context-parallel-size", fix=f"use a --seq-length divisible by {2 * cp}")


@rule("MEG009", _msrc(829))
def max_positions_cover_seq(ctx: RuleContext) -> Iterable[Finding]:
    """slime fills --seq-length with 4096 when absent; Megatron requires max positions >= sequence length."""
    if not _megatron_runs(ctx):
        return
    mpe = ctx.need("--max-position-embeddings")
    seq = ctx.need("--seq-length") or 4096
    if mpe is not None and mpe < seq:
        yield ctx.hit("MEG009", f"--max-position-embeddings {mpe} is below the sequence length {seq}"
                      + (" (slime's placeholder when --seq-length is absent)" if ctx.need("--seq-length") is None
                         else "") + "; Megatron stops.", flag="--max-position-embeddings",
                      fix=f"add --seq-length {mpe}", source=slime_source(
                          "slime/backends/megatron_utils/arguments.py", 165))


@rule("MEG010", _msrc(1025))
def expert_parallel_divides_experts(ctx: RuleContext) -> Iterable[Finding]:
    """--expert-model-parallel-size > 1 needs --num-experts, divisible by it."""
    if not _megatron_runs(ctx):
        return
    ep = ctx.need("--expert-model-parallel-size", 1) or 1
    if ep <= 1:
        return
    experts = ctx.need("--num-experts")
    if experts is None:
        yield ctx.hit("MEG010", f"--expert-model-parallel-size {ep} needs --num-experts.",
                      flag="--expert-model-parallel-size", fix="use an MoE model's MODEL_ARGS or set EP to 1")
    elif experts % ep:
        yield ctx.hit("MEG010", f"--num-experts {experts} is not divisible by --expert-model-parallel-size {ep}.",
                      flag="--expert-model-parallel-size", source=_msrc(1026),
                      fix="use an expert-parallel size that divides the expert count")


@rule("MEG011", _msrc(898))
def selective_recompute_no_method(ctx: RuleContext) -> Iterable[Finding]:
    """--recompute-granularity selective takes no --recompute-method."""
    if not _megatron_runs(ctx):
        return
    if ctx.need("--recompute-granularity") == "selective" and ctx.need("--recompute-method") is not None:
        yield ctx.hit("MEG011", "--recompute-method does not apply to --recompute-granularity selective; Megatron "
                      "stops.", flag="--recompute-method", fix="remove --recompute-method, or use granularity full")


@rule("MEG012", slime_source("slime/backends/megatron_utils/arguments.py", 90))
def uneven_pipeline_needs_pp(ctx: RuleContext) -> Iterable[Finding]:
    """slime refuses --decoder-first/last-pipeline-num-layers when the pipeline size is 1."""
    if not _megatron_runs(ctx) or (ctx.need("--pipeline-model-parallel-size", 1) or 1) != 1:
        return
    for f in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"):
        if ctx.need(f) is not None:
            yield ctx.hit("MEG012", f"{f} needs --pipeline-model-parallel-size above 1.", flag=f, fix="remove it")
