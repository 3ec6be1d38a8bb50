"""What a drafted launch script is made from and what it becomes: the request (every answer a workflow
collected), the planned GPU layout and batches, and the Draft itself."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.findings import Finding, Severity
from core.memory import MAX_GPUS, Profile, check_data_path
from core.model_scripts import ModelScript
from core.pins import slime_source

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


