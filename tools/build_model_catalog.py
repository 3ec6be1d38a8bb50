"""Regenerate knowledge/catalog/model_scripts.json from slime's scripts/models/*.sh.

    python tools/build_model_catalog.py /work/src/slime            # write the catalog
    python tools/build_model_catalog.py /work/src/slime --check    # exit 1 if the committed file differs

Each model script is read with the static launch-script reader (nothing is executed): MODEL_ARGS is taken
after the script's own variables, `$((...))` arithmetic and nested `source` of sibling model scripts are
resolved; `${VAR:-default}` resolves to its default; a value the reader cannot resolve (e.g. one built with
`printf -v` in a loop) keeps its text in `model_args` and is null in `values`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.launch.script import ScriptWord, read_launch_script  # noqa: E402
from core.model_scripts import MODEL_SCRIPTS_JSON  # noqa: E402
from core.pins import SLIME_SHORT  # noqa: E402

MODELS_DIR = Path("scripts") / "models"


def sibling_resolver(models_dir: Path):
    """Resolve `source .../X.sh` inside a model script to the sibling file scripts/models/X.sh."""

    def resolve(path_text: str) -> str | None:
        m = re.search(r"([^/\s]+\.sh)$", path_text.strip())
        if not m:
            return None
        candidate = models_dir / m.group(1)
        return candidate.read_text(encoding="utf-8") if candidate.is_file() else None

    return resolve


def flag_values(words: list[ScriptWord]) -> dict[str, str | None]:
    """Pair each flag with the words after it (None for switches and for values that did not resolve)."""
    values: dict[str, str | None] = {}
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if not (w.resolved and w.text.startswith("--")):
            continue
        name = w.text[2:]
        collected: list[ScriptWord] = []
        while i < len(words) and not (words[i].resolved and words[i].text.startswith("--")):
            collected.append(words[i])
            i += 1
        if not collected or any(not c.resolved for c in collected):
            values[name] = None
        else:
            values[name] = " ".join(c.text for c in collected)
    return values


def read_model_script(path: Path, models_dir: Path) -> dict:
    read = read_launch_script(path.read_text(encoding="utf-8"), sibling_resolver(models_dir))
    words = read.arrays.get("MODEL_ARGS") or []
    rel = f"{MODELS_DIR.as_posix()}/{path.name}"
    return {
        "name": path.stem,
        "path": rel,
        "source": f"{rel}@{SLIME_SHORT}",
        "model_args": [w.text for w in words],
        "values": flag_values(words),
    }


def build(slime_dir: Path) -> dict:
    models_dir = slime_dir / MODELS_DIR
    scripts = [read_model_script(p, models_dir) for p in sorted(models_dir.glob("*.sh"))]
    return {"generated_by": "tools/build_model_catalog.py", "scripts": scripts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("slime", type=Path, help="slime checkout at the pinned commit")
    parser.add_argument("--out", type=Path, default=MODEL_SCRIPTS_JSON)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args(argv)
    if not (args.slime / MODELS_DIR).is_dir():
        print(f"error: {args.slime} has no {MODELS_DIR}", file=sys.stderr)
        return 2
    doc = build(args.slime)
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    unresolved = sum("$" in w for s in doc["scripts"] for w in s["model_args"])
    print(f"{len(doc['scripts'])} model scripts, {sum(len(s['model_args']) for s in doc['scripts'])} words, "
          f"{unresolved} left unresolved")
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out} is out of date; rerun without --check", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
