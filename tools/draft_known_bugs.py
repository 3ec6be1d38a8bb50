"""Draft the mechanical parts of known-bug entries from slime's git history, for a person to complete.

    python tools/draft_known_bugs.py --slime DIR --out drafts.json [COMMIT ...]      # default: the fix commits
                                                                                   # of tools/list_fix_commits.py
    python tools/draft_known_bugs.py --slime DIR --merge notes.yaml --drafts drafts.json >> entries.yaml

For each fixing commit FIX the draft holds what can be read from git without judgement:
- the commit, its date, the pull request of its subject `(#NNNN)`, the Python files it changed;
- a detection marker, verified: a stripped line the fix added that is absent from `FIX^:path` and present in
  `FIX:path` and in the pinned file (`added`), else a line it removed that is present before and absent after
  and at the pin (`removed`), else the file it created (`file_added`);
- the old code's error messages: the `raise`/`assert`/`logger.error` sites of `FIX^:path` on the lines the fix
  removed or changed, read with ast, an f-string's fields written `{expr}` (as the old code formats them), and
  whether the message still exists in slime at the pin (then it is no evidence of an old checkout);
- the introducing commit: the oldest commit before FIX that added the first removed line
  (`git log -S LINE --reverse FIX^ -- path`), with its date and pull request;
- the source at the pin: `path:line@624b824a` of the marker, or `path@624b824a` when the marker is a removal.

`--merge` writes the YAML entries: each note (keyed by the commit's first 9 characters) gives the human parts
(id, title, symptom, cause, workaround, and optionally error, markers, cards, kind, detect; or their one-letter
keys t, s, c, w, e, m, k) and the draft the rest; notes whose id the table already has are skipped.
Reads git only (`git show`, `git log`), never writes to the slime checkout.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.pins import SLIME_SHORT, pinned_source_dir  # noqa: E402

PR_RE = re.compile(r"\(#(\d+)\)\s*$")
CODE_DIRS = ("slime/", "slime_plugins/", "train.py", "train_async.py", "tools/", "slime_router/")
MIN_MARKER, MAX_MARKER = 18, 110
_TRIVIAL = re.compile(r"^(?:[)\]}]+,?|else:|try:|pass|return|\)|\"\"\"|#.*|.{0,12})$")


def git(slime: Path, *args: str, check: bool = True) -> str:
    res = subprocess.run(["git", "-C", str(slime), *args], capture_output=True, text=True, errors="replace")
    if check and res.returncode:
        raise RuntimeError(res.stderr)
    return res.stdout if res.returncode == 0 else ""


def show(slime: Path, rev: str, path: str) -> str | None:
    res = subprocess.run(["git", "-C", str(slime), "show", f"{rev}:{path}"], capture_output=True, text=True,
                         errors="replace")
    return res.stdout if res.returncode == 0 else None


def changed_lines(slime: Path, commit: str) -> dict[str, tuple[list[tuple[int, str]], list[tuple[int, str]]]]:
    """path -> (removed (old line no, text), added (new line no, text)) of the commit's Python files."""
    diff = git(slime, "show", "--format=", "-U0", "--no-color", commit, "--", "*.py")
    out: dict[str, tuple[list, list]] = {}
    path = None
    old = new = 0
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            path = None
        elif line.startswith("--- a/") or line.startswith("--- /dev/null"):
            old_path = line[6:] if line.startswith("--- a/") else None
            path = old_path
        elif line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else path
            if path:
                out.setdefault(path, ([], []))
        elif line.startswith("@@"):
            m = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            old, new = int(m.group(1)), int(m.group(2))
        elif path and line.startswith("-"):
            out[path][0].append((old, line[1:]))
            old += 1
        elif path and line.startswith("+"):
            out[path][1].append((new, line[1:]))
            new += 1
    return {p: v for p, v in out.items() if p.startswith(CODE_DIRS) and "/tests/" not in p
            and not p.startswith("tests/")}


def _good(text: str) -> bool:
    s = text.strip()
    return MIN_MARKER <= len(s) <= MAX_MARKER and not _TRIVIAL.match(s) and re.search(r"[A-Za-z_]{4}", s) is not None


def pick_marker(slime: Path, commit: str, changes: dict) -> dict | None:
    """The first verified marker: added, then removed, then file_added (see the module docstring)."""
    ranked = sorted(changes, key=lambda p: (not p.startswith("slime/"), -len(changes[p][1])))
    for path in ranked:
        removed, added = changes[path]
        before, after, pin = show(slime, f"{commit}^", path), show(slime, commit, path), show(slime, SLIME_SHORT, path)
        if after is None or pin is None:
            continue
        for _, text in sorted(added, key=lambda t: -min(len(t[1].strip()), 70)):
            s = text.strip()
            if _good(s) and before is not None and s not in before and s in after and s in pin:
                line = next(i for i, ln in enumerate(pin.splitlines(), 1) if s in ln) if s in pin else None
                return {"file": path, "kind": "added", "markers": [s], "pin_line": line}
        if before is None and path.endswith(".py"):
            return {"file": path, "kind": "file_added", "markers": [], "pin_line": None}
    for path in ranked:
        removed, _ = changes[path]
        before, after, pin = show(slime, f"{commit}^", path), show(slime, commit, path), show(slime, SLIME_SHORT, path)
        if before is None or after is None or pin is None:
            continue
        for _, text in sorted(removed, key=lambda t: -min(len(t[1].strip()), 70)):
            s = text.strip()
            if _good(s) and s in before and s not in after and s not in pin:
                return {"file": path, "kind": "removed", "markers": [s], "pin_line": None}
    return None


def _fmt(node: ast.AST, source: str) -> str:
    """A message expression as the old code formats it: literal text kept, f-string fields as `{expr}`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                out.append("{" + (ast.get_source_segment(source, v.value) or "?") + "}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _fmt(node.left, source) + ("" if isinstance(node.op, ast.Add) else "") + _fmt(node.right, source)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _fmt(node.func.value, source)
    return "{" + (ast.get_source_segment(source, node) or "?") + "}"


def old_messages(slime: Path, commit: str, changes: dict) -> list[dict]:
    """Raise/assert/logger.error sites of FIX^ on the lines the fix removed, with their messages."""
    out = []
    for path, (removed, _) in changes.items():
        lines = {n for n, _ in removed}
        before = show(slime, f"{commit}^", path)
        if not lines or before is None:
            continue
        try:
            tree = ast.parse(before)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            msg = etype = None
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                etype = ast.get_source_segment(before, node.exc.func)
                msg = node.exc.args[0]
            elif isinstance(node, ast.Assert) and node.msg is not None:
                etype, msg = "AssertionError", node.msg
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("error", "warning", "exception") and node.args
                  and isinstance(node.func.value, ast.Name) and node.func.value.id == "logger"):
                etype, msg = f"logger.{node.func.attr}", node.args[0]
            if msg is None:
                continue
            span = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            if not span & lines:
                continue
            text = _fmt(msg, before)
            literal = max(re.split(r"\{[^{}]*\}", text), key=len).strip()
            still = bool(literal) and len(literal) >= 8 and bool(git(
                slime, "grep", "-F", "-l", literal, SLIME_SHORT, "--", "*.py", check=False).strip())
            out.append({"file": path, "line": node.lineno, "type": etype, "message": text, "literal": literal,
                        "at_pin": still})
    return out


def introduced_by(slime: Path, commit: str, changes: dict) -> dict | None:
    """The oldest commit before FIX that added the first substantive line the fix removed."""
    for path, (removed, _) in changes.items():
        for _, text in removed:
            s = text.strip()
            if _good(s):
                log = git(slime, "log", "-S", s, "--reverse", "--date=short", "--format=%H %cd %s", f"{commit}^",
                          "--", path, check=False).splitlines()
                if log:
                    h, d, subj = log[0].split(" ", 2)
                    pr = PR_RE.search(subj)
                    return {"commit": h, "date": d, "pr": f"#{pr.group(1)}" if pr else "", "subject": subj}
    return None


def draft(slime: Path, commit: str) -> dict:
    head = git(slime, "show", "-s", "--date=short", "--format=%H%x00%cd%x00%s", commit).strip().split("\x00")
    changes = changed_lines(slime, commit)
    pr = PR_RE.search(head[2])
    return {"commit": head[0], "date": head[1], "subject": head[2], "pr": f"#{pr.group(1)}" if pr else "",
            "files": sorted(changes), "marker": pick_marker(slime, commit, changes),
            "old_messages": old_messages(slime, commit, changes), "introduced": introduced_by(slime, commit, changes)}


NOTE_KEYS = {"t": "title", "s": "symptom", "c": "cause", "w": "workaround", "e": "error", "m": "markers",
             "k": "kind"}


def merge(notes: dict, drafts: dict, skip_ids: set[str] = frozenset()) -> list[dict]:
    """Full entries from the human notes and the drafts (notes win where both give a field). A note with an
    id only, or whose id is in skip_ids, names an entry the table already has and is skipped."""
    out = []
    by_short = {k[:9]: v for k, v in drafts.items()}
    for key, raw in notes.items():
        note = {NOTE_KEYS.get(k, k): v for k, v in raw.items()}
        if note["id"] in skip_ids or set(note) == {"id"}:
            continue
        d = by_short[str(key)[:9]]
        m = note.get("detect") or d["marker"]
        intro = note.get("introduced", d["introduced"])
        if intro and intro["commit"] == d["commit"]:
            intro = None
        since = f"from {intro['commit'][:9]} ({intro['pr'] or 'no PR'}, {intro['date']}) " if intro else ""
        entry = {"id": note["id"], "kind": note.get("kind", "fix"), "title": note["title"],
                 "symptom": note["symptom"]}
        if note.get("error"):
            entry["error"] = note["error"]
        entry["markers"] = note.get("markers", [])
        entry["affected"] = note.get("affected") or (f"slime {since}until the fix ({d['date']})" if since else
                                                     f"slime before the fix ({d['date']})")
        if intro:
            entry["introduced_commit"] = intro["commit"]
            if intro["pr"]:
                entry["introduced_pr"] = intro["pr"]
            entry["introduced_date"] = intro["date"]
        entry.update({"fix_commit": d["commit"], "fix_pr": d["pr"], "fix_date": d["date"],
                      "cause": note["cause"], "workaround": note["workaround"],
                      "detect": {"file": m["file"], "kind": m["kind"], **({"markers": m["markers"]}
                                                                           if m.get("markers") else {})}})
        entry["threads"] = [f"https://github.com/THUDM/slime/pull/{d['pr'][1:]}" if d["pr"] else
                            f"https://github.com/THUDM/slime/commit/{d['commit']}"]
        line = m.get("pin_line")
        entry["sources"] = [f"{m['file']}:{line}@{SLIME_SHORT}" if line else f"{m['file']}@{SLIME_SHORT}"]
        if note.get("cards"):
            entry["cards"] = note["cards"]
        out.append(entry)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slime", type=Path, default=pinned_source_dir("slime"))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--merge", type=Path, help="a YAML file of notes keyed by commit")
    ap.add_argument("--drafts", type=Path, help="the drafts JSON written by --out")
    ap.add_argument("commits", nargs="*")
    args = ap.parse_args(argv)
    if args.merge:
        notes = yaml.safe_load(args.merge.read_text(encoding="utf-8")) or {}
        drafts = json.loads(args.drafts.read_text(encoding="utf-8"))
        table = yaml.safe_load((ROOT / "knowledge" / "known_bugs.yaml").read_text(encoding="utf-8")) or {}
        have = {row["id"] for row in table.get("bugs") or []}
        text = yaml.safe_dump(merge(notes, drafts, have), sort_keys=False, allow_unicode=True, width=118)
        print("\n".join("  " + ln if ln else ln for ln in text.splitlines()))
        return 0
    commits = args.commits
    if not commits:
        import importlib.util

        spec = importlib.util.spec_from_file_location("list_fix_commits", ROOT / "tools" / "list_fix_commits.py")
        lister = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(lister)
        commits = [r["commit"] for r in lister.list_candidates(args.slime, "2025-02-21", "2026-08-22")]
    drafts = {c: draft(args.slime, c) for c in commits}
    text = json.dumps(drafts, indent=1)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
