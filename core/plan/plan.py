"""The public entry: a Plan for a launch script (`plan_script`) or for flag values (`plan_values`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.findings import Finding, Severity
from core.plan.fixes import first_fix
from core.plan.flops import DEFAULT_MFU, plan_time
from core.plan.gpus import find_gpu
from core.plan.longest import sample_limit
from core.plan.models import GIB, GpuOut, Plan, PlanError
from core.plan.params import stage_params
from core.plan.phases import host_plan, phases
from core.plan.rollout import plan_rollout, read_rollout_inputs
from core.plan.shape import Reader, Values, read_layout, read_shape
from core.plan.training import TrainingInputs, plan_training, read_training_inputs
from core.plan.verdicts import run_plan_rules

if TYPE_CHECKING:
    from core.launch import CheckReport

MAX_GPUS = 1 << 16


def _context_len(r: Reader) -> int | None:
    context = r.integer("--rollout-max-context-len", None)
    if context:
        return context
    prompt = r.integer("--rollout-max-prompt-len", None)
    response = r.integer("--rollout-max-response-len", None)
    if prompt and response:
        return prompt + response
    if response:
        r.assumptions.append("No --rollout-max-prompt-len: prompts of up to 1024 tokens assumed on top of "
                             f"--rollout-max-response-len {response}.")
        return response + 1024
    return None


def _with_ref(r: Reader) -> bool:
    kl = r.number("--kl-coef", 0.0) or 0.0
    return r.has("--ref-load") and (r.switch("--use-kl-loss") or kl != 0)


def _offload_train(r: Reader) -> bool:
    if r.switch("--offload") or r.switch("--offload-train") or (r.text("--advantage-estimator") == "ppo"):
        return True
    if r.switch("--colocate"):
        return not (r.switch("--no-offload-train") or r.switch("--release-train"))
    return False


def plan_values(values: Values, gpu: str, gpus: int | None = None, gpus_per_node: int | None = None,
                mfu: float = DEFAULT_MFU, node_ram_gib: float | None = None, *, notes: Sequence[str] = (),
                search_fixes: bool = True) -> Plan:
    """The plan for a launch's flag values (`--flag` -> text, None for a switch), on GPUs of the named type.

    `gpus` and `gpus_per_node` stand in for values the script computes at run time (e.g. `${NUM_GPUS}`).
    `search_fixes` also searches the longest sample that fits (`sample`, PLAN005) and the verdicts' smallest fixes;
    the trial plans of a search (fixes, sizing) skip both, as they only read the peaks and the pool.
    Raises PlanError (a message for people) for an unknown GPU or a model without its sizes."""
    spec = find_gpu(gpu)
    if gpus is not None and not 1 <= gpus <= MAX_GPUS or gpus_per_node is not None and not 1 <= gpus_per_node <= MAX_GPUS:
        raise PlanError(f"GPU counts must be between 1 and {MAX_GPUS}.")
    r = Reader(dict(values), list(notes))
    lay = read_layout(r, gpus, gpus_per_node)
    s = read_shape(r, lay.tp)
    context = _context_len(r)
    t_in = read_training_inputs(r, lay, context)
    training = plan_training(s, lay, t_in)

    def peak_of(inp: TrainingInputs) -> tuple[int, dict[str, int]]:
        trial = plan_training(s, lay, inp)
        return trial.peak_bytes, trial.terms

    sample = sample_limit(r, t_in, context, lay.cp, spec.memory_bytes, peak_of) if search_fixes else None
    offload_train = _offload_train(r)
    colocated = r.switch("--colocate")
    ro_in = read_rollout_inputs(r, lay, spec.memory_mib, context)
    rollout = None
    if ro_in is not None:
        resident = 0
        if colocated and not offload_train:
            resident = sum(training.terms.get(k, 0) for k in ("weights", "gradients", "optimizer"))
            r.assumptions.append("--colocate without --offload-train: Megatron's weights, gradients and optimizer "
                                 "stay on the GPU while SGLang sizes its pool.")
        rollout = plan_rollout(s, ro_in, spec.memory_bytes - resident)
    stages = stage_params(s, lay)
    worst = stages[training.stage]
    shard = worst.dense / (lay.dp * lay.cp) + worst.expert / lay.expert_dp
    node = r.integer("--actor-num-gpus-per-node", None) or gpus_per_node or min(lay.world, 8)
    host = host_plan(worst.total, shard, t_in.offload_fraction, training.terms.get("optimizer", 0), node,
                     _with_ref(r), r.switch("--keep-old-actor"), offload_train,
                     int(node_ram_gib * GIB) if node_ram_gib else None)
    samples = ro_in.requested if ro_in is not None and ro_in.requested else (r.integer("--global-batch-size", 1) or 1)
    time = plan_time(s, context or training.tokens_per_micro_batch, samples, lay.world, spec.bf16_flops, mfu,
                     _with_ref(r))
    plan = Plan(
        gpu=GpuOut(name=spec.name, memory_bytes=spec.memory_bytes, peak_flops=spec.bf16_flops,
                   fp8_peak_flops=spec.fp8_flops, source=spec.source),
        model={"layers": s.num_layers, "hidden": s.hidden, "heads": s.heads, "kv_heads": s.query_groups,
               "padded_vocab": s.padded_vocab, "num_experts": s.num_experts, "moe_layers": s.moe_layers,
               "mla": s.mla, "mtp_layers": s.mtp_layers, "params": training.params_total,
               "colocated": colocated, "offload_train": offload_train},
        training=training, rollout=rollout, phases=phases(training, rollout, colocated, offload_train),
        host=host, time=time, verdicts=[], assumptions=list(dict.fromkeys(r.assumptions)), sample=sample,
    )
    verdicts = run_plan_rules(plan)
    if search_fixes:
        def replan(edited: Values) -> Plan:
            return plan_values(edited, gpu, gpus, gpus_per_node, mfu, node_ram_gib, search_fixes=False)

        verdicts = [v.model_copy(update={"fix": fix}) if v.code in ("PLAN001", "PLAN002") and
                    (fix := first_fix(dict(values), plan, v.code, replan)) else v for v in verdicts]
    return plan.model_copy(update={"verdicts": verdicts})


_CHECKPOINT = re.compile(r"(?m)^[^#\n]*--hf-checkpoint[ =]+([^\s#]{1,500})")
_MODEL_SCRIPT = re.compile(r"models/([A-Za-z0-9_.\-]{1,80})\.sh")


def _script_values(text: str, script_path: Path | None, slime_checkout: Path | None
                   ) -> tuple[dict[str, str | None], list[str]]:
    """The flags of the script's train command, read by the launch checker; when the model's sizes do not reach
    the command (a `source` the checker could not follow, MODEL_ARGS on a line of its own), they are taken from
    the slime model script the text names, and the plan says so."""
    from core.launch import CheckOptions, check_launch_script

    report = check_launch_script(text, CheckOptions(script_path=script_path, catalog_path=slime_checkout))
    if not report.values:
        raise PlanError("No train.py / train_async.py command with flags was found in the script, so there is "
                        "nothing to plan.")
    values, notes = dict(report.values), []
    if "--hf-checkpoint" in values and values["--hf-checkpoint"] is None:  # e.g. $BASE_DIR/Model-FP8: the name tells
        words = _CHECKPOINT.findall(text)
        if words:
            values["--hf-checkpoint"] = words[-1]
    if values.get("--num-layers") is None:
        from core.model_scripts import load_model_scripts

        by_name = {m.name: m for m in load_model_scripts()}
        for name in dict.fromkeys(_MODEL_SCRIPT.findall(text)):
            model = by_name.get(name)
            if model is None:
                continue
            for flag, value in model.values.items():
                values.setdefault(f"--{flag}", value)
            notes.append(f"The model's sizes do not reach the train command as the checker reads it (run "
                         f"check-args on the script); they are taken from {model.path} ({model.source}).")
            break
    return values, notes


def plan_script(text: str, gpu: str, gpus: int | None = None, gpus_per_node: int | None = None,
                script_path: Path | None = None, slime_checkout: Path | None = None, mfu: float = DEFAULT_MFU,
                node_ram_gib: float | None = None) -> Plan:
    """The plan for a launch script, its flags read statically the way the launch checker reads them
    (sourced model scripts included); nothing is executed."""
    values, notes = _script_values(text, script_path, slime_checkout)
    return plan_values(values, gpu, gpus, gpus_per_node, mfu, node_ram_gib, notes=notes)


def plan_findings(values: Values, gpu: str, gpus: int | None = None, gpus_per_node: int | None = None) -> list[Finding]:
    """The plan's verdicts for flag values, for a checker report: a plan that cannot be made is one note."""
    try:
        return plan_values(values, gpu, gpus, gpus_per_node).verdicts
    except PlanError as exc:
        return [Finding(code="PLAN000", severity=Severity.INFO, message=f"No memory plan: {exc}")]


def report_with_plan(report: CheckReport, gpu: str, gpus: int | None = None,
                     gpus_per_node: int | None = None) -> CheckReport:
    """A launch checker's report with the plan's verdicts for `gpu` beside its findings (sorted, deduplicated,
    counted again). The plan reads the flags the checker read; core.launch never calls this, so the two sets of
    rules stay independent. A plan that cannot be made (an unknown GPU, no model shape) is one PLAN000 note."""
    from core.findings import sort_and_dedupe

    findings = sort_and_dedupe([*report.findings, *plan_findings(report.values, gpu, gpus, gpus_per_node)])
    return report.model_copy(update={"findings": findings, "summary": report.summary.recounted(findings)})
