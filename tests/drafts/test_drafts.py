"""core.drafts.launch: GPU layout, batch arithmetic, async rules, shell quoting, summary and record."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess

import pytest
from pydantic import ValidationError

from core.drafts.launch import (
    Draft,
    DraftRequest,
    ExtraArg,
    check_interval_within_staleness,
    check_staleness_positive,
    draft_launch_script,
    hyperparameter_sources,
    parse_positive_int,
    plan_batches,
    plan_gpu_layout,
    record_for,
)
from core.findings import Severity
from core.knowledge.cards import SOURCE_RE
from core.launch import check as args_check
from core.memory.profile import Profile
from core.model_scripts import match_model
from core.pins import pinned_source_dir

SLIME_SRC = pinned_source_dir("slime")
HOSTILE_PATH = "/data/my set/$(reboot).jsonl"


def no_checker(script: str, gpus: int) -> list:
    """Stand-in for the launch-argument checker: it ran and found nothing."""
    return []


def draft(**answers) -> Draft:
    base = {"model": "Qwen3-4B", "data_path": "/data/train.jsonl", "gpus_total": 8}
    return draft_launch_script(DraftRequest.model_validate({**base, **answers}), checker=no_checker)


def codes(d: Draft, severity: Severity | None = None) -> list[str]:
    return [f.code for f in d.findings if severity is None or f.severity == severity]


def array_words(script: str, name: str) -> list[str]:
    """The words bash would put in the array `name`, parsed (not executed) with POSIX shell rules."""
    m = re.search(rf"^{name}=\((.*?)^\)", script, re.S | re.M)
    assert m, f"{name} missing"
    return shlex.split(m.group(1), comments=True, posix=True)


def submit_words(script: str) -> list[str]:
    block = script[script.index("ray job submit"):]
    return shlex.split(block.replace("\\\n", " "), posix=True)


def flag_value(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


REALISTIC = {
    "1 GPU colocated": dict(gpus_total=1),
    "8 GPUs colocated": dict(gpus_total=8),
    "2 nodes x 8 disaggregated": dict(gpus_total=16, gpus_per_node=8, colocate=False),
    "async 8 GPUs": dict(kind="async", gpus_total=8, staleness=2, update_weights_interval=2),
    "async 2 nodes fully-async": dict(kind="async", gpus_total=16, gpus_per_node=8, fully_async=True),
}


@pytest.mark.parametrize("answers", REALISTIC.values(), ids=list(REALISTIC))
def test_realistic_profiles_draft_without_error(answers):
    d = draft(**answers)
    assert codes(d, Severity.ERROR) == []
    assert d.ready and d.script.startswith("#!/bin/bash\n")
    assert "pkill" not in d.script
    assert "source scripts/models/qwen3-4B.sh" in d.script


@pytest.mark.parametrize("answers", REALISTIC.values(), ids=list(REALISTIC))
def test_realistic_profiles_pass_the_launch_checker(answers):
    d = draft_launch_script(DraftRequest.model_validate(
        {"model": "Qwen3-4B", "data_path": "/data/train.jsonl", **answers}))
    report = args_check.check_launch_script(d.script, args_check.CheckOptions(entry=None, gpus=d.request.gpus_total))
    errors = [f"{f.code} {f.message}" for f in report.findings if f.severity == Severity.ERROR]
    assert errors == [] and report.ok
    assert d.checked and d.ready


@pytest.mark.parametrize("answers,expected", [
    (dict(gpus_total=1), ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "1", "--colocate",
                          "--num-gpus-per-node", "1"]),
    (dict(gpus_total=8), ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "8", "--colocate"]),
    (dict(gpus_total=16, gpus_per_node=8), ["--actor-num-nodes", "2", "--actor-num-gpus-per-node", "8",
                                            "--colocate"]),
    (dict(gpus_total=16, gpus_per_node=8, colocate=False), ["--actor-num-nodes", "1", "--actor-num-gpus-per-node",
                                                            "8", "--rollout-num-gpus", "8"]),
    (dict(gpus_total=8, colocate=False, actor_gpus=6), ["--actor-num-nodes", "1", "--actor-num-gpus-per-node",
                                                        "6", "--rollout-num-gpus", "2"]),
    (dict(kind="async", gpus_total=8), ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "4",
                                        "--rollout-num-gpus", "4"]),
    (dict(gpus_total=8, gpus_per_node=4, colocate=False), ["--actor-num-nodes", "1", "--actor-num-gpus-per-node",
                                                           "4", "--rollout-num-gpus", "4", "--num-gpus-per-node",
                                                           "4"]),
], ids=str)
def test_gpu_layout_flags(answers, expected):
    d = draft(**answers)
    words = submit_words(d.script)
    cluster = words[words.index("train.py" if "kind" not in answers else "train_async.py") + 1:]
    cluster = cluster[:next(i for i, w in enumerate(cluster) if w.startswith("${"))]
    assert cluster == expected


def test_layout_parallelism_fits_the_actor_gpus():
    one = draft(gpus_total=1)
    assert (one.layout.tensor_parallel, one.layout.rollout_gpus_per_engine) == (1, 1)
    assert "DRF015" in codes(one, Severity.WARNING)  # the example's TP 2 does not fit one GPU
    eight = draft(gpus_total=8)
    assert (eight.layout.tensor_parallel, eight.layout.data_parallel, eight.layout.engines) == (2, 4, 4)
    assert flag_value(array_words(eight.script, "PERF_ARGS"), "--tensor-model-parallel-size") == "2"


@pytest.mark.parametrize("answers,code", [
    (dict(gpus_total=1, colocate=False), "DRF011"),
    (dict(kind="async", gpus_total=1), "DRF011"),
    (dict(kind="async", gpus_total=8, colocate=True), "DRF010"),
    (dict(gpus_total=8, colocate=False, actor_gpus=8), "DRF012"),
    (dict(gpus_total=16, gpus_per_node=8, colocate=False, actor_gpus=12), "DRF012"),
    (dict(gpus_total=8, tensor_parallel=3), "DRF013"),
    (dict(gpus_total=8, colocate=False, actor_gpus=4, rollout_gpus_per_engine=3), "DRF014"),
    (dict(gpus_total=8, global_batch_size=512), "DRF021"),
    (dict(kind="async", gpus_total=8, staleness=1, update_weights_interval=2), "DRF031"),
    (dict(model="Qwen3-5B"), "DRF001"),
    (dict(model="TotallyNew-7B"), "DRF001"),
    (dict(model_script="no-such-script"), "DRF002"),
], ids=str)
def test_planning_errors_make_the_draft_not_ready(answers, code):
    d = draft(**answers)
    assert code in codes(d, Severity.ERROR)
    assert not d.ready
    assert record_for(d).status == "started"


def test_async_with_colocate_cites_train_async():
    d = draft(kind="async", colocate=True)
    finding = next(f for f in d.findings if f.code == "DRF010")
    assert finding.source == "train_async.py:11@624b824a" and d.script == ""


def test_family_match_needs_a_chosen_script_then_drafts():
    assert match_model("Qwen3-5B").status == "family"
    d = draft(model="Qwen3-5B", model_script="qwen3-8B")
    assert codes(d, Severity.ERROR) == [] and "source scripts/models/qwen3-8B.sh" in d.script


@pytest.mark.parametrize("rbs,n,gbs,steps,code", [
    (32, 8, None, 1, None),
    (32, 8, 64, 4, None),
    (32, 8, 96, 2, "DRF020"),
    (4, 1, None, 1, "DRF022"),
], ids=str)
def test_batch_arithmetic(rbs, n, gbs, steps, code):
    req = DraftRequest(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8, rollout_batch_size=rbs,
                       n_samples_per_prompt=n, global_batch_size=gbs, num_rollout=10)
    plan, findings = plan_batches(req)
    assert plan.samples_per_rollout == rbs * n
    assert plan.steps_per_rollout == steps and plan.total_steps == steps * 10
    assert [f.code for f in findings] == ([code] if code else [])


@pytest.mark.parametrize("raw,ok", [
    ("1", True), ("4", True), (3, True), (" 2 ", True), ("0", False), ("-1", False), ("", False),
    ("abc", False), ("1.5", False), ("1e3", False), (True, False), ("99999999999", False), ("१", False),
], ids=str)
def test_staleness_must_be_a_positive_whole_number(raw, ok):
    result = check_staleness_positive(raw)
    assert result.passed is ok
    assert result.source.startswith("train_async.py:")
    if not ok:
        assert "Accepted staleness" in result.message


@pytest.mark.parametrize("interval,staleness,ok", [
    (1, 1, True), (2, 4, True), (4, 4, True), (5, 4, False), ("2", "1", False), ("x", "2", False),
    ("2", "0", False),
], ids=str)
def test_interval_must_not_exceed_staleness(interval, staleness, ok):
    result = check_interval_within_staleness(interval, staleness)
    assert result.passed is ok
    assert result.source == "train_async.py:66@624b824a"


def test_parse_positive_int_messages_are_specific():
    assert parse_positive_int("abc", "Staleness") == (None, "Staleness: 'abc' is not a whole number")
    assert parse_positive_int("0", "Staleness")[1] == "Staleness: 0 is not positive; it must be 1 or more"
    assert parse_positive_int("7", "Staleness") == (7, None)


def test_async_draft_uses_train_async_and_the_interval():
    d = draft(kind="async", staleness=3, update_weights_interval=2)
    assert "-- python3 train_async.py" in d.script and "--colocate" not in submit_words(d.script)
    assert flag_value(array_words(d.script, "MISC_ARGS"), "--update-weights-interval") == "2"
    assert "--async-buffer-size" not in d.script
    assert [c.passed for c in d.checks] == [True, True]
    assert "PASS" in d.summary_markdown


def test_fully_async_sets_the_rollout_function_and_concurrency():
    d = draft(kind="async", fully_async=True, sglang_server_concurrency=64)
    rollout = array_words(d.script, "ROLLOUT_ARGS")
    assert flag_value(rollout, "--rollout-function-path") == \
        "slime.rollout.fully_async_rollout.generate_rollout_fully_async"
    assert flag_value(array_words(d.script, "SGLANG_ARGS"), "--sglang-server-concurrency") == "64"
    assert array_words(d.script, "EVAL_ARGS") == []
    assert "DRF033" in codes(d, Severity.INFO)


HOSTILE_VALUES = {
    "data_path": HOSTILE_PATH,
    "input_key": "q'; rm -rf / #",
    "label_key": '"$(id)"',
    "rm_type": "`reboot`",
    "hf_checkpoint": "/ckpt/a b/$HOME/x;y",
    "ref_load": "/ckpt/\\n",
    "save_dir": "/save/*?[x]",
}


def test_user_values_stay_inert_words_and_bash_accepts_the_syntax(tmp_path):
    d = draft(**HOSTILE_VALUES, extra_args=[("--custom-generate-function-path", "m.g; echo pwned")])
    rollout = array_words(d.script, "ROLLOUT_ARGS")
    ckpt = array_words(d.script, "CKPT_ARGS")
    assert flag_value(rollout, "--prompt-data") == HOSTILE_PATH
    assert flag_value(rollout, "--input-key") == HOSTILE_VALUES["input_key"]
    assert flag_value(rollout, "--label-key") == HOSTILE_VALUES["label_key"]
    assert flag_value(rollout, "--rm-type") == HOSTILE_VALUES["rm_type"]
    assert flag_value(rollout, "--custom-generate-function-path") == "m.g; echo pwned"
    assert flag_value(ckpt, "--hf-checkpoint") == HOSTILE_VALUES["hf_checkpoint"]
    assert flag_value(ckpt, "--ref-load") == HOSTILE_VALUES["ref_load"]
    assert flag_value(ckpt, "--save") == HOSTILE_VALUES["save_dir"]
    # Every user value sits inside single quotes, so bash performs no expansion on it.
    assert f"--prompt-data {shlex.quote(HOSTILE_PATH)}" in d.script
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash not installed")
    path = tmp_path / d.filename
    path.write_text(d.script, encoding="utf-8")
    # -n: read and parse only; nothing in the draft is executed.
    result = subprocess.run([bash, "-n", str(path)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def test_model_name_with_shell_characters_is_quoted_in_paths():
    d = draft(model="/ckpt/My Model $(x)")
    assert match_model("/ckpt/My Model $(x)").status == "unknown"
    ckpt = array_words(d.script, "CKPT_ARGS")
    assert flag_value(ckpt, "--hf-checkpoint") == "/ckpt/My Model $(x)"
    assert not d.ready and d.filename == "run-grpo-My-Model-x.sh"


def test_extra_pythonpath_lands_in_the_runtime_env_json():
    d = draft(extra_pythonpath=["/work/my agent's code"])
    line = next(ln for ln in d.script.splitlines() if ln.startswith("RUNTIME_ENV_JSON="))
    value = shlex.split(line, posix=True)[0].split("=", 1)[1].replace("${HAS_NVLINK}", "1")
    env = json.loads(value)["env_vars"]
    assert env["PYTHONPATH"] == "/root/Megatron-LM/:/work/my agent's code"
    assert env["NCCL_NVLS_ENABLE"] == "1"


def test_extra_args_replace_generated_flags_and_accept_tuples():
    d = draft(extra_args=[("--rollout-batch-size", "16"),
                          ExtraArg(flag="--custom-rm-path", value="my.rm", group="ROLLOUT_ARGS")])
    rollout = array_words(d.script, "ROLLOUT_ARGS")
    assert rollout.count("--rollout-batch-size") == 1 and flag_value(rollout, "--rollout-batch-size") == "16"
    assert flag_value(rollout, "--custom-rm-path") == "my.rm"


@pytest.mark.parametrize("bad", [
    dict(extra_args=[("--x; rm -rf /", None)]),
    dict(extra_args=[{"flag": "--ok", "group": "MODEL_ARGS"}]),
    dict(data_path="/data/train.csv"),
    dict(data_path="/data/a\nb.jsonl"),
    dict(gpus_total=0),
    dict(gpus_total=10**9),
    dict(gpus_total=12, gpus_per_node=8),
    dict(input_key="  "),
    dict(rollout_batch_size=0),
    dict(extra_pythonpath=["/a:/b"]),
], ids=str)
def test_bad_requests_are_refused_with_a_message(bad):
    with pytest.raises(ValidationError) as exc:
        DraftRequest.model_validate({"model": "Qwen3-4B", "data_path": "/d/x.jsonl", "gpus_total": 8, **bad})
    assert exc.value.errors()[0]["msg"]


def test_summary_has_numbers_layout_arithmetic_and_groups():
    d = draft(gpus_total=16, gpus_per_node=8, colocate=False, data_path="/d/my_file*.jsonl")
    s = d.summary_markdown
    assert "32 prompts x 8 samples per prompt = **256 samples per rollout**" in s
    assert "Mode: **disaggregated**" in s and "2 engine(s)" not in s  # 8 rollout GPUs in engines of 2 -> 4
    assert "4 engine(s) of 2" in s
    assert "/d/my\\_file\\*\\.jsonl" in s  # user text escaped for markdown
    for group in ("CKPT_ARGS", "ROLLOUT_ARGS", "GRPO_ARGS", "SGLANG_ARGS"):
        assert f"`{group}`" in s


def test_script_has_the_groups_in_slime_order_and_user_choices_marked():
    d = draft()
    positions = [d.script.index(f"\n{g}=(") for g in ("CKPT_ARGS", "ROLLOUT_ARGS", "EVAL_ARGS", "PERF_ARGS",
                                                      "GRPO_ARGS", "OPTIMIZER_ARGS", "SGLANG_ARGS", "MISC_ARGS")]
    assert positions == sorted(positions)
    assert d.script.count("YOUR CHOICE") >= 3
    rollout = array_words(d.script, "ROLLOUT_ARGS")
    for flag, value in (("--advantage-estimator", "grpo"),):
        assert flag_value(array_words(d.script, "GRPO_ARGS"), flag) == value
    assert {"--use-kl-loss", "--kl-loss-coef"} <= set(array_words(d.script, "GRPO_ARGS"))
    assert flag_value(rollout, "--global-batch-size") == "256"
    assert "ray start --head" in d.script


def test_unchecked_draft_is_never_ready():
    d = draft_launch_script(DraftRequest(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8),
                            checker=lambda script, gpus: None)
    assert not d.ready and "DRF050" in codes(d, Severity.WARNING)
    assert record_for(d).summary.endswith("not ready (not checked)")


def test_checker_errors_make_the_draft_not_ready():
    from core.findings import Finding
    err = Finding(code="ARG999", severity=Severity.ERROR, message="bad flag")
    d = draft_launch_script(DraftRequest(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8),
                            checker=lambda script, gpus: [err])
    assert not d.ready and "ARG999" in codes(d, Severity.ERROR)
    assert any("ARG999" in t for t in record_for(d).todo)


def test_ready_draft_records_done():
    rec = record_for(draft())
    assert rec.status == "done" and rec.summary == "run-grpo-Qwen3-4B.sh: ready for review"


def test_request_from_profile_matches_direct_request():
    p = Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=16, gpus_per_node=8)
    req = DraftRequest.from_profile(p, "async", staleness=2)
    assert (req.kind, req.gpus_total, req.per_node, req.nodes, req.staleness) == ("async", 16, 8, 2, 2)


def test_layout_planner_is_callable_alone():
    req = DraftRequest(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=4, colocate=False)
    layout, findings = plan_gpu_layout(req, None)
    assert layout is not None and (layout.actor_gpus, layout.rollout_gpus) == (2, 2)


@pytest.mark.parametrize("src", hyperparameter_sources(), ids=lambda s: s.flag)
def test_every_default_cites_a_line_that_sets_it(src):
    assert SOURCE_RE.match(src.source)
    path, line = src.source.split("@")[0].rsplit(":", 1)
    file = SLIME_SRC / path
    if not file.exists():
        pytest.skip("slime sources not extracted here")
    text = file.read_text(encoding="utf-8").splitlines()[int(line) - 1]
    assert src.flag.split(" / ")[0] in text


def test_reward_set_by_the_generate_function_is_said_not_left_as_a_choice():
    from core.drafts.launch import DraftRequest, draft_launch_script
    from core.memory.profile import Profile

    profile = Profile(model="Qwen3-4B", data_path="/d/t.jsonl", gpus_total=8)
    request = DraftRequest.from_profile(profile, "multi_turn", rm_type=None, reward_set_by_generate=True,
                                        extra_args=[("--custom-generate-function-path", "my_agent.generate")])
    script = draft_launch_script(request).script
    assert "no reward set" not in script and "the generate function sets sample.reward" in script
    assert "sglang_rollout.py:285@624b824a" in script
    assert "--rm-type" not in script and "--custom-rm-path" not in script


def test_built_in_reward_types_cite_where_their_list_starts():
    script = draft(rm_type="deepscaler").script
    m = re.search(r"built-in types are listed from (slime/rollout/rm_hub/__init__\.py):(\d+)@624b824a", script)
    assert m, "rm_hub citation missing"
    file = SLIME_SRC / m.group(1)
    if not file.exists():
        pytest.skip("slime sources not extracted here")
    lines = file.read_text(encoding="utf-8").splitlines()
    first = lines[int(m.group(2)) - 1]
    assert re.search(r'\bif rm_type == "\w+"', first), first
    assert not any('rm_type == "' in line for line in lines[:int(m.group(2)) - 1])


def test_one_batch_problem_is_said_once_and_the_drafts_own_probe_is_not_a_finding():
    request = DraftRequest.from_profile(Profile(model="Qwen3-4B", data_path="/d/t.jsonl", gpus_total=8), "grpo",
                                        colocate=True, rollout_batch_size=32,
                                        n_samples_per_prompt=8, global_batch_size=100)
    draft = draft_launch_script(request)
    codes = [f.code for f in draft.findings]
    assert "DRF020" not in codes and sum(c.startswith("BATCH") for c in codes) == 1
    assert "SCRIPT004" not in codes
