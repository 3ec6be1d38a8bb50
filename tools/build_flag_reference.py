"""Write knowledge/catalog/flag_reference.json: per flag of the argument catalog, its help text and group
as the source gives them (read with `ast` at the line the catalog cites) and how slime's own launch scripts
use it (read with the static bash reader; nothing is run).

    python tools/build_flag_reference.py --slime /work/src/slime --megatron /work/src/megatron \\
        --sglang /work/src/sglang_whl --router /tmp/router/x
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.knowledge.flags import (  # noqa: E402
    REFERENCE_PATH,
    FlagExtra,
    FlagReference,
    help_and_groups,
    merged_usage,
    reference_to_json,
    script_usage,
)
from core.launch import load_catalog  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slime", type=Path, required=True, help="slime checkout at the catalog's pin")
    parser.add_argument("--megatron", type=Path, help="Megatron-LM checkout at the catalog's pin")
    parser.add_argument("--sglang", type=Path, help="SGLang sources (repo, or the unzipped wheel)")
    parser.add_argument("--router", type=Path, help="the unzipped sglang-router wheel")
    parser.add_argument("--out", type=Path, default=REFERENCE_PATH)
    args = parser.parse_args(argv)
    catalog = load_catalog()
    pins = catalog.pins
    roots = {pins["slime"]: args.slime}
    if args.megatron:
        roots[pins["megatron"]] = args.megatron
    if args.sglang:
        roots[pins["sglang"]] = args.sglang
    if args.router:
        roots[f"sglang-router-{pins.get('sglang_router', '')}"] = args.router
    helps = help_and_groups(catalog.flags, roots)
    read, usage = script_usage(args.slime)
    flags = {}
    for spec in catalog.flags:
        help_text, group = helps.get(spec.primary, (None, None))
        flags[spec.primary] = FlagExtra(help=help_text, group=group, usage=merged_usage(spec.option_strings, usage))
    reference = FlagReference(commit=pins["slime"], scripts_read=read, flags=flags)
    args.out.write_bytes(reference_to_json(reference))
    with_help = sum(1 for f in flags.values() if f.help)
    used = sum(1 for f in flags.values() if f.usage.scripts)
    print(f"{len(flags)} flags: {with_help} with help text, {used} set by at least one of {read} launch scripts "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
