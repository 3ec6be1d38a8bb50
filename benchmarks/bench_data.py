"""Benchmark the dataset check against a bare orjson loop over the same JSON Lines file.

Generates a file of --lines lines (default 1,000,000, about 650 bytes each: half string prompts, half chat
messages, plus a few bad lines), then times, each in a fresh process and interleaved --repeat times:
a bare `orjson.loads` loop, optionally Python's `json.loads` loop, and core.data.scan.check_path with
`--input-key prompt --label-key label --apply-chat-template`. Prints lines/s, peak RSS and the ratio to
the bare loop, in wall time and in CPU time (steadier on a busy machine; the check's CPU time is its main
process's only when it reads in parts). With --parquet, the same for a parquet file against pyarrow's batch
reading (what slime does). Speed targets live here, never in timed tests.

--cases times the files of issue 28 (compact): good-prompts (every row a string prompt, all fine),
mixed-chat (half the rows chat lists with a system turn, all with metadata, a few bad lines) and
many-misses (the same, every other row without its label), against a bare orjson loop that also reads the
two keys (orjson-keys); check is the check as shipped (in parts, one per core, on a large file), check-1
the same in one pass.

    .venv/bin/python benchmarks/bench_data.py                 # 1M lines: compact, spaced and mixed files
    .venv/bin/python benchmarks/bench_data.py --cases good-prompts,mixed-chat,many-misses
    .venv/bin/python benchmarks/bench_data.py --lines 200000 --style spaced --json-loop --parquet
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("the of and to in is that for it as with was on be by at this are from or have an not triangle "
         "integer prime sum product angle radius answer compute find value greater smaller equal").split()
BAD_LINES = {  # line index -> what is wrong with it (a few, spread over the file)
    0.1: "invalid JSON", 0.2: "missing label", 0.3: "NaN label", 0.4: "duplicate key", 0.5: "empty prompt",
    0.6: "invalid JSON", 0.7: "metadata a string", 0.8: "unknown role", 0.9: "invalid JSON",
}


CASES = {"good-prompts": {"good_prompts": True}, "mixed-chat": {}, "many-misses": {"repeated": True}}


def generate(path: Path, lines: int, style: str, seed: int = 1234, repeated: bool = False,
             good_prompts: bool = False) -> None:
    """Write the benchmark file: deterministic, ~650 bytes a line, both prompt formats, a few bad lines.

    style: compact (orjson), spaced (json.dumps, non-ASCII kept), or mixed (each line one or the other at
    random, json.dumps escaping non-ASCII, a tenth of the prompts with non-ASCII text); with `repeated`,
    every other row has no label; with `good_prompts`, every row is a fine string prompt (no bad lines)."""
    import orjson

    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(85, 115))) for _ in range(997)]
    bad_at = {int(fraction * lines): what for fraction, what in BAD_LINES.items()} if lines >= 20 else {}
    if good_prompts:
        bad_at = {}

    def encode(row: dict) -> bytes:
        if style == "compact" or (style == "mixed" and rng.random() < 0.5):
            return orjson.dumps(row)
        if style == "mixed":  # json.dumps with every default: spaced, non-ASCII escaped
            return json.dumps(row).encode()
        return json.dumps(row, ensure_ascii=False).encode()

    with open(path, "wb") as handle:
        for i in range(lines):
            text = texts[i % len(texts)]
            if style == "mixed" and i % 10 == 3:
                text = text + " (données, 数学: x² − 1 = 0)"
            label = str((i * 7919) % 1000003)
            metadata = {"source_name": "synthetic-math", "index": i}
            if i % 2 and not good_prompts:
                row = {"prompt": [{"role": "system", "content": "Answer with a number."},
                                  {"role": "user", "content": text}], "label": label, "metadata": metadata}
            else:
                row = {"prompt": text, "label": label, "metadata": metadata}
            if repeated and i % 2:
                del row["label"]  # one finding on half the rows: counted, its first rows listed
            what = bad_at.get(i)
            if what == "invalid JSON":
                handle.write(encode(row)[:-3] + b"\n")
                continue
            if what == "missing label":
                del row["label"]
            elif what == "NaN label":
                handle.write(encode(row).replace(b'"' + label.encode() + b'"', b"NaN") + b"\n")
                continue
            elif what == "duplicate key":
                handle.write(encode(row)[:-1] + b',"label":"0"}\n')
                continue
            elif what == "empty prompt":
                row["prompt"] = ""
            elif what == "metadata a string":
                row["metadata"] = "synthetic"
            elif what == "unknown role":
                row["prompt"] = [{"role": "bot", "content": text}]
            handle.write(encode(row) + b"\n")


def generate_parquet(path: Path, lines: int, seed: int = 1234) -> None:
    """The same rows as a parquet file (string prompts: a parquet column has one type), a few bad rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(85, 115))) for _ in range(997)]
    bad = {int(fraction * lines) for fraction in BAD_LINES} if lines >= 20 else set()
    writer = None
    try:
        for start in range(0, lines, 100_000):
            stop = min(start + 100_000, lines)
            prompts = [texts[i % len(texts)] for i in range(start, stop)]
            labels: list[str | None] = [str((i * 7919) % 1000003) for i in range(start, stop)]
            for i in bad:
                if start <= i < stop:
                    labels[i - start] = None  # a null label: a warning, the row is still used
            table = pa.table({"prompt": prompts, "label": labels,
                              "metadata": [{"source_name": "synthetic-math", "index": i} for i in range(start, stop)]})
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


# ---------------------------------------------------------------- workers (run in their own process) --------

def worker(kind: str, path: str) -> dict:
    sys.path.insert(0, str(ROOT))
    import orjson

    from core.data.rules import DataKeys
    from core.data.scan import check_path

    before = _peak_rss_mb()
    started, cpu_started = time.perf_counter(), time.process_time()
    result: dict = {}
    if kind == "orjson":
        with open(path, "rb") as handle:
            for line in handle:
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    pass
    elif kind == "orjson-keys":  # the bare loop that also reads the two keys the check is run with
        with open(path, "rb") as handle:
            for line in handle:
                try:
                    row = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if row.__class__ is dict:
                    row.get("prompt")
                    row.get("label")
    elif kind == "pyarrow":  # what slime does with a .parquet file (data.py:51-55)
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches():
            batch.to_pylist()
    elif kind == "json":
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    json.loads(line)
                except json.JSONDecodeError:
                    pass
    else:
        report = check_path(path, DataKeys(input_key="prompt", label_key="label",
                                           apply_chat_template=path.endswith(".jsonl")),
                            processes=1 if kind == "check-1" else None)
        s = report.summary
        result = {"rows_used": s.rows_used, "rows_skipped": s.rows_skipped, "rows_crash": s.rows_crash,
                  "findings": s.findings_by_code}
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {"seconds": seconds, "cpu": cpu, "rss_before_mb": before, "rss_peak_mb": _peak_rss_mb(), **result}


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _peak_rss_mb() -> float:
    """This process's peak resident memory. Linux's VmHWM starts afresh at exec; ru_maxrss keeps the
    parent's peak from before the fork, so it is only the fallback."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(kind: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--worker", kind, str(path)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def bench_file(path: Path, lines: int, repeat: int, kinds: list[str]) -> None:
    size_mb = path.stat().st_size / 1e6
    print(f"\n{path.name}: {lines:,} lines, {size_mb:,.0f} MB ({path.stat().st_size / lines:,.0f} bytes/line), "
          f"load average {_load()}")
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    for _ in range(repeat):  # interleaved, so a noisy neighbour slows every kind alike
        for kind in kinds:
            runs[kind].append(measure(kind, path))
    baseline = kinds[0]
    bare = statistics.median(r["seconds"] for r in runs[baseline])
    bare_cpu = statistics.median(r["cpu"] for r in runs[baseline])
    for kind in kinds:
        secs = [r["seconds"] for r in runs[kind]]
        median = statistics.median(secs)
        cpu = statistics.median(r["cpu"] for r in runs[kind])
        peak = max(r["rss_peak_mb"] for r in runs[kind])
        base = min(r["rss_before_mb"] for r in runs[kind])
        ratios = [r["seconds"] / o["seconds"] for r, o in zip(runs[kind], runs[baseline], strict=True)]
        print(f"  {kind:8} median {median:6.2f} s  ({lines / median:>10,.0f} lines/s)  runs "
              f"{', '.join(f'{s:.2f}' for s in secs)}  x {baseline}: {median / bare:.2f} (per run "
              f"{', '.join(f'{r:.2f}' for r in ratios)})  CPU median {cpu:.2f} s, x {baseline}: "
              f"{cpu / bare_cpu:.2f}  peak RSS {peak:,.0f} MB (after imports {base:,.0f} MB)")
    check = runs["check"][-1]
    print(f"  load average after: {_load()}")
    print(f"  check verdict: used {check['rows_used']:,}, skipped {check['rows_skipped']}, crash "
          f"{check['rows_crash']}; findings {check['findings']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--style", choices=("compact", "spaced", "mixed", "all"), default="all",
                        help="compact: orjson.dumps; spaced: json.dumps (', ' and ': '); mixed: each line one "
                             "or the other, non-ASCII escaped in the spaced ones")
    parser.add_argument("--repeated", action="store_true", help="also a mixed file where half the rows have "
                        "no label (one finding repeated on half the rows)")
    parser.add_argument("--cases", default=None, help="comma-separated: " + ", ".join(CASES) + " (instead of "
                        "--style; compact files, timed against orjson-keys)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json-loop", action="store_true", help="also time a Python json.loads loop")
    parser.add_argument("--parquet", action="store_true", help="also time a parquet file of the same size")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the files (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return 0
    kinds = ["orjson", "check"] + (["json"] if args.json_loop else [])
    styles = ["compact", "spaced", "mixed"] if args.style == "all" else [args.style]
    cases = [(style, False) for style in styles] + ([("mixed", True)] if args.repeated else [])
    directory = args.dir or Path(tempfile.mkdtemp(prefix="bench-data-"))
    directory.mkdir(parents=True, exist_ok=True)
    files = [(f"{style}{'-repeated' if repeated else ''}", style, {"repeated": repeated})
             for style, repeated in cases]
    if args.cases:
        kinds = ["orjson-keys", "check", "check-1", "orjson"]
        files = [(case, "compact", CASES[case]) for case in args.cases.split(",")]
    for label, style, options in files:
        path = directory / f"bench-{label}-{args.lines}.jsonl"
        started = time.perf_counter()
        generate(path, args.lines, style, **options)
        print(f"generated {path} in {time.perf_counter() - started:.1f} s")
        try:
            bench_file(path, args.lines, args.repeat, kinds)
        finally:
            if not args.keep:
                path.unlink()
    if args.parquet:
        path = directory / f"bench-{args.lines}.parquet"
        started = time.perf_counter()
        generate_parquet(path, args.lines)
        print(f"generated {path} in {time.perf_counter() - started:.1f} s")
        try:
            bench_file(path, args.lines, args.repeat, ["pyarrow", "check"])
        finally:
            if not args.keep:
                path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
