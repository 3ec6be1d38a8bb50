"""Draft slime launch scripts (never run them): GPU layout, batch arithmetic, shell quoting, summary.

A `DraftRequest` holds every answer a workflow collected; `draft_launch_script` turns it into a `Draft`:
the bash script, a markdown configuration summary, the planned GPU layout and batch arithmetic, and the
findings (our own planning rules plus the launch-argument checker's). A draft with an error finding is
never ready. Every value that came from the user is quoted with `shlex.quote`; nothing is executed here.

Other workflows (multi-turn, ...) reuse this API: set `kind`, add `extra_args` (each lands in the named
array group and replaces a flag of the same name that the draft would otherwise write) and, if their
plug-in module must be importable, `extra_pythonpath`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from core.drafts.planning import (
    _finding,
    async_checks,
    check_async_not_colocated,
    check_fully_async_has_no_eval,
    check_interval_within_staleness,
    check_staleness_positive,
    choose_model_script,
    parse_positive_int,
    plan_batches,
    plan_gpu_layout,
)
from core.drafts.request import (
    EXAMPLE_PARALLEL,
    FALLBACK_PARALLEL,
    FLAG_RE,
    FULLY_ASYNC_FUNCTION,
    GROUP_PURPOSE,
    GROUP_RE,
    GROUPS,
    MAX_BATCH,
    MAX_RESPONSE_LEN,
    MAX_ROLLOUTS,
    MAX_STALENESS,
    SGLANG_SERVER_CONCURRENCY_DEFAULT,
    SLIME_DEFAULT_GPUS_PER_NODE,
    SRC_ARGS,
    SRC_ASYNC,
    SRC_FULLY_ASYNC,
    SRC_QWEN3_4B,
    BatchPlan,
    Draft,
    DraftKind,
    DraftRequest,
    Entry,
    ExampleParallel,
    ExtraArg,
    GpuLayout,
    RuleResult,
)
from core.drafts.script import (
    NVLINK_PROBE,
    ArgLine,
    _model_base,
    build_groups,
    build_script,
    build_summary,
    md_escape,
    q,
)
from core.findings import Finding, Severity, sort_and_dedupe
from core.model_scripts import ModelScript
from core.pins import slime_source

__all__ = [
    "ArgLine",
    "BatchPlan",
    "Draft",
    "DraftKind",
    "DraftRequest",
    "EXAMPLE_PARALLEL",
    "Entry",
    "ExampleParallel",
    "ExtraArg",
    "FALLBACK_PARALLEL",
    "FLAG_RE",
    "FULLY_ASYNC_FUNCTION",
    "GROUPS",
    "GROUP_PURPOSE",
    "GROUP_RE",
    "GpuLayout",
    "MAX_BATCH",
    "MAX_RESPONSE_LEN",
    "MAX_ROLLOUTS",
    "MAX_STALENESS",
    "RuleResult",
    "SGLANG_SERVER_CONCURRENCY_DEFAULT",
    "SLIME_DEFAULT_GPUS_PER_NODE",
    "SRC_ARGS",
    "SRC_ASYNC",
    "SRC_FULLY_ASYNC",
    "SRC_QWEN3_4B",
    "async_checks",
    "build_groups",
    "build_script",
    "build_summary",
    "check_async_not_colocated",
    "check_fully_async_has_no_eval",
    "check_interval_within_staleness",
    "check_staleness_positive",
    "choose_model_script",
    "md_escape",
    "parse_positive_int",
    "plan_batches",
    "plan_gpu_layout",
    "q",
]


# ---------------------------------------------------------------------------------------------------
# The checker and the whole draft
# ---------------------------------------------------------------------------------------------------

def run_launch_checker(script: str, gpus: int) -> list[Finding] | None:
    """The launch-argument checker's findings on the drafted script."""
    from core.launch import CheckOptions, check_launch_script  # the checker loads its catalog: only when used

    report = check_launch_script(script, CheckOptions(entry=None, gpus=gpus))
    return list(report.findings)


def checkout_checker(slime: Path | None, sglang: Path | None = None,
                     megatron: Path | None = None) -> Callable[[str, int], list[Finding] | None]:
    """A checker for `draft_launch_script` that judges the draft by the user's own slime checkout (and their
    SGLang / Megatron sources): a flag the draft uses that their slime lacks is then reported. Without a
    checkout it is `run_launch_checker` (the pins)."""
    if slime is None:
        return run_launch_checker

    def check(script: str, gpus: int) -> list[Finding] | None:
        from core.launch import CheckOptions, check_launch_script

        options = CheckOptions(entry=None, gpus=gpus, catalog_path=slime, sglang_source=sglang,
                               megatron_source=megatron)
        return list(check_launch_script(script, options).findings)

    return check


DRAFT_BATCH_CODES = {"DRF020", "DRF021"}


def merge_checker_findings(draft_findings: list[Finding], checked: list[Finding], script: str) -> list[Finding]:
    """The draft's own findings plus the checker's, each problem said once: the checker's batch finding
    (with its exact fixes) replaces the draft's batch warning, and the note about command substitutions is
    dropped when the only one is the draft's own NVLink probe, which sets no flag."""
    probe_lines = {i for i, line in enumerate(script.splitlines(), start=1) if line == NVLINK_PROBE}
    kept = [f for f in checked if not (f.code == "SCRIPT004" and f.flag is None and f.line in probe_lines)]
    if any(f.code.startswith("BATCH") for f in kept):
        draft_findings = [f for f in draft_findings if f.code not in DRAFT_BATCH_CODES]
    return draft_findings + kept


def draft_filename(request: DraftRequest) -> str:
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", _model_base(request.model)).strip("-.") or "model"
    return f"run-{request.kind}-{slug[:60]}.sh"


def draft_launch_script(request: DraftRequest,
                        checker: Callable[[str, int], list[Finding] | None] | None = None,
                        scripts: tuple[ModelScript, ...] | None = None) -> Draft:
    """Plan, write and check a launch script. Errors in planning give a draft that is not ready.

    `checker` defaults to `run_launch_checker` (looked up at call time); it returns None when unavailable.
    `scripts` are the model scripts to choose from (the user's checkout's; default the ones shipped at the pin).
    """
    checker = checker or run_launch_checker
    model_script, findings = choose_model_script(request, scripts)
    layout, layout_findings = plan_gpu_layout(request, model_script)
    findings += layout_findings
    batch, batch_findings = plan_batches(request)
    findings += batch_findings
    checks: list[RuleResult] = []
    if request.train_entry == "train_async.py":
        checks = async_checks(request)
        findings += [_finding("DRF031" if "interval" in c.name else "DRF030", Severity.ERROR, c.message,
                              flag="--update-weights-interval", source=c.source) for c in checks if not c.passed]
    findings += check_fully_async_has_no_eval(request)
    example = EXAMPLE_PARALLEL.get(model_script.name if model_script else "", FALLBACK_PARALLEL)
    if layout is None:
        return Draft(request=request, script="", summary_markdown="", filename=draft_filename(request),
                     layout=None, batch=batch, model_script=model_script, findings=sort_and_dedupe(findings),
                     checked=False, checks=checks)
    script = build_script(request, layout, batch, model_script, example)
    summary = build_summary(request, layout, batch, model_script, checks)
    checked_findings = checker(script, request.gpus_total)
    checked = checked_findings is not None
    if checked_findings is None:
        findings.append(_finding("DRF050", Severity.WARNING, "The launch-argument checker is not available in "
                                 "this build, so this draft was not checked and is not offered as ready."))
    else:
        findings = merge_checker_findings(findings, checked_findings, script)
    return Draft(request=request, script=script, summary_markdown=summary, filename=draft_filename(request),
                 layout=layout, batch=batch, model_script=model_script, findings=sort_and_dedupe(findings),
                 checked=checked, checks=checks)


# ---------------------------------------------------------------------------------------------------
# What pages show and record
# ---------------------------------------------------------------------------------------------------

class DefaultSource(BaseModel):
    flag: str
    default: str
    source: str
    note: str = ""


def hyperparameter_sources() -> list[DefaultSource]:
    """Where each optional hyperparameter's default comes from (slime's own example scripts at the pin)."""
    s = SRC_QWEN3_4B
    return [
        DefaultSource(flag="--input-key", default="prompt", source=slime_source(s, 51),
                      note=f"slime's own default is 'input' ({slime_source(SRC_ARGS, 659)})"),
        DefaultSource(flag="--label-key", default="label", source=slime_source(s, 52)),
        DefaultSource(flag="--rm-type", default="deepscaler", source=slime_source(s, 55),
                      note="a math-answer reward; pick the one that fits your data"),
        DefaultSource(flag="--num-rollout", default="3000", source=slime_source(s, 56)),
        DefaultSource(flag="--rollout-batch-size", default="32", source=slime_source(s, 57)),
        DefaultSource(flag="--n-samples-per-prompt", default="8", source=slime_source(s, 58)),
        DefaultSource(flag="--rollout-max-response-len", default="8192", source=slime_source(s, 59)),
        DefaultSource(flag="--rollout-temperature", default="1", source=slime_source(s, 60)),
        DefaultSource(flag="--global-batch-size", default="256 (= 32 x 8)", source=slime_source(s, 62),
                      note=f"one optimizer step per rollout ({slime_source(SRC_ARGS, 703)})"),
        DefaultSource(flag="--use-kl-loss / --kl-loss-coef", default="on / 0.00", source=slime_source(s, 93),
                      note="the KL is logged but not penalised until the coefficient is above 0"),
        DefaultSource(flag="--kl-loss-type", default="low_var_kl", source=slime_source(s, 95)),
        DefaultSource(flag="--eps-clip / --eps-clip-high", default="0.2 / 0.28", source=slime_source(s, 97)),
        DefaultSource(flag="--lr", default="1e-6", source=slime_source(s, 103)),
        DefaultSource(flag="--tensor-model-parallel-size", default="2", source=slime_source(s, 75),
                      note="lowered when your actor GPUs do not divide by it"),
        DefaultSource(flag="--rollout-num-gpus-per-engine", default="2", source=slime_source(s, 118)),
        DefaultSource(flag="--sglang-mem-fraction-static", default="0.7", source=slime_source(s, 119)),
        DefaultSource(flag="--max-tokens-per-gpu", default="9216", source=slime_source(s, 88)),
        DefaultSource(flag="--save-interval", default="20", source=slime_source(s, 46)),
    ]


class DraftRecord(BaseModel):
    """What a workflow page saves in the record of handled work for a draft."""

    status: Literal["started", "done"]
    done: list[str]
    todo: list[str]
    summary: str


def record_for(draft: Draft) -> DraftRecord:
    """Done when the draft is ready; otherwise started, with the errors as what is left to do."""
    req = draft.request
    done = [f"answers: model {req.model}, {req.gpus_total} GPU(s), prompt key '{req.input_key}'"]
    todo: list[str] = []
    if draft.layout:
        done.append(f"GPU layout planned: {draft.layout.mode}, actor {draft.layout.actor_gpus} GPU(s), "
                    f"rollout {draft.layout.rollout_gpus} GPU(s)")
    done.append(f"batch arithmetic: {draft.batch.samples_per_rollout} samples per rollout, "
                f"{draft.batch.steps_per_rollout} step(s) per rollout")
    if draft.checked:
        done.append("draft checked by the launch-argument checker")
    else:
        todo.append("run the launch-argument checker on the draft")
    todo += [f"fix {f.code}: {f.message}" for f in draft.findings if f.severity == Severity.ERROR]
    if draft.ready:
        done.append(f"launch script drafted: {draft.filename} (for your review; nothing was run)")
        todo.append("review every line marked YOUR CHOICE, then run the script yourself")
    errors = sum(f.severity == Severity.ERROR for f in draft.findings)
    if draft.ready:
        summary = f"{draft.filename}: ready for review"
    elif errors:
        summary = f"{draft.filename}: not ready ({errors} error(s))"
    else:
        summary = f"{draft.filename}: not ready (not checked)"
    return DraftRecord(status="done" if draft.ready else "started", done=done, todo=todo, summary=summary)
