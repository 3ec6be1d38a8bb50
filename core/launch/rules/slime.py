"""Rules ported from slime's own argument validation (slime/utils/arguments.py slime_validate_args): SLIME0xx,
and ARG009 / ARG013, which slime's parser decides.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.registry import ARGS_CARD, rule
from core.launch.rules.registry import src as _src


@rule("ARG009", _src(693), ARGS_CARD)
def required_rollout_batch_size(ctx: RuleContext) -> Iterable[Finding]:
    """--rollout-batch-size is declared required: without it argparse stops before anything runs."""
    if ctx.fact("--rollout-batch-size").state == "absent":
        yield ctx.hit("ARG009", "--rollout-batch-size is required (argparse stops with 'the following arguments are "
                      "required').", flag="--rollout-batch-size", fix="add --rollout-batch-size N (prompts per "
                      "rollout)")


@rule("ARG013", _src(2013))
def custom_config_overrides(ctx: RuleContext) -> Iterable[Finding]:
    """--custom-config-path loads a YAML file whose keys override any argument after these checks' inputs."""
    path = ctx.need("--custom-config-path")
    if path:
        yield ctx.hit("ARG013", f"--custom-config-path {path}: its keys override command-line values after parsing; "
                      "this check sees only the command line.", flag="--custom-config-path")


@rule("SLIME001", _src(1770))
def temperature_positive(ctx: RuleContext) -> Iterable[Finding]:
    """slime refuses a rollout temperature of 0 or below: greedy decoding is not an RL policy."""
    t = ctx.need("--rollout-temperature", 1.0)
    if t is not None and t <= 0:
        yield ctx.hit("SLIME001", f"--rollout-temperature is {t}; slime requires > 0 (0 is greedy decoding, not a "
                      "valid RL policy).", flag="--rollout-temperature", fix="use a temperature such as 1.0")


@rule("SLIME002", _src(1776))
def kl_needs_ref_load(ctx: RuleContext) -> Iterable[Finding]:
    """With --kl-coef != 0 or --use-kl-loss, slime checks that --ref-load exists; without it the check fails."""
    kl_coef = ctx.need("--kl-coef", 0.0)
    use_kl = ctx.is_set("--use-kl-loss")
    if (kl_coef or use_kl) and ctx.need("--ref-load") is None:
        why = "--use-kl-loss" if use_kl else f"--kl-coef {kl_coef}"
        yield ctx.hit("SLIME002", f"{why} needs the reference model, but --ref-load is not given; slime's check of "
                      "the reference path fails before training.", flag="--use-kl-loss" if use_kl else "--kl-coef",
                      fix="add --ref-load /path/to/model_torch_dist")


@rule("SLIME003", _src(1846))
def kl_coef_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """Only one of --kl-coef (reward shaping) and --kl-loss-coef (loss term) may be non-zero."""
    a, b = ctx.need("--kl-coef", 0.0), ctx.need("--kl-loss-coef", 0.0)
    if a and b:
        yield ctx.hit("SLIME003", f"--kl-coef {a} and --kl-loss-coef {b} are both non-zero; slime allows only one.",
                      flag="--kl-loss-coef", fix="set one of them to 0")


@rule("SLIME004", _src(1786))
def opd_consistent(ctx: RuleContext) -> Iterable[Finding]:
    """--use-opd needs --opd-type; megatron OPD needs --opd-teacher-load; sglang OPD and no OPD forbid it."""
    use_opd = ctx.is_set("--use-opd")
    teacher = ctx.need("--opd-teacher-load")
    if not use_opd:
        if teacher is not None:
            yield ctx.hit("SLIME004", "--opd-teacher-load is set but --use-opd is not; slime refuses this.",
                          flag="--opd-teacher-load", fix="add --use-opd or remove --opd-teacher-load",
                          source=_src(1814))
        return
    kind = ctx.need("--opd-type")
    if kind is None:
        yield ctx.hit("SLIME004", "--use-opd needs --opd-type (sglang or megatron).", flag="--use-opd",
                      fix="add --opd-type sglang or --opd-type megatron", source=_src(1787))
    elif kind == "megatron" and teacher is None:
        yield ctx.hit("SLIME004", "--opd-type megatron needs --opd-teacher-load (the teacher checkpoint).",
                      flag="--opd-type", fix="add --opd-teacher-load /path/to/teacher_torch_dist", source=_src(1791))
    elif kind == "sglang" and teacher is not None:
        yield ctx.hit("SLIME004", "--opd-type sglang takes teacher log-probs from a server; --opd-teacher-load "
                      "must not be set.", flag="--opd-teacher-load", fix="remove --opd-teacher-load",
                      source=_src(1807))


@rule("SLIME005", _src(1841))
def eval_interval_needs_data(ctx: RuleContext) -> Iterable[Finding]:
    """An eval interval needs eval datasets (--eval-prompt-data or --eval-config)."""
    if ctx.need("--eval-interval") is None:
        return
    if ctx.need("--eval-prompt-data") is None and ctx.need("--eval-config") is None:
        yield ctx.hit("SLIME005", f"--eval-interval {ctx.need('--eval-interval')} is set but no evaluation data is "
                      "given; slime's assertion fails.", flag="--eval-interval",
                      fix="add --eval-prompt-data NAME PATH (or --eval-config FILE), or remove --eval-interval")


@rule("SLIME006", _src(1844))
def save_interval_needs_save(ctx: RuleContext) -> Iterable[Finding]:
    """--save-interval needs --save (where to write)."""
    si = ctx.need("--save-interval")
    if si is not None and ctx.need("--save") is None:
        yield ctx.hit("SLIME006", f"--save-interval {si} is set without --save; slime's assertion fails.",
                      flag="--save-interval", fix="add --save /path/to/checkpoints")


@rule("SLIME007", _src(1849))
def reinforce_needs_normalization(ctx: RuleContext) -> Iterable[Finding]:
    """The reinforce_plus_plus estimators require advantage normalisation."""
    est = ctx.need("--advantage-estimator", "grpo")
    if est in ("reinforce_plus_plus", "reinforce_plus_plus_baseline") and not ctx.is_set("--normalize-advantages"):
        yield ctx.hit("SLIME007", f"--advantage-estimator {est} requires --normalize-advantages.",
                      flag="--advantage-estimator", fix="add --normalize-advantages")


@rule("SLIME008", _src(1855))
def rollout_logprobs_vs_tis(ctx: RuleContext) -> Iterable[Finding]:
    """--use-rollout-logprobs and --use-tis cannot be combined."""
    if ctx.is_set("--use-rollout-logprobs") and ctx.is_set("--use-tis"):
        yield ctx.hit("SLIME008", "--use-rollout-logprobs and --use-tis cannot be set together.", flag="--use-tis",
                      fix="keep one of them")


@rule("SLIME009", _src(1859))
def mismatch_metrics_need_tis_fn(ctx: RuleContext) -> Iterable[Finding]:
    """--get-mismatch-metrics requires --custom-tis-function-path."""
    if ctx.is_set("--get-mismatch-metrics") and ctx.need("--custom-tis-function-path") is None:
        yield ctx.hit("SLIME009", "--get-mismatch-metrics needs --custom-tis-function-path.",
                      flag="--get-mismatch-metrics", fix="add --custom-tis-function-path module.function")


@rule("SLIME010", _src(1868))
def dynamic_batch_needs_max_tokens(ctx: RuleContext) -> Iterable[Finding]:
    """Dynamic batching packs micro-batches up to --max-tokens-per-gpu, so that flag is required."""
    if ctx.is_set("--use-dynamic-batch-size") and ctx.need("--max-tokens-per-gpu") is None:
        yield ctx.hit("SLIME010", "--use-dynamic-batch-size needs --max-tokens-per-gpu; slime's assertion fails.",
                      flag="--use-dynamic-batch-size", fix="add --max-tokens-per-gpu N (e.g. the longest response "
                      "length divided by the context-parallel size)")


@rule("SLIME011", _src(1873))
def flops_balance_needs_dynamic(ctx: RuleContext) -> Iterable[Finding]:
    """--balance-by-flops works only with dynamic batching."""
    if ctx.is_set("--balance-by-flops") and not ctx.is_set("--use-dynamic-batch-size"):
        yield ctx.hit("SLIME011", "--balance-by-flops requires --use-dynamic-batch-size.", flag="--balance-by-flops",
                      fix="add --use-dynamic-batch-size --max-tokens-per-gpu N, or remove --balance-by-flops")


@rule("SLIME012", _src(1895))
def debug_dump_paths_differ(ctx: RuleContext) -> Iterable[Finding]:
    """--save-debug-train-data must differ from --save-debug-rollout-data (unless --dump-details sets both)."""
    if ctx.need("--dump-details") is not None:
        return
    train, rollout = ctx.need("--save-debug-train-data"), ctx.need("--save-debug-rollout-data")
    if train is not None and train == rollout:
        yield ctx.hit("SLIME012", f"--save-debug-train-data and --save-debug-rollout-data are both '{train}'; slime "
                      "refuses equal paths.", flag="--save-debug-train-data", fix="use two different paths")


@rule("SLIME013", _src(1934))
def debug_modes_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """Only one debug mode at a time (--load-debug-rollout-data implies --debug-train-only)."""
    train_only = ctx.is_set("--debug-train-only") or ctx.need("--load-debug-rollout-data") is not None
    if ctx.is_set("--debug-rollout-only") and train_only:
        yield ctx.hit("SLIME013", "--debug-rollout-only cannot be combined with --debug-train-only (which "
                      "--load-debug-rollout-data also turns on).", flag="--debug-rollout-only", fix="keep one mode")


@rule("SLIME014", _src(1988))
def over_sampling_at_least_rollout(ctx: RuleContext) -> Iterable[Finding]:
    """The over-sampling batch (default: the rollout batch) must be >= --rollout-batch-size."""
    osb, rbs = ctx.need("--over-sampling-batch-size"), ctx.need("--rollout-batch-size")
    if osb is not None and rbs is not None and osb < rbs:
        yield ctx.hit("SLIME014", f"--over-sampling-batch-size {osb} is below --rollout-batch-size {rbs}; slime's "
                      "assertion fails.", flag="--over-sampling-batch-size",
                      fix=f"set --over-sampling-batch-size {rbs} or more, or remove it")


@rule("SLIME015", _src(2003))
def rollout_count_given(ctx: RuleContext) -> Iterable[Finding]:
    """slime needs --num-rollout or --num-epoch; --num-epoch needs the global dataset."""
    num_rollout, num_epoch = ctx.need("--num-rollout"), ctx.need("--num-epoch")
    if num_epoch is None and num_rollout is None:
        yield ctx.hit("SLIME015", "Neither --num-rollout nor --num-epoch is given; slime's assertion fails.",
                      fix="add --num-rollout N (rollout steps) or --num-epoch N")
    elif num_epoch is not None and num_rollout is None and ctx.need("--disable-rollout-global-dataset", True) is False:
        yield ctx.hit("SLIME015", "--num-epoch needs the global dataset, but --disable-rollout-global-dataset is "
                      "set.", flag="--num-epoch", source=_src(1997),
                      fix="remove --disable-rollout-global-dataset or use --num-rollout")


@rule("SLIME016", _src(2008))
def mtp_needs_layers(ctx: RuleContext) -> Iterable[Finding]:
    """MTP training needs a non-zero --mtp-num-layers."""
    if ctx.is_set("--enable-mtp-training") and not ctx.need("--mtp-num-layers"):
        yield ctx.hit("SLIME016", "--enable-mtp-training needs --mtp-num-layers.", flag="--enable-mtp-training",
                      fix="add --mtp-num-layers 1 (or the model's MTP depth)")


@rule("SLIME017", _src(2034))
def prompt_fits_context(ctx: RuleContext) -> Iterable[Finding]:
    """--rollout-max-prompt-len must be at most --rollout-max-context-len - 1 (one generated token at least)."""
    ctxlen, prompt = ctx.need("--rollout-max-context-len"), ctx.need("--rollout-max-prompt-len")
    if ctxlen is not None and prompt is not None and prompt > ctxlen - 1:
        yield ctx.hit("SLIME017", f"--rollout-max-prompt-len {prompt} leaves no room for a response in "
                      f"--rollout-max-context-len {ctxlen} (at most {ctxlen - 1}).", flag="--rollout-max-prompt-len",
                      fix=f"set --rollout-max-prompt-len {ctxlen - 1} or less; then `slime-assistant check-data "
                          "DATA --tokenizer HF_CHECKPOINT` lists the prompts slime drops for that length")


@rule("SLIME018", _src(2038))
def param_lists_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """--only-train-params-name-list and --freeze-params-name-list are mutually exclusive."""
    if ctx.need("--only-train-params-name-list") and ctx.need("--freeze-params-name-list"):
        yield ctx.hit("SLIME018", "--only-train-params-name-list and --freeze-params-name-list are mutually "
                      "exclusive.", flag="--freeze-params-name-list", fix="keep one of them")


@rule("SLIME019", _src(2042))
def disk_transport_needs_dir(ctx: RuleContext) -> Iterable[Finding]:
    """--update-weight-transport disk needs --update-weight-disk-dir on a shared filesystem."""
    if ctx.need("--update-weight-transport") == "disk" and not ctx.need("--update-weight-disk-dir"):
        yield ctx.hit("SLIME019", "--update-weight-transport disk needs --update-weight-disk-dir (a directory shared "
                      "by the trainer and the rollout engines).", flag="--update-weight-transport",
                      fix="add --update-weight-disk-dir /shared/path")


@rule("SLIME020", _src(2046))
def release_train_requirements(ctx: RuleContext) -> Iterable[Finding]:
    """--release-train: no critic (ppo), no --keep-old-actor, needs --save, full weights over disk."""
    if not ctx.is_set("--release-train"):
        return
    if ctx.need("--advantage-estimator", "grpo") == "ppo":
        yield ctx.hit("SLIME020", "--release-train does not support critic training (--advantage-estimator ppo).",
                      flag="--release-train", source=_src(2050))
    if ctx.is_set("--keep-old-actor"):
        yield ctx.hit("SLIME020", "--release-train does not support --keep-old-actor.", flag="--keep-old-actor",
                      source=_src(2052))
    if ctx.need("--save") is None:
        yield ctx.hit("SLIME020", "--release-train needs --save so the next actor can reload.", flag="--release-train",
                      fix="add --save /path/to/checkpoints", source=_src(2054))
    mode, transport = ctx.need("--update-weight-mode"), ctx.need("--update-weight-transport")
    if mode != "full" or transport != "disk":
        yield ctx.hit("SLIME020", f"--release-train needs --update-weight-mode full and --update-weight-transport disk "
                      f"(now {mode} and {transport}).", flag="--release-train", source=_src(2058),
                      fix="add --update-weight-mode full --update-weight-transport disk --update-weight-disk-dir DIR")


@rule("SLIME021", _src(2059))
def delta_update_requirements(ctx: RuleContext) -> Iterable[Finding]:
    """--update-weight-mode delta needs disk transport, no --colocate and a local checkpoint directory."""
    if ctx.need("--update-weight-mode") != "delta":
        return
    if ctx.need("--update-weight-transport") != "disk":
        yield ctx.hit("SLIME021", "--update-weight-mode delta needs --update-weight-transport disk.",
                      flag="--update-weight-mode", source=_src(2060))
    if ctx.is_set("--colocate"):
        yield ctx.hit("SLIME021", "--update-weight-mode delta is not supported with --colocate.", flag="--colocate",
                      source=_src(2065))
    if not ctx.need("--update-weight-local-checkpoint-dir"):
        yield ctx.hit("SLIME021", "--update-weight-mode delta needs --update-weight-local-checkpoint-dir.",
                      flag="--update-weight-mode", source=_src(2071))


@rule("SLIME022", _src(613, "slime/ray/rollout.py"))
def single_sample_normalization(ctx: RuleContext) -> Iterable[Finding]:
    """With reward normalisation on (the default), grpo, gspo, cispo and reinforce_plus_plus_baseline subtract
    each prompt group's mean reward (slime/ray/rollout.py:613-625); a group of one is its own mean, so every
    reward becomes exactly 0. slime also turns GRPO's std normalisation off (arguments.py:1981-1983)."""
    estimator = ctx.need("--advantage-estimator", "grpo")
    if ctx.need("--n-samples-per-prompt", 1) != 1 or estimator not in ("grpo", "gspo", "cispo",
                                                                       "reinforce_plus_plus_baseline"):
        return
    if (ctx.need("--rewards-normalization", True) is False or ctx.need("--loss-type", "policy_loss") == "sft_loss"
            or ctx.need("--custom-reward-post-process-path") is not None):
        return
    yield ctx.hit("SLIME022", f"--n-samples-per-prompt is 1 with --advantage-estimator {estimator}: slime normalises "
                  "rewards within each prompt's group by subtracting the group mean, and a group of one is its own "
                  "mean, so every reward becomes exactly 0 and the policy learns nothing from them.",
                  flag="--n-samples-per-prompt",
                  fix="use --n-samples-per-prompt 4 to 16 (or --disable-rewards-normalization if you mean raw rewards)")


@rule("SLIME023", _src(1881))
def cispo_clip(ctx: RuleContext) -> Iterable[Finding]:
    """slime warns that CISPO is single-sided and --eps-clip < 1 keeps a lower clip bound."""
    if ctx.need("--advantage-estimator", "grpo") == "cispo" and ctx.need("--eps-clip", 0.2) < 1.0:
        yield ctx.hit("SLIME023", f"CISPO with --eps-clip {ctx.need('--eps-clip', 0.2)} keeps a lower clip bound; "
                      "the canonical setting is --eps-clip 1.0.", flag="--eps-clip",
                      fix="--eps-clip 1.0 and tune --eps-clip-high (e.g. 4.0)")


@rule("SLIME024", _src(307))
def hf_checkpoint_given(ctx: RuleContext) -> Iterable[Finding]:
    """--hf-checkpoint has no default (arguments.py:307-309): the actor reads the model config and tokenizer
    from it at start-up (megatron_utils/actor.py:90-91) and every SGLang engine loads its model from it
    (sglang_utils/sglang_engine.py:528), so a launch without it fails before the first rollout."""
    if ctx.fact("--hf-checkpoint").state == "absent":
        yield ctx.hit("SLIME024", "--hf-checkpoint is not given and has no default: the training actor reads the "
                      "model config and tokenizer from it at start-up and the SGLang engines load the model from it, "
                      "so the launch fails before the first rollout.", flag="--hf-checkpoint",
                      fix="add --hf-checkpoint /path/to/hf_model (the Hugging Face folder of the model)")

