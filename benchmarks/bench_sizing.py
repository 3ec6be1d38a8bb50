"""Time `ask`'s answer to "how many GPUs do I need for <model>?" (core.plan.sizing) for every slime model script.

    python benchmarks/bench_sizing.py                 # on H100-80GB
    python benchmarks/bench_sizing.py --gpu H200

For each model script: the fewest GPUs the answer gives (and its layout), a smaller count that fits only inside
the uncertainty band, and the time of one answer (each is planned afresh: the search runs the plan for every
layout of each GPU count until one fits). Target: every answer in under 1 s, so `ask` stays interactive.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.model_scripts import load_model_scripts  # noqa: E402
from core.plan import sizing_answer  # noqa: E402

TARGET_MS = 1000.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="H100-80GB")
    args = parser.parse_args(argv)
    sizing_answer(f"how many {args.gpu} do I need for qwen3-4B")  # warm the tables once
    worst = 0.0
    for script in load_model_scripts():
        start = time.perf_counter()
        answer = sizing_answer(f"how many {args.gpu} do I need for {script.name}")
        ms = (time.perf_counter() - start) * 1000
        worst = max(worst, ms)
        lay = answer.layout
        shown = (f"{answer.min_gpus:5} GPUs  TP {lay.tp} PP {lay.pp} EP {lay.ep} engine {lay.engine_gpus}"
                 if lay else f"{answer.status}")
        band = f"  (may fit on {answer.may_fit_gpus})" if answer.may_fit_gpus and lay and answer.may_fit_gpus < lay.gpus \
            else ""
        cpu = f"  CPU Adam: {answer.cpu_adam.gpus} GPUs, {answer.cpu_adam.host_gib_per_node:.0f} GiB host a node" \
            if answer.cpu_adam else ""
        print(f"{script.name:28} {ms:7.1f} ms  {shown}{band}{cpu}")
    print(f"worst: {worst:.1f} ms (target {TARGET_MS:.0f}) -> {'ok' if worst < TARGET_MS else 'SLOW'}")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
