"""Hostile chat templates through the data check: how long each takes to be stopped, and at what memory.

Each template of issue 22 (nested range(100000) loops, 'x' * 10**9, a doubling namespace, [0] * 10**9, a
ten-megabyte output) is put in a small tokenizer built locally (nothing downloaded) and run over a 6-row
file in a fresh process. Prints the wall time of the check, the findings, the app's peak RSS and the tokenizer
worker's peak RSS. The target: every one stopped with its reason, in bounded time (three stops at most, each
within the time limit), the app's memory flat. The worker's memory cap defaults to 1024 MB here (the app's
default is 2048 MB) so that the benchmark stays well under 2 GB on a shared machine.

    .venv/bin/python benchmarks/bench_templates.py [--seconds 5 --memory-mb 1024]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = {
    "nested range(100000) loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x",
    "'x' * 10**9": "{{ 'x' * 10**9 }}",
    "doubling namespace": ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                           "{% endfor %}{{ ns.s }}"),
    "[0] * 10**9": "{{ ([0] * 10**9) | length }}",
    "10 MB output": "{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}",
}

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[4])
from tokenizer_builder import build_tokenizer
from pathlib import Path
from core.data.rules import DataKeys
from core.data.scan import check_bytes
from core.data.tokenizer_worker import TemplateLimits
from core.data.tokens import load_tokenizer

def peak(pid="self"):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

directory = build_tokenizer(Path(sys.argv[1]), chat_template=sys.argv[2])
limits = TemplateLimits(**json.loads(sys.argv[3]))
loaded = load_tokenizer(directory, limits=limits)
rows = b"".join(json.dumps({"prompt": [{"role": "user", "content": f"hello {i}"}]}).encode() + b"\n"
                for i in range(6))
started = time.perf_counter()
report = check_bytes(rows, "d.jsonl", DataKeys(input_key="prompt", apply_chat_template=True), tokenizer=loaded)
seconds = time.perf_counter() - started
worker_peak = peak(loaded.worker._process.pid) if loaded.worker._process is not None else None
messages = [f.message for f in report.findings if f.code == "DATA042"]
print(json.dumps({"seconds": seconds, "app_peak_mb": peak(), "worker_peak_mb": worker_peak,
                  "starts": loaded.worker.starts, "first": messages[0] if messages else "",
                  "stopped": sum("was stopped on this row" in m for m in messages)}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time limit per row (the app's default: 5)")
    parser.add_argument("--memory-mb", type=int, default=1024, help="worker memory cap (the app's default: 2048)")
    args = parser.parse_args()
    limits = json.dumps({"seconds": args.seconds, "memory_mb": args.memory_mb})
    print(f"limits: {args.seconds:g} s per row, {args.memory_mb:,} MB, 4 Mi characters of output; 6 rows each")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, template) in enumerate(TEMPLATES.items()):
            out = subprocess.run([sys.executable, "-c", CHILD, f"{tmp}/t{i}", template, limits, str(ROOT / "tests")],
                                 cwd=ROOT, capture_output=True, text=True, timeout=600)
            if out.returncode:
                print(f"{name:28} FAILED: {out.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            worker = f"{r['worker_peak_mb']:,.0f} MB" if r["worker_peak_mb"] else "replaced"
            print(f"{name:28} {r['seconds']:6.1f} s  rows stopped {r['stopped']} (then not run)  app peak "
                  f"{r['app_peak_mb']:,.0f} MB  worker peak {worker}  worker starts {r['starts']}")
            print(f"{'':28} {r['first'][:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
