"""Write the message indexes of the other layers a slime run passes through, read with `ast` (nothing is
imported or run): Megatron-LM's asserts and raises under megatron/core and megatron/training, SGLang's
server-argument validation and the errors its engine and HTTP server return, and slime's own log lines.

    python tools/build_layer_index.py --slime /work/src/slime --megatron /work/src/megatron \\
        --sglang /work/src/sglang_whl
    python tools/build_layer_index.py --megatron DIR --out-dir /tmp/x      # one layer, elsewhere

Each checkout given writes its file in knowledge/catalog/ (or --out-dir): errors_megatron.json,
errors_sglang.json, log_lines.json, log_lines_megatron.json, log_lines_sglang.json. The citations carry the pinned commits of core/pins.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.knowledge.errors import index_to_json  # noqa: E402
from core.knowledge.layers import (  # noqa: E402
    CATALOG_DIR,
    LOG_LINES_PATH,
    MEGATRON,
    MEGATRON_ERRORS_PATH,
    MEGATRON_LOG_LINES_PATH,
    SGLANG,
    SGLANG_ERRORS_PATH,
    SGLANG_LOG_LINES_PATH,
    build_layer_index,
    build_layer_log_index,
    build_log_index,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slime", type=Path, help="slime checkout at the pin (for its log lines)")
    parser.add_argument("--megatron", type=Path, help="Megatron-LM checkout at the pin")
    parser.add_argument("--sglang", type=Path, help="the unzipped SGLang wheel (holds sglang/srt)")
    parser.add_argument("--out-dir", type=Path, default=CATALOG_DIR)
    args = parser.parse_args(argv)
    jobs = []
    if args.megatron:
        jobs.append(("Megatron-LM", args.megatron, MEGATRON.marker, MEGATRON_ERRORS_PATH,
                     lambda root: build_layer_index(root, MEGATRON)))
        jobs.append(("Megatron-LM log lines", args.megatron, MEGATRON.marker, MEGATRON_LOG_LINES_PATH,
                     lambda root: build_layer_log_index(root, MEGATRON)))
    if args.sglang:
        jobs.append(("SGLang", args.sglang, SGLANG.marker, SGLANG_ERRORS_PATH,
                     lambda root: build_layer_index(root, SGLANG)))
        jobs.append(("SGLang log lines", args.sglang, SGLANG.marker, SGLANG_LOG_LINES_PATH,
                     lambda root: build_layer_log_index(root, SGLANG)))
    if args.slime:
        jobs.append(("slime log lines", args.slime, "slime", LOG_LINES_PATH, build_log_index))
    if not jobs:
        print("give at least one of --slime, --megatron, --sglang", file=sys.stderr)
        return 2
    for name, root, marker, _path, _build in jobs:
        if not (root / marker).is_dir():
            print(f"{root} is not a {name} checkout (no {marker}/).", file=sys.stderr)
            return 2
    for name, root, _, path, build in jobs:
        index = build(root)
        out = args.out_dir / path.name
        out.write_bytes(index_to_json(index))
        print(f"{name}: {len(index.entries)} messages from {index.files} files -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
