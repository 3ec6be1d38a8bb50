""""How many GPUs do I need for <model>?": the question recognised, the model found among slime's model scripts,
and the fewest GPUs of a type on which training and rollout both fit, colocated, by the plan's own numbers.

The rules:
- a question is a sizing question when it asks how many GPUs (cards, H100s, ...) are needed, the minimum or
  the number of GPUs (SIZING_PATTERNS; English and Chinese), in at most MAX_QUESTION_CHARS characters;
- the model is the longest of slime's model scripts (knowledge/catalog/model_scripts.json) whose name the
  question contains, dashes between letters and digits optional and a trailing -Instruct, -RL, -AMD or -VL
  left out; a model-like word that names no script is said honestly (with the family's scripts when slime
  has some), never guessed;
- the GPU type is the one the question names (knowledge/gpus.yaml, names and aliases), else the caller's
  (the profile's), else H100-80GB, and the answer says which;
- the response length is the question's ("16k responses", "8192 tokens"), else 8192, with prompts of up to
  1024 tokens;
- for GPU counts from GPU_COUNTS, the fewest layouts first (TP x PP smallest, then PP smallest; TP within a
  node, MoE experts spread over every GPU of a stage with expert TP 1), each is planned colocated with dynamic
  batching, sequence parallelism and full recompute (the plan page's defaults); the answer is the first count
  where the training peak's upper band fits the GPU (no PLAN001) and some SGLang engine size dividing it leaves
  a KV pool (no PLAN002 error): the smallest engine whose pools hold a whole rollout at once, else the one that
  holds the most. A count where training fits only inside the uncertainty band is said too;
- the same search with the optimizer on the host (CPU Adam: --optimizer-cpu-offload
  --use-precision-aware-optimizer, as slime's largest examples run) is said beside it when it needs fewer GPUs,
  with the host memory a node then needs.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from pydantic import BaseModel, Field

from core.model_scripts import ModelScript, load_model_scripts, match_model
from core.plan.gpus import find_gpu, load_gpus
from core.plan.models import GIB, Plan, PlanError
from core.plan.sizing_question import MAX_QUESTION_CHARS, SIZING_PATTERNS, is_sizing_question  # noqa: F401

DEFAULT_GPU = "H100-80GB"
DEFAULT_RESPONSE, PROMPT = 8192, 1024
ROLLOUT_BATCH, SAMPLES = 32, 8
GPUS_PER_NODE = 8
GPU_COUNTS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
TP_SIZES, PP_SIZES, ENGINE_SIZES = (1, 2, 4, 8), (1, 2, 4, 8, 16, 32), (1, 2, 4, 8, 16, 32, 64, 128)
DROPPED_SUFFIXES = ("-instruct-2507", "-instruct-amd", "-instruct", "-rl", "-amd", "-vl")
_MODEL_WORD = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z0-9._/-]{0,60}?\d[A-Za-z0-9._-]{0,30}?[bB])(?![\w])")
_RESPONSE_K = re.compile(r"(?<![\w.])(\d{1,3})\s?[kK](?![\w])")
_RESPONSE_TOKENS = re.compile(r"(?<![\w.])(\d{3,6})\s*-?\s*tokens?\b", re.IGNORECASE)
PLAN_COMMAND = "slime-assistant plan YOUR_SCRIPT.sh --gpu {gpu} --format json"


class SizingLayout(BaseModel):
    gpus: int
    tp: int
    pp: int
    ep: int
    engine_gpus: int
    max_tokens_per_gpu: int


class CpuAdamOption(BaseModel):
    """Fewer GPUs with the optimizer on the host, and the host memory a node then needs."""

    gpus: int
    layout: SizingLayout
    training_peak_gib: float
    host_gib_per_node: float


class SizingAnswer(BaseModel):
    """The answer to a sizing question: the numbers when the model is known, else what could not be found."""

    status: str = Field(pattern="^(found|unknown_model|no_model|none_fits)$")
    message: str
    model: str | None = None
    model_source: str | None = None
    candidates: list[str] = Field(default_factory=list, description="slime's scripts of the family, when unknown")
    gpu: str
    gpu_from: str
    response_len: int
    response_from: str
    min_gpus: int | None = None
    layout: SizingLayout | None = None
    may_fit_gpus: int | None = Field(default=None, description="fewer GPUs where it fits only inside the band")
    cpu_adam: CpuAdamOption | None = Field(default=None, description="fewer GPUs with the optimizer on the host")
    training_peak_gib: float | None = None
    training_band_gib: tuple[float, float] | None = None
    gpu_memory_gib: float | None = None
    kv_pool_tokens: int | None = None
    concurrent_sequences: int | None = None
    requested_sequences: int | None = None
    seconds_per_rollout: float | None = None
    mfu: float | None = None
    plan_command: str
    plan_page: str = "Will it fit?"
    assumptions: list[str] = Field(default_factory=list)


def _runs_pattern(name: str) -> str:
    """A name as a pattern where a dash between letter and digit runs may be there or not ('qwen3-32b' also
    matches 'qwen-3 32b' once normalized)."""
    runs = re.findall(r"[a-z]+|[0-9][0-9.]*", name.lower())
    return r"-?".join(re.escape(r) for r in runs)


@lru_cache(maxsize=1)
def _model_patterns() -> tuple[tuple[re.Pattern[str], ModelScript], ...]:
    scripts = load_model_scripts()
    names = {s.name.lower() for s in scripts}
    out: list[tuple[int, re.Pattern[str], ModelScript]] = []
    for s in scripts:
        keys = {s.name.lower()}
        for suffix in DROPPED_SUFFIXES:
            if s.name.lower().endswith(suffix) and s.name.lower()[: -len(suffix)] not in names:
                keys.add(s.name.lower()[: -len(suffix)])
                break
        for key in keys:
            out.append((len(key), re.compile(rf"(?<![a-z0-9.]){_runs_pattern(key)}(?![a-z0-9])"), s))
    out.sort(key=lambda x: -x[0])
    return tuple((p, s) for _, p, s in out)


def _normalized(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower())


def find_model(text: str) -> ModelScript | None:
    """The longest slime model script the text names (the rules above), else None."""
    norm = _normalized(text)
    return next((s for p, s in _model_patterns() if p.search(norm)), None)


@lru_cache(maxsize=1)
def _gpu_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    out = []
    for g in load_gpus():
        for key in (g.name, *g.aliases):
            out.append((len(key), re.compile(rf"(?<![a-z0-9.]){_runs_pattern(key)}s?(?![a-z0-9])"), g.name))
    out.sort(key=lambda x: -x[0])
    return tuple((p, n) for _, p, n in out)


def find_gpu_in(text: str) -> str | None:
    """The GPU type the text names (the table's names and aliases, longest first), else None."""
    norm = _normalized(text)
    return next((n for p, n in _gpu_patterns() if p.search(norm)), None)


def response_len_in(text: str) -> int | None:
    """A response length the text gives: '16k' (x 1024) or '8192 tokens'."""
    m = _RESPONSE_K.search(text)
    if m and 1 <= int(m.group(1)) <= 512:
        return int(m.group(1)) * 1024
    m = _RESPONSE_TOKENS.search(text)
    return int(m.group(1)) if m and int(m.group(1)) >= 128 else None


CPU_ADAM_FLAGS = ("--optimizer-cpu-offload", "--use-precision-aware-optimizer")


def _values(model: ModelScript, n: int, tp: int, pp: int, ep: int, engine: int, response: int,
            tokens: int, cpu_adam: bool = False) -> dict[str, str | None]:
    per_node = min(n, GPUS_PER_NODE)
    values: dict[str, str | None] = {f"--{k}": v for k, v in model.values.items()}
    values |= {"--tensor-model-parallel-size": str(tp), "--pipeline-model-parallel-size": str(pp),
               "--expert-model-parallel-size": str(ep), "--rollout-num-gpus-per-engine": str(engine),
               "--max-tokens-per-gpu": str(tokens), "--rollout-max-response-len": str(response),
               "--rollout-max-prompt-len": str(PROMPT), "--rollout-batch-size": str(ROLLOUT_BATCH),
               "--n-samples-per-prompt": str(SAMPLES), "--use-dynamic-batch-size": None,
               "--accumulate-allreduce-grads-in-fp32": None, "--actor-num-nodes": str(n // per_node),
               "--actor-num-gpus-per-node": str(per_node), "--colocate": None, "--recompute-granularity": "full",
               "--recompute-method": "uniform", "--recompute-num-layers": "1"}
    if tp > 1:
        values["--sequence-parallel"] = None
    if ep > 1:
        values["--expert-tensor-parallel-size"] = "1"
    if cpu_adam:
        values |= dict.fromkeys(CPU_ADAM_FLAGS)
    return values


def _layouts(n: int, layers: int, experts: int) -> list[tuple[int, int, int]]:
    """(tp, pp, ep) for n GPUs, fewest model-parallel GPUs first, then the shallowest pipeline."""
    out = []
    for tp in TP_SIZES:
        for pp in PP_SIZES:
            if tp > min(n, GPUS_PER_NODE) or n % (tp * pp) or pp > max(layers, 1):
                continue
            ep = math.gcd(experts, tp * (n // (tp * pp))) if experts else 1
            out.append((tp, pp, ep))
    return sorted(out, key=lambda x: (x[0] * x[1], x[1]))


def _plan(values: dict[str, str | None], gpu: str) -> Plan | None:
    from core.plan.plan import plan_values

    try:
        return plan_values(values, gpu, search_fixes=False)
    except PlanError:
        return None


def _search(model: ModelScript, gpu: str, response: int,
            cpu_adam: bool = False) -> tuple[Plan | None, SizingLayout | None, int | None]:
    """The first GPU count that fits (its plan and layout), and a smaller count that fits inside the band."""
    spec = find_gpu(gpu)
    tokens = max(9216, -(-(response + PROMPT) // 1024) * 1024)
    layers = int(model.values.get("num-layers") or 1)
    experts = int(model.values.get("num-experts") or 0)
    may_fit = None
    for n in GPU_COUNTS:
        for tp, pp, ep in _layouts(n, layers, experts):
            first = _plan(_values(model, n, tp, pp, ep, min(n, GPUS_PER_NODE), response, tokens, cpu_adam), gpu)
            if first is None or first.training.low_bytes > spec.memory_bytes:
                continue
            if first.training.high_bytes > spec.memory_bytes:
                may_fit = may_fit or n
                continue
            best = _engine(model, n, (tp, pp, ep), gpu, response, tokens, cpu_adam)
            if best is not None:
                return best[1], SizingLayout(gpus=n, tp=tp, pp=pp, ep=ep, engine_gpus=best[0],
                                             max_tokens_per_gpu=tokens), may_fit
    return None, None, may_fit


def _engine(model: ModelScript, n: int, layout: tuple[int, int, int], gpu: str, response: int,
            tokens: int, cpu_adam: bool) -> tuple[int, Plan] | None:
    """The smallest SGLang engine (GPUs, dividing n) whose KV pools hold a whole rollout at once, else the one
    holding the most sequences; None when no engine size leaves a KV pool."""
    best: tuple[int, Plan] | None = None
    for engine in (e for e in ENGINE_SIZES if e <= n and n % e == 0):
        plan = _plan(_values(model, n, *layout, engine, response, tokens, cpu_adam), gpu)
        ro = plan.rollout if plan is not None else None
        if ro is None or ro.kv_pool_tokens <= 0:
            continue
        if ro.concurrent_sequences >= ro.requested_sequences:
            return engine, plan
        if best is None or ro.concurrent_sequences > best[1].rollout.concurrent_sequences:
            best = engine, plan
    return best


def sizing_answer(question: str, default_gpu: str | None = None) -> SizingAnswer | None:
    """The answer to a sizing question (None when the text is not one; see the module's rules)."""
    if not is_sizing_question(question):
        return None
    named_gpu = find_gpu_in(question)
    gpu, gpu_from = ((named_gpu, "your question") if named_gpu else
                     (find_gpu(default_gpu).name, "your profile") if _known_gpu(default_gpu) else
                     (DEFAULT_GPU, "assumed"))
    asked = response_len_in(question)
    response, response_from = (asked, "your question") if asked else (DEFAULT_RESPONSE, "assumed")
    base = {"gpu": gpu, "gpu_from": gpu_from, "response_len": response, "response_from": response_from,
            "plan_command": PLAN_COMMAND.format(gpu=gpu)}
    model = find_model(question)
    if model is None:
        return _not_found(question, base)
    plan, layout, may_fit = _search(model, gpu, response)
    cpu_plan, cpu_layout, _ = _search(model, gpu, response, cpu_adam=True)
    cpu_adam = None
    if cpu_plan is not None and cpu_layout is not None and (layout is None or cpu_layout.gpus < layout.gpus):
        cpu_adam = CpuAdamOption(gpus=cpu_layout.gpus, layout=cpu_layout,
                                 training_peak_gib=round(cpu_plan.training.peak_bytes / GIB, 1),
                                 host_gib_per_node=round(cpu_plan.host.bytes_per_node / GIB))
    assumptions = [f"Colocated (--colocate), {GPUS_PER_NODE} GPUs a node, dynamic batching, sequence parallelism, "
                   "full recompute, the distributed optimizer on the GPU unless CPU Adam is named, bf16 weights for "
                   "SGLang at --sglang-mem-fraction-static 0.7.",
                   f"Rollouts of {ROLLOUT_BATCH} prompts x {SAMPLES} samples, responses of up to {response} tokens "
                   f"({response_from}) after prompts of up to {PROMPT}."]
    if gpu_from == "assumed":
        assumptions.append(f"GPU type {gpu}: name another in the question (H200, A100-80GB, ...) or in your profile.")
    found = {**base, "model": model.name, "model_source": model.source, "assumptions": assumptions,
             "may_fit_gpus": may_fit, "cpu_adam": cpu_adam}
    cpu_text = (f" With the optimizer on the host (CPU Adam: {' '.join(CPU_ADAM_FLAGS)}, as slime's largest examples "
                f"run), {cpu_adam.gpus} GPU(s) are enough (TP {cpu_adam.layout.tp}, PP {cpu_adam.layout.pp}"
                + (f", EP {cpu_adam.layout.ep}" if cpu_adam.layout.ep > 1 else "")
                + f"; training peak about {cpu_adam.training_peak_gib} GiB a GPU) if each node has about "
                  f"{cpu_adam.host_gib_per_node:.0f} GiB of host memory for it." if cpu_adam else "")
    if plan is None or layout is None:
        if cpu_adam is None:
            return SizingAnswer(status="none_fits", **found,
                                message=(f"{model.name} does not fit on up to {GPU_COUNTS[-1]} {gpu} GPUs with the "
                                         "plan's layouts; plan your own script (fp8, longer pipelines) to see why."))
        return SizingAnswer(status="found", **found, min_gpus=cpu_adam.gpus, layout=cpu_adam.layout,
                            message=(f"{model.name} does not fit on up to {GPU_COUNTS[-1]} {gpu} GPUs with the "
                                     f"optimizer on the GPU.{cpu_text}"))
    tr, ro = plan.training, plan.rollout
    engines = layout.gpus // layout.engine_gpus
    parts = [f"TP {layout.tp}"] + [f"PP {layout.pp}"] * (layout.pp > 1) + [f"EP {layout.ep}"] * (layout.ep > 1)
    band = (f" It may fit on {may_fit} inside the estimate's uncertainty band." if may_fit and may_fit < layout.gpus
            else "")
    message = (f"{model.name} needs at least {layout.gpus} {gpu} GPU(s), colocated: training with "
               f"{', '.join(parts)} peaks at about {tr.peak_bytes / GIB:.1f} GiB a GPU (up to {tr.high_bytes / GIB:.1f} "
               f"GiB with the band) of {plan.gpu.memory_bytes / GIB:.1f} GiB; {engines} SGLang engine(s) of "
               f"{layout.engine_gpus} GPU(s) hold {ro.kv_pool_tokens:,} KV tokens each, {ro.concurrent_sequences} "
               f"sequences at once of the {ro.requested_sequences} a rollout asks for.{band}{cpu_text}")
    return SizingAnswer(status="found", message=message, **found, min_gpus=layout.gpus, layout=layout,
                        training_peak_gib=round(tr.peak_bytes / GIB, 1),
                        training_band_gib=(round(tr.low_bytes / GIB, 1), round(tr.high_bytes / GIB, 1)),
                        gpu_memory_gib=round(plan.gpu.memory_bytes / GIB, 1), kv_pool_tokens=ro.kv_pool_tokens,
                        concurrent_sequences=ro.concurrent_sequences, requested_sequences=ro.requested_sequences,
                        seconds_per_rollout=round(plan.time.seconds_per_rollout, 1), mfu=plan.time.mfu)


def _known_gpu(name: str | None) -> bool:
    if not name:
        return False
    try:
        find_gpu(name)
    except PlanError:
        return False
    return True


def _not_found(question: str, base: dict) -> SizingAnswer:
    words = [w for w in _MODEL_WORD.findall(question) if find_gpu_in(w) is None]
    if not words:
        return SizingAnswer(status="no_model", **base,
                            message=("Name the model (one of slime's scripts/models, such as Qwen3-8B, "
                                     "Qwen3-30B-A3B or GLM-4.5-355B-A32B) to get a number of GPUs."))
    word = words[0]
    match = match_model(word)
    candidates = [s.name for s in match.scripts] if match.status == "family" else []
    also = f" slime has scripts for its family: {', '.join(candidates)}." if candidates else ""
    return SizingAnswer(status="unknown_model", **base, candidates=candidates,
                        message=(f"slime ships no model script for {word[:60]!r}, so its sizes are not known here.{also} "
                                 "Write its MODEL_ARGS from its config.json into a launch script and plan that."))


def sizing_flags(answer: SizingAnswer, cpu_adam: bool = False) -> str | None:
    """The layout of a found answer (or of its CPU Adam option) as the launch flags that set it."""
    lay = (answer.cpu_adam.layout if answer.cpu_adam else None) if cpu_adam else answer.layout
    if lay is None:
        return None
    return (f"--tensor-model-parallel-size {lay.tp} --pipeline-model-parallel-size {lay.pp}"
            + (f" --expert-model-parallel-size {lay.ep} --expert-tensor-parallel-size 1" if lay.ep > 1 else "")
            + f" --rollout-num-gpus-per-engine {lay.engine_gpus} --max-tokens-per-gpu {lay.max_tokens_per_gpu} "
              "--use-dynamic-batch-size --colocate" + (" " + " ".join(CPU_ADAM_FLAGS) if cpu_adam else ""))


def sizing_text(answer: SizingAnswer) -> str:
    """The answer as a short block of text: the number, the layout, where the GPU and lengths came from, and
    where to plan one's own script."""
    lines = [f"How many GPUs: {answer.message}"]
    if answer.model_source:
        lines.append(f"  model sizes from {answer.model_source}")
    lines.append(f"  GPU type {answer.gpu} ({answer.gpu_from}); responses of {answer.response_len} tokens "
                 f"({answer.response_from})")
    flags, cpu_flags = sizing_flags(answer), sizing_flags(answer, cpu_adam=True)
    if flags and not (answer.cpu_adam and answer.layout == answer.cpu_adam.layout):
        lines.append(f"  flags: {flags}")
    if cpu_flags:
        lines.append(f"  flags with CPU Adam ({answer.cpu_adam.gpus} GPUs): {cpu_flags}")
    if answer.seconds_per_rollout is not None and answer.mfu is not None:
        lines.append(f"  training time of one rollout at {answer.mfu:.0%} MFU: about {answer.seconds_per_rollout:.0f} s")
    lines += [f"  assumed: {a}" for a in answer.assumptions]
    lines.append(f"  plan your own script: {answer.plan_command} (or the {answer.plan_page} page)")
    return "\n".join(lines)
