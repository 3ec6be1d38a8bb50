"""Run every benchmarks/bench_*.py in turn with its default arguments and print its figures.

The scripts: bench_args (launch-script checker), bench_browser (real-browser timings), bench_data (dataset
checker), bench_idle (idle CPU of the server as `make run` starts it), bench_monitor, bench_reader_hostile,
bench_search, bench_startup (the command line), bench_tokens, bench_wandb.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"\n=== {script.name}", flush=True)
        rc = subprocess.call([sys.executable, str(script)], cwd=HERE.parent)
        if rc:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
