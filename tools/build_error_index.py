"""Write knowledge/catalog/errors.json: every assert (with its message, or none) and every raise with a
literal or f-string message in a slime checkout, read with `ast` (nothing is imported or run).

    python tools/build_error_index.py /work/src/slime            # the pinned checkout
    python tools/build_error_index.py SLIME_DIR --commit abc1234 --out errors.json
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.knowledge.errors import ERRORS_PATH, build_error_index, index_to_json  # noqa: E402
from core.pins import SLIME_SHORT  # noqa: E402


def checkout_commit(slime: Path) -> str | None:
    """The short commit of a git checkout, or None when it is not one."""
    try:
        out = subprocess.run(["git", "-C", str(slime), "rev-parse", "--short=8", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slime", type=Path, help="a slime checkout")
    parser.add_argument("--commit", help=f"the commit to cite (default: the checkout's HEAD, else {SLIME_SHORT})")
    parser.add_argument("--out", type=Path, default=ERRORS_PATH)
    args = parser.parse_args(argv)
    if not (args.slime / "slime").is_dir():
        print(f"{args.slime} is not a slime checkout (no slime/ package).", file=sys.stderr)
        return 2
    commit = args.commit or checkout_commit(args.slime) or SLIME_SHORT
    if commit != SLIME_SHORT:
        print(f"note: citing commit {commit}; the app's facts are pinned to {SLIME_SHORT}.", file=sys.stderr)
    index = build_error_index(args.slime, commit)
    args.out.write_bytes(index_to_json(index))
    asserts = sum(e.kind == "assert" for e in index.entries)
    bare = sum(e.kind == "assert" and not e.template for e in index.entries)
    print(f"{len(index.entries)} entries ({asserts} asserts, {bare} of them without a message; "
          f"{len(index.entries) - asserts} raises) from {index.files} files -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
