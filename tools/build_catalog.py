"""Regenerate knowledge/catalog/arguments.json from the pinned upstream source trees.

    python tools/build_catalog.py                 # default locations below
    python tools/build_catalog.py --check         # exit 1 if the committed file is out of date

The router is not vendored anywhere: fetch the wheel slime's Docker image pins first, e.g.
    pip download --no-deps sglang-router==0.3.2 -d /tmp/router && unzip -q -o /tmp/router/*.whl -d /tmp/router/x
(slime's docker/Dockerfile installs a fork build of sglang-router 0.3.2 from GitHub; PyPI's 0.3.2 is the
closest public artefact and is what the committed catalog was built from.)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.launch.catalog import CATALOG_PATH, catalog_to_json  # noqa: E402
from core.launch.catalog_build import build_catalog, default_pins  # noqa: E402
from core.pins import pinned_source_dir  # noqa: E402

DEFAULT_SLIME = pinned_source_dir("slime")
DEFAULT_MEGATRON = pinned_source_dir("megatron")
DEFAULT_SGLANG = pinned_source_dir("sglang")
DEFAULT_ROUTER = pinned_source_dir("router")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slime", type=Path, default=DEFAULT_SLIME, help="slime checkout (pinned commit)")
    parser.add_argument("--megatron", type=Path, default=DEFAULT_MEGATRON, help="Megatron-LM checkout")
    parser.add_argument("--sglang", type=Path, default=DEFAULT_SGLANG, help="unzipped SGLang wheel (holds sglang/)")
    parser.add_argument("--router", type=Path, default=DEFAULT_ROUTER,
                        help="unzipped sglang-router wheel (holds sglang_router/)")
    parser.add_argument("--out", type=Path, default=CATALOG_PATH)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args(argv)

    for label, path, marker in (("slime", args.slime, "slime/utils/arguments.py"),
                                ("megatron", args.megatron, "megatron/training/arguments.py"),
                                ("sglang", args.sglang, "sglang/srt/server_args.py"),
                                ("router", args.router, "sglang_router/router_args.py")):
        if not (path / marker).is_file():
            print(f"error: --{label} {path} has no {marker}", file=sys.stderr)
            return 2

    started = time.perf_counter()
    catalog = build_catalog(args.slime, args.megatron, args.sglang, args.router, pins=default_pins())
    elapsed = time.perf_counter() - started
    data = catalog_to_json(catalog)
    owners = Counter(f.owner for f in catalog.flags)
    print(f"{len(catalog.flags)} flags ({', '.join(f'{k} {v}' for k, v in sorted(owners.items()))}), "
          f"{len(catalog.skipped)} SGLang flags skipped by slime, {len(data) / 1e6:.2f} MB, built in {elapsed:.2f} s")
    for note in catalog.build_notes:
        print(f"note: {note}")
    if args.check:
        current = args.out.read_bytes() if args.out.is_file() else b""
        if current != data:
            print(f"{args.out} is out of date; rerun without --check", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
