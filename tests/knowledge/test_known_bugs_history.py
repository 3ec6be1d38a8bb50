"""The known-bugs table built from slime's fix history: every detection marker replays against the fixing
commit (the file before the fix reads "not fixed", the file at the fix "fixed"), every entry's commits exist in
slime's history, the listing tool counts the window by its rule, and `ask` finds an entry from the old error
text pasted as is. The replay tests read slime's git history under SLIME_ASSISTANT_SOURCES (skipped without it);
they write only under tmp_path."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.knowledge.bugs import KnownBug, checkout_has_fix, load_bugs
from core.pins import SLIME_SHORT, pinned_source_dir

ROOT = Path(__file__).resolve().parents[2]
SLIME = pinned_source_dir("slime")
HISTORY = (SLIME / ".git").exists()
needs_history = pytest.mark.skipif(not HISTORY, reason="slime's git history is not on this machine "
                                                       "(set SLIME_ASSISTANT_SOURCES)")


def _blobs(specs: list[str]) -> dict[str, bytes | None]:
    """`rev:path` -> the file's bytes, or None where the path does not exist at that revision (one
    `git cat-file --batch` for all of them)."""
    out = subprocess.run(["git", "-C", str(SLIME), "cat-file", "--batch"], input="\n".join(specs).encode() + b"\n",
                         capture_output=True, check=True, timeout=300).stdout
    result: dict[str, bytes | None] = {}
    pos = 0
    for spec in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode()
        pos = end + 1
        if header.endswith(" missing"):
            result[spec] = None
            continue
        size = int(header.rsplit(" ", 1)[1])
        result[spec] = out[pos:pos + size]
        pos += size + 1
    return result


def _checkout_with(tmp: Path, bug: KnownBug, data: bytes | None) -> Path:
    """A one-file checkout holding the entry's file as it was at one revision (or not holding it)."""
    tmp.mkdir(parents=True, exist_ok=True)
    if data is not None:
        target = tmp / bug.detect.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return tmp


@needs_history
def test_every_marker_says_not_fixed_before_and_fixed_at_the_fix(tmp_path):
    bugs = [b for b in load_bugs() if b.layer == "slime"]
    specs = [f"{b.fix_commit}{suffix}:{b.detect.file}" for b in bugs for suffix in ("^", "")]
    blobs = _blobs(specs)
    wrong = []
    for n, b in enumerate(bugs):
        before = checkout_has_fix(b, _checkout_with(tmp_path / f"{n}-before", b, blobs[f"{b.fix_commit}^:{b.detect.file}"]))
        after = checkout_has_fix(b, _checkout_with(tmp_path / f"{n}-after", b, blobs[f"{b.fix_commit}:{b.detect.file}"]))
        if (before.has_fix, after.has_fix) != (False, True):
            wrong.append((b.id, before.detail, after.detail))
    assert not wrong, wrong


@needs_history
def test_entries_name_real_commits_of_slime_before_the_pin():
    bugs = [b for b in load_bugs() if b.layer == "slime"]
    ancestors = set(subprocess.run(["git", "-C", str(SLIME), "rev-list", SLIME_SHORT], capture_output=True, text=True,
                                   check=True, timeout=60).stdout.split())
    for b in bugs:
        assert b.fix_commit in ancestors, b.id
        assert not b.introduced_commit or b.introduced_commit in ancestors, b.id
        assert set(b.also_fixes) <= ancestors, b.id
        subject = subprocess.run(["git", "-C", str(SLIME), "show", "-s", "--format=%s%n%cd", "--date=short",
                                  b.fix_commit], capture_output=True, text=True, check=True).stdout.split("\n")
        pr = re.search(r"\(#(\d+)\)\s*$", subject[0])
        assert b.fix_pr == (f"#{pr.group(1)}" if pr else ""), (b.id, subject[0])
        if b.introduced_commit:  # dates can be out of order after a rebase; ancestry cannot
            assert subprocess.run(["git", "-C", str(SLIME), "merge-base", "--is-ancestor", b.introduced_commit,
                                   b.fix_commit], timeout=60).returncode == 0, b.id


@needs_history
def test_paste_markers_are_gone_from_slime_at_the_fix():
    """A paste marker that slime's own code still holds after the fix would name an old bug for a current
    error: the marker must be absent from every Python file of the fixing commit (lower-cased, spaces joined)."""
    for b in [b for b in load_bugs() if b.layer == "slime" and b.markers]:
        files = subprocess.run(["git", "-C", str(SLIME), "ls-tree", "-r", "--name-only", b.fix_commit],
                               capture_output=True, text=True, check=True, timeout=60).stdout.split()
        blobs = _blobs([f"{b.fix_commit}:{f}" for f in files if f.endswith(".py")])
        code = " ".join(b"\n".join(v for v in blobs.values() if v).decode("utf-8", "replace").lower().split())
        assert not [m for m in b.markers if m in code], b.id


def test_the_table_covers_the_fix_history_at_scale():
    bugs = load_bugs()
    assert len(bugs) >= 250
    assert {b.kind for b in bugs} == {"fix", "revert", "default", "removal"}
    with_error = [b for b in bugs if b.error]
    assert len(with_error) >= 40
    for b in with_error:  # one paste marker is a piece of the old message (lower-cased), so a paste matches it
        flat = " ".join(_paste(b).lower().split())
        assert not b.markers or any(m in flat for m in b.markers), b.id


@needs_history
def test_the_listing_tool_counts_the_window_by_its_rule():
    spec = importlib.util.spec_from_file_location("list_fix_commits", ROOT / "tools" / "list_fix_commits.py")
    tool = importlib.util.module_from_spec(spec)
    sys.modules["list_fix_commits"] = tool
    spec.loader.exec_module(tool)
    rows = tool.list_candidates(SLIME, "2025-02-21", "2026-08-22")
    by_subject = [r for r in rows if "subject" in r["reasons"]]
    assert len(by_subject) >= 600 and len(rows) >= len(by_subject)
    assert all(tool.SUBJECT_RE.search(r["subject"]) for r in by_subject)
    covered = {b.fix_commit for b in load_bugs()}
    assert sum(r["commit"] in covered for r in rows) >= 250
    assert tool.diff_reasons("--- a/slime/x.py\n+++ b/slime/x.py\n-    raise ValueError('x')\n") == ["raise"]
    assert tool.diff_reasons("--- a/slime/a.py\n+++ b/slime/a.py\n-parser.add_argument(\"--gone\", default=1)\n"
                             ) == ["flag-removed"]


def _sampled_pastes() -> list[KnownBug]:
    """Every entry whose old message carries a paste marker, then every (n // 20)-th of them in table order,
    20 at most: a fixed rule, not a hand-picked list."""
    rows = [b for b in load_bugs() if b.error and b.markers]
    return rows[::max(1, len(rows) // 20)][:20]


def _paste(bug: KnownBug) -> str:
    """The old message as a user pastes it: every `{field}` of the template filled with a value."""
    return re.sub(r"\{[^{}]*\}", "7", bug.error)


@pytest.mark.parametrize("bug", _sampled_pastes(), ids=lambda b: b.id)
def test_ask_finds_the_entry_from_the_old_error_text(bug):
    from core.knowledge.search import get_index

    index = get_index()
    top = [(r.kind, r.id) for r in index.ask(_paste(bug), limit=3).results]
    assert ("bug", bug.id) in top, top
    traceback = (f"Traceback (most recent call last):\n  File \"/root/slime/{bug.detect.file}\", line 12, in run\n"
                 f"{_paste(bug)}\n")
    assert ("bug", bug.id) in [(r.kind, r.id) for r in index.ask(traceback, limit=3).results]


def test_upstream_layers_bugs_are_keyed_by_version_and_found_from_a_paste():
    from core.knowledge.search import get_index

    upstream = [b for b in load_bugs() if b.layer != "slime"]
    assert {b.layer for b in upstream} == {"sglang", "megatron"}
    for b in upstream:
        assert b.versions and all(u.startswith("https://github.com/") for u in b.upstream), b.id
    paste = ("RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
             "pre_model_load_memory=60.1, local_gpu_memory=75.2, local_gpu_memory * 0.9=67.68")
    top = [(r.kind, r.id) for r in get_index().ask(paste, limit=3).results]
    assert top[0] == ("bug", "sglang-tp-memory-imbalance-env-inverted"), top


def _draft_tool():
    spec = importlib.util.spec_from_file_location("draft_known_bugs", ROOT / "tools" / "draft_known_bugs.py")
    tool = importlib.util.module_from_spec(spec)
    sys.modules["draft_known_bugs"] = tool
    spec.loader.exec_module(tool)
    return tool


def test_the_draft_tool_formats_old_messages_and_merges_notes_into_valid_entries():
    import ast
    import json

    import yaml

    from core.knowledge.bugs import parse_bugs

    tool = _draft_tool()
    source = 'assert n > 1, f"n_quantiles({n}) must be greater than 1."\n'
    node = ast.parse(source).body[0]
    assert tool._fmt(node.msg, source) == "n_quantiles({n}) must be greater than 1."
    commit = "a" * 40
    drafts = {commit: {"commit": commit, "date": "2026-01-02", "pr": "#12", "subject": "fix x (#12)",
                       "files": ["slime/x.py"], "old_messages": [],
                       "marker": {"file": "slime/x.py", "kind": "added", "markers": ["return int(x)"], "pin_line": 3},
                       "introduced": {"commit": "b" * 40, "date": "2025-12-01", "pr": "#3", "subject": "add x (#3)"}}}
    notes = {commit[:9]: {"id": "x-bug", "t": "Title", "s": "Symptom.", "c": "Cause.", "w": "Workaround.",
                          "e": "x must be {x}", "m": ["x must be"]},
             "bbbbbbbbb": {"id": "already-there"}}
    entries = tool.merge(notes, drafts, skip_ids={"already-there"})
    bug = parse_bugs(json.dumps({"bugs": entries}))[0]
    assert bug.fix_pr == "#12" and bug.introduced_pr == "#3" and bug.detect.markers == ["return int(x)"]
    assert bug.affected == "slime from bbbbbbbbb (#3, 2025-12-01) until the fix (2026-01-02)"
    assert bug.sources == ["slime/x.py:3@624b824a"] and bug.threads == ["https://github.com/THUDM/slime/pull/12"]
    assert yaml.safe_load(yaml.safe_dump(entries)) == entries
