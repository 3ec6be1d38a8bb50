"""The checker's rules, each called directly, and whole-script checks of the synthetic fixtures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import core.launch.check as ac
import core.launch.versions as versions
from core.findings import Severity
from core.knowledge.cards import SOURCE_RE
from core.launch import rules
from core.launch.check import (
    CheckOptions,
    check_arg_list,
    check_launch_script,
    check_script_bytes,
    rule_context,
)
from core.launch.rules import layout, megatron, modes, sglang, slime
from core.pins import pinned_source_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"

MODEL = ["--num-layers", "36", "--hidden-size", "2560", "--num-attention-heads", "32"]
BASE = [*MODEL, "--rollout-batch-size", "32", "--n-samples-per-prompt", "8", "--global-batch-size", "256",
        "--num-rollout", "100", "--colocate", "--hf-checkpoint", "/m"]


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def run(rule_fn, args: list[str], **options) -> list[str]:
    return codes(rule_fn(rule_context(args, CheckOptions(**options))))


def test_a_plain_valid_run_has_no_errors_or_warnings():
    report = check_arg_list(BASE, CheckOptions(entry="train.py", gpus=8))
    assert report.ok and not [f for f in report.findings if f.severity.value != "info"], report.findings
    assert report.categories["--colocate"] == "slime" and report.categories["--num-layers"] == "megatron"


# -- flag-level findings ----------------------------------------------------------------------------
@pytest.mark.parametrize(("extra", "code", "text"), [
    (["--n-sample-per-prompt", "8"], "ARG001", "did you mean --n-samples-per-prompt"),
    (["--sglang-mem-fraction", "0.7"], "ARG003", "--sglang-mem-fraction-static"),
    (["--sglang-enable-dp", "--sglang-dp-size", "2"], "ARG004", "ambiguous"),
    (["--lr"], "ARG005", "needs a value"),
    (["--micro-batch-size", "two"], "ARG006", "expects int"),
    (["--advantage-estimator", "ppo2"], "ARG007", "not one of its choices"),
    (["--colocate", "yes"], "ARG008", "'yes' follows no flag"),
    (["--colocate=1"], "ARG006", "takes no value"),
    (["--sglang-tp-size", "2"], "ARG011", "does not register"),
    (["--apply-chat-template-kwargs", "{not json"], "ARG006", "expects json.loads"),
], ids=str)
def test_flag_problems(extra, code, text):
    report = check_arg_list([*BASE, *extra], CheckOptions(entry="train.py"))
    hit = next(f for f in report.findings if f.code == code)
    assert text in f"{hit.message} {hit.fix or ''}"
    assert hit.severity == ac.RULES[code].severity and report.ok == (hit.severity.value != "error")


@pytest.mark.parametrize(("flag", "fix_part"), [
    ("--max-turns", "--custom-config-path"),
    ("--async-buffer-size", "train_async.py"),
    ("--sglang-router-policy", "--router-policy"),
], ids=str)
def test_popular_but_undefined_flags_say_so_with_the_card(flag, fix_part):
    report = check_arg_list([*BASE, flag, "5"])
    hit = next(f for f in report.findings if f.code == "ARG001")
    assert "popular descriptions" in hit.message and fix_part in hit.fix and hit.card == "source-vs-folklore"


def test_deprecated_sglang_flag_names_its_replacement():
    report = check_arg_list([*BASE, "--sglang-cuda-graph-bs", "1", "2"])
    hit = next(f for f in report.findings if f.code == "ARG012")
    assert hit.severity.value == "warning" and hit.fix == "use --sglang-cuda-graph-bs-decode instead"
    assert report.values["--sglang-cuda-graph-bs"] == "1 2"


def test_did_you_mean_lookups_are_capped():
    report = check_arg_list([*BASE, *[f"--made-up-flag-{i}" for i in range(30)]])
    unknown = [f for f in report.findings if f.code == "ARG001"]
    assert len(unknown) == 30 and all(f.fix for f in unknown)


def test_repeated_flag_says_which_value_wins():
    report = check_arg_list([*BASE, "--lr", "1e-6", "--lr", "2e-6"])
    hit = next(f for f in report.findings if f.code == "ARG002")
    assert hit.severity.value == "warning" and hit.message.endswith("keeps the last one: --lr 2e-6")


def test_repeated_identical_flag_is_only_a_note():
    report = check_arg_list([*BASE, "--lr", "1e-6", "--lr", "1e-6"])
    assert next(f for f in report.findings if f.code == "ARG002").severity.value == "info"


def test_unknown_flag_is_categorised_unknown_and_keeps_its_value():
    report = check_arg_list([*BASE, "--max-turns", "5"])
    assert report.categories["--max-turns"] == "unknown" and report.values["--max-turns"] == "5"
    assert "silently ignore" in next(f for f in report.findings if f.code == "ARG001").message


def test_every_flag_gets_an_owner():
    report = check_arg_list([*BASE, "--sglang-mem-fraction-static", "0.7", "--router-policy", "round_robin"])
    assert {report.categories[f] for f in ("--sglang-mem-fraction-static", "--router-policy", "--colocate",
                                           "--num-layers")} == {"sglang", "router", "slime", "megatron"}


# -- ported rules, called directly ------------------------------------------------------------------
RULE_CASES = [
    (slime.temperature_positive, ["--rollout-temperature", "0"], ["SLIME001"]),
    (slime.temperature_positive, ["--rollout-temperature", "0.7"], []),
    (slime.kl_needs_ref_load, ["--use-kl-loss"], ["SLIME002"]),
    (slime.kl_needs_ref_load, ["--use-kl-loss", "--ref-load", "/r"], []),
    (slime.kl_needs_ref_load, ["--kl-coef", "0.1"], ["SLIME002"]),
    (slime.kl_coef_exclusive, ["--kl-coef", "0.1", "--kl-loss-coef", "0.01"], ["SLIME003"]),
    (slime.kl_coef_exclusive, ["--kl-coef", "0", "--kl-loss-coef", "0.01"], []),
    (slime.opd_consistent, ["--use-opd"], ["SLIME004"]),
    (slime.opd_consistent, ["--use-opd", "--opd-type", "megatron"], ["SLIME004"]),
    (slime.opd_consistent, ["--use-opd", "--opd-type", "sglang", "--opd-teacher-load", "/t"], ["SLIME004"]),
    (slime.opd_consistent, ["--opd-teacher-load", "/t"], ["SLIME004"]),
    (slime.opd_consistent, ["--use-opd", "--opd-type", "megatron", "--opd-teacher-load", "/t"], []),
    (slime.eval_interval_needs_data, ["--eval-interval", "5"], ["SLIME005"]),
    (slime.eval_interval_needs_data, ["--eval-interval", "5", "--eval-prompt-data", "aime", "/a.jsonl"], []),
    (slime.save_interval_needs_save, ["--save-interval", "5"], ["SLIME006"]),
    (slime.save_interval_needs_save, ["--save-interval", "5", "--save", "/s"], []),
    (slime.reinforce_needs_normalization, ["--advantage-estimator", "reinforce_plus_plus"], ["SLIME007"]),
    (slime.reinforce_needs_normalization, ["--advantage-estimator", "reinforce_plus_plus",
                                        "--normalize-advantages"], []),
    (slime.rollout_logprobs_vs_tis, ["--use-rollout-logprobs", "--use-tis"], ["SLIME008"]),
    (slime.mismatch_metrics_need_tis_fn, ["--get-mismatch-metrics"], ["SLIME009"]),
    (slime.dynamic_batch_needs_max_tokens, ["--use-dynamic-batch-size"], ["SLIME010"]),
    (slime.dynamic_batch_needs_max_tokens, ["--use-dynamic-batch-size", "--max-tokens-per-gpu", "8192"], []),
    (slime.flops_balance_needs_dynamic, ["--balance-by-flops"], ["SLIME011"]),
    (slime.debug_dump_paths_differ, ["--save-debug-train-data", "/d", "--save-debug-rollout-data", "/d"], ["SLIME012"]),
    (slime.debug_modes_exclusive, ["--debug-rollout-only", "--load-debug-rollout-data", "/x"], ["SLIME013"]),
    (slime.over_sampling_at_least_rollout, ["--rollout-batch-size", "32", "--over-sampling-batch-size", "16"],
     ["SLIME014"]),
    (slime.over_sampling_at_least_rollout, ["--rollout-batch-size", "32", "--over-sampling-batch-size", "64"], []),
    (slime.rollout_count_given, ["--rollout-batch-size", "8"], ["SLIME015"]),
    (slime.rollout_count_given, ["--num-epoch", "2", "--disable-rollout-global-dataset"], ["SLIME015"]),
    (slime.rollout_count_given, ["--num-epoch", "2"], []),
    (slime.mtp_needs_layers, ["--enable-mtp-training"], ["SLIME016"]),
    (slime.prompt_fits_context, ["--rollout-max-context-len", "4096", "--rollout-max-prompt-len", "4096"],
     ["SLIME017"]),
    (slime.prompt_fits_context, ["--rollout-max-context-len", "4096", "--rollout-max-prompt-len", "4095"], []),
    (slime.param_lists_exclusive, ["--only-train-params-name-list", "a", "--freeze-params-name-list", "b"],
     ["SLIME018"]),
    (slime.disk_transport_needs_dir, ["--update-weight-transport", "disk"], ["SLIME019"]),
    (slime.release_train_requirements, ["--release-train", "--advantage-estimator", "ppo"],
     ["SLIME020", "SLIME020", "SLIME020"]),
    (slime.release_train_requirements, ["--release-train", "--save", "/s", "--update-weight-transport", "disk"], []),
    (slime.delta_update_requirements, ["--update-weight-mode", "delta", "--colocate"],
     ["SLIME021", "SLIME021", "SLIME021"]),
    (slime.single_sample_normalization, ["--n-samples-per-prompt", "1"], ["SLIME022"]),
    (slime.single_sample_normalization, ["--n-samples-per-prompt", "8"], []),
    (slime.cispo_clip, ["--advantage-estimator", "cispo"], ["SLIME023"]),
    (slime.cispo_clip, ["--advantage-estimator", "cispo", "--eps-clip", "1.0"], []),
    (slime.custom_config_overrides, ["--custom-config-path", "x.yaml"], ["ARG013"]),
    (slime.required_rollout_batch_size, ["--num-rollout", "3"], ["ARG009"]),
    (sglang.sglang_pp_divides_engine, ["--rollout-num-gpus-per-engine", "3", "--sglang-pp-size", "2"], ["SGL001"]),
    (sglang.sglang_dp_needs_dp_attention, ["--sglang-dp-size", "2"], ["SGL002"]),
    (sglang.sglang_dp_needs_dp_attention, ["--sglang-dp-size", "2", "--sglang-enable-dp-attention"], []),
    (sglang.sglang_deployment_exclusive, ["--prefill-num-servers", "1", "--sglang-config", "c.yaml"], ["SGL003"]),
    (megatron.world_size_divisible, ["--actor-num-gpus-per-node", "6", "--tensor-model-parallel-size", "4"], ["MEG001"]),
    (megatron.world_size_divisible, ["--actor-num-gpus-per-node", "8", "--tensor-model-parallel-size", "4"], []),
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "6", "--expert-model-parallel-size", "4"],
     ["MEG013"]),
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "8", "--expert-model-parallel-size", "4",
                                          "--tensor-model-parallel-size", "2"], []),
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "8", "--expert-model-parallel-size", "8",
                                          "--tensor-model-parallel-size", "2"], ["MEG013"]),  # ETP defaults to TP
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "8", "--expert-model-parallel-size", "8",
                                          "--tensor-model-parallel-size", "2", "--expert-tensor-parallel-size", "1"],
     []),
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "6", "--expert-model-parallel-size", "4",
                                          "--debug-rollout-only"], []),
    # --use-tp-pp-dp-mapping with PP > 1: expert-DP (8 / (EP 4 x ETP 1 x PP 2) = 1) must equal DP (8 / 2 = 4)
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "8", "--expert-model-parallel-size", "4",
                                          "--pipeline-model-parallel-size", "2", "--use-tp-pp-dp-mapping"],
     ["MEG013"]),
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "8", "--expert-model-parallel-size", "4",
                                          "--pipeline-model-parallel-size", "2"], []),  # the default order ends in pp
    (megatron.expert_grid_divides_world, ["--actor-num-gpus-per-node", "8", "--expert-model-parallel-size", "2",
                                          "--tensor-model-parallel-size", "2", "--expert-tensor-parallel-size", "1",
                                          "--pipeline-model-parallel-size", "2", "--use-tp-pp-dp-mapping"], []),
    (megatron.layers_divisible_by_pp, ["--num-layers", "47", "--pipeline-model-parallel-size", "2"], ["MEG002"]),
    (megatron.layers_divisible_by_pp, ["--num-layers", "47", "--pipeline-model-parallel-size", "2",
                                 "--decoder-last-pipeline-num-layers", "23"], []),
    (megatron.heads_divide_hidden, ["--hidden-size", "1000", "--num-attention-heads", "24"], ["MEG003"]),
    (megatron.heads_divide_hidden, ["--hidden-size", "1000", "--num-attention-heads", "24", "--kv-channels", "128"], []),
    (megatron.min_lr_below_lr, ["--lr", "1e-6", "--min-lr", "1e-5"], ["MEG004"]),
    (megatron.save_needs_interval, ["--save", "/s"], ["MEG005"]),
    (megatron.save_needs_interval, ["--save", "/s", "--release-train"], []),
    (megatron.model_shape_given, ["--num-layers", "2"], ["MEG006"]),
    (megatron.removed_megatron_flags, ["--checkpoint-activations"], ["MEG007"]),
    (megatron.seq_length_fits_cp, ["--context-parallel-size", "3"], ["MEG008"]),
    (megatron.max_positions_cover_seq, ["--max-position-embeddings", "2048"], ["MEG009"]),
    (megatron.max_positions_cover_seq, ["--max-position-embeddings", "2048", "--seq-length", "2048"], []),
    (megatron.expert_parallel_divides_experts, ["--expert-model-parallel-size", "8", "--num-experts", "60"], ["MEG010"]),
    (megatron.selective_recompute_no_method, ["--recompute-granularity", "selective", "--recompute-method", "uniform"],
     ["MEG011"]),
    (megatron.uneven_pipeline_needs_pp, ["--decoder-last-pipeline-num-layers", "3"], ["MEG012"]),
    (modes.micro_batch_under_dynamic, ["--use-dynamic-batch-size", "--micro-batch-size", "2"], ["MODE001"]),
    (modes.micro_batch_under_dynamic, ["--micro-batch-size", "2"], []),
    (modes.max_tokens_needs_dynamic, ["--max-tokens-per-gpu", "4096"], ["MODE002"]),
    (modes.sequence_parallel_needs_tp, ["--sequence-parallel"], ["MODE003"]),
    (modes.sequence_parallel_needs_tp, ["--sequence-parallel", "--tensor-model-parallel-size", "2"], []),
    (modes.num_epoch_ignored, ["--num-epoch", "1", "--num-rollout", "5"], ["MODE004"]),
    (modes.kl_loss_coef_needs_switch, ["--kl-loss-coef", "0.01"], ["MODE005"]),
    (modes.kl_loss_zero_coef, ["--use-kl-loss"], ["MODE006"]),
    (modes.eval_data_needs_interval, ["--eval-prompt-data", "aime", "/a.jsonl"], ["MODE007"]),
    (modes.release_train_offload_ignored, ["--colocate", "--release-train", "--offload-train"], ["MODE008"]),
    (layout.async_refuses_colocate, ["--colocate"], []),  # entry unknown: not refused
]


@pytest.mark.parametrize(("rule_fn", "args", "expected"), RULE_CASES, ids=str)
def test_rule(rule_fn, args, expected):
    assert run(rule_fn, args) == expected


def test_async_entry_refuses_colocate():
    assert run(layout.async_refuses_colocate, ["--colocate"], entry="train_async.py") == ["ENTRY001"]
    assert run(layout.async_refuses_colocate, ["--colocate"], entry="train.py") == []


@pytest.mark.parametrize(("args", "gpus", "expected", "total"), [
    (["--colocate"], 8, [], 8),
    (["--colocate", "--actor-num-nodes", "2"], 8, ["GPU003"], 16),
    (["--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "4"], 8, [], 8),
    (["--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "4"], 16, ["GPU003"], 8),  # a note: 8 of 16 used
    (["--actor-num-gpus-per-node", "4"], 8, [], None),  # GPU001 owns this case
], ids=str)
def test_gpu_total_against_the_profile(args, gpus, expected, total):
    ctx = rule_context(args, CheckOptions(gpus=gpus))
    assert codes(layout.gpu_total_fits_profile(ctx)) == expected
    assert layout.gpu_layout(ctx)["total"] == total


def test_gpu_overrun_is_an_error_and_underuse_a_note():
    over = list(layout.gpu_total_fits_profile(rule_context(["--colocate", "--actor-num-nodes", "2"],
                                                       CheckOptions(gpus=8))))
    under = list(layout.gpu_total_fits_profile(rule_context(["--colocate"], CheckOptions(gpus=16))))
    assert over[0].severity.value == "error" and "16 GPUs" in over[0].message
    assert under[0].severity.value == "info"


@pytest.mark.parametrize(("args", "expected", "severity"), [
    (["--actor-num-gpus-per-node", "4"], ["GPU001"], "error"),
    (["--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "4"], [], None),
    (["--rollout-external-engine-addrs", "h:1"], [], None),
], ids=str)
def test_disaggregated_needs_rollout_gpus(args, expected, severity):
    found = list(layout.disaggregated_needs_rollout_gpus(rule_context(args)))
    assert codes(found) == expected and (not found or found[0].severity.value == severity)


@pytest.mark.parametrize(("args", "severity", "text"), [
    (["--colocate", "--rollout-num-gpus-per-engine", "3"], "warning", "2 GPU(s) stay idle"),
    (["--colocate", "--actor-num-gpus-per-node", "2", "--rollout-num-gpus-per-engine", "4"], "error",
     "cannot hold one engine"),
], ids=str)
def test_rollout_gpus_split_into_engines(args, severity, text):
    found = list(layout.rollout_gpus_make_whole_engines(rule_context(args)))
    assert found[0].severity.value == severity and text in found[0].message


# -- batch arithmetic in a whole check -------------------------------------------------------------
def test_batch_mismatch_under_slimes_assertion_lists_exact_fixes():
    report = check_arg_list([*MODEL, "--rollout-batch-size", "32", "--n-samples-per-prompt", "8",
                             "--global-batch-size", "100", "--num-steps-per-rollout", "2", "--num-rollout", "5",
                             "--colocate"])
    hit = next(f for f in report.findings if f.code == "BATCH001")
    assert hit.severity.value == "error" and hit.card == "batch-size"
    assert "set --global-batch-size 128 (now 100)" in hit.fix
    assert "set --num-steps-per-rollout 4 with --global-batch-size 64" in hit.fix  # a usable pair, not "none"
    assert "set --num-steps-per-rollout 2 with" not in hit.fix  # steps are already 2: that is the single fix
    assert report.summary.batch["status"] == "error"


def test_startup_divisibility_holds_with_and_without_dynamic_batching():
    args = [*MODEL, "--rollout-batch-size", "12", "--n-samples-per-prompt", "2", "--global-batch-size", "24",
            "--num-rollout", "5", "--colocate", "--hf-checkpoint", "/m", "--micro-batch-size", "2"]  # DP 8: unit 16
    for extra in ([], ["--use-dynamic-batch-size", "--max-tokens-per-gpu", "4096"]):
        hit = next(f for f in check_arg_list([*args, *extra]).findings if f.code == "BATCH008")
        assert hit.severity.value == "error" and "--use-dynamic-batch-size" not in (hit.fix or "")
        assert hit.source == "megatron/core/num_microbatches_calculator.py:340@1dcf0daf"


def test_static_split_fails_at_the_first_step_only_when_startup_rounds_down():
    args = [*MODEL, "--rollout-batch-size", "12", "--n-samples-per-prompt", "2", "--global-batch-size", "24",
            "--num-rollout", "5", "--colocate", "--hf-checkpoint", "/m", "--micro-batch-size", "2",
            "--decrease-batch-size-if-needed"]  # 12 micro-batches over DP 8
    hit = next(f for f in check_arg_list(args).findings if f.code == "BATCH006")
    assert hit.source == "slime/utils/dp_schedule.py:178@624b824a" and "first training step" in hit.message
    dynamic = check_arg_list([*args, "--use-dynamic-batch-size", "--max-tokens-per-gpu", "4096"]).findings
    assert not {"BATCH006", "BATCH007", "BATCH008"} & set(codes(dynamic))


def test_global_batch_derived_from_steps_is_checked_at_startup():
    """The issue's case: dynamic batching, DP 4, 32 x 8 // 3 = 85, not a multiple of 4."""
    args = [*MODEL, "--rollout-batch-size", "32", "--n-samples-per-prompt", "8", "--num-steps-per-rollout", "3",
            "--num-rollout", "5", "--colocate", "--hf-checkpoint", "/m", "--tensor-model-parallel-size", "2",
            "--use-dynamic-batch-size", "--max-tokens-per-gpu", "4096"]
    hit = next(f for f in check_arg_list(args).findings if f.code == "BATCH008")
    assert "85 (32 x 8 // 3)" in hit.message
    assert "set --num-steps-per-rollout 2 (global batch 128)" in hit.fix and "4 (global batch 64)" in hit.fix


def test_global_batch_below_data_parallel_size():
    report = check_arg_list([*MODEL, "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
                             "--global-batch-size", "4", "--num-rollout", "5", "--colocate"])
    assert "BATCH007" in codes(report.findings)


def test_micro_batch_split_logic_lives_in_core_batch():
    from core.batch import check_micro_batch_split

    assert check_micro_batch_split(256, 1, 4, dynamic=True).code is None
    assert check_micro_batch_split(85, 1, 4, dynamic=True).code == "BATCH008"
    assert check_micro_batch_split(6, 2, 4, dynamic=True).code == "BATCH007"
    assert check_micro_batch_split(6, 2, 4, dynamic=True, decrease_if_needed=True).code == "BATCH007"
    assert check_micro_batch_split(24, 2, 8, dynamic=False, decrease_if_needed=True).code == "BATCH006"
    assert check_micro_batch_split(24, 2, 8, dynamic=True, decrease_if_needed=True).code is None


def test_micro_batch_size_under_dynamic_batching_is_not_called_ineffective():
    hit = next(iter(modes.micro_batch_under_dynamic(rule_context(["--use-dynamic-batch-size", "--micro-batch-size",
                                                                   "2"]))))
    assert "no effect" not in hit.message and "start-up" in hit.message and hit.severity.value == "info"


def test_one_sample_per_prompt_zeroes_group_normalised_rewards():
    for estimator in ("grpo", "gspo", "cispo", "reinforce_plus_plus_baseline"):
        ctx = rule_context(["--n-samples-per-prompt", "1", "--advantage-estimator", estimator])
        hit = next(iter(slime.single_sample_normalization(ctx)))
        assert "exactly 0" in hit.message and hit.source == "slime/ray/rollout.py:613@624b824a"
    for extra in (["--disable-rewards-normalization"], ["--loss-type", "sft_loss"],
                  ["--advantage-estimator", "ppo"]):
        assert run(slime.single_sample_normalization, ["--n-samples-per-prompt", "1", *extra]) == []


def test_hf_checkpoint_is_required():
    assert run(slime.hf_checkpoint_given, ["--rollout-batch-size", "8"]) == ["SLIME024"]
    assert run(slime.hf_checkpoint_given, ["--hf-checkpoint", "/m"]) == []


def test_rollout_engines_wider_than_a_node_must_be_whole():
    base = ["--actor-num-gpus-per-node", "8", "--rollout-num-gpus-per-engine", "64"]
    ctx = rule_context([*base, "--rollout-num-gpus", "96"])
    hit = next(iter(layout.rollout_gpus_make_whole_engines(ctx)))
    assert hit.severity.value == "error" and "1 whole engine" in hit.message and "128" in hit.fix
    assert run(layout.rollout_gpus_make_whole_engines, [*base, "--rollout-num-gpus", "128"]) == []
    assert run(layout.rollout_gpus_make_whole_engines, [*base, "--rollout-num-gpus", "32"]) == ["GPU002"]
    assert run(layout.rollout_gpus_make_whole_engines, [*base, "--rollout-num-gpus", "96",
                                                        "--debug-train-only"]) == []


def _slime_tree(root: Path) -> Path:
    (root / "slime" / "utils").mkdir(parents=True)
    (root / "slime" / "utils" / "arguments.py").write_text("")
    (root / "scripts" / "models").mkdir(parents=True)
    (root / "scripts" / "models" / "qwen3-4B.sh").write_text("MODEL_ARGS=(--num-layers 36)\n")
    (root / "scripts" / "low_precision").mkdir()
    return root


SCRIPT_DIR_LINE = 'SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"\n'


@pytest.mark.parametrize(("where", "sourced", "missing"), [
    ("scripts/low_precision/run.sh", "${SCRIPT_DIR}/../scripts/models/qwen3-4B.sh", True),
    ("scripts/run.sh", "${SCRIPT_DIR}/scripts/models/qwen3-4B.sh", True),
    ("scripts/run.sh", "${SCRIPT_DIR}/models/qwen3-4B.sh", False),
    ("scripts/low_precision/run.sh", "${SCRIPT_DIR}/../models/qwen3-4B.sh", False),
], ids=str)
def test_sourced_file_resolved_from_the_scripts_folder(tmp_path, where, sourced, missing):
    tree = _slime_tree(tmp_path)
    script = tree / where
    text = f'#!/bin/bash\n{SCRIPT_DIR_LINE}source "{sourced}"\npython3 train.py ${{MODEL_ARGS[@]}} --hf-checkpoint /m\n'
    script.write_text(text)
    report = check_launch_script(text, CheckOptions(script_path=script))
    hits = [f for f in report.findings if f.code == "SCRIPT012"]
    assert bool(hits) == missing
    if missing:
        assert hits[0].line == 3 and hits[0].severity.value == "error" and "does not exist" in hits[0].message
        assert "MEG006" in codes(report.findings)  # bash leaves MODEL_ARGS empty
    without_location = check_launch_script(text)
    assert "SCRIPT012" not in codes(without_location.findings)


def test_missing_global_batch_uses_megatrons_fallback():
    report = check_arg_list([*MODEL, "--rollout-batch-size", "4", "--n-samples-per-prompt", "4",
                             "--num-rollout", "5", "--colocate"])
    batch = report.summary.batch
    assert batch["effective_global_batch_size"] == 8 and batch["steps_per_rollout"] == 2  # mbs 1 x DP 8


# -- whole scripts -----------------------------------------------------------------------------------
FIXTURE_CASES = [
    ("good_colocate.sh", set(), "train.py"),
    ("typo_and_batch.sh", {"ARG001", "BATCH004"}, "train.py"),
    ("broken_continuation.sh", {"SCRIPT008", "SLIME015"}, "train.py"),
    ("async_colocate.sh", {"ENTRY001"}, "train_async.py"),
    ("disaggregated.sh", {"GPU001"}, "train_async.py"),
    ("unresolved.sh", set(), "train.py"),
    ("unterminated.sh", {"SCRIPT003"}, None),
    ("bare_args.txt", set(), None),
    ("dynamic_batch_startup.sh", {"BATCH008"}, "train.py"),
    ("multinode_engines.sh", {"GPU002", "GPU003"}, "train.py"),
    ("no_hf_checkpoint.sh", {"SLIME024"}, "train.py"),
    ("missing_model_script.sh", {"SCRIPT012", "MEG006"}, "train.py"),
]


@pytest.mark.parametrize(("name", "errors", "entry"), FIXTURE_CASES, ids=str)
def test_fixture_scripts(name, errors, entry):
    report = check_launch_script((FIXTURES / name).read_text(), CheckOptions(gpus=8))
    assert {f.code for f in report.findings if f.severity.value == "error"} == errors
    assert report.entry == entry and report.ok == (not errors)


def test_good_script_resolves_model_args_and_arithmetic():
    report = check_launch_script((FIXTURES / "good_colocate.sh").read_text(), CheckOptions(gpus=8))
    assert report.values["--num-layers"] == "36" and report.values["--max-tokens-per-gpu"] == "8192"
    assert report.values["--prompt-data"] == "/data/train.jsonl"
    assert report.summary.gpu_layout["total"] == 8 and report.summary.complete
    assert not [f for f in report.findings if f.severity.value == "warning"]


def test_unresolved_values_are_reported_with_the_checks_they_skip():
    report = check_launch_script((FIXTURES / "unresolved.sh").read_text(), CheckOptions(gpus=8))
    notes = [f.message for f in report.findings if f.code == "SCRIPT004"]
    assert any("--rollout-batch-size" in m and "BATCH001" in m for m in notes)
    assert any("--num-rollout" in m and "command substitution" in m for m in notes)
    assert report.summary.batch is None


def test_findings_carry_locations_sources_and_are_sorted():
    report = check_launch_script((FIXTURES / "typo_and_batch.sh").read_text())
    typo = next(f for f in report.findings if f.code == "ARG001")
    assert typo.line == 9 and typo.flag == "--n-sample-per-prompt" and typo.card == "argument-categories"
    assert all(f.source is None or SOURCE_RE.match(f.source.split("; ")[0]) for f in report.findings)
    lines = [f.line if f.line is not None else 10**12 for f in report.findings]
    assert lines == sorted(lines)


def test_hidden_words_skip_absence_checks_instead_of_guessing():
    report = check_launch_script("python3 train.py --rollout-batch-size 8 $EXTRA_ARGS")
    assert report.ok
    assert any(f.code == "SCRIPT011" and "$EXTRA_ARGS" in f.message for f in report.findings)


@pytest.mark.parametrize(("data", "code"), [
    (b"\0\1\2\3" * 100, "SCRIPT001"),
    (b"#!/bin/bash\n" + b"# pad\n" * 200_000, "SCRIPT001"),
    (b"python3 train.py --rollout-batch-size 8 --num-rollout 1 --prompt-data /d/\xff.jsonl", "SCRIPT002"),
], ids=str)
def test_bad_bytes_give_a_finding_not_a_crash(data, code):
    report = check_script_bytes(data)
    assert code in codes(report.findings)


def test_a_catalog_that_cannot_be_read_falls_back_with_a_warning(tmp_path):
    bad = tmp_path / "arguments.json"
    bad.write_text("{not json")
    report = check_arg_list(BASE, CheckOptions(catalog_path=bad))
    assert any("could not be used" in f.message for f in report.findings)
    assert report.categories["--colocate"] == "slime"


PRE_PARSE_ONLY = ("import argparse\n\n\ndef _pre_parse_mode():\n"
                  "    return argparse.ArgumentParser(add_help=False).parse_known_args()\n")


def small_checkout(root: Path, arguments: str | bytes) -> Path:
    target = root / "slime" / "utils" / "arguments.py"
    target.parent.mkdir(parents=True)
    target.write_bytes(arguments if isinstance(arguments, bytes) else arguments.encode())
    return root


@pytest.mark.parametrize(("arguments", "reason"), [
    ("def broken(:\n", "slime/utils/arguments.py:1 is not valid Python"),
    (b"import argparse\n\0\n", "slime/utils/arguments.py is not valid Python"),
    ("VERSION = 1\n", "does not define a function get_slime_extra_args_provider"),
    (PRE_PARSE_ONLY, "does not define a function get_slime_extra_args_provider"),
    (PRE_PARSE_ONLY + "\n\ndef get_slime_extra_args_provider(x=None):\n    items = [0] * 10 ** 4\n"
     "    for a in items:\n        for b in items:\n            x = b\n",
     "stopped after 300,000 steps"),
], ids=["syntax-error", "nul-byte", "no-pre-parse-mode", "no-provider", "endless-provider"])
def test_a_checkout_not_shaped_like_upstream_falls_back_with_a_warning_naming_the_problem(
        tmp_path, monkeypatch, arguments, reason):
    monkeypatch.setattr(versions, "_MEMORY", {})
    checkout = small_checkout(tmp_path / "my-slime", arguments)
    report = check_arg_list(BASE, CheckOptions(catalog_path=checkout))
    warnings = [f for f in report.findings if "could not be used" in f.message]
    assert len(warnings) == 1 and warnings[0].severity == ac.WARN
    assert reason in warnings[0].message and "bundled catalog" in warnings[0].message
    assert report.categories["--colocate"] == "slime" and report.categories["--num-layers"] == "megatron"


def test_a_failed_checkout_build_is_remembered_until_its_files_change(tmp_path, monkeypatch):
    from core.launch.catalog import CatalogError

    monkeypatch.setattr(versions, "_MEMORY", {})
    calls = []

    def failing_build(sources):
        calls.append(sources)
        raise CatalogError("slime/utils/arguments.py:3 is not valid Python (invalid syntax).")

    monkeypatch.setattr(versions, "build_user_catalog", failing_build)
    checkout = small_checkout(tmp_path / "co", "x = 1\n")
    for _ in range(2):
        with pytest.raises(CatalogError, match="not valid Python"):
            versions.checkout_catalog(versions.UserSources(slime=checkout))
    assert len(calls) == 1
    (checkout / "slime" / "utils" / "arguments.py").write_text("x = 22\n")
    with pytest.raises(CatalogError):
        versions.checkout_catalog(versions.UserSources(slime=checkout))
    assert len(calls) == 2


# -- the code table ----------------------------------------------------------------------------------
def test_every_code_is_in_the_code_table_and_back():
    from core.launch.rules.codes import CODES

    assert set(CODES) == set(ac.RULES)
    for code, entry in CODES.items():
        info = ac.RULES[code]
        assert (info.title, info.severity) == (entry.title, entry.severity) and entry.summary


def test_titles_are_written_only_in_the_code_table():
    """A rule module names its code; the title and severity are the table's alone (no second copy to drift)."""
    from core.launch.rules.codes import CODES

    folder = Path(rules.__file__).parent
    texts = {p.name: p.read_text() for p in folder.glob("*.py") if p.name != "codes.py"}
    for code, entry in CODES.items():
        written = re.compile(rf'(rule|register)\(\s*"{code}",\s*"{re.escape(entry.title)}"')
        assert not [name for name, text in texts.items() if written.search(text)], code
    with pytest.raises(TypeError):  # the old signature, with a title and a severity, is refused
        rules.rule("BATCH001", "Batch equation fails", Severity.ERROR, "train.py")
    assert not re.search(r"^\s{4}[A-Z]+\d{3}\s+(error|warning|info)\s", rules.__doc__ or "", re.M)


@pytest.mark.parametrize("info", list(ac.RULES.values()), ids=lambda i: i.code)
def test_every_rule_is_documented_and_cited(info):
    assert info.source == "" or SOURCE_RE.match(info.source), info.source
    if info.check is not None:
        assert info.check.__doc__ and len(info.check.__doc__) > 20


@pytest.mark.parametrize("text", [
    "python3 train.py --a " + "${X:-" * 500 + "1" + "}" * 500,
    "python3 train.py --a $((" + "(" * 500 + "1" + ")" * 500 + "))",
    "python3 train.py --a " + '"$(' * 300 + "x" + ')"' * 300,
    "(" * 5000 + "python3 train.py --a 1",
    "A=(" * 2000,
    "cat <<EOF\n" * 2000,
    '"' * 9999,
    "\\" * 50_000,
    "python3 train.py " + "--made-up 1 " * 1000,
    'X="$(cd -- "$(dirname ' + "BASH_SOURCE " * 20000 + "\npython3 train.py --a 1",
], ids=lambda t: t[:40])
def test_hostile_input_gives_findings_never_a_crash(text):
    report = check_launch_script(text)
    assert report.findings
    assert len(report.findings) < 300  # repeated notes and unknown flags are summed up, not listed forever


SLIME_SRC = pinned_source_dir("slime")


@pytest.mark.parametrize(("code", "expected_text"), [
    ("GPU003", "_get_placement_group_layout(args)"),
    ("MODE006", "with_ref="),
], ids=str)
def test_rule_cites_the_line_that_does_it(code, expected_text):
    path, line = ac.RULES[code].source.split("@")[0].rsplit(":", 1)
    file = SLIME_SRC / path
    if not file.exists():
        pytest.skip("slime sources not extracted here")
    assert expected_text in file.read_text(encoding="utf-8").splitlines()[int(line) - 1]


def test_gpu_limit_is_the_profile_limit():
    from pydantic import ValidationError

    from core.memory.profile import MAX_GPUS

    assert CheckOptions(gpus=MAX_GPUS).gpus == MAX_GPUS
    with pytest.raises(ValidationError):
        CheckOptions(gpus=MAX_GPUS + 1)


# -- issue 18: Megatron's parallel state and multi-node placement --------------------------------------
def test_parallel_grid_findings_name_the_product_the_gpus_and_the_fix():
    [tp] = list(megatron.world_size_divisible(rule_context(["--actor-num-gpus-per-node", "6",
                                                            "--tensor-model-parallel-size", "4"], CheckOptions())))
    assert "The training world is 6 GPUs" in tp.message and "= 4" in tp.message
    assert tp.fix.startswith("train on a multiple of 4 GPUs (4 or 8,") and "one of 1, 2, 3, 6" in tp.fix
    [ep] = list(megatron.expert_grid_divides_world(rule_context(
        ["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "6", "--expert-model-parallel-size", "8"],
        CheckOptions())))
    assert "12 GPUs" in ep.message and "EP 8 x ETP 1" in ep.message and "= 8" in ep.message
    assert "(the TP size: --expert-tensor-parallel-size is not given)" in ep.message
    assert ep.source == "megatron/core/parallel_state.py:794@1dcf0daf" and "8 or 16" in ep.fix


@pytest.mark.parametrize(("args", "expected", "severity", "text"), [
    # two 4-GPU nodes, slime still groups engines 8 to a node: node 1's engines get node 0's address
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "4", "--colocate"], ["GPU004"], "error",
     "Cannot assign requested address"),
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "8"], ["GPU004"], "error",
     "engines on node 3 are told to start on node 2's address"),
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "4", "--colocate", "--num-gpus-per-node", "4"], [],
     None, ""),
    # two 16-GPU nodes, groups of 8: two groups per node start their port search at the same port
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "16", "--colocate"], ["GPU004"], "error",
     "same port"),
    (["--actor-num-gpus-per-node", "4", "--colocate"], [], None, ""),  # one node: one group, one address
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "4", "--rollout-external-engine-addrs", "h:1"], [],
     None, ""),
    # engines of 8 GPUs on 4-GPU nodes span nodes: placed by node, not by these groups
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "4", "--colocate", "--rollout-num-gpus-per-engine",
      "8"], [], None, ""),
], ids=str)
def test_num_gpus_per_node_against_the_gpus_a_node_has(args, expected, severity, text):
    found = list(layout.gpus_per_node_match(rule_context(args, CheckOptions())))
    assert codes(found) == expected
    if found:
        assert found[0].severity.value == severity and text in found[0].message
        assert "(its default)" in found[0].message and found[0].fix.startswith("add --num-gpus-per-node")


@pytest.mark.parametrize(("args", "per_node", "expected", "severity", "text"), [
    # one actor node of 4, 8 rollout GPUs on two more 4-GPU nodes: one group of 8 engines spans two nodes
    (["--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "8"], 4, ["GPU004"], "error",
     "Cannot assign requested address"),
    (["--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "8", "--num-gpus-per-node", "4"], 4, [], None, ""),
    # 4 rollout GPUs on one 4-GPU node: one group, all on that node, nothing breaks
    (["--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "4"], 4, [], None, ""),
    # the profile's count wins over the actor's: two nodes of 8 with a 4-GPU actor each are fine at 8
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "4", "--colocate"], 8, [], None, ""),
    # one node of 16 with slime's default 8: two groups of 8 engines on it pick the same ports
    (["--actor-num-gpus-per-node", "16", "--colocate"], 16, ["GPU004"], "error", "same port"),
    (["--actor-num-gpus-per-node", "4", "--colocate"], 16, [], None, ""),  # one group of 4 engines
    # an actor asking more GPUs of a node than the node has: PACK spreads it (a warning), then the groups break
    (["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "8", "--colocate"], 4, ["GPU004", "GPU004"],
     "warning", "PACK placement group spreads"),
], ids=str)
def test_num_gpus_per_node_against_the_profiles_gpus_per_node(args, per_node, expected, severity, text):
    found = list(layout.gpus_per_node_match(rule_context(args, CheckOptions(gpus_per_node=per_node))))
    assert codes(found) == expected
    if found:
        assert found[0].severity.value == severity and text in found[0].message
        assert "your profile" in found[0].message


def test_without_the_profiles_count_a_single_node_actor_is_not_judged():
    args = ["--actor-num-gpus-per-node", "4", "--rollout-num-gpus", "4"]
    assert list(layout.gpus_per_node_match(rule_context(args, CheckOptions()))) == []


@pytest.mark.skipif(not (SLIME_SRC / "scripts" / "run-glm4.7-30B-A3B.sh").is_file(), reason="needs slime's scripts")
def test_the_expert_grid_rule_catches_the_script_of_slime_issue_1818():
    """THUDM/slime#1818: run-glm4.7-30B-A3B.sh at the pin sets PP 2 x EP 8 on one 8-GPU node, and Megatron's
    parallel state raises `world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)`
    once the training actors start; the checker says so before launch."""
    report = check_script_bytes((SLIME_SRC / "scripts" / "run-glm4.7-30B-A3B.sh").read_bytes())
    [found] = [f for f in report.findings if f.code == "MEG013"]
    assert "EP 8 x ETP 1 x PP 2 = 16" in found.message and "8 GPUs" in found.message
