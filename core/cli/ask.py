"""`slime-assistant ask QUERY`: one search over cards, flags, rules, slime's error messages and model
scripts, best first (exit 0 with results, 1 with none, 2 on usage errors). QUERY `-` reads a pasted error
or traceback from stdin; it is only searched, never run."""

from __future__ import annotations

import argparse
import json
import sys

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
    parser.set_defaults(func=run_ask, extra_words=[])


def read_query(words: list[str]) -> tuple[str, bool]:
    """The query from the command line, or from stdin for `-` (read up to MAX_STDIN_CHARS characters), and
    whether it held bytes that are not UTF-8 (each run of them becomes U+FFFD, so the search sees valid text)."""
    if words == ["-"]:
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:  # a text stream (tests, embedding): already decoded
            raw = sys.stdin.read(MAX_STDIN_CHARS).encode("utf-8", "surrogateescape")
        else:
            raw = buffer.read(MAX_STDIN_CHARS * 4)
    else:
        raw = " ".join(words).encode("utf-8", "surrogateescape")  # argv keeps undecodable bytes as surrogates
    try:
        return raw.decode("utf-8")[:MAX_STDIN_CHARS], False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")[:MAX_STDIN_CHARS], True


def run_ask(args: argparse.Namespace) -> int:
    """Handler: search, print the results, return the exit code."""
    if not 1 <= args.limit <= MAX_LIMIT:
        print(f"ask: --limit must be between 1 and {MAX_LIMIT}", file=sys.stderr)
        return EXIT_USAGE
    try:
        query, replaced = read_query([*args.query, *args.extra_words])
    except UnicodeError:  # a lone surrogate in a text stream
        print("ask: the query is not text that can be searched", file=sys.stderr)
        return EXIT_USAGE
    if replaced:
        print("ask: the query holds bytes that are not UTF-8; they were searched as U+FFFD (the replacement "
              "character)", file=sys.stderr)
    if not query.strip():
        print("ask: give something to look up (a flag, a rule code, an error message or words)", file=sys.stderr)
        return EXIT_USAGE
    from core.knowledge.search import get_index

    index = get_index()
    results = index.search(query, limit=args.limit, kinds=set(args.kind) if args.kind else None)
    if args.output_format == "json":
        print(json.dumps({"results": [r.public() for r in results]}, indent=2, ensure_ascii=False))
    else:
        print(render_text(index, results, query) if results else "Nothing found. Try a flag name, a rule code or "
              "fewer words.")
    return EXIT_FOUND if results else EXIT_NONE


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
