"""Launch rules do not depend on each other's side effects (issue 25, part 3).

Every rule computes what it needs from the script (shared derivations are cached per check, never stored by
one rule for another), so skipping any one rule (not run, as the version gate does, or stopped by a Skip)
leaves every other rule's findings exactly as they were. Checked on the fixture scripts and, when the pinned
sources are there, on slime's own scripts/run-*.sh; plus the reproducer: a checkout where the batch
equation's assertion is written the other way round skips BATCH001, and Megatron's start-up batch check
(BATCH007) must still be reported.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import core.launch.check as check
from core.cli import main
from core.launch.check import CheckOptions, check_arg_list, check_script_bytes
from core.launch.rules import RULES, RuleContext, run_rules
from core.launch.rules.registry import Skip
from core.launch.rules.versions import CodeGate
from core.pins import pinned_source_dir
from tests.launch.test_args_check import BASE, RULE_CASES
from tests.launch.test_versions import old_tree

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"
SLIME_SCRIPTS = pinned_source_dir("slime") / "scripts"
SCRIPTS = sorted(FIXTURES.glob("*")) + sorted(SLIME_SCRIPTS.glob("run-*.sh"))
CHECKS = [code for code, info in RULES.items() if info.check is not None]
# the argument lists of tests/launch/test_args_check.py's rule cases that make their rule fire, on a full base command
# and a few that reach the batch rules (flags given again override BASE's: the last one wins)
ARG_LISTS = sorted({tuple(args) for _, args, expected in RULE_CASES if expected} | {
    ("--num-rollout", "0"),  # BATCH005
    ("--rollout-batch-size", "12", "--n-samples-per-prompt", "2", "--global-batch-size", "24",
     "--micro-batch-size", "2", "--decrease-batch-size-if-needed"),  # BATCH006
    ("--rollout-batch-size", "4", "--n-samples-per-prompt", "1", "--global-batch-size", "4"),  # BATCH007
    ("--global-batch-size", "12", "--rollout-batch-size", "12", "--n-samples-per-prompt", "1"),  # BATCH008
    ("--global-batch-size", "$GBS",),  # the batch unknown: the split checks wait, as before
})


def _contexts(path: Path, options: CheckOptions, monkeypatch: pytest.MonkeyPatch) -> list[RuleContext]:
    """The RuleContext a full check of the script builds (several for a script with several commands)."""
    seen: list[RuleContext] = []

    def recording(ctx: RuleContext) -> list:
        seen.append(ctx)
        return run_rules(ctx)

    with monkeypatch.context() as m:
        m.setattr(check, "run_rules", recording)
        check_script_bytes(path.read_bytes(), options.model_copy(update={"script_path": path}))
    return seen


def _by_rule(ctx: RuleContext, monkeypatch: pytest.MonkeyPatch, skip: str | None = None,
             how: str = "not run") -> dict[str, list[dict]]:
    """Run every rule on a fresh copy of the context (no derivation cached yet) and return each rule's
    findings; the rule `skip` is not run, or raises Skip before it starts, as `how` says."""
    fresh = RuleContext(ctx.parsed, ctx.catalog, ctx.options, ctx.entry, ctx.command_line)
    fresh.code_gate = ctx.code_gate
    produced: dict[str, list[dict]] = {}
    with monkeypatch.context() as m:
        for code in CHECKS:
            info = RULES[code]

            def wrapped(c: RuleContext, _info=info) -> list:
                if _info.code == skip:
                    if how == "Skip":
                        raise Skip("--rollout-batch-size", "stopped by the test", False)
                    return []
                try:
                    found = list(_info.check(c))
                except Skip as stop:  # held back by an unknown value: that, too, must not depend on the others
                    produced[_info.code] = [{"skipped": stop.flag, "reason": stop.reason, "hidden": stop.hidden}]
                    raise
                produced[_info.code] = [f.model_dump() for f in found]
                return found

            m.setitem(RULES, code, dataclasses.replace(info, check=None if skip == code and how == "not run"
                                                       else wrapped))
        run_rules(fresh)
    return produced


def _assert_independent(ctx: RuleContext, label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _by_rule(ctx, monkeypatch)
    assert set(base) == set(CHECKS)  # every rule ran (or was held back by an unknown value)
    for i, code in enumerate(CHECKS):
        how = ("not run", "Skip")[i % 2]
        skipped = _by_rule(ctx, monkeypatch, skip=code, how=how)
        assert code not in skipped
        changed = [c for c in CHECKS if c != code and skipped[c] != base[c]]
        assert not changed, f"{label}: skipping {code} ({how}) changed the findings of {changed}"


@pytest.mark.parametrize("options", [CheckOptions(), CheckOptions(gpus=8, gpus_per_node=4)],
                         ids=["plain", "profile"])
@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_skipping_any_rule_leaves_every_other_rules_findings_unchanged(path, options, monkeypatch):
    for ctx in _contexts(path, options, monkeypatch):
        _assert_independent(ctx, path.name, monkeypatch)


@pytest.mark.parametrize("args", ARG_LISTS, ids=" ".join)
def test_the_same_holds_for_the_argument_lists_of_the_rule_cases(args, monkeypatch):
    for entry in ("train.py", "train_async.py"):
        ctx = check.rule_context([*BASE, *args], CheckOptions(entry=entry, gpus=8, gpus_per_node=4))
        _assert_independent(ctx, f"{entry} {' '.join(args)}", monkeypatch)


def test_the_scripts_exercise_many_rules(monkeypatch):
    """The sets above are worth something only if they make most rules fire."""
    fired: set[str] = set()
    for path in SCRIPTS:
        for ctx in _contexts(path, CheckOptions(gpus=8, gpus_per_node=4), monkeypatch):
            fired |= {c for c, found in _by_rule(ctx, monkeypatch).items() if found}
    for args in ARG_LISTS:
        ctx = check.rule_context([*BASE, *args], CheckOptions(entry="train.py", gpus=8, gpus_per_node=4))
        fired |= {c for c, found in _by_rule(ctx, monkeypatch).items() if found}
    assert len(fired) >= 0.8 * len(CHECKS), sorted(set(CHECKS) - fired)
    assert {"BATCH001", "BATCH005", "BATCH006", "BATCH008", "GPU001", "GPU003", "GPU004"} <= fired, sorted(fired)


def test_batch_rules_each_compute_the_batch_themselves(monkeypatch):
    """BATCH005-008 need the batch arithmetic; none of them waits for BATCH001 to have run."""
    args = ["--rollout-batch-size", "4", "--n-samples-per-prompt", "1", "--global-batch-size", "4",
            "--num-rollout", "0", "--colocate", "--hf-checkpoint", "/m"]
    for code, wanted in (("BATCH005", {"BATCH005"}), ("BATCH008", set())):
        ctx = check.rule_context(args, CheckOptions(entry="train.py"))
        assert {f["code"] for f in _by_rule(ctx, monkeypatch, skip="BATCH001")[code]} == wanted
    args[args.index("--num-rollout") + 1] = "10"
    ctx = check.rule_context(args, CheckOptions(entry="train.py"))
    assert [f["code"] for f in _by_rule(ctx, monkeypatch, skip="BATCH001")["BATCH008"]] == ["BATCH007"]


# -- the reproducer: BATCH001 skipped by the version gate ---------------------------------------------------
BATCH_ASSERT = ("    if args.num_steps_per_rollout is not None:\n"
                "        global_batch_size = args.rollout_batch_size * args.n_samples_per_prompt // "
                "args.num_steps_per_rollout\n"
                "        if args.global_batch_size is not None:\n"
                "            assert {left} == {right}\n")
PIN = ("args.global_batch_size", "global_batch_size")
SCRIPT = """#!/bin/bash
python3 train.py \\
   --actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate \\
   --hf-checkpoint /models/Qwen3-4B \\
   --num-layers 36 --hidden-size 2560 --num-attention-heads 32 \\
   --rollout-batch-size 4 --n-samples-per-prompt 1 --global-batch-size 4 \\
   --num-rollout 10
"""
EXTRA = "\n".join(f'        parser.add_argument("{flag}", type=int, default={default})' for flag, default in (
    ("--n-samples-per-prompt", 1), ("--num-steps-per-rollout", None), ("--actor-num-nodes", 1),
    ("--actor-num-gpus-per-node", 8)))


def _checkout(root: Path, left: str, right: str) -> Path:
    return old_tree(root, extra=EXTRA, validate=BATCH_ASSERT.format(left=left, right=right))


@pytest.mark.parametrize("operands", [PIN, PIN[::-1]], ids=["as at the pin", "operands swapped"])
def test_megatrons_batch_check_survives_a_checkout_without_slimes_batch_equation(tmp_path, operands):
    tree = _checkout(tmp_path / "co", *operands)
    report = check_script_bytes(SCRIPT.encode(), CheckOptions(catalog_path=tree))
    found = {f.code: f for f in report.findings}
    assert "BATCH007" in found and found["BATCH007"].severity.value == "error"
    assert "global batch 4 is smaller than micro batch 1 x data-parallel size 8" in found["BATCH007"].message
    assert found["BATCH007"].source.startswith("megatron/")  # Megatron's check: not judged by slime's code
    assert CodeGate(tree, None).locate("BATCH001")[0] == (operands == PIN)  # swapped: BATCH001 is skipped
    assert report.summary.batch["global_batch_size"] == 4  # the summary's batch needs no rule either


def test_the_cli_fails_on_that_checkout_as_on_the_pin(tmp_path, capsys):
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    seen = {}
    for name, operands in (("pin", PIN), ("swapped", PIN[::-1])):
        tree = _checkout(tmp_path / name, *operands)
        rc = main(["check-args", "--slime-checkout", str(tree), str(script)])
        out = capsys.readouterr().out
        seen[name] = (rc, set(re.findall(r"^(?:ERROR|WARNING|INFO)\s+([A-Z]+\d{3})", out, re.M)), out)
    assert seen["pin"][0] == seen["swapped"][0] == 1
    assert "BATCH007" in seen["pin"][1] and seen["pin"][1] == seen["swapped"][1]
    skipped = {name: int(re.search(r"(\d+) check\(s\) skipped", out).group(1)) for name, (_, _, out) in seen.items()}
    assert skipped["swapped"] == skipped["pin"] + 1  # BATCH001, and nothing else, is skipped in addition

def test_the_megatron_check_runs_without_slimes_split_check(tmp_path):
    """BATCH006 judges slime's dp_schedule; with a checkout lacking it, Megatron's BATCH007 is still there."""
    tree = _checkout(tmp_path / "co", *PIN)
    args = ["--rollout-batch-size", "4", "--global-batch-size", "4", "--num-rollout", "1", "--hf-checkpoint", "/m",
            "--colocate", "--num-layers", "2", "--hidden-size", "8", "--num-attention-heads", "2"]
    report = check_arg_list(args, CheckOptions(catalog_path=tree, entry="train.py"))
    codes = {f.code for f in report.findings}
    assert "BATCH007" in codes
    gate = CodeGate(tree, None)
    assert not gate.locate("BATCH006")[0] and gate.locate("BATCH008") == (True, None)
