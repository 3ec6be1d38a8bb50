"""`slime-assistant ask QUERY`: one search over cards, flags, rules, error messages of slime, Megatron-LM and
SGLang, slime's log lines, model scripts, runtime messages of the layers under slime, other frameworks' words
and known bugs, best first (exit 0 with results, 1 with none, 2 on usage errors). QUERY `-` reads a pasted
error or traceback from stdin; it is only searched, never run. `--slime-checkout DIR` also says, for each
known bug shown, whether that checkout has the fix (read from its code, never from git)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli.output import say, write_json, write_text

if TYPE_CHECKING:
    from core.knowledge import ErrorMatch

EXIT_FOUND, EXIT_NONE, EXIT_USAGE = 0, 1, 2
MAX_LIMIT = 200
MAX_STDIN_CHARS = 200_000  # what is searched: the end of the paste, where the final exception is
MAX_STDIN_BYTES = 64 * 1024 * 1024  # read at most this much of stdin (its end is kept), then stop
_CHUNK = 1024 * 1024
KIND_CHOICES = ("card", "section", "flag", "rule", "error", "log", "model_script", "runtime", "term", "bug")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ask", allow_abbrev=False,
        help="search cards, flags, rules, error messages of slime/Megatron-LM/SGLang, slime's log lines and "
             "model scripts",
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
                        help="your slime checkout: a pasted error is also matched against its own lines, and known "
                        "bugs shown say whether it has the fix (default: $SLIME_ASSISTANT_SLIME_CHECKOUT)")
    parser.set_defaults(func=run_ask, extra_words=[])


def read_query(words: list[str]) -> tuple[str, bool]:
    """The query (see `read_query_cut`) and whether it held bytes that are not UTF-8."""
    text, replaced, _ = read_query_cut(words)
    return text, replaced


def read_query_cut(words: list[str]) -> tuple[str, bool, int]:
    """The query from the command line, or from stdin for `-` (up to MAX_STDIN_BYTES read, the last
    MAX_STDIN_CHARS characters kept: a long log ends with its final exception); whether it held bytes that
    are not UTF-8 (each run of them becomes U+FFFD, so the search sees valid text); and how much of a long
    paste's beginning was cut (characters, counting a dropped byte as one)."""
    if words == ["-"]:
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:  # a text stream (tests, embedding): already decoded
            raw, dropped = _tail(lambda n: sys.stdin.read(n).encode("utf-8", "surrogateescape"))
        else:
            raw, dropped = _tail(buffer.read)
    else:
        raw, dropped = " ".join(words).encode("utf-8", "surrogateescape"), 0  # argv keeps undecodable bytes
    try:
        text, replaced = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        text, replaced = raw.decode("utf-8", "replace"), True
    if dropped and text and "\ufffd" == text[0]:
        text = text[1:]  # a character cut in two at the start of the kept bytes
    return text[-MAX_STDIN_CHARS:], replaced, dropped + max(0, len(text) - MAX_STDIN_CHARS)


def _tail(read: Callable[[int], bytes]) -> tuple[bytes, int]:
    """The last MAX_STDIN_CHARS * 4 bytes of a stream read in chunks (at most MAX_STDIN_BYTES), and how many
    bytes before them were dropped."""
    keep = MAX_STDIN_CHARS * 4
    kept = b""
    dropped = total = 0
    while total < MAX_STDIN_BYTES:
        chunk = read(min(_CHUNK, MAX_STDIN_BYTES - total))
        if not chunk:
            break
        total += len(chunk)
        kept += chunk
        if len(kept) > 2 * keep:
            dropped += len(kept) - keep
            kept = kept[-keep:]
    if len(kept) > keep:
        dropped += len(kept) - keep
        kept = kept[-keep:]
    return kept, dropped


def run_ask(args: argparse.Namespace) -> int:
    """Handler: search, print the results, return the exit code."""
    if not 1 <= args.limit <= MAX_LIMIT:
        say(f"ask: --limit must be between 1 and {MAX_LIMIT}")
        return EXIT_USAGE
    try:
        query, replaced, cut = read_query_cut([*args.query, *args.extra_words])
    except UnicodeError:  # a lone surrogate in a text stream
        say("ask: the query is not text that can be searched")
        return EXIT_USAGE
    if cut:
        say(f"ask: the paste is longer than {MAX_STDIN_CHARS:,} characters; its beginning (about "
            f"{cut:,} characters) was cut and its end, where the final exception is, was searched")
    if replaced:
        say("ask: the query holds bytes that are not UTF-8; they were searched as U+FFFD (the replacement "
            "character)")
    if not query.strip():
        say("ask: give something to look up (a flag, a rule code, an error message or words)")
        return EXIT_USAGE
    checkout, problem = _checkout(getattr(args, "slime_checkout", None))
    if problem:
        say(f"ask: {problem}")
        return EXIT_USAGE
    from core.knowledge import get_index

    index = get_index()
    answer = index.ask(query, limit=args.limit, kinds=set(args.kind) if args.kind else None)
    results = answer.results
    in_checkout, not_read = (_checkout_matches(query, checkout) if checkout and (not args.kind or "error" in args.kind)
                             else ([], []))
    for line in not_read:
        say(f"ask: not read from your checkout: {line}")
    sizing = _sizing(query, args.query)
    memory = _memory(query)
    if args.output_format == "json":
        out = answer.public()
        if sizing is not None:
            out["sizing"] = sizing.model_dump(mode="json")
        if memory is not None:
            out["memory"] = memory.model_dump(mode="json")
        if checkout is not None:
            fixes = bug_fix_status(results, checkout)
            for item in out["results"]:
                if item["id"] in fixes and item["kind"] == "bug":
                    item["checkout_has_fix"] = fixes[item["id"]][0]
            out["checkout"] = {"path": str(checkout), "errors": [
                {"exception": m.entry.exception, "message": m.entry.template, "source": f"{m.entry.path}:{m.entry.line}",
                 "function": m.entry.function, "condition": m.entry.condition, "matched": m.how} for m in in_checkout],
                "not_read": not_read}
        write_json(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        if sizing is not None:
            from core.plan import sizing_text

            write_text(sizing_text(sizing) + "\n")
        if memory is not None:
            from core.plan import oom_text

            write_text(oom_text(memory) + "\n")
        if in_checkout:
            write_text(render_checkout(checkout, in_checkout) + ("\n" if results else ""))
        if results:
            write_text(render_text(index, answer, query, checkout))
        elif not in_checkout:
            write_text("Nothing found. Try a flag name, a rule code or fewer words.")
    return EXIT_FOUND if results or in_checkout or (sizing is not None and sizing.status == "found") \
        or memory is not None else EXIT_NONE


def _sizing(query: str, words: list[str]):  # noqa: ANN202 - core.plan loads only for a sizing question
    """The answer to "how many GPUs do I need for <model>?" (core.plan's sizing), None for any other query and
    for a paste read from stdin."""
    if words == ["-"]:
        return None
    from core.plan import is_sizing_question

    if not is_sizing_question(query):
        return None
    from core.plan import sizing_answer

    return sizing_answer(query)


def _memory(query: str):  # noqa: ANN202 - core.plan.oom loads only for an out-of-memory paste
    """The numbers of a pasted CUDA out-of-memory message judged (core.plan's oom), None for any other query."""
    from core.plan import is_oom_paste

    if not is_oom_paste(query):
        return None
    from core.plan import judge_oom

    return judge_oom(query)


def _checkout(given: str | None) -> tuple[Path | None, str | None]:
    """The slime checkout to match errors against: the option, else $SLIME_ASSISTANT_SLIME_CHECKOUT."""
    import os

    if not given and not os.environ.get("SLIME_ASSISTANT_SLIME_CHECKOUT"):  # none: the checkout reader not loaded
        return None, None
    from core.launch import slime_problem, sources_from_env

    sources = sources_from_env(slime=given)
    if sources.slime is None:
        return None, None
    return sources.slime, slime_problem(sources.slime)


def _checkout_matches(query: str, checkout: Path) -> tuple[list[ErrorMatch], list[str]]:
    """The checkout's messages that match, and one line per kind of file its index left out (with a count)."""
    from core.knowledge import checkout_error_index, match_error
    from core.paths import describe_skipped

    index = checkout_error_index(checkout)
    return match_error(query, index, limit=5), describe_skipped(index.skipped)


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


HOW = {"message": "every fixed word of the final exception's message, in order",
       "chain-message": "every fixed word of an earlier exception in your traceback's chain, in order",
       "words": "most of the message's distinctive words (worded a little differently)",
       "traceback-code": "the assert your traceback shows, in the same file"}


def bug_fix_status(results, checkout: Path) -> dict[str, tuple[bool | None, str]]:  # noqa: ANN001
    """For each known bug among the results: (has the fix, how that was told) for the checkout."""
    from core.knowledge import checkout_has_fix
    from core.knowledge import known_bugs as bugs

    by_id = {b.id: b for b in bugs()}
    out = {}
    for r in results:
        if r.kind == "bug" and r.id in by_id:
            status = checkout_has_fix(by_id[r.id], checkout)
            out[r.id] = (status.has_fix, status.detail)
    return out


def _table_lines(kind: str, key: str, checkout: Path | None, fixes: dict) -> list[str]:  # noqa: ANN001
    """The extra lines of a runtime message, a framework term or a known bug."""
    from core.knowledge import framework_terms as terms
    from core.knowledge import known_bugs as bugs
    from core.knowledge import runtime_messages

    lines: list[str] = []
    if kind == "runtime":
        m = next((x for x in runtime_messages() if x.id == key), None)
        if m is None:
            return lines
        if m.normal:
            lines.append(f"      normal: {m.normal}")
        for n, cause in enumerate(m.causes, 1):
            knobs = ", ".join([*cause.flags, *cause.env])
            lines.append(f"      cause {n}: {cause.why}" + (f" [{knobs}]" if knobs else ""))
        lines.append(f"      check first: {m.check_first}")
        for code in m.rules:
            lines.append(f"      caught before launch by {code} (slime-assistant check-args)")
    elif kind == "term":
        t = next((x for x in terms() if x.id == key), None)
        if t is not None:
            lines.append(f"      means there: {t.meaning}")
            lines.append("      slime: " + (", ".join(t.flags) if t.flags else "no flag for it at the pin (see above)"))
    elif kind == "bug":
        b = next((x for x in bugs() if x.id == key), None)
        if b is None:
            return lines
        lines.append(f"      affected: {b.affected}")
        lines.append(f"      workaround: {b.workaround}")
        lines.append(f"      thread: {b.threads[0]}")
        if checkout is not None and key in fixes:
            has, detail = fixes[key]
            verdict = {True: "has the fix", False: "does NOT have the fix", None: "cannot tell"}[has]
            lines.append(f"      your checkout {checkout}: {verdict} ({detail})")
    return lines


def render_text(index, answer, query: str = "", checkout: Path | None = None) -> str:  # noqa: ANN001
    """What was read from a pasted error, then the results grouped by kind (kinds in the order of their best
    result), each with how sure it is; errors with how they matched the pasted text and what catches them;
    runtime messages with their causes, known bugs with their fix and, given a checkout, whether it has it."""
    from core.knowledge import KIND_TITLES, MATCH_TITLES, distinct, explain, grouped

    if isinstance(answer, list):  # a plain list of results (no paste read)
        from core.knowledge import Answer

        answer = Answer(results=answer)
    how = {m.entry.id: m for m in index.match_messages(query, limit=10)} if query else {}
    fixes = bug_fix_status(answer.results, checkout) if checkout is not None else {}
    lines: list[str] = []
    if answer.pasted_error and answer.error_message is not None:
        lines.append(f"Read from your paste: {answer.read_as}")
        if answer.where_raised:
            lines.append(f"  {answer.where_raised[0].upper()}{answer.where_raised[1:]}.")
    if answer.notice:
        lines.append(answer.notice)
    if lines:
        lines.append("")
    for kind, items in grouped(distinct(answer.results)).items():
        lines.append(f"{KIND_TITLES[kind]}:")
        for r in items:
            lines.append(f"  [{MATCH_TITLES[r.match]}] {r.title}" + (f"  [{r.id}]" if r.id not in r.title else ""))
            if r.snippet:
                lines.append(f"      {r.snippet}")
            lines.append(f"      source: {r.source}")
            if r.also:
                lines.append(f"      the same text also at: {', '.join(r.also)}")
            if kind in ("runtime", "term", "bug"):
                lines += _table_lines(kind, r.id, checkout, fixes)
            entry = index.error(r.id) if kind in ("error", "log") else None
            if entry is not None and kind == "log":
                lines.append(f"      {explain(index, entry).meaning}")
            elif entry is not None and r.match in ("exact", "likely"):  # a closest candidate gets no more
                found = how.get(entry.id)
                if found is not None:
                    line = f"your traceback's line ({found.frame})" if found.frame and found.how != "traceback-code" \
                        else f"at {found.frame}" if found.frame else ""
                    text = HOW.get(found.how, "")
                    lines.append("      matched: " + " and ".join(x for x in (text, line) if x))
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
