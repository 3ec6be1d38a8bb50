"""`slime-assistant ask QUERY`: one search over cards, flags, rules, slime's error messages and model
scripts, best first (exit 0 with results, 1 with none, 2 on usage errors). QUERY `-` reads a pasted error
or traceback from stdin; it is only searched, never run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.knowledge.errors import ErrorMatch

EXIT_FOUND, EXIT_NONE, EXIT_USAGE = 0, 1, 2
MAX_LIMIT = 200
MAX_STDIN_CHARS = 200_000
KIND_CHOICES = ("card", "section", "flag", "rule", "error", "model_script")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ask", allow_abbrev=False,
        help="search cards, flags, rules, slime's error messages and model scripts",
        description=("Search the knowledge base: a flag in any spelling (--rollout-batch-size, "
                     "rollout_batch_size, 'rollout batch size'), a rule code, an error line or a whole traceback "
                     "(pass - to read it from stdin), or plain words. Exit 0: results; 1: none; 2: usage."),
    )
    parser.add_argument("query", nargs="*", help="what to look up (a flag such as --rollout-batch-size works "
                        "as is); - reads it from stdin")
    parser.add_argument("--limit", type=int, default=10, metavar="N", help=f"at most N results (1 to {MAX_LIMIT})")
    parser.add_argument("--kind", action="append", choices=KIND_CHOICES, help="only results of this kind "
                        "(repeatable)")
    parser.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
    parser.add_argument("--slime-checkout", default=None, metavar="DIR",
                        help="also match a pasted error or traceback against this slime checkout's own lines "
                        "(default: $SLIME_ASSISTANT_SLIME_CHECKOUT)")
    parser.set_defaults(func=run_ask, extra_words=[])


def read_query(words: list[str]) -> str:
    """The query from the command line, or from stdin for `-` (read up to MAX_STDIN_CHARS characters)."""
    if words == ["-"]:
        return sys.stdin.read(MAX_STDIN_CHARS)
    return " ".join(words)


def run_ask(args: argparse.Namespace) -> int:
    """Handler: search, print the results, return the exit code."""
    if not 1 <= args.limit <= MAX_LIMIT:
        print(f"ask: --limit must be between 1 and {MAX_LIMIT}", file=sys.stderr)
        return EXIT_USAGE
    try:
        query = read_query([*args.query, *args.extra_words])
    except UnicodeDecodeError:
        print("ask: stdin is not UTF-8 text", file=sys.stderr)
        return EXIT_USAGE
    if not query.strip():
        print("ask: give something to look up (a flag, a rule code, an error message or words)", file=sys.stderr)
        return EXIT_USAGE
    checkout, problem = _checkout(getattr(args, "slime_checkout", None))
    if problem:
        print(f"ask: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from core.knowledge.search import get_index

    index = get_index()
    results = index.search(query, limit=args.limit, kinds=set(args.kind) if args.kind else None)
    in_checkout = _checkout_matches(query, checkout) if checkout and (not args.kind or "error" in args.kind) else []
    if args.output_format == "json":
        doc = {"results": [r.public() for r in results]}
        if checkout is not None:
            doc["checkout"] = {"path": str(checkout), "errors": [
                {"exception": m.entry.exception, "message": m.entry.template, "source": f"{m.entry.path}:{m.entry.line}",
                 "function": m.entry.function, "condition": m.entry.condition, "matched": m.how} for m in in_checkout]}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        if in_checkout:
            print(render_checkout(checkout, in_checkout) + ("\n" if results else ""))
        if results:
            print(render_text(index, results, query))
        elif not in_checkout:
            print("Nothing found. Try a flag name, a rule code or fewer words.")
    return EXIT_FOUND if results or in_checkout else EXIT_NONE


def _checkout(given: str | None) -> tuple[Path | None, str | None]:
    """The slime checkout to match errors against: the option, else $SLIME_ASSISTANT_SLIME_CHECKOUT."""
    from core.launch.versions import slime_problem, sources_from_env

    sources = sources_from_env(slime=given)
    if sources.slime is None:
        return None, None
    return sources.slime, slime_problem(sources.slime)


def _checkout_matches(query: str, checkout: Path) -> list[ErrorMatch]:
    from core.knowledge.errors import checkout_error_index, match_error

    return match_error(query, checkout_error_index(checkout), limit=5)


def render_checkout(checkout: Path, matches: list[ErrorMatch]) -> str:
    """Where the pasted error comes from in the user's own checkout (their lines, not the pin's)."""
    lines = [f"In your slime checkout {checkout}:"]
    for m in matches:
        e = m.entry
        lines.append(f"  {e.exception}: {e.template}")
        lines.append(f"      at {e.path}:{e.line} in {e.function}" + (f"  (your traceback's line {m.frame})"
                                                                     if m.how == "traceback-line" and m.frame else ""))
        if e.condition:
            lines.append(f"      {'stops unless' if e.kind == 'assert' else 'raised when'}: {e.condition}")
    return "\n".join(lines)


def render_text(index, results, query: str = "") -> str:  # noqa: ANN001 (types imported lazily)
    """Results grouped by kind, kinds in the order of their best result; errors with how they matched the
    pasted text and what catches them."""
    from core.knowledge.errors import match_error
    from core.knowledge.search import KIND_TITLES, grouped

    how = {m.entry.id: m for m in match_error(query, index.errors, limit=10)} if query else {}
    lines: list[str] = []
    for kind, items in grouped(results).items():
        lines.append(f"{KIND_TITLES[kind]}:")
        for r in items:
            lines.append(f"  {r.title}" + (f"  [{r.id}]" if r.id not in r.title else ""))
            if r.snippet:
                lines.append(f"      {r.snippet}")
            lines.append(f"      source: {r.source}")
            entry = index.error(r.id) if kind == "error" else None
            if entry is not None:
                found = how.get(entry.id)
                if found is not None:
                    lines.append("      matched: " + (f"your traceback's line ({found.frame})"
                                                      if found.how == "traceback-line"
                                                      else "every fixed word of the message, in order"))
                if entry.condition:
                    lines.append(f"      {'stops unless' if entry.kind == 'assert' else 'raised when'}: "
                                 f"{entry.condition}")
                explained = index.explain_error(entry)
                for code, title in explained["rules"]:
                    lines.append(f"      caught before launch by {code}: {title} (slime-assistant check-args)")
                for card_id, title in explained["cards"]:
                    lines.append(f"      explained in card '{title}' ({card_id})")
        lines.append("")
    return "\n".join(lines).rstrip()
