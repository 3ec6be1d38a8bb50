"""Time the launch-script checker and print what it finds per script.

    python benchmarks/bench_args.py                       # the synthetic fixtures + a generated 300-flag script
    python benchmarks/bench_args.py --slime /work/src/slime   # every upstream launch script at the pin

For each script: the best of --repeat timings of the whole check (read, resolve, classify, rules), the
number of flags, and the findings by severity with the error and warning codes. The target is a 300-flag
script checked in well under 100 ms.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.launch.catalog import load_catalog  # noqa: E402
from core.launch.check import CheckOptions, check_launch_script  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "scripts"
TARGET_MS = 100.0
ENTRY_RE = re.compile(r"python[0-9.]*\s+(?:-u\s+)?\S*train(?:_async)?\.py")


def upstream_scripts(slime: Path) -> list[Path]:
    """Every *.sh under scripts/ and examples/ that launches train.py or train_async.py."""
    found = []
    for sub in ("scripts", "examples"):
        for path in sorted((slime / sub).rglob("*.sh")):
            if ENTRY_RE.search(path.read_text(encoding="utf-8", errors="replace")):
                found.append(path)
    return found


def generated_script(n_flags: int = 300) -> str:
    """A synthetic script with n real flags over 40-word arrays: a valid core run plus SGLang-side options
    (values chosen so that the script is clean: the timing covers the full check, not error paths)."""
    catalog = load_catalog()
    words = ["--rollout-batch-size", "16", "--n-samples-per-prompt", "8", "--global-batch-size", "128",
             "--num-rollout", "10", "--colocate", "--num-layers", "36", "--hidden-size", "2560",
             "--num-attention-heads", "32"]
    taken = {w for w in words if w.startswith("--")}
    for spec in catalog.flags:
        if len(taken) >= n_flags:
            break
        if spec.owner not in ("sglang", "router") or spec.action.startswith("Deprecated") or spec.choices:
            continue
        if spec.action == "store" and spec.type in ("str", "int") and spec.nargs is None:
            words += [spec.primary, "x" if spec.type == "str" else "1"]
        elif spec.action == "store_true":
            words.append(spec.primary)
        else:
            continue
        taken.add(spec.primary)
    lines = ["#!/bin/bash", "# generated for the benchmark"]
    for k in range(0, len(words), 40):
        lines.append(f"ARGS_{k // 40}=(")
        lines += [f"   {w}" for w in words[k:k + 40]]
        lines.append(")")
    groups = " ".join(f'"${{ARGS_{k // 40}[@]}}"' for k in range(0, len(words), 40))
    lines.append(f"ray job submit --address=http://127.0.0.1:8265 -- python3 train.py {groups}")
    return "\n".join(lines) + "\n"


def time_check(text: str, options: CheckOptions, repeat: int) -> tuple[float, object]:
    timings, report = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        report = check_launch_script(text, options)
        timings.append((time.perf_counter() - start) * 1000)
    return min(timings), report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slime", type=Path, default=None, help="a slime checkout: check its launch scripts")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gpus", type=int, default=None, help="GPU count to check layouts against")
    parser.add_argument("--flags", type=int, default=300, help="size of the generated script")
    args = parser.parse_args(argv)

    options = CheckOptions(gpus=args.gpus)
    start = time.perf_counter()
    load_catalog()
    print(f"catalog load: {(time.perf_counter() - start) * 1000:.1f} ms (once per process)")

    cases: list[tuple[str, str]] = []
    if args.slime is not None:
        cases += [(str(p.relative_to(args.slime)), p.read_text(encoding="utf-8", errors="replace"))
                  for p in upstream_scripts(args.slime)]
    else:
        cases += [(p.name, p.read_text(encoding="utf-8")) for p in sorted(FIXTURES.iterdir()) if p.is_file()]
    cases.append((f"generated-{args.flags}-flags", generated_script(args.flags)))

    rows, worst = [], 0.0
    for name, text in cases:
        ms, report = time_check(text, options, args.repeat)
        s = report.summary
        loud = sorted({f.code for f in report.findings if f.severity.value in ("error", "warning")})
        rows.append(ms)
        worst = max(worst, ms)
        print(f"{ms:7.1f} ms  {s.flags:4d} flags  E{s.error:<2d} W{s.warning:<2d} "
              f"I{s.info:<3d} {name}  {' '.join(loud)}")
        for f in report.findings:
            if f.severity.value == "error":
                print(f"{'':12}ERROR {f.code} line {f.line}: {f.message[:160]}")
    big = rows[-1]
    print(f"\n{len(rows)} script(s): median {statistics.median(rows):.1f} ms, max {worst:.1f} ms; "
          f"{args.flags}-flag script {big:.1f} ms (target < {TARGET_MS:.0f} ms: {'ok' if big < TARGET_MS else 'SLOW'})")
    return 0 if big < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
