"""Hostile launch scripts: how long the static bash reader takes on inputs built to make it slow or large.

Every script is at most MAX_SCRIPT_CHARS long; the figure to watch is the worst time (target: under 10 s on a
laptop for any of them, against minutes or gigabytes before the limits of issue 15). Prints one line each:
the case, its size, the best of --rounds runs, and the notes the reader left (e.g. the limit it reached).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.launch.script import MAX_SCRIPT_CHARS, read_launch_script  # noqa: E402


def cases() -> dict[str, str]:
    return {
        "doubling A=\"$A$A\" x40": 'A="x"\n' + 'A="$A$A"\n' * 40 + "python3 train.py --a $A\n",
        "doubling A+=$A x40": "A=xxxxxxxxxx\n" + "A+=$A\n" * 40 + "python3 train.py --a $A\n",
        "array doubling x3000": "A=(" + "abcdefghij " * 50 + ")\n" + 'A=("${A[@]}" "${A[@]}")\n' * 3000,
        "8,000 ifs": "".join(f"V{i}=1\nif x; then W{i}=2; fi\n" for i in range(8000)),
        "8,000 loops": "".join(f"V{i}=1\nfor a in b; do W=2; done\n" for i in range(8000)),
        "6,000 ifs growing an array": "A=(" + "x " * 5000 + ")\n"
                                      + "".join(f"if x; then A+=(y{i}); fi\n" for i in range(6000)),
        "big integers": "N=" + "9" * 5000 + "\npython3 train.py --a $((N*2)) --b $((" + "9" * 5000 + "))\n",
        "odd whitespace on every line": "X=1\xa0\u3000\r\x0b\n" * 40000,
        "nested $(\"": '"$("' * 3000,
        "200,000 backslashes": "\\" * 200_000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    worst = 0.0
    for name, script in cases().items():
        script = script[:MAX_SCRIPT_CHARS]
        best = float("inf")
        for _ in range(args.rounds):
            start = time.perf_counter()
            read = read_launch_script(script)
            best = min(best, time.perf_counter() - start)
        worst = max(worst, best)
        kinds = sorted({n.kind for n in read.notes})
        print(f"{name:32} {len(script):>8,} chars  {best:6.2f} s  notes: {', '.join(kinds) or '-'}")
    print(f"worst: {worst:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
