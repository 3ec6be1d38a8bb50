"""Memory and time plans: will a launch fit its GPUs, and how long will a rollout step take, before any GPU is
booked.

Owns: the GPU table (`knowledge/gpus.yaml`, `gpus`), the model's shape and parallel layout read from a script's
flags (`shape`), parameter counts per layer type and pipeline stage (`params`), the training memory terms per
GPU (`training`), SGLang's weight and KV-pool arithmetic per engine GPU (`rollout`), slime's FLOPs formula and
the time per rollout (`flops`), the colocated phases and host memory (`phases`), the longest sample a
micro-batch holds against the longest the flags allow (`longest`), the verdicts PLAN001-PLAN003 and PLAN005
(`verdicts`) and the public entry (`plan`): `plan_script` for a launch script, `plan_values` for flag values
(the calculator), both returning a `Plan`, and `report_with_plan` (a launch checker's report with the plan's
verdicts beside its findings, for `check-args --gpu` and the checker page); for a running job, MFU from
slime's `perf/actor_train_tflops` with the low-MFU causes and an ETA (`mfu`), for the monitor to call
through this package's root (core.monitor.efficiency turns them into its MON013 and MON014 verdicts); and "how
many GPUs do I need for <model>?" answered from slime's model scripts with the fewest GPUs that fit (`sizing`,
for `ask`); the numbers of a pasted CUDA out-of-memory message judged in words (`oom`, told by
`oom_question` without loading it).

May import: the shared vocabulary (core.findings, core.pins, core.resources, core.model_scripts, core.batch) and
the package root of core.launch (to read a script's flags the way the checker does). core.launch never imports
this package: the plan's verdicts are run beside the checker's by the front-ends (`slime-assistant plan`, and
`check-args --gpu`), so neither capability depends on the other's rules.

The names below load on first use.
"""

from __future__ import annotations

from core.exports import lazy_exports

_EXPORTS = {
    "phase_figure": "core.plan.charts",
    "stage_figure": "core.plan.charts",
    "DEFAULT_MFU": "core.plan.flops",
    "find_gpu": "core.plan.gpus",
    "load_gpus": "core.plan.gpus",
    "eta_seconds": "core.plan.mfu",
    "mfu_of": "core.plan.mfu",
    "GpuSpec": "core.plan.models",
    "HostPlan": "core.plan.models",
    "PhasePlan": "core.plan.models",
    "Plan": "core.plan.models",
    "PlanError": "core.plan.models",
    "RolloutPlan": "core.plan.models",
    "Term": "core.plan.models",
    "TimePlan": "core.plan.models",
    "TrainingPlan": "core.plan.models",
    "plan_findings": "core.plan.plan",
    "plan_script": "core.plan.plan",
    "plan_values": "core.plan.plan",
    "report_with_plan": "core.plan.plan",
    "SizingAnswer": "core.plan.sizing",
    "is_sizing_question": "core.plan.sizing_question",
    "sizing_answer": "core.plan.sizing",
    "sizing_text": "core.plan.sizing",
    "sizing_flags": "core.plan.sizing",
    "render_plan_text": "core.plan.render",
    "sample_line": "core.plan.render",
    "LOW_MFU": "core.plan.mfu",
    "low_mfu_fix": "core.plan.mfu",
    "PLAN_RULES": "core.plan.verdicts",
    "OomReading": "core.plan.oom",
    "judge_oom": "core.plan.oom",
    "oom_text": "core.plan.oom",
    "is_oom_paste": "core.plan.oom_question",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
