"""Colocated runs side by side, and what the host keeps.

With --colocate, training and SGLang share each GPU in turns: slime offloads Megatron's state while SGLang
generates (--offload-train, on by default with --colocate: slime/utils/arguments.py:1947) and pauses SGLang's
weights and KV pool while Megatron trains (--offload-rollout). The host keeps a pinned bf16 copy of the actor's
weights and one of every other model slime swaps in (the reference when KL is used, the old actor with
--keep-old-actor: slime/utils/tensor_backper.py:61), and the optimizer states that are offloaded."""

from __future__ import annotations

from core.pins import slime_source
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


def host_plan(tr: TrainingPlan, per_gpu_params: float, gpus_per_node: int, with_ref: bool, old_actor: bool,
              offload_train: bool, node_ram_bytes: int | None) -> HostPlan:
    backup = 2 * per_gpu_params * gpus_per_node
    models = 1 + (1 if with_ref else 0) + (2 if old_actor else 0)
    optimizer = tr.terms.get("optimizer", 0)
    full_optimizer = optimizer
    offloaded = 0
    detail_opt = "the optimizer stays on the GPU"
    if offload_train:
        offloaded = full_optimizer * gpus_per_node
        detail_opt = "optimizer states copied to the host while SGLang generates (--offload-train)"
    terms = {"weight_backups": int(backup * models), "optimizer": int(offloaded)}
    detail = [
        Term(name="weight_backups", bytes=terms["weight_backups"], source=BACKUP_SOURCE, exact=True,
             formula=(f"{models} bf16 copies (actor{', reference' if with_ref else ''}"
                      f"{', old actor and rollout actor' if old_actor else ''}) of {per_gpu_params / 1e9:.2f}B "
                      f"parameters × {gpus_per_node} GPUs a node")),
        Term(name="optimizer", bytes=terms["optimizer"], source=OFFLOAD_DEFAULT_SOURCE, formula=detail_opt),
    ]
    return HostPlan(bytes_per_node=sum(terms.values()), terms=terms, detail=detail, node_ram_bytes=node_ram_bytes)
