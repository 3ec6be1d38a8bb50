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

import json
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.findings import Finding, Severity, sort_and_dedupe
from core.memory import MAX_GPUS, Profile, check_data_path
from core.model_scripts import ModelScript, load_model_scripts, match_model
from core.pins import SLIME_SHORT, slime_source

DraftKind = Literal["grpo", "async", "multi_turn"]
Entry = Literal["train.py", "train_async.py"]

# The array groups of a slime launch script, in the order the draft writes them.
GROUPS: tuple[str, ...] = (
    "CKPT_ARGS", "ROLLOUT_ARGS", "EVAL_ARGS", "PERF_ARGS", "GRPO_ARGS", "OPTIMIZER_ARGS", "SGLANG_ARGS",
    "MISC_ARGS",
)

GROUP_PURPOSE: dict[str, str] = {
    "MODEL_ARGS": "the model's architecture for Megatron, from the model script slime ships",
    "CKPT_ARGS": "where the Hugging Face weights, the torch_dist reference copy and the run's own "
                 "checkpoints live, and how often to save",
    "ROLLOUT_ARGS": "the prompt data and its keys, the reward, and the rollout batch arithmetic",
    "EVAL_ARGS": "optional evaluation on a held-out set (off until you name one)",
    "PERF_ARGS": "Megatron parallelism and memory settings for the training side",
    "GRPO_ARGS": "the RL objective: advantage estimator, KL loss and clipping",
    "OPTIMIZER_ARGS": "Adam and the learning-rate schedule",
    "SGLANG_ARGS": "the SGLang inference engines that generate rollouts",
    "MISC_ARGS": "dropout off and numerics settings used by slime's examples",
}

FLAG_RE = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
GROUP_RE = re.compile(r"^[A-Z][A-Z0-9_]*_ARGS$")
MAX_BATCH = 1_000_000
MAX_ROLLOUTS = 10_000_000
MAX_RESPONSE_LEN = 1_048_576
MAX_STALENESS = 1_000

# Where each default comes from (slime at the pin).
SRC_QWEN3_4B = "scripts/run-qwen3-4B.sh"
SRC_ARGS = "slime/utils/arguments.py"
SRC_ASYNC = "train_async.py"
SRC_FULLY_ASYNC = "slime/rollout/fully_async_rollout.py"
FULLY_ASYNC_FUNCTION = "slime.rollout.fully_async_rollout.generate_rollout_fully_async"
SGLANG_SERVER_CONCURRENCY_DEFAULT = 512  # slime/backends/sglang_utils/arguments.py:47@624b824a
SLIME_DEFAULT_GPUS_PER_NODE = 8  # --num-gpus-per-node default, slime/utils/arguments.py:61-68@624b824a


class ExampleParallel(BaseModel):
    """Parallelism an upstream example script uses for one model script."""

    tensor_parallel: int
    context_parallel: int = 1
    engine_gpus: int
    max_tokens_per_gpu: int
    source: str


# Upstream example run scripts at the pin, keyed by model script name. Models without one fall back to the
# Qwen3-4B example's values, and the draft says so.
EXAMPLE_PARALLEL: dict[str, ExampleParallel] = {
    "qwen3-4B": ExampleParallel(tensor_parallel=2, engine_gpus=2, max_tokens_per_gpu=9216,
                                source=slime_source(SRC_QWEN3_4B, 75)),
    "qwen2.5-0.5B": ExampleParallel(tensor_parallel=1, engine_gpus=1, max_tokens_per_gpu=9216,
                                    source=slime_source("scripts/run-qwen2.5-0.5B-reproducibility.sh", 51)),
    "glm4-9B": ExampleParallel(tensor_parallel=2, context_parallel=2, engine_gpus=2, max_tokens_per_gpu=4608,
                               source=slime_source("scripts/run-glm4-9B.sh", 65)),
    "qwen3-32B": ExampleParallel(tensor_parallel=8, engine_gpus=8, max_tokens_per_gpu=20480,
                                 source=slime_source("scripts/run-qwen3-32B.sh", 63)),
    "qwen3.5-9B": ExampleParallel(tensor_parallel=2, engine_gpus=2, max_tokens_per_gpu=4096,
                                  source=slime_source("examples/fully_async/run-qwen3.5-9B-fully_async.sh", 62)),
}
FALLBACK_PARALLEL = EXAMPLE_PARALLEL["qwen3-4B"]


class ExtraArg(BaseModel):
    """One more flag for the draft: it goes into `group` and replaces a generated flag of the same name."""

    model_config = ConfigDict(frozen=True)

    flag: str
    value: str | None = None
    group: str = "ROLLOUT_ARGS"
    comment: str | None = None

    @field_validator("flag")
    @classmethod
    def _flag_ok(cls, v: str) -> str:
        if not FLAG_RE.match(v):
            raise ValueError(f"a flag is '--' then lower-case letters, digits and '-'; not {v[:60]!r}")
        return v

    @field_validator("group")
    @classmethod
    def _group_ok(cls, v: str) -> str:
        if not GROUP_RE.match(v) or v == "MODEL_ARGS":
            raise ValueError(f"a group is an upper-case name ending in _ARGS (not MODEL_ARGS); not {v[:60]!r}")
        return v


class DraftRequest(BaseModel):
    """Everything a drafted launch script depends on. Defaults come from slime's own example scripts."""

    kind: DraftKind = "grpo"
    model: str = Field(min_length=1, max_length=200)
    model_script: str | None = Field(default=None, description="name in scripts/models; overrides the match")
    data_path: str = Field(min_length=1, max_length=4096)
    gpus_total: int = Field(ge=1, le=MAX_GPUS)
    gpus_per_node: int | None = Field(default=None, ge=1, le=1024)
    colocate: bool | None = Field(default=None, description="None: colocated for train.py, split for async")
    actor_gpus: int | None = Field(default=None, ge=1, le=MAX_GPUS, description="split layouts only")
    entry: Entry | None = None

    hf_checkpoint: str | None = Field(default=None, max_length=4096)
    ref_load: str | None = Field(default=None, max_length=4096)
    save_dir: str | None = Field(default=None, max_length=4096)
    save_interval: int = Field(default=20, ge=1, le=MAX_ROLLOUTS)

    input_key: str = Field(default="prompt", min_length=1, max_length=200)
    label_key: str | None = Field(default="label", max_length=200)
    apply_chat_template: bool = True
    rm_type: str | None = Field(default="deepscaler", max_length=200)
    custom_rm_path: str | None = Field(default=None, max_length=500)
    reward_set_by_generate: bool = False  # a custom generate function fills sample.reward itself

    rollout_batch_size: int = Field(default=32, ge=1, le=MAX_BATCH)
    n_samples_per_prompt: int = Field(default=8, ge=1, le=MAX_BATCH)
    global_batch_size: int | None = Field(default=None, ge=1, le=MAX_BATCH * 64)
    num_rollout: int = Field(default=3000, ge=1, le=MAX_ROLLOUTS)
    rollout_max_response_len: int = Field(default=8192, ge=1, le=MAX_RESPONSE_LEN)
    rollout_temperature: float = Field(default=1.0, ge=0.0, le=10.0)

    use_kl_loss: bool = True
    kl_loss_coef: float = Field(default=0.0, ge=0.0, le=100.0)
    lr: float = Field(default=1e-6, gt=0.0, le=1.0)

    tensor_parallel: int | None = Field(default=None, ge=1, le=1024)
    rollout_gpus_per_engine: int | None = Field(default=None, ge=1, le=MAX_GPUS)
    sglang_mem_fraction_static: float = Field(default=0.7, gt=0.0, lt=1.0)

    update_weights_interval: int = Field(default=1, ge=1, le=MAX_STALENESS)
    staleness: int = Field(default=1, ge=1, le=MAX_STALENESS)
    fully_async: bool = False
    sglang_server_concurrency: int | None = Field(default=None, ge=1, le=1_000_000)

    extra_args: list[ExtraArg] = Field(default_factory=list)
    extra_pythonpath: list[str] = Field(default_factory=list)

    @field_validator("data_path")
    @classmethod
    def _data_ok(cls, v: str) -> str:
        return check_data_path(v)

    @field_validator("model", "input_key")
    @classmethod
    def _required_line(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("must not be empty")
        if any(c in v for c in "\n\r\0"):
            raise ValueError("must be a single line without NUL bytes")
        return v

    @field_validator("label_key", "rm_type", "custom_rm_path", "hf_checkpoint", "ref_load", "save_dir",
                     "model_script")
    @classmethod
    def _optional_line(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip()
        if any(c in v for c in "\n\r\0"):
            raise ValueError("must be a single line without NUL bytes")
        return v or None

    @field_validator("extra_args", mode="before")
    @classmethod
    def _tuples_to_args(cls, v: object) -> object:
        if isinstance(v, (list, tuple)):
            return [ExtraArg(flag=a[0], value=a[1]) if isinstance(a, (list, tuple)) else a for a in v]
        return v

    @field_validator("extra_pythonpath")
    @classmethod
    def _paths_ok(cls, v: list[str]) -> list[str]:
        for p in v:
            if not p.strip() or any(c in p for c in "\n\r\0:"):
                raise ValueError("each extra PYTHONPATH entry is one non-empty directory without ':'")
        return [p.strip() for p in v]

    @model_validator(mode="after")
    def _nodes_ok(self) -> DraftRequest:
        if self.gpus_per_node is not None and (self.gpus_per_node > self.gpus_total
                                               or self.gpus_total % self.gpus_per_node):
            raise ValueError(f"{self.gpus_total} GPUs do not split into whole nodes of {self.gpus_per_node}")
        return self

    @property
    def per_node(self) -> int:
        return self.gpus_per_node or self.gpus_total

    @property
    def nodes(self) -> int:
        return self.gpus_total // self.per_node

    @property
    def train_entry(self) -> Entry:
        if self.entry:
            return self.entry
        return "train_async.py" if self.kind == "async" else "train.py"

    @classmethod
    def from_profile(cls, profile: Profile, kind: DraftKind = "grpo", **answers: object) -> DraftRequest:
        """A request that starts from the saved profile; `answers` override any field."""
        base: dict[str, object] = {"kind": kind, "model": profile.model, "data_path": profile.data_path,
                                   "gpus_total": profile.gpus_total, "gpus_per_node": profile.gpus_per_node}
        return cls.model_validate({**base, **answers})


class GpuLayout(BaseModel):
    """Where the actor (Megatron) and the rollout engines (SGLang) run."""

    mode: Literal["colocated", "disaggregated"]
    nodes: int
    per_node: int
    actor_nodes: int
    actor_gpus_per_node: int
    rollout_gpus: int  # colocated: the GPUs the engines share with the actor
    rollout_gpus_per_engine: int
    tensor_parallel: int
    context_parallel: int
    data_parallel: int
    set_num_gpus_per_node: bool
    explanation: list[str]

    @property
    def actor_gpus(self) -> int:
        return self.actor_nodes * self.actor_gpus_per_node

    @property
    def engines(self) -> int:
        return self.rollout_gpus // self.rollout_gpus_per_engine


class BatchPlan(BaseModel):
    """The batch arithmetic of one rollout and of the whole run."""

    rollout_batch_size: int
    n_samples_per_prompt: int
    samples_per_rollout: int
    global_batch_size: int
    steps_per_rollout: int
    num_rollout: int
    total_steps: int


class RuleResult(BaseModel):
    """One named check and whether it passed, for pages that report every check, not only failures."""

    name: str
    passed: bool
    message: str
    source: str


class Draft(BaseModel):
    request: DraftRequest
    script: str
    summary_markdown: str
    filename: str
    layout: GpuLayout | None
    batch: BatchPlan
    model_script: ModelScript | None
    findings: list[Finding]
    checked: bool = Field(description="the launch-argument checker ran on the script")
    checks: list[RuleResult] = Field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(f.severity == Severity.ERROR for f in self.findings)

    @property
    def ready(self) -> bool:
        """Offered as ready only when the checker ran and nothing is an error."""
        return self.checked and not self.has_errors


# ---------------------------------------------------------------------------------------------------
# Rules (one small validator each)
# ---------------------------------------------------------------------------------------------------

def _finding(code: str, severity: Severity, message: str, *, flag: str | None = None, fix: str | None = None,
             source: str | None = None) -> Finding:
    return Finding(code=code, severity=severity, message=message, flag=flag, fix=fix, source=source)


def parse_positive_int(raw: object, label: str, *, maximum: int = MAX_STALENESS) -> tuple[int | None, str | None]:
    """Read a whole number >= 1 typed by a person; return (value, None) or (None, a specific message)."""
    if isinstance(raw, bool):
        return None, f"{label}: give a whole number"
    if isinstance(raw, int):
        value = raw
    else:
        text = str(raw).strip()
        if not text:
            return None, f"{label}: give a whole number of rollouts (1 or more)"
        if not re.fullmatch(r"[+-]?[0-9]{1,12}", text):
            return None, f"{label}: '{text[:40]}' is not a whole number"
        value = int(text)
    if value < 1:
        return None, f"{label}: {value} is not positive; it must be 1 or more"
    if value > maximum:
        return None, f"{label}: {value} is more than {maximum}; no run needs that much"
    return value, None


def check_staleness_positive(staleness: object) -> RuleResult:
    """The staleness budget (how many rollouts generations may run ahead of the weights) is a positive
    integer: train_async.py always overlaps the next rollout with training, so 0 is not possible."""
    source = slime_source(SRC_ASYNC, 39)
    value, error = parse_positive_int(staleness, "Accepted staleness")
    if error:
        return RuleResult(name="staleness is a positive whole number", passed=False, message=error, source=source)
    return RuleResult(name="staleness is a positive whole number", passed=True,
                      message=f"Accepted staleness: {value} rollout(s).", source=source)


def check_interval_within_staleness(interval: object, staleness: object) -> RuleResult:
    """`--update-weights-interval N` must not exceed the staleness budget: train_async.py pushes weights to
    the engines only every N rollouts, so a trained rollout may come from weights up to N rollouts old."""
    name = "weight-sync interval <= staleness"
    source = slime_source(SRC_ASYNC, 66)
    n, n_err = parse_positive_int(interval, "Weight-sync interval (--update-weights-interval)")
    s, s_err = parse_positive_int(staleness, "Accepted staleness")
    if n_err or s_err:
        return RuleResult(name=name, passed=False, message=n_err or s_err or "", source=source)
    assert n is not None and s is not None
    if n > s:
        return RuleResult(name=name, passed=False, source=source,
                          message=(f"--update-weights-interval {n} lets rollouts lag the weights by up to {n} "
                                   f"rollouts, more than the {s} you accept; use {s} or less."))
    return RuleResult(name=name, passed=True, source=source,
                      message=f"Weights reach the engines every {n} rollout(s); lag stays within {s}.")


def async_checks(request: DraftRequest) -> list[RuleResult]:
    """Both async checks, pass or fail, for the async page and the async draft."""
    return [check_staleness_positive(request.staleness),
            check_interval_within_staleness(request.update_weights_interval, request.staleness)]


def check_async_not_colocated(request: DraftRequest) -> list[Finding]:
    """train_async.py asserts that --colocate is off: generation overlaps training, so they need
    separate GPUs."""
    if request.train_entry == "train_async.py" and request.colocate:
        return [_finding("DRF010", Severity.ERROR, "train_async.py refuses --colocate (it asserts colocation "
                         "is off); async needs separate actor and rollout GPUs.", flag="--colocate",
                         fix="drop --colocate and split the GPUs between actor and rollout",
                         source=slime_source(SRC_ASYNC, 11))]
    return []


def check_fully_async_has_no_eval(request: DraftRequest) -> list[Finding]:
    """The fully-async rollout function raises when called for evaluation, so the draft sets no eval."""
    if request.fully_async:
        return [_finding("DRF033", Severity.INFO, "The fully-async rollout cannot evaluate (it raises in "
                         "evaluation mode), so the draft leaves EVAL_ARGS empty.",
                         source=slime_source(SRC_FULLY_ASYNC, 272))]
    return []


def choose_model_script(request: DraftRequest) -> tuple[ModelScript | None, list[Finding]]:
    """The model script to source: the one named in the request, else an exact match for the model name.
    A family-only or unknown match is the user's choice, so it is an error rather than a guess."""
    scripts = load_model_scripts()
    if request.model_script:
        chosen = next((s for s in scripts if s.name == request.model_script), None)
        if chosen is None:
            return None, [_finding("DRF002", Severity.ERROR,
                                   f"slime ships no model script named '{request.model_script}'.",
                                   fix="pick one of the names under scripts/models",
                                   source=slime_source("scripts/models"))]
        return chosen, []
    match = match_model(request.model)
    if match.status == "exact":
        return match.scripts[0], []
    if match.status == "family":
        names = ", ".join(s.name for s in match.scripts)
        return None, [_finding("DRF001", Severity.ERROR, f"Pick the model script for your model: {names}. "
                               "The draft does not guess sizes.", fix="choose one of: " + names,
                               source=slime_source("scripts/models"))]
    return None, [_finding("DRF001", Severity.ERROR, match.message,
                           fix="write MODEL_ARGS from your model's config.json, or pick a close model script",
                           source=slime_source("scripts/models"))]


def _largest_divisor_at_most(total: int, cap: int) -> int:
    for d in range(min(cap, total), 0, -1):
        if total % d == 0:
            return d
    return 1


def plan_gpu_layout(request: DraftRequest, model_script: ModelScript | None) -> tuple[GpuLayout | None,
                                                                                       list[Finding]]:
    """Split the saved GPUs between actor and rollout.

    Colocated (`--colocate`): actor and engines share every GPU, and slime sets --rollout-num-gpus to the
    actor's GPU count when it is not given. Disaggregated: the actor gets whole nodes (or part of the one
    node) and the rest go to the engines via --rollout-num-gpus. train_async.py needs disaggregated.
    """
    findings: list[Finding] = []
    total, per, nodes = request.gpus_total, request.per_node, request.nodes
    is_async = request.train_entry == "train_async.py"
    colocate = (not is_async) if request.colocate is None else request.colocate
    findings += check_async_not_colocated(request)
    if findings:
        return None, findings
    example = EXAMPLE_PARALLEL.get(model_script.name if model_script else "", FALLBACK_PARALLEL)
    explanation: list[str] = []

    if colocate:
        actor_nodes, actor_per = nodes, per
        rollout_gpus = total
        explanation.append(
            f"Colocated: the actor and the SGLang engines take turns on all {total} GPU(s); slime offloads "
            f"one while the other runs, and sets --rollout-num-gpus to the actor's {total} GPUs when it is "
            f"not given ({slime_source(SRC_ARGS, 1952)}). Best when memory is tight or there is one GPU.")
    else:
        if total < 2:
            return None, [_finding("DRF011", Severity.ERROR, "A split layout needs at least 2 GPUs (one for "
                                   "the actor, one for the engines); you have 1.",
                                   fix="use the colocated layout (train.py --colocate)" if not is_async else
                                   "async training needs 2 or more GPUs; use the GRPO workflow (colocated)",
                                   source=slime_source("slime/ray/placement_group.py", 117))]
        actor = request.actor_gpus
        if actor is None:
            actor = (nodes // 2) * per if nodes > 1 else max(1, per // 2)
        if actor >= total:
            return None, [_finding("DRF012", Severity.ERROR, f"The actor cannot take {actor} of {total} GPUs: "
                                   "the engines need at least one.", flag="--actor-num-gpus-per-node",
                                   fix=f"give the actor fewer than {total} GPUs")]
        if actor > per and actor % per:
            return None, [_finding("DRF012", Severity.ERROR, f"{actor} actor GPUs do not fill whole nodes of "
                                   f"{per}; slime places the actor as nodes x GPUs-per-node.",
                                   flag="--actor-num-nodes", fix=f"use a multiple of {per}, or fewer than {per}",
                                   source=slime_source(SRC_ARGS, 39))]
        actor_nodes, actor_per = (actor // per, per) if actor >= per else (1, actor)
        rollout_gpus = total - actor
        explanation.append(
            f"Disaggregated: the actor trains on {actor} GPU(s) ({actor_nodes} node(s) x {actor_per}) while "
            f"{rollout_gpus} GPU(s) serve rollouts (--rollout-num-gpus); Ray places the actor first and the "
            f"engines after it ({slime_source('slime/ray/placement_group.py', 117)}). Both sides stay "
            "loaded, so nothing is offloaded between phases.")
        if is_async:
            explanation.append("train_async.py requires this split: it generates the next rollout on the "
                               f"engine GPUs while the actor trains ({slime_source(SRC_ASYNC, 11)}).")

    actor_gpus = actor_nodes * actor_per
    cp = _largest_divisor_at_most(actor_gpus, example.context_parallel)
    if request.tensor_parallel is not None:
        tp = request.tensor_parallel
        if tp > actor_per or actor_gpus % (tp * cp):
            findings.append(_finding("DRF013", Severity.ERROR, f"Tensor parallel {tp} does not fit "
                                     f"{actor_gpus} actor GPU(s) ({actor_per} per node).",
                                     flag="--tensor-model-parallel-size",
                                     fix="use a divisor of the actor's GPUs per node",
                                     source="megatron/training/arguments.py:317@1dcf0daf"))
    else:
        tp = _largest_divisor_at_most(actor_gpus // cp, min(example.tensor_parallel, actor_per))
        if (tp, cp) != (example.tensor_parallel, example.context_parallel):
            findings.append(_finding(
                "DRF015", Severity.WARNING,
                f"slime's example for this model uses tensor parallel {example.tensor_parallel} and context "
                f"parallel {example.context_parallel}; {actor_gpus} actor GPU(s) allow {tp} and {cp}, so each "
                "GPU holds more of the model than in the example.", flag="--tensor-model-parallel-size",
                source=example.source))
    dp = max(1, actor_gpus // max(1, tp * cp))

    engine_cap = min(example.engine_gpus, per)
    if request.rollout_gpus_per_engine is not None:
        engine = request.rollout_gpus_per_engine
        if rollout_gpus % engine:
            findings.append(_finding("DRF014", Severity.ERROR, f"{rollout_gpus} rollout GPU(s) do not split "
                                     f"into engines of {engine}.", flag="--rollout-num-gpus-per-engine",
                                     fix=f"use a divisor of {rollout_gpus}", source=slime_source(SRC_ARGS, 56)))
    else:
        engine = _largest_divisor_at_most(rollout_gpus, engine_cap)
    explanation.append(f"Training parallelism: tensor {tp} x context {cp} x data {dp} = {actor_gpus} GPU(s). "
                       f"Rollout: {max(1, rollout_gpus // engine)} SGLang engine(s) of {engine} GPU(s).")
    set_gpn = per != SLIME_DEFAULT_GPUS_PER_NODE
    if set_gpn:
        explanation.append(f"Your nodes have {per} GPU(s), not slime's assumed {SLIME_DEFAULT_GPUS_PER_NODE}, "
                           f"so the draft sets --num-gpus-per-node {per} ({slime_source(SRC_ARGS, 62)}).")
    layout = GpuLayout(mode="colocated" if colocate else "disaggregated", nodes=nodes, per_node=per,
                       actor_nodes=actor_nodes, actor_gpus_per_node=actor_per, rollout_gpus=rollout_gpus,
                       rollout_gpus_per_engine=engine, tensor_parallel=tp, context_parallel=cp, data_parallel=dp,
                       set_num_gpus_per_node=set_gpn, explanation=explanation)
    return layout, findings


def plan_batches(request: DraftRequest) -> tuple[BatchPlan, list[Finding]]:
    """Samples per rollout = rollout batch size x samples per prompt; with no --global-batch-size the
    draft sets it to that product, i.e. one optimizer step per rollout (slime's own guidance)."""
    findings: list[Finding] = []
    samples = request.rollout_batch_size * request.n_samples_per_prompt
    gbs = request.global_batch_size or samples
    if gbs > samples:
        findings.append(_finding("DRF021", Severity.ERROR, f"--global-batch-size {gbs} is more than the {samples} "
                                 "samples one rollout produces, so no full optimizer step fits in a rollout.",
                                 flag="--global-batch-size", fix=f"use {samples} (one step per rollout) or a "
                                 "divisor of it", source=slime_source("slime/backends/megatron_utils/model.py",
                                                                       203)))
    elif samples % gbs:
        findings.append(_finding("DRF020", Severity.WARNING, f"{samples} samples per rollout is not a whole "
                                 f"number of global batches of {gbs}.", flag="--global-batch-size",
                                 fix=f"use a divisor of {samples}", source=slime_source(SRC_ARGS, 703)))
    steps = max(0, samples // gbs)
    if request.n_samples_per_prompt == 1:
        findings.append(_finding("DRF022", Severity.WARNING, "GRPO compares several answers to the same prompt; "
                                 "with 1 sample per prompt every advantage is zero-centred on a single answer "
                                 "and slime turns std normalisation off.", flag="--n-samples-per-prompt",
                                 fix="use 4 to 16 samples per prompt (slime's example uses 8)",
                                 source=slime_source(SRC_ARGS, 1981)))
    plan = BatchPlan(rollout_batch_size=request.rollout_batch_size,
                     n_samples_per_prompt=request.n_samples_per_prompt, samples_per_rollout=samples,
                     global_batch_size=gbs, steps_per_rollout=steps, num_rollout=request.num_rollout,
                     total_steps=steps * request.num_rollout)
    return plan, findings


# ---------------------------------------------------------------------------------------------------
# Script assembly
# ---------------------------------------------------------------------------------------------------

class ArgLine(BaseModel):
    flag: str
    value: str | None = None
    comment: str | None = None


def q(value: object) -> str:
    """Quote a value for bash so that it is one inert word whatever characters it holds."""
    return shlex.quote(str(value))


def _comment_text(text: str) -> str:
    """Comment text on one line (a newline would end the comment and start a command)."""
    return re.sub(r"[\r\n\0]+", " ", text)


def _fmt_float(x: float) -> str:
    """Short decimal text for a number: 1e-06 -> 1e-6, 1.0 -> 1, 0.7 -> 0.7."""
    text = f"{float(x):.10g}"
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), text)


def _model_base(model: str) -> str:
    return model.strip().rstrip("/").split("/")[-1] or "model"


def build_groups(request: DraftRequest, layout: GpuLayout, batch: BatchPlan,
                 example: ExampleParallel) -> dict[str, list[ArgLine | str]]:
    """Every array group as ordered lines: an ArgLine, or a str that becomes a comment."""
    base = _model_base(request.model)
    hf = request.hf_checkpoint or (request.model if request.model.startswith("/") else f"/root/{base}")
    ref = request.ref_load or f"/root/{_model_base(hf)}_torch_dist"
    save = request.save_dir or f"/root/{_model_base(hf)}_slime/"
    src = SRC_QWEN3_4B
    g: dict[str, list[ArgLine | str]] = {name: [] for name in GROUPS}

    g["CKPT_ARGS"] = [
        f"YOUR CHOICE: checkpoint locations (layout as in {slime_source(src, 41)}).",
        ArgLine(flag="--hf-checkpoint", value=hf),
        "torch_dist copy made once with tools/convert_hf_to_torch_dist.py; the KL reference loads it",
        ArgLine(flag="--ref-load", value=ref),
        ArgLine(flag="--load", value=save),
        ArgLine(flag="--save", value=save),
        ArgLine(flag="--save-interval", value=str(request.save_interval)),
    ]
    rollout: list[ArgLine | str] = []
    if request.fully_async:
        rollout += [f"fully-async rollout: in-flight generations kept across rollouts "
                    f"({slime_source(SRC_FULLY_ASYNC, 8)})",
                    ArgLine(flag="--rollout-function-path", value=FULLY_ASYNC_FUNCTION)]
    rollout += [
        ArgLine(flag="--prompt-data", value=request.data_path),
        f"slime's default input key is 'input' ({slime_source(SRC_ARGS, 659)}); set it to your prompt column",
        ArgLine(flag="--input-key", value=request.input_key),
    ]
    if request.label_key:
        rollout.append(ArgLine(flag="--label-key", value=request.label_key))
    if request.apply_chat_template:
        rollout += ["YOUR CHOICE: a plain-string prompt is wrapped as one user message "
                    f"({slime_source('slime/utils/data.py', 145)}); drop this for a base model without a chat "
                    "template",
                    ArgLine(flag="--apply-chat-template")]
    rollout.append(ArgLine(flag="--rollout-shuffle"))
    if request.custom_rm_path:
        rollout.append(ArgLine(flag="--custom-rm-path", value=request.custom_rm_path))
    elif request.rm_type:
        rollout += [f"YOUR CHOICE: the reward; built-in types are listed from "
                    f"{slime_source('slime/rollout/rm_hub/__init__.py', 75)}",
                    ArgLine(flag="--rm-type", value=request.rm_type)]
    elif request.reward_set_by_generate:
        rollout.append("the generate function sets sample.reward; slime computes a reward only for samples "
                       f"left without one ({slime_source('slime/rollout/sglang_rollout.py', 285)})")
    else:
        rollout.append("YOUR CHOICE: no reward set; add --rm-type or --custom-rm-path before running")
    rollout += [
        ArgLine(flag="--num-rollout", value=str(batch.num_rollout)),
        ArgLine(flag="--rollout-batch-size", value=str(batch.rollout_batch_size)),
        ArgLine(flag="--n-samples-per-prompt", value=str(batch.n_samples_per_prompt)),
        ArgLine(flag="--rollout-max-response-len", value=str(request.rollout_max_response_len)),
        ArgLine(flag="--rollout-temperature", value=_fmt_float(request.rollout_temperature)),
        f"{batch.rollout_batch_size} prompts x {batch.n_samples_per_prompt} samples = "
        f"{batch.samples_per_rollout} samples per rollout; {batch.steps_per_rollout} optimizer step(s) of "
        f"{batch.global_batch_size}",
        ArgLine(flag="--global-batch-size", value=str(batch.global_batch_size)),
        ArgLine(flag="--balance-data"),
    ]
    g["ROLLOUT_ARGS"] = rollout

    if request.fully_async:
        g["EVAL_ARGS"] = [f"the fully-async rollout has no evaluation mode ({slime_source(SRC_FULLY_ASYNC, 272)})"]
    else:
        g["EVAL_ARGS"] = [
            f"YOUR CHOICE: name a held-out set to evaluate on (as in {slime_source(src, 66)}), e.g.",
            "--eval-interval 20",
            "--eval-prompt-data aime /path/to/aime-2024.jsonl",
            "--n-samples-per-eval-prompt 16",
        ]

    perf: list[ArgLine | str] = [
        f"parallelism for {layout.actor_gpus} actor GPU(s); the example for this model: {example.source}",
        ArgLine(flag="--tensor-model-parallel-size", value=str(layout.tensor_parallel)),
    ]
    if layout.tensor_parallel > 1:
        perf.append(ArgLine(flag="--sequence-parallel"))
    perf += [
        ArgLine(flag="--pipeline-model-parallel-size", value="1"),
        ArgLine(flag="--context-parallel-size", value=str(layout.context_parallel)),
        ArgLine(flag="--expert-model-parallel-size", value="1"),
        ArgLine(flag="--expert-tensor-parallel-size", value="1"),
        ArgLine(flag="--recompute-granularity", value="full"),
        ArgLine(flag="--recompute-method", value="uniform"),
        ArgLine(flag="--recompute-num-layers", value="1"),
        ArgLine(flag="--use-dynamic-batch-size"),
        ArgLine(flag="--max-tokens-per-gpu", value=str(example.max_tokens_per_gpu)),
    ]
    g["PERF_ARGS"] = perf

    grpo: list[ArgLine | str] = [f"objective as in {slime_source(src, 91)}",
                                 ArgLine(flag="--advantage-estimator", value="grpo")]
    if request.use_kl_loss:
        grpo += ["KL to the --ref-load model; a coefficient of 0 logs the KL without penalising it",
                 ArgLine(flag="--use-kl-loss"),
                 ArgLine(flag="--kl-loss-coef", value=_fmt_float(request.kl_loss_coef)),
                 ArgLine(flag="--kl-loss-type", value="low_var_kl")]
    grpo += [ArgLine(flag="--entropy-coef", value="0.00"), ArgLine(flag="--eps-clip", value="0.2"),
             ArgLine(flag="--eps-clip-high", value="0.28")]
    g["GRPO_ARGS"] = grpo

    g["OPTIMIZER_ARGS"] = [
        f"as in {slime_source(src, 101)}",
        ArgLine(flag="--optimizer", value="adam"),
        ArgLine(flag="--lr", value=_fmt_float(request.lr)),
        ArgLine(flag="--lr-decay-style", value="constant"),
        ArgLine(flag="--weight-decay", value="0.1"),
        ArgLine(flag="--adam-beta1", value="0.9"),
        ArgLine(flag="--adam-beta2", value="0.98"),
    ]

    sglang: list[ArgLine | str] = [
        ArgLine(flag="--rollout-num-gpus-per-engine", value=str(layout.rollout_gpus_per_engine)),
        f"memory share SGLang may take ({slime_source(src, 119)}); lower it if colocated runs out of memory",
        ArgLine(flag="--sglang-mem-fraction-static", value=_fmt_float(request.sglang_mem_fraction_static)),
    ]
    if request.fully_async:
        conc = request.sglang_server_concurrency or SGLANG_SERVER_CONCURRENCY_DEFAULT
        sglang += [f"in-flight generations per engine; the fully-async worker keeps this x engines running "
                   f"({slime_source(SRC_FULLY_ASYNC, 59)})",
                   ArgLine(flag="--sglang-server-concurrency", value=str(conc))]
    g["SGLANG_ARGS"] = sglang

    misc: list[ArgLine | str] = [
        f"as in {slime_source(src, 122)}",
        ArgLine(flag="--attention-dropout", value="0.0"),
        ArgLine(flag="--hidden-dropout", value="0.0"),
        ArgLine(flag="--accumulate-allreduce-grads-in-fp32"),
        ArgLine(flag="--attention-softmax-in-fp32"),
        "drop the next line for models with multi-latent attention (MLA)",
        ArgLine(flag="--attention-backend", value="flash"),
    ]
    if request.train_entry == "train_async.py":
        misc += [f"weights reach the engines every N rollouts ({slime_source(SRC_ASYNC, 66)}); "
                 f"N <= the staleness you accept ({request.staleness})",
                 ArgLine(flag="--update-weights-interval", value=str(request.update_weights_interval))]
    g["MISC_ARGS"] = misc
    _apply_extra_args(g, request.extra_args)
    return g


def _apply_extra_args(groups: dict[str, list[ArgLine | str]], extras: Sequence[ExtraArg]) -> None:
    """Each extra flag replaces a generated flag of the same name, then is appended to its group."""
    flags = {e.flag for e in extras}
    for name, lines in groups.items():
        groups[name] = [ln for ln in lines if not (isinstance(ln, ArgLine) and ln.flag in flags)]
    for e in extras:
        lines = groups.setdefault(e.group, [])
        if e.comment:
            lines.append(e.comment)
        lines.append(ArgLine(flag=e.flag, value=e.value))


def _render_group(name: str, lines: list[ArgLine | str]) -> list[str]:
    out = [f"{name}=("]
    for ln in lines:
        if isinstance(ln, str):
            out.append(f"   # {_comment_text(ln)}")
        elif ln.value is None:
            out.append(f"   {ln.flag}")
        else:
            out.append(f"   {ln.flag} {q(ln.value)}")
    out.append(")")
    return out


def _runtime_env_lines(request: DraftRequest) -> list[str]:
    """RUNTIME_ENV_JSON built from quoted pieces; the NVLink switch is filled in by the shell."""
    pythonpath = ":".join(["/root/Megatron-LM/", *request.extra_pythonpath])
    head = json.dumps({"env_vars": {"PYTHONPATH": pythonpath, "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                                    "NCCL_NVLS_ENABLE": "@@"}})
    before, after = head.split('"@@"')
    return [f'RUNTIME_ENV_JSON={q(before + chr(34))}"${{HAS_NVLINK}}"{q(chr(34) + after)}']


def build_script(request: DraftRequest, layout: GpuLayout, batch: BatchPlan, model_script: ModelScript | None,
                 example: ExampleParallel) -> str:
    """The full bash launch script, in the shape of slime's own run-*.sh (without their pkill preamble)."""
    groups = build_groups(request, layout, batch, example)
    entry = request.train_entry
    lines = [
        "#!/bin/bash",
        f"# DRAFT for review, written by slime assistant ({request.kind}); nothing was run.",
        f"# Facts pinned to slime {SLIME_SHORT}. Read every line marked YOUR CHOICE before running.",
        "# Run it from the root of your slime checkout (the folder that holds train.py).",
        "",
        "if [ ! -f train.py ] || [ ! -d scripts/models ]; then",
        '   echo "Run this from the root of your slime checkout." >&2',
        "   exit 1",
        "fi",
        "",
        "export PYTHONUNBUFFERED=1",
        NVLINK_PROBE,
        'if [ "$NVLINK_COUNT" -gt 0 ]; then HAS_NVLINK=1; else HAS_NVLINK=0; fi',
        "",
        "set -ex",
        "",
    ]
    if model_script is not None:
        lines += [f"# MODEL_ARGS for {_comment_text(model_script.name)} ({model_script.source})",
                  f"source {q(model_script.path)}"]
    else:
        lines += ["# YOUR CHOICE: no model script matched; fill MODEL_ARGS from your model's config.json",
                  "MODEL_ARGS=(", ")"]
    for name in [*GROUPS, *[k for k in groups if k not in GROUPS]]:
        lines += ["", *_render_group(name, groups[name])]

    lines += ["", f"# GPU layout: {layout.mode}; actor {layout.actor_nodes} node(s) x {layout.actor_gpus_per_node}"
              f", rollout {layout.rollout_gpus} GPU(s) in engines of {layout.rollout_gpus_per_engine}",
              'export MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}',
              f'ray start --head --node-ip-address "${{MASTER_ADDR}}" --num-gpus {layout.per_node} '
              "--disable-usage-stats --dashboard-host=0.0.0.0 --dashboard-port=8265"]
    if layout.nodes > 1:
        lines += [f"# On each of the other {layout.nodes - 1} node(s), before the job below starts, run:",
                  f'#   ray start --address="${{MASTER_ADDR}}:6379" --num-gpus {layout.per_node} '
                  "--disable-usage-stats",
                  f"# and wait until 'ray status' shows {request.gpus_total} GPUs."]
    lines += ["", *_runtime_env_lines(request), ""]
    cluster = [f"--actor-num-nodes {layout.actor_nodes}", f"--actor-num-gpus-per-node {layout.actor_gpus_per_node}"]
    if layout.mode == "colocated":
        cluster.append("--colocate")
    else:
        cluster.append(f"--rollout-num-gpus {layout.rollout_gpus}")
    if layout.set_num_gpus_per_node:
        cluster.append(f"--num-gpus-per-node {layout.per_node}")
    arrays = ['"${MODEL_ARGS[@]}"', *[f'"${{{name}[@]}}"' for name in [*GROUPS, *[k for k in groups
                                                                                   if k not in GROUPS]]]]
    submit = ['ray job submit --address="http://127.0.0.1:8265"', '--runtime-env-json="${RUNTIME_ENV_JSON}"',
              f"-- python3 {entry}", *cluster, *arrays]
    lines.append(" \\\n   ".join(submit))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------------

def md_escape(text: str) -> str:
    """Escape markdown so user text (paths, names) shows literally in the summary."""
    return "".join("\\" + ch if ch in "\\`*_{}[]()<>#+-.!|~$:" else ch for ch in str(text))


def build_summary(request: DraftRequest, layout: GpuLayout, batch: BatchPlan,
                  model_script: ModelScript | None, checks: list[RuleResult]) -> str:
    """Markdown: the numbers, the GPU layout, the batch arithmetic, and what each group does."""
    ms = md_escape(model_script.path) if model_script else "none matched (fill MODEL\\_ARGS yourself)"
    out = [
        f"## Configuration summary ({md_escape(request.kind)}, `{request.train_entry}`)",
        "",
        f"- Model: {md_escape(request.model)}; model script: {ms}",
        f"- Data: {md_escape(request.data_path)}; prompt key {md_escape(request.input_key)}"
        + (f", label key {md_escape(request.label_key)}" if request.label_key else ", no label key"),
        f"- GPUs: {request.gpus_total} ({layout.nodes} node(s) x {layout.per_node})",
        "- Before launch, check the data with the model's tokenizer (the \"Check my data\" page, or "
        "`slime-assistant check-data DATA --tokenizer HF_CHECKPOINT`): it shows each prompt as the model "
        "receives it and every row slime would skip, crash on or drop for --rollout-max-prompt-len.",
        "",
        "### GPU layout",
        "",
        f"- Mode: **{layout.mode}**",
        f"- Actor (Megatron): {layout.actor_nodes} node(s) x {layout.actor_gpus_per_node} GPU(s) = "
        f"{layout.actor_gpus}; tensor parallel {layout.tensor_parallel}, context parallel "
        f"{layout.context_parallel}, data parallel {layout.data_parallel}",
        f"- Rollout (SGLang): {layout.rollout_gpus} GPU(s), {layout.engines} engine(s) of "
        f"{layout.rollout_gpus_per_engine}",
        *[f"- {e}" for e in layout.explanation],
        "",
        "### Batch arithmetic",
        "",
        f"- {batch.rollout_batch_size} prompts x {batch.n_samples_per_prompt} samples per prompt = "
        f"**{batch.samples_per_rollout} samples per rollout**",
        f"- Global batch {batch.global_batch_size} -> {batch.steps_per_rollout} optimizer step(s) per rollout",
        f"- {batch.num_rollout} rollouts -> {batch.total_steps} optimizer steps, "
        f"{batch.num_rollout * batch.rollout_batch_size} prompts drawn in total",
    ]
    if request.train_entry == "train_async.py":
        out += ["", "### Asynchrony", "",
                f"- Weights reach the engines every {request.update_weights_interval} rollout(s) "
                f"(--update-weights-interval); accepted staleness {request.staleness} rollout(s)",
                *[f"- {'PASS' if c.passed else 'FAIL'}: {md_escape(c.message)} ({md_escape(c.source)})"
                  for c in checks]]
        if request.fully_async:
            out.append("- Fully-async rollout: finished groups may wait in the queue across a weight sync, so "
                       "some samples can be older than the interval alone suggests")
    out += ["", "### What each group does", ""]
    out += [f"- `{name}`: {purpose}" for name, purpose in GROUP_PURPOSE.items()]
    for e in request.extra_args:
        out.append(f"- `{e.flag}` (added to `{e.group}`)")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------
# The checker and the whole draft
# ---------------------------------------------------------------------------------------------------

def run_launch_checker(script: str, gpus: int) -> list[Finding] | None:
    """The launch-argument checker's findings on the drafted script."""
    from core.launch import CheckOptions, check_launch_script  # the checker loads its catalog: only when used

    report = check_launch_script(script, CheckOptions(entry=None, gpus=gpus))
    return list(report.findings)


NVLINK_PROBE = "NVLINK_COUNT=$(nvidia-smi topo -m 2>/dev/null | grep -o 'NV[0-9][0-9]*' | wc -l)"
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
                        checker: Callable[[str, int], list[Finding] | None] | None = None) -> Draft:
    """Plan, write and check a launch script. Errors in planning give a draft that is not ready.

    `checker` defaults to `run_launch_checker` (looked up at call time); it returns None when unavailable.
    """
    checker = checker or run_launch_checker
    model_script, findings = choose_model_script(request)
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
