"""List the commits of slime's history whose change a user can notice, by a fixed written rule, and count them.

    python tools/list_fix_commits.py [--slime DIR] [--since 2025-02-21] [--until 2026-08-22] [--format text|tsv]
                                     [--covered]

The window is the 18 months before the pin: commits reachable from slime 624b824a whose committer date lies in
[--since, --until]. A commit is a candidate when at least one of these holds (the reasons are printed):

- `subject`: its subject has one of the words in SUBJECT_WORDS (fix, bug, revert, remove, deprecate, default,
  crash, hang, leak, wrong, incorrect, broken, typo, error, ...), matched as whole words, case-insensitive;
- `default`: its diff changes the `default=` of an `add_argument` call in a Python file under slime/ (same
  line removed and added with another default);
- `flag-removed`: its diff removes an `add_argument("--x"` whose flag it does not add back;
- `raise`: its diff removes a `raise` or `assert` line of a Python file under slime/ or slime_plugins/ (a
  changed raising site: an error the old code printed).

`fix commits` in the summary are the commits with the `subject` reason (the ones whose author said they fix,
revert, remove or change a default); the diff reasons add the silent ones. `--covered` also counts how many
of them knowledge/known_bugs.yaml covers (an entry's `fix_commit`, or one of its `also_fixes`).
Reads git only (read-only: `git log`), never writes.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.pins import SLIME_SHORT, pinned_source_dir  # noqa: E402

SUBJECT_WORDS = ("fix", "fixes", "fixed", "fixing", "hotfix", "bugfix", "bug", "bugs", "revert", "reverts",
                 "remove", "removes", "removed", "removing", "deprecate", "deprecated", "deprecation", "default",
                 "defaults", "crash", "crashes", "hang", "hangs", "stuck", "deadlock", "leak", "wrong",
                 "incorrect", "broken", "typo", "error", "errors", "oom", "mismatch", "nan", "regression")
SUBJECT_RE = re.compile(r"\b(" + "|".join(SUBJECT_WORDS) + r")\b", re.I)
PR_RE = re.compile(r"\(#(\d+)\)\s*$")
ADD_ARG_RE = re.compile(r"add_argument\(\s*[\"'](--[a-z0-9-]+)")
DEFAULT_RE = re.compile(r"default\s*=\s*([^,)]+)")
SEP = "\x1e"


def git(slime: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(slime), *args], check=True, capture_output=True, text=True,
                          errors="replace").stdout


def diff_reasons(diff: str) -> list[str]:
    """The diff-based reasons of one commit (see the module docstring)."""
    reasons: set[str] = set()
    path = ""
    removed_flags: set[str] = set()
    added_flags: set[str] = set()
    removed_defaults: dict[str, str] = {}
    added_defaults: dict[str, str] = {}
    for line in diff.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            if line.startswith("+++ "):
                path = line[6:] if line.startswith("+++ b/") else path
            elif line.startswith("--- a/"):
                path = line[6:]
            continue
        if not path.endswith(".py"):
            continue
        body = line[1:]
        flag = ADD_ARG_RE.search(body)
        if line.startswith("-"):
            if flag:
                removed_flags.add(flag.group(1))
            if path.startswith(("slime/", "slime_plugins/")) and re.match(r"\s*(raise|assert)\b", body):
                reasons.add("raise")
            d = DEFAULT_RE.search(body)
            if d and path.startswith("slime/"):
                removed_defaults[re.sub(r"default\s*=\s*[^,)]+", "", body).strip()] = d.group(1).strip()
        elif line.startswith("+"):
            if flag:
                added_flags.add(flag.group(1))
            d = DEFAULT_RE.search(body)
            if d and path.startswith("slime/"):
                added_defaults[re.sub(r"default\s*=\s*[^,)]+", "", body).strip()] = d.group(1).strip()
    if removed_flags - added_flags:
        reasons.add("flag-removed")
    if any(k in added_defaults and added_defaults[k] != v for k, v in removed_defaults.items()):
        reasons.add("default")
    return sorted(reasons)


def list_candidates(slime: Path, since: str, until: str) -> list[dict]:
    """Every candidate of the window, oldest first: commit, date, PR, subject, reasons."""
    out = git(slime, "log", "--reverse", f"--since={since}", f"--until={until}", "--date=short",
              f"--format={SEP}%H %cd %s", "-p", "-U0", "--no-color", SLIME_SHORT, "--", "*.py")
    rows = []
    for chunk in out.split(SEP)[1:]:
        head, _, diff = chunk.partition("\n")
        commit, date, subject = head.split(" ", 2)
        reasons = (["subject"] if SUBJECT_RE.search(subject) else []) + diff_reasons(diff)
        if reasons:
            pr = PR_RE.search(subject)
            rows.append({"commit": commit, "date": date, "pr": f"#{pr.group(1)}" if pr else "", "subject": subject,
                         "reasons": reasons})
    # commits that touch no Python file can still be fixes (docker, scripts): the subject rule covers them
    seen = {r["commit"] for r in rows}
    for line in git(slime, "log", "--reverse", f"--since={since}", f"--until={until}", "--date=short",
                    "--format=%H %cd %s", SLIME_SHORT).splitlines():
        commit, date, subject = line.split(" ", 2)
        if commit not in seen and SUBJECT_RE.search(subject):
            pr = PR_RE.search(subject)
            rows.append({"commit": commit, "date": date, "pr": f"#{pr.group(1)}" if pr else "", "subject": subject,
                         "reasons": ["subject"]})
    return sorted(rows, key=lambda r: r["date"])


def covered_commits() -> set[str]:
    from core.knowledge.bugs import load_bugs

    out: set[str] = set()
    for b in load_bugs():
        out.add(b.fix_commit)
        out.update(getattr(b, "also_fixes", []) or [])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slime", type=Path, default=pinned_source_dir("slime"))
    ap.add_argument("--since", default="2025-02-21")
    ap.add_argument("--until", default="2026-08-22")
    ap.add_argument("--format", choices=("text", "tsv"), default="text")
    ap.add_argument("--covered", action="store_true", help="also count the candidates known_bugs.yaml covers")
    args = ap.parse_args(argv)
    if not (args.slime / ".git").exists():
        print(f"{args.slime} is not a slime git checkout", file=sys.stderr)
        return 2
    total = len(git(args.slime, "rev-list", f"--since={args.since}", f"--until={args.until}", SLIME_SHORT).split())
    rows = list_candidates(args.slime, args.since, args.until)
    for r in rows:
        if args.format == "tsv":
            print("\t".join([r["commit"], r["date"], r["pr"], ",".join(r["reasons"]), r["subject"]]))
        else:
            print(f"{r['commit'][:9]} {r['date']} {r['pr']:>6} [{','.join(r['reasons'])}] {r['subject']}")
    subject = [r for r in rows if "subject" in r["reasons"]]
    print(f"# window {args.since}..{args.until}: {total} commits; {len(rows)} candidates; {len(subject)} fix "
          f"commits by subject; by diff only: {len(rows) - len(subject)}", file=sys.stderr)
    if args.covered:
        have = covered_commits()
        print(f"# known_bugs.yaml covers {sum(r['commit'] in have for r in rows)} candidates "
              f"({sum(r['commit'] in have for r in subject)} of the fix commits by subject)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
