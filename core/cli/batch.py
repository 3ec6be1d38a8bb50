"""`slime-assistant batch`: the batch-size calculator from the shell (exit 0 when slime and Megatron accept the
numbers and every sample is trained on, 1 when they stop or drop samples, 2 on usage problems)."""

from __future__ import annotations

import argparse

from core.batch import BatchPlan, BatchPlanInputs, plan_batch
from core.cli.output import say, write_json, write_text
from core.findings import dumps

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "batch",
        help="work out what slime does with a set of batch sizes and a GPU layout",
        description=("Check rollout batch x samples per prompt = global batch x steps per rollout exactly, and "
                     "Megatron's start-up rules for the layout. Exit 0: valid and nothing dropped; 1: slime or "
                     "Megatron would stop, or samples are dropped; 2: usage problem."),
    )
    parser.add_argument("--rollout-batch-size", type=int, default=None, metavar="N")
    parser.add_argument("--n-samples-per-prompt", type=int, default=None, metavar="N")
    parser.add_argument("--global-batch-size", type=int, default=None, metavar="N")
    parser.add_argument("--num-steps-per-rollout", type=int, default=None, metavar="N")
    parser.add_argument("--training-gpus", type=int, default=None, metavar="N", help="GPUs that train (the actor)")
    parser.add_argument("--tp", type=int, default=1, metavar="N", help="--tensor-model-parallel-size")
    parser.add_argument("--pp", type=int, default=1, metavar="N", help="--pipeline-model-parallel-size")
    parser.add_argument("--cp", type=int, default=1, metavar="N", help="--context-parallel-size")
    parser.add_argument("--micro-batch-size", type=int, default=None, metavar="N")
    parser.add_argument("--use-dynamic-batch-size", action="store_true", help="dynamic batching is on")
    parser.add_argument("--num-rollout", type=int, default=None, metavar="N", help="rollouts in the run")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
    parser.set_defaults(func=run_batch)


def run_batch(args: argparse.Namespace) -> int:
    plan = plan_batch(BatchPlanInputs(
        rollout_batch_size=args.rollout_batch_size, n_samples_per_prompt=args.n_samples_per_prompt,
        global_batch_size=args.global_batch_size, num_steps_per_rollout=args.num_steps_per_rollout,
        training_gpus=args.training_gpus, tensor_parallel=args.tp, pipeline_parallel=args.pp,
        context_parallel=args.cp, micro_batch_size=args.micro_batch_size,
        dynamic_batching=args.use_dynamic_batch_size, num_rollout=args.num_rollout))
    if plan.problem:
        if args.output_format == "json":
            write_json(dumps(plan_json(plan)))
        else:
            say(f"batch: {plan.problem}")
        return EXIT_USAGE
    if args.output_format == "json":
        write_json(dumps(plan_json(plan)))
    else:
        write_text(render_plan_text(plan))
    dropped = plan.equation.dropped_samples_per_rollout if plan.equation else None
    return EXIT_OK if plan.status in ("ok", "info") and not dropped else EXIT_PROBLEM


def plan_json(plan: BatchPlan) -> dict:
    """The JSON reporter: the whole plan, with its overall status."""
    return {"status": plan.status, **plan.model_dump(mode="json")}


def render_plan_text(plan: BatchPlan) -> str:
    """The text reporter: the equation, what slime does, the layout checks and every exact fix."""
    eq = plan.equation
    lines = [f"{eq.equation}   [{eq.status}{' ' + eq.code if eq.code else ''}]", eq.slime_behaviour]
    lines += [f"  assumption: {a}" for a in eq.assumptions]
    lines += [f"  fix: {f.message}" for f in eq.fixes]
    lines.append(f"  source: {eq.source}")
    for check in plan.layout:
        lines.append(f"{check.status.upper():7} {check.message}")
        lines += [f"  fix: {f}" for f in check.fixes]
        lines.append(f"  source: {check.source}")
    if plan.total_optimizer_steps is not None:
        lines.append(f"optimizer steps over --num-rollout {plan.inputs.num_rollout}: {plan.total_optimizer_steps}")
    lines += [f"note: {n}" for n in plan.notes]
    lines.append(f"overall: {plan.status}")
    return "\n".join(lines)
