"""Colocated runs side by side, and what the host keeps.

With --colocate, training and SGLang share each GPU in turns: slime offloads Megatron's state while SGLang
generates (--offload-train, on by default with --colocate: slime/utils/arguments.py:1947) and pauses SGLang's
weights and KV pool while Megatron trains (--offload-rollout). The host keeps a pinned bf16 copy of the actor's
weights and one of every other model slime swaps in (the reference when KL is used, the old actor with
--keep-old-actor: slime/utils/tensor_backper.py:61), and the optimizer states that are offloaded."""

from __future__ import annotations

from core.pins import megatron_source, slime_source
from core.plan.models import HostPlan, PhasePlan, RolloutPlan, Term, TrainingPlan
from core.plan.training import RUNTIME_OVERHEAD

BACKUP_SOURCE = slime_source("slime/utils/tensor_backper.py", 61)
OFFLOAD_DEFAULT_SOURCE = slime_source("slime/utils/arguments.py", 1947)


def phases(tr: TrainingPlan, ro: RolloutPlan | None, colocated: bool, offload_train: bool) -> list[PhasePlan]:
    """What one GPU holds while training and while generating (on a colocated GPU, both models' shares)."""
    train = PhasePlan(name="train", resident=dict(tr.terms), total_bytes=tr.peak_bytes)
    if ro is None:
        return [train]
    rollout: dict[str, int] = {"sglang_weights": ro.weights_bytes, "kv_pool": ro.kv_pool_bytes}
    if colocated:
        static = tr.terms.get("weights", 0) + tr.terms.get("gradients", 0) + tr.terms.get("optimizer", 0)
        rollout["training_state"] = RUNTIME_OVERHEAD if offload_train else static + RUNTIME_OVERHEAD
    return [train, PhasePlan(name="rollout", resident=rollout, total_bytes=sum(rollout.values()))]


# What Megatron's HybridDeviceOptimizer keeps on the host for each parameter of a GPU's shard, at the pin
# (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py): with --use-precision-aware-optimizer and
# --optimizer-cpu-offload it is handed the bf16 model-param shards (distrib_optimizer.py:440-450,
# optimizer_config.py:360-366); each is cloned to a pinned bf16 host copy (:274) and at once to the fp32 copy
# the CPU AdamW updates (:278), the bf16 clone being dropped; the first step allocates a pinned fp32 grad of the
# same shape (:109-110); AdamW adds two fp32 moments. --overlap-cpu-optimizer-d2h-h2d only gives each parameter
# its own CPU optimizer and streams (:203-207, :216-220): no staging buffer beyond those grads.
CPU_ADAM_KEPT = 16  # fp32 copy 4 + pinned fp32 grad 4 + two fp32 moments 8
# Real nodes hold more than that: slime#1851's training processes (101.9-102.7 GB each) are about 4.9 bytes a
# parameter above CPU_ADAM_KEPT + the weight backups + the process baseline. The likely cause, PyTorch's pinned
# host allocator (it rounds blocks up and caches freed ones, such as the dropped bf16 clones, until slime's first
# sleep empties it: slime/utils/memory_utils.py:17-18), is outside the pinned sources, so this is an estimate.
CPU_ADAM_PINNED_SLACK = 4
CPU_ADAM_BYTES = CPU_ADAM_KEPT + CPU_ADAM_PINNED_SLACK
PROCESS_BASELINE = 6 * (1 << 30)  # a training process's own resident memory: Python, torch, CUDA and NCCL libraries
CPU_ADAM_SOURCE = megatron_source("megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py", 274)


def host_plan(per_gpu_params: float, optimizer_params: float, offload_fraction: float, gpu_optimizer_bytes: int,
              gpus_per_node: int, with_ref: bool, old_actor: bool, offload_train: bool,
              node_ram_bytes: int | None) -> HostPlan:
    """Host memory of one node: the weight backups, the CPU optimizer (--optimizer-cpu-offload), the optimizer
    state copied out while SGLang generates (--offload-train), and each training process's own footprint.
    `optimizer_params` is the parameter count one GPU's optimizer shard covers."""
    models = 1 + (1 if with_ref else 0) + (2 if old_actor else 0)
    backups = 2 * per_gpu_params * models * gpus_per_node
    cpu_adam = CPU_ADAM_BYTES * optimizer_params * offload_fraction * gpus_per_node
    parked = gpu_optimizer_bytes * gpus_per_node if offload_train else 0
    baseline = PROCESS_BASELINE * gpus_per_node
    terms = {"weight_backups": int(backups), "cpu_optimizer": int(cpu_adam), "offloaded_optimizer": int(parked),
             "processes": int(baseline)}
    detail = [
        Term(name="weight_backups", bytes=terms["weight_backups"], source=BACKUP_SOURCE, exact=True,
             formula=(f"{models} pinned bf16 copies (actor{', reference' if with_ref else ''}"
                      f"{', old actor and rollout actor' if old_actor else ''}) of {per_gpu_params / 1e9:.2f}B "
                      f"parameters × {gpus_per_node} GPUs a node")),
        Term(name="cpu_optimizer", bytes=terms["cpu_optimizer"], source=CPU_ADAM_SOURCE,
             formula=(f"--optimizer-cpu-offload: {CPU_ADAM_BYTES} bytes × {optimizer_params / 1e9:.2f}B parameters "
                      f"of a GPU's shard × {offload_fraction:.0%} × {gpus_per_node} GPUs: the {CPU_ADAM_KEPT} the CPU "
                      "optimizer keeps (an fp32 copy, its pinned fp32 grad, two fp32 moments) and about "
                      f"{CPU_ADAM_PINNED_SLACK} of pinned-memory slack seen on real nodes (slime#1851; an "
                      "estimate)") if cpu_adam else
             "the optimizer stays on the GPU"),
        Term(name="offloaded_optimizer", bytes=terms["offloaded_optimizer"], source=OFFLOAD_DEFAULT_SOURCE,
             formula=("the GPU optimizer state copied to the host while SGLang generates (--offload-train)"
                      if parked else "nothing offloaded between phases")),
        Term(name="processes", bytes=terms["processes"], source=BACKUP_SOURCE,
             formula=f"about 6 GiB a training process (Python, torch, CUDA libraries) × {gpus_per_node} (an estimate)"),
    ]
    return HostPlan(bytes_per_node=sum(terms.values()), terms=terms, detail=detail, node_ram_bytes=node_ram_bytes)
