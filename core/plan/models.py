"""The plan's data: what the CLI prints as JSON, what the page draws and what the verdicts are computed from."""

from __future__ import annotations

from pydantic import BaseModel, Field

from core.findings import Finding

GIB = 1 << 30


class PlanError(ValueError):
    """The plan cannot be made: an unknown GPU, or a script without the model's sizes. The message is for people."""


class GpuSpec(BaseModel):
    name: str
    aliases: list[str] = Field(default_factory=list)
    datasheet_memory: str
    memory_mib: int = Field(gt=0)
    memory_note: str | None = None  # where the MiB figure is not what the driver was seen to report
    bf16_flops: float = Field(gt=0)
    fp8_flops: float | None = None
    source: str

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * (1 << 20)


class GpuOut(BaseModel):
    """The `gpu` object of the plan: name, memory in bytes (as the driver reports it) and dense peaks."""

    name: str
    memory_bytes: int
    peak_flops: float  # dense bf16 tensor-core peak, FLOP/s
    fp8_peak_flops: float | None
    source: str


class Term(BaseModel):
    """One line of a memory (or time) sum: its bytes, how it was computed, where the rule comes from."""

    name: str
    bytes: int
    formula: str  # in words and symbols, with the numbers filled in
    source: str  # path:line@commit of the upstream code the term follows
    exact: bool = False  # arithmetic on the script's numbers (True) or an estimate with a band (False)


class StageMemory(BaseModel):
    stage: int
    layers: int
    params: int  # parameters held by one GPU of this stage
    peak_bytes: int


class TrainingPlan(BaseModel):
    terms: dict[str, int]  # bytes per GPU by name, for the largest pipeline stage
    detail: list[Term]
    peak_bytes: int
    low_bytes: int  # the band: peak x (1 - uncertainty)
    high_bytes: int
    uncertainty: float
    stage: int  # which pipeline stage is the largest (0-based)
    stages: list[StageMemory]
    parallel: dict[str, int]  # tp, pp, vpp, cp, ep, etp, dp, expert_dp, world
    params_total: int
    tokens_per_micro_batch: int


class RolloutPlan(BaseModel):
    weights_bytes: int  # per engine GPU
    kv_bytes_per_token: int  # SGLang's cell size per token on one engine GPU
    kv_pool_bytes: int
    static_budget_bytes: int  # what SGLang's static share (weights + pool) may take: pre-load free x fraction
    kv_pool_tokens: int
    concurrent_sequences: int  # sequences of the full context length the pool holds at once, all engines
    requested_sequences: int  # rollout-batch-size x n-samples-per-prompt
    engine_tp: int
    engines: int
    mem_fraction_static: float
    context_len: int
    kv_dtype: str
    detail: list[Term]


class SampleLimit(BaseModel):
    """The longest sample the flags allow against the longest one a training micro-batch can hold: slime never
    splits a sample, so one longer than --max-tokens-per-gpu x CP gets a micro-batch of its own."""

    bound_tokens: int | None  # the longest sample the flags allow; None when no flag bounds it
    bound_why: str
    fits_tokens: int  # the longest sample whose micro-batch's training peak (central estimate) fits the GPU
    gpu_tokens: int  # the most tokens a micro-batch may have on one GPU before that peak passes its memory
    peak_at_bound: int | None  # the training peak with a micro-batch of the longest allowed samples
    custom_generation: str | None  # the flag that hands generation to the user's code, if any
    bytes_per_token: int  # what one more token of that micro-batch costs on the largest stage
    logits_per_token: int  # of it: fp32 logits (and the output layer's input)
    workspace_per_token: int  # of it: the log-prob workspace on the fp32 logits
    activations_per_token: int
    samples_per_micro_batch: int
    dynamic: bool  # --use-dynamic-batch-size: micro-batches packed to --max-tokens-per-gpu, a longer sample alone
    cp: int
    source: str


class PhasePlan(BaseModel):
    """What one GPU holds in one phase of a step (colocated runs: training with SGLang paused, and the reverse)."""

    name: str  # "train" or "rollout"
    resident: dict[str, int]
    total_bytes: int


class HostPlan(BaseModel):
    bytes_per_node: int
    terms: dict[str, int]  # per node
    detail: list[Term]
    node_ram_bytes: int | None = None


class TimePlan(BaseModel):
    flops_per_sample: float  # forward FLOPs of one sample of the assumed length (slime's formula)
    flops_per_rollout: float  # forward + backward (3x forward) of every sample of one rollout
    mfu: float
    seconds_per_rollout: float  # training time of one rollout at that MFU
    sample_tokens: int
    samples_per_rollout: int
    source: str


class Plan(BaseModel):
    gpu: GpuOut
    model: dict[str, int | float | str | bool | None]
    training: TrainingPlan
    rollout: RolloutPlan | None
    phases: list[PhasePlan]
    host: HostPlan
    time: TimePlan
    verdicts: list[Finding]
    assumptions: list[str]
    sample: SampleLimit | None = None

    @property
    def ok(self) -> bool:
        return not any(v.severity.value == "error" for v in self.verdicts)
