"""The plan against real measurements posted in slime and SGLang threads (tests/fixtures/plan_measurements.yaml):
each estimate's error is reported (run with -s to see the table); the ones we can hold are asserted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from core.model_scripts import load_model_scripts
from core.pins import pinned_source_dir
from core.plan import plan_script, plan_values
from core.plan.training import PAUSED_SGLANG

FIXTURE = Path(__file__).parents[1] / "fixtures" / "plan_measurements.yaml"
MEASUREMENTS = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))["measurements"]
SLIME = pinned_source_dir("slime")
GIB = float(1 << 30)


def _plan(m: dict):
    if "script" in m:
        path = SLIME / m["script"]
        if not path.is_file():
            pytest.skip("pinned slime sources not available")
        text = path.read_text(encoding="utf-8")
        for flag in m.get("drop", []):
            text = text.replace(flag, "")
        plan = plan_script(text, m["gpu"], script_path=path, node_ram_gib=m.get("node_ram_gib"))
        if m.get("flags"):
            from core.launch import CheckOptions, check_launch_script

            values = dict(check_launch_script(text, CheckOptions(script_path=path)).values) | m["flags"]
            plan = plan_values(values, m["gpu"], node_ram_gib=m.get("node_ram_gib"))
        return plan
    model = next(s for s in load_model_scripts() if s.name == m["model"])
    values = {f"--{k}": v for k, v in model.values.items()} | {"--actor-num-gpus-per-node": "8"} | m["flags"]
    return plan_values(values, m["gpu"], node_ram_gib=m.get("node_ram_gib"))


def estimate(m: dict) -> tuple[float, float]:
    """(estimate, measured) in the measurement's unit."""
    kind, got = m["kind"], m["measured"]
    if kind == "paused":
        return PAUSED_SGLANG / GIB, got["gib"]
    plan = _plan(m)
    if kind == "kv_cell":
        return got["tokens"] * plan.rollout.kv_bytes_per_token / 2 / GIB, got["k_size_gb"]
    if kind == "kv_pool":
        return plan.rollout.kv_pool_tokens, got["tokens"]
    if kind == "weights":
        return plan.rollout.weights_bytes / GIB, got["mem_usage_gb"]
    if kind == "host":
        return plan.host.bytes_per_node, got["host_bytes_per_node"]
    if kind == "host_short":
        return float(any(v.code == "PLAN003" for v in plan.verdicts)), 1.0
    if kind == "static":
        return float(not any(v.code == "PLAN001" and v.severity.value == "error" for v in plan.verdicts)), 1.0
    if kind == "oom":
        return float(any(v.code in ("PLAN001", "PLAN005") for v in plan.verdicts)), 1.0
    raise AssertionError(f"unknown kind {kind}")


def test_there_are_at_least_ten_measurements_each_with_its_thread():
    assert len(MEASUREMENTS) >= 10
    for m in MEASUREMENTS:
        assert m["url"].startswith("https://github.com/"), m["id"]
        assert m.get("assert", True) or m.get("why"), f"{m['id']}: a miss needs its reason"


@pytest.mark.parametrize("m", MEASUREMENTS, ids=lambda m: m["id"])
def test_estimate_against_measurement(m, capsys):
    ours, measured = estimate(m)
    error = (ours - measured) / measured if measured else 0.0
    with capsys.disabled():
        print(f"\n  {m['id']:38} {m['kind']:10} measured {measured:>14.6g}  ours {ours:>14.6g}  error {error:+.1%}")
    if not m.get("assert", True):
        return
    tolerance = m.get("tolerance", 0.0)
    assert abs(error) <= tolerance, f"{m['id']}: ours {ours:.6g} vs measured {measured:.6g} ({error:+.1%})"
