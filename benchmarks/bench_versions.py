"""Older slime checkouts, each checked with its own launch scripts against its own code; and the per-checkout
catalog cache (first build, cached load).

    git --git-dir=<slime mirror> archive <commit> | tar -x -C /tmp/slime-<date>     # a few commits, by hand
    python benchmarks/bench_versions.py                          # every /tmp/slime-20* tree found
    python benchmarks/bench_versions.py --trees '/data/slime-*'  # other trees
    python benchmarks/bench_versions.py --code /work/main --no-cache   # the same figures with other code (before)

Per tree: the launch scripts (scripts/ and examples/ files that start train.py or train_async.py), how many
fell back to the bundled catalog, the errors, and the errors no real break explains. An error is explained
when the script is really broken at that commit (SCRIPT008: a broken line continuation; SCRIPT012: a sourced
model script that does not exist), or follows from such a break (the flags cut off or never sourced: MEG006,
MEG010, ARG009, SLIME015, SLIME024), or is ARG011 (a --sglang- flag that commit's own wrapper skips), or is listed in REVIEWED_TRUE; every
other error is listed as unexplained (a false error, unless reviewed otherwise). Cache targets: first build
< 3 s, cached load < 50 ms. Figures depend on the machine's load: say so beside them.
"""

from __future__ import annotations

import argparse
import glob
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = Path(sys.argv[sys.argv.index("--code") + 1]) if "--code" in sys.argv[:-1] else ROOT
sys.path.insert(0, str(CODE))

from core.launch.check import CheckOptions, check_script_bytes  # noqa: E402

BREAKS = {"SCRIPT008", "SCRIPT012"}
CONSEQUENCES = {"MEG006", "MEG010", "ARG009", "SLIME015", "SLIME024"}
ALWAYS_TRUE = {"ARG011"}
# Errors reviewed as true at the commits where they appear: (script, code) -> why.
REVIEWED_TRUE = {("scripts/run-glm4.7-30B-A3B.sh", "MEG013"):
                 "EP 8 x ETP 1 x PP 2 = 16 does not divide its 8 training GPUs (THUDM/slime#1818)"}
FIRST_BUILD_TARGET_S = 3.0
CACHED_LOAD_TARGET_MS = 50.0


def launch_scripts(tree: Path) -> list[Path]:
    found = []
    for sub in ("scripts", "examples"):
        for path in sorted((tree / sub).rglob("*.sh")):
            data = path.read_bytes()
            if b"train.py" in data or b"train_async.py" in data:
                found.append(path)
    return found


def check_tree(tree: Path, sglang: Path | None = None, megatron: Path | None = None) -> dict:
    scripts = launch_scripts(tree)
    fallbacks, errors, unexplained = 0, 0, []
    extra = {k: v for k, v in (("sglang_source", sglang), ("megatron_source", megatron)) if v is not None}
    for path in scripts:
        report = check_script_bytes(path.read_bytes(), CheckOptions(catalog_path=tree, script_path=path, **extra))
        codes = {f.code for f in report.findings if f.severity.value == "error"}
        if any("could not be used" in f.message for f in report.findings):
            fallbacks += 1
        broken = bool(codes & BREAKS)
        for f in report.findings:
            if f.severity.value != "error":
                continue
            errors += 1
            if (f.code in BREAKS | ALWAYS_TRUE or (broken and f.code in CONSEQUENCES)
                    or (str(path.relative_to(tree)), f.code) in REVIEWED_TRUE):
                continue
            unexplained.append(f"{path.relative_to(tree)}: {f.code} {f.flag or ''}")
    return {"scripts": len(scripts), "fallbacks": fallbacks, "errors": errors, "unexplained": unexplained}


def cache_figures(tree: Path, repeat: int, sglang: Path | None = None, megatron: Path | None = None) -> dict | None:
    try:
        from core.launch import versions
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as store:
        sources = versions.UserSources(slime=tree, sglang=sglang, megatron=megatron)
        versions.clear_memory()
        started = time.perf_counter()
        versions.checkout_catalog(sources, store_dir=Path(store))
        first = time.perf_counter() - started
        loads = []
        for _ in range(repeat):
            versions.clear_memory()
            started = time.perf_counter()
            versions.checkout_catalog(sources, store_dir=Path(store))
            loads.append((time.perf_counter() - started) * 1000)
        versions.clear_memory()
    return {"first_build_s": first, "cached_load_ms": min(loads), "cached_load_median_ms": statistics.median(loads)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default="/tmp/slime-20*", help="glob of slime trees (default: /tmp/slime-20*)")
    parser.add_argument("--repeat", type=int, default=5, help="cached loads timed per tree (the best is shown)")
    parser.add_argument("--no-cache", action="store_true", help="only the checks (for code without the cache)")
    parser.add_argument("--code", type=Path, default=ROOT, help="the slime-assistant tree whose checker is measured")
    parser.add_argument("--sglang-source", type=Path, default=None, help="check and time with this SGLang too")
    parser.add_argument("--megatron-source", type=Path, default=None, help="check and time with this Megatron too")
    args = parser.parse_args()
    trees = [Path(t) for t in sorted(glob.glob(args.trees)) if glob.glob(f"{t}/*/utils/arguments.py")]
    if not trees:
        print(f"no slime trees match {args.trees}: extract a few commits first (see the docstring); skipped")
        return 0
    total = {"scripts": 0, "fallbacks": 0, "errors": 0, "unexplained": 0}
    ok = True
    for tree in trees:
        row = check_tree(tree, args.sglang_source, args.megatron_source)
        cache = None if args.no_cache else cache_figures(tree, args.repeat, args.sglang_source, args.megatron_source)
        for key in ("scripts", "fallbacks", "errors"):
            total[key] += row[key]
        total["unexplained"] += len(row["unexplained"])
        line = (f"{tree.name:22} scripts {row['scripts']:3}  fallbacks {row['fallbacks']:3}  errors {row['errors']:3}  "
                f"unexplained {len(row['unexplained']):3}")
        if cache is not None:
            line += f"  first build {cache['first_build_s']:.2f} s  cached load {cache['cached_load_ms']:.1f} ms"
            ok = ok and cache["first_build_s"] < FIRST_BUILD_TARGET_S and cache["cached_load_ms"] < CACHED_LOAD_TARGET_MS
        print(line)
        for item in row["unexplained"]:
            print(f"    unexplained: {item}")
    print(f"{'total':22} scripts {total['scripts']:3}  fallbacks {total['fallbacks']:3}  errors {total['errors']:3}  "
          f"unexplained {total['unexplained']:3}")
    if not args.no_cache:
        print(f"cache targets (first build < {FIRST_BUILD_TARGET_S:.0f} s, cached load < {CACHED_LOAD_TARGET_MS:.0f} ms): "
              + ("met" if ok else "NOT met"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
