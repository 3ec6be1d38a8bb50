"""Time the memory and time plan (core.plan) of launch scripts, in process.

    python benchmarks/bench_plan.py                          # slime's run-*.sh from $SLIME_ASSISTANT_SOURCES
    python benchmarks/bench_plan.py --slime /work/sources/slime --gpu H100-80GB

For each script: the best of --repeat timings of plan_script (the checker's read of the flags included) and of
plan_values on the flags alone (what the page recomputes when a number changes), with the peak, the KV pool and
the verdicts. Targets: a script planned in under 50 ms; a recomputation in under 300 ms (the page's budget).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.launch import CheckOptions, check_launch_script  # noqa: E402
from core.pins import pinned_source_dir  # noqa: E402
from core.plan import PlanError, plan_script, plan_values  # noqa: E402

TARGET_SCRIPT_MS = 50.0
TARGET_VALUES_MS = 300.0
GIB = 1 << 30


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slime", type=Path, default=pinned_source_dir("slime"))
    parser.add_argument("--gpu", default="H100-80GB")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    scripts = sorted((args.slime / "scripts").glob("run-*.sh"))
    if not scripts:
        print(f"no scripts/run-*.sh under {args.slime}")
        return 2
    worst_script = worst_values = 0.0
    for path in scripts:
        text = path.read_text(encoding="utf-8")
        try:
            plan = plan_script(text, args.gpu, script_path=path)  # warm the caches once
        except PlanError as exc:
            print(f"{path.name:40} cannot be planned: {exc}")
            continue
        values = check_launch_script(text, CheckOptions(script_path=path)).values
        script_ms = _best(lambda: plan_script(text, args.gpu, script_path=path), args.repeat)  # noqa: B023
        try:
            values_ms = _best(lambda: plan_values(values, args.gpu), args.repeat)  # noqa: B023
        except PlanError:
            values_ms = 0.0
        worst_script, worst_values = max(worst_script, script_ms), max(worst_values, values_ms)
        kv = plan.rollout.kv_pool_tokens if plan.rollout else "-"
        codes = ",".join(f"{v.code}:{v.severity.value}" for v in plan.verdicts) or "fits"
        print(f"{path.name:40} {script_ms:6.1f} ms  values {values_ms:5.2f} ms  peak "
              f"{plan.training.peak_bytes / GIB:6.1f} GiB  kv {kv}  {codes}")
    ok = worst_script < TARGET_SCRIPT_MS and worst_values < TARGET_VALUES_MS
    print(f"worst: script {worst_script:.1f} ms (target {TARGET_SCRIPT_MS:.0f}), values {worst_values:.2f} ms "
          f"(target {TARGET_VALUES_MS:.0f}) -> {'ok' if ok else 'SLOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
