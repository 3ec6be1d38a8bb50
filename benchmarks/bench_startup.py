"""Time the command line as a user (or a pre-commit hook) waits for it: whole processes, median of 10.

    python benchmarks/bench_startup.py [--repeat 10]

Targets: `check-args` on a launch script under 0.3 s, `--help` under 0.2 s, `check-data` on a 20-line
file under 0.4 s, `ask` under 0.2 s, `logs` under 0.3 s before any file is read (`logs --help`, and `logs`
on an empty directory: everything up to the first file it would read). Each figure is the median wall time of fresh `python -m core ...` processes, with the
median CPU time (user + system) beside it, which is steadier on a busy machine.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _twenty_line_file(directory: Path) -> Path:
    path = directory / "twenty.jsonl"
    rows = [f'{{"input": "What is {i} + {i}?", "label": "{2 * i}"}}' for i in range(20)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _time_command(args: list[str], repeat: int) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("--help", ["--help"], 0.2),
            ("check-args on a launch script", ["check-args", str(FIXTURES / "scripts" / "good_colocate.sh")], 0.3),
            ("check-data on a 20-line file", ["check-data", str(_twenty_line_file(Path(tmp)))], 0.4),
            ("ask --rollout-batch-size", ["ask", "--rollout-batch-size"], 0.2),
            ("ask rollout batch size", ["ask", "rollout", "batch", "size"], 0.2),
            ("logs --help", ["logs", "--help"], 0.3),
            ("logs on an empty directory", ["logs", "--no-cache", tmp], 0.3),
        ]
        compileall.compile_dir(ROOT / "core", quiet=1)  # bytecode caches, as an installed tool has them
        _time_command(["ask", "x"], 1)  # the first `ask` saves the search index's image for the later ones
        print(f"{'command':34} {'median wall':>12} {'median cpu':>11} {'target':>7}")
        for label, args, target in cases:
            wall, cpu = _time_command(args, opts.repeat)
            verdict = "ok" if wall < target else "OVER"
            print(f"{label:34} {wall * 1000:9.0f} ms {cpu * 1000:8.0f} ms {target * 1000:5.0f} ms  {verdict}")
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
