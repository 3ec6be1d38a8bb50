"""Writing a draft: the launch script's array groups, every user value quoted with `shlex.quote`, and the
markdown configuration summary. Nothing here is executed."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence

from pydantic import BaseModel

from core.drafts.request import (
    FULLY_ASYNC_FUNCTION,
    GROUP_PURPOSE,
    GROUPS,
    SGLANG_SERVER_CONCURRENCY_DEFAULT,
    SRC_ARGS,
    SRC_ASYNC,
    SRC_FULLY_ASYNC,
    SRC_QWEN3_4B,
    BatchPlan,
    DraftRequest,
    ExampleParallel,
    ExtraArg,
    GpuLayout,
    RuleResult,
)
from core.model_scripts import ModelScript
from core.pins import SLIME_SHORT, slime_source

# ---------------------------------------------------------------------------------------------------
# Script assembly
# ---------------------------------------------------------------------------------------------------

# The draft's one command substitution: it sets no flag, so the checker's note about it is dropped.
NVLINK_PROBE = "NVLINK_COUNT=$(nvidia-smi topo -m 2>/dev/null | grep -o 'NV[0-9][0-9]*' | wc -l)"

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
        f"memory share SGLang may take ({slime_source(src, 119)}); " + (
            "colocated, the training actor needs the rest: lower it if training runs out of memory"
            if layout.mode == "colocated" else "the rollout GPUs are SGLang's alone: a larger share holds more KV "
            "cache, lower it only if SGLang itself runs out of memory (CUDA-graph capture, very long prompts)"),
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


