"""`slime-assistant check-args`: exit codes, the JSON shape, stdin, and the rule list."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import main
from core.pins import pinned_source_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"
ROOT = Path(__file__).resolve().parents[2]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["check-args", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(("name", "rc"), [
    ("good_colocate.sh", 0), ("typo_and_batch.sh", 1), ("async_colocate.sh", 1), ("unterminated.sh", 1),
], ids=str)
def test_exit_code_says_whether_there_are_errors(capsys, name, rc):
    assert run_cli(capsys, str(FIXTURES / name), "--gpus", "8")[0] == rc


@pytest.mark.parametrize("argv", [
    ["/no/such/file.sh"],
    [str(FIXTURES)],
    [],
    [str(FIXTURES / "good_colocate.sh"), "--entry", "main.py"],
    [str(FIXTURES / "good_colocate.sh"), "--gpus", "0"],
    [str(FIXTURES / "good_colocate.sh"), "--slime-checkout", str(FIXTURES)],
    [str(FIXTURES / "good_colocate.sh"), "--format", "yaml"],
], ids=str)
def test_usage_problems_exit_2(capsys, argv):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2 and not out.strip().startswith("{")


def test_json_has_the_documented_shape(capsys):
    rc, out, _ = run_cli(capsys, str(FIXTURES / "typo_and_batch.sh"), "--format", "json")
    doc = json.loads(out)
    assert rc == 1 and set(doc) == {"findings", "categories", "versions", "summary"}
    assert [v["layer"] for v in doc["versions"]] == ["slime", "megatron", "sglang"]
    assert all(v["origin"] == "bundled pin" and not v["differs"] for v in doc["versions"])
    assert all(list(f) == ["code", "severity", "message", "line", "flag", "fix", "source"] for f in doc["findings"])
    assert {f["severity"] for f in doc["findings"]} <= {"error", "warning", "info"}
    assert doc["categories"]["--n-sample-per-prompt"] == "unknown" and doc["categories"]["--colocate"] == "slime"
    assert doc["summary"]["error"] == 2 and doc["summary"]["batch"]["n_samples_per_prompt"] == 1


def test_text_report_ends_with_counts(capsys):
    rc, out, _ = run_cli(capsys, str(FIXTURES / "good_colocate.sh"), "--gpus", "8")
    assert rc == 0 and "0 error(s)" in out.splitlines()[-1]
    assert "128 per rollout" in out and "GPUs: 8 (colocated)" in out


def test_stdin_bare_list_with_entry(capsys, monkeypatch):
    data = b"--rollout-batch-size 8 --num-rollout 2 --colocate --num-layers 2 --hidden-size 8 " \
           b"--num-attention-heads 2 --global-batch-size 8"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    rc, out, _ = run_cli(capsys, "-", "--entry", "train_async.py", "--format", "json")
    doc = json.loads(out)
    assert rc == 1 and "ENTRY001" in [f["code"] for f in doc["findings"]]


def test_binary_input_is_an_error_finding_not_a_crash(capsys, tmp_path):
    blob = tmp_path / "x.bin"
    blob.write_bytes(bytes(range(256)) * 4)
    rc, out, _ = run_cli(capsys, str(blob))
    assert rc == 1 and "SCRIPT001" in out


def test_list_rules_prints_every_code(capsys):
    from core.launch.check import RULES

    rc, out, _ = run_cli(capsys, "--list-rules")
    assert rc == 0 and all(code in out for code in RULES)


def test_python_dash_m_core_does_the_same():
    proc = subprocess.run([sys.executable, "-m", "core", "check-args", str(FIXTURES / "async_colocate.sh"),
                           "--format", "json"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "ENTRY001" in proc.stdout


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no named pipes on this platform")
def test_a_named_pipe_is_refused_without_blocking(capsys, tmp_path):
    import os

    pipe = tmp_path / "script.sh"
    os.mkfifo(pipe)
    rc, out, err = run_cli(capsys, str(pipe))
    assert rc == 2 and not out and "is a named pipe, not a regular file" in err and "check-args -" in err


@pytest.mark.parametrize(("target", "message"), [
    (FIXTURES, "is a directory; give a script file"),
    (Path("/dev/null"), "is a device, not a regular file"),
], ids=str)
def test_directories_and_devices_are_refused_by_kind(capsys, target, message):
    if not target.exists():
        pytest.skip(f"{target} not present")
    rc, out, err = run_cli(capsys, str(target))
    assert rc == 2 and not out and message in err


def test_gpus_limit_is_the_profile_limit(capsys):
    from core.memory.profile import MAX_GPUS

    script = str(FIXTURES / "good_colocate.sh")
    rc, _, err = run_cli(capsys, script, "--gpus", str(MAX_GPUS + 1))
    assert rc == 2 and f"between 1 and {MAX_GPUS}" in err
    rc, out, _ = run_cli(capsys, script, "--gpus", str(MAX_GPUS))
    assert rc == 0 and f"8 of your {MAX_GPUS} GPUs" in out


def test_a_broken_checkout_is_a_warning_and_the_bundled_catalog_is_used(capsys, tmp_path, monkeypatch):
    import core.launch.versions as versions

    monkeypatch.setattr(versions, "_MEMORY", {})
    arguments = tmp_path / "slime" / "utils" / "arguments.py"
    arguments.parent.mkdir(parents=True)
    arguments.write_bytes(b"def _pre_parse_mode(:\n")
    rc, out, err = run_cli(capsys, str(FIXTURES / "good_colocate.sh"), "--gpus", "8", "--slime-checkout",
                           str(tmp_path))
    assert rc == 0 and "Traceback" not in err
    assert "could not be used (slime/utils/arguments.py:1 is not valid Python" in out
    assert "checked against the bundled catalog instead" in out


@pytest.mark.parametrize(("script", "line"), [
    ("scripts/run-qwen2.5-0.5B-reproducibility.sh", 19),
    ("scripts/low_precision/run-qwen3-4b-fp8.sh", 27),
    ("scripts/low_precision/run-qwen3-30b-a3b-fp8.sh", 28),
], ids=str)
def test_upstream_scripts_that_source_a_missing_model_script(capsys, script, line):
    path = pinned_source_dir("slime") / script
    if not path.is_file():
        pytest.skip("slime sources not extracted here")
    rc, out, _ = run_cli(capsys, str(path), "--format", "json")
    hits = [f for f in json.loads(out)["findings"] if f["code"] == "SCRIPT012"]
    assert rc == 1 and [h["line"] for h in hits] == [line] and "scripts/scripts/models/" in hits[0]["message"]


def test_several_files_as_pre_commit_passes_them(capsys):
    from core.cli import main

    good, bad = str(FIXTURES / "good_colocate.sh"), str(FIXTURES / "typo_and_batch.sh")
    assert main(["check-args", good]) == 0
    capsys.readouterr()
    assert main(["check-args", good, bad]) == 1  # errors in one of them
    out = capsys.readouterr().out
    assert f"== {good}" in out and f"== {bad}" in out
    assert main(["check-args", good, "/no/such/file.sh", "--format", "json"]) == 2  # one unreadable
    doc = json.loads(capsys.readouterr().out)
    assert [f["readable"] for f in doc["files"]] == [True, False] and "findings" in doc["files"][0]
    assert main(["check-args", good, "-"]) == 2


def test_the_pre_commit_hook_runs_the_installed_command():
    import yaml

    hooks = yaml.safe_load((FIXTURES.parents[2] / ".pre-commit-hooks.yaml").read_text())
    [hook] = hooks
    assert hook["id"] == "slime-check-args" and hook["entry"] == "slime-assistant check-args"
    assert hook["language"] == "python"


GPU004_ARGS = ("--actor-num-gpus-per-node 4 --rollout-num-gpus 8 --rollout-batch-size 8 --n-samples-per-prompt 8 "
               "--global-batch-size 64 --num-rollout 2 --hf-checkpoint /m")


def test_gpus_per_node_checks_num_gpus_per_node(capsys, tmp_path):
    """Three 4-GPU nodes, actor on one and rollout on two: slime's default --num-gpus-per-node 8 hands the eight
    engines one node's address (GPU004), known only from the node size."""
    args = tmp_path / "args.txt"
    args.write_text(GPU004_ARGS)
    rc, out, _ = run_cli(capsys, str(args), "--entry", "train.py", "--gpus", "12", "--gpus-per-node", "4",
                         "--format", "json")
    [found] = [f for f in json.loads(out)["findings"] if f["code"] == "GPU004"]
    assert found["severity"] == "error" and "4 GPUs each" in found["message"] and rc == 1
    rc, out, _ = run_cli(capsys, str(args), "--entry", "train.py", "--gpus", "12", "--format", "json")
    assert not [f for f in json.loads(out)["findings"] if f["code"] == "GPU004"]
    rc, _, err = run_cli(capsys, str(args), "--gpus-per-node", "0")
    assert rc == 2 and "--gpus-per-node must be between 1" in err
