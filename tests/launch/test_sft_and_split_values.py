"""Start-up checks that real failures asked for (issue 26 part 5): SFT scripts that start rollout engines or
render their prompts, and an unquoted variable whose words spill out of the flag that should hold them."""

from __future__ import annotations

import pytest

from core.launch import CheckOptions, check_launch_script
from core.pins import pinned_source_dir

SFT = ("python3 train.py --rollout-function-path slime.rollout.sft_rollout.generate_rollout --loss-type sft_loss "
       "--disable-compute-advantages-and-returns --num-layers 36 --hidden-size 2560 --num-attention-heads 32 "
       "--rollout-batch-size 16 --n-samples-per-prompt 1 --global-batch-size 16 --num-rollout 10 --hf-checkpoint /m "
       "--prompt-data /d.jsonl --input-key messages {extra}\n")


def found(text: str, gpus: int = 8) -> dict[str, list]:
    report = check_launch_script(text, CheckOptions(entry="train.py", gpus=gpus))
    out: dict[str, list] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(f)
    return out


@pytest.mark.parametrize(("extra", "expected"), [
    ("--debug-train-only", []),
    ("--colocate", ["MODE009"]),  # colocated: SGLang engines share the GPUs and get a weight push each step
    ("--rollout-num-gpus 4", ["MODE009"]),  # disaggregated: four GPUs held by engines that never generate
    ("--debug-train-only --apply-chat-template", ["MODE010"]),
    ("--load-debug-rollout-data /r/{rollout_id}.pt", []),
], ids=str)
def test_sft_scripts(extra, expected):
    codes = found(SFT.format(extra=extra))
    assert [c for c in ("MODE009", "MODE010") if c in codes] == expected
    for code in expected:
        [f] = codes[code]
        assert f.fix and ("--debug-train-only" in f.fix or "--apply-chat-template" in f.fix)


def test_a_plain_grpo_script_is_not_sft():
    text = SFT.format(extra="--colocate").replace("--rollout-function-path slime.rollout.sft_rollout.generate_rollout "
                                                  "--loss-type sft_loss ", "")
    assert not {"MODE009", "MODE010"} & set(found(text))


def test_an_unquoted_variable_names_the_flag_that_lost_its_value():
    text = ('MOE_LAYER_FREQ="[1, 1, 1, 1]"\n'
            + SFT.format(extra="--debug-train-only --moe-layer-freq $MOE_LAYER_FREQ"))
    codes = found(text)
    [f] = codes["ARG008"]  # one finding for the three spilled words, tied to the flag
    assert f.flag == "--moe-layer-freq"
    assert "$MOE_LAYER_FREQ is not quoted" in f.message and "'[1,'" in f.message
    assert f.fix == 'quote it: --moe-layer-freq "$MOE_LAYER_FREQ"'
    quoted = found(text.replace("$MOE_LAYER_FREQ\n", '"$MOE_LAYER_FREQ"\n'))
    assert "ARG008" not in quoted


def test_a_stray_word_of_no_variable_is_still_reported_as_one():
    codes = found(SFT.format(extra="--debug-train-only --colocate stray"))
    [f] = codes["ARG008"]
    assert "'stray' follows no flag" in f.message


SLIME = pinned_source_dir("slime")


@pytest.mark.skipif(not (SLIME / "scripts").is_dir(), reason="needs slime's scripts")
def test_slimes_own_sft_scripts_pass_both_rules():
    for path in sorted((SLIME / "scripts").glob("run-*sft*.sh")):
        assert not {"MODE009", "MODE010"} & set(found(path.read_text(encoding="utf-8"), gpus=64)), path.name
