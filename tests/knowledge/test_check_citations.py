"""tools/check_citations.py: every citation in cards, rules and core/ messages, checked against the pinned
checkouts (skipped where those are not extracted), and its parsing rules on small inputs."""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import pytest

from core.pins import pinned_source_dir

TOOL = Path(__file__).resolve().parents[2] / "tools" / "check_citations.py"
ROOTS = {"slime": pinned_source_dir("slime"), "megatron": pinned_source_dir("megatron"),
         "sglang": pinned_source_dir("sglang")}


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("check_citations", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_citations"] = module
    spec.loader.exec_module(module)
    return module


def test_every_citation_passes_against_the_pinned_sources(tool):
    if not all(p.is_dir() for p in ROOTS.values()):
        pytest.skip("upstream checkouts not extracted here")
    out = io.StringIO()
    rc = tool.run(ROOTS, out=out)
    assert rc == 0, out.getvalue()
    assert "0 fail" in out.getvalue()


def test_flags_match_their_dest_and_paths_are_not_anchors(tool):
    assert "rollout_batch_size" in tool.anchor_variants("--rollout-batch-size 32")
    assert "ppo_kl" in tool.anchor_variants("train/ppo_kl")
    assert not tool.usable_anchor("train.py") and not tool.usable_anchor("slime/utils/arguments.py")
    assert tool.usable_anchor("--colocate") and tool.usable_anchor("global_batch_size")


def test_card_citations_take_the_nearest_backticked_anchor_and_follow_ups(tool, tmp_path):
    card = tmp_path / "x.md"
    card.write_text("---\ntitle: t\nsources:\n  - slime/utils/arguments.py:1-2@624b824a\n---\n"
                    "The flag `--colocate` shares GPUs (`slime/utils/arguments.py:38@624b824a`, `:40`).\n"
                    "Another sentence (`train.py:85@624b824a`).\n", encoding="utf-8")
    found = tool.cards_citations(tmp_path)
    assert [c.origin for c in found] == ["card sources", "card body", "card body", "card body"]
    body = found[1:]
    assert body[0].candidates[0] == "--colocate" and (body[1].path, body[1].start) == ("slime/utils/arguments.py", 40)
    assert body[2].candidates == []


def test_a_wrong_line_fails(tool, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n\ndef f(colocate):\n    return colocate\n", encoding="utf-8")
    checkouts = tool.Checkouts({"slime": tmp_path, "megatron": tmp_path, "sglang": tmp_path})
    cite = tool.Citation("card:1", "card body", "a.py", 1, 1, "624b824a", ["--colocate"])
    assert tool.check(cite, checkouts, {}, set()).status == "anchor"
    cite.start = cite.end = 4
    assert tool.check(cite, checkouts, {}, set()).status == "ok"
    cite.start = cite.end = 9
    assert tool.check(cite, checkouts, {}, set()).status == "lines"
    cite.path = "b.py"
    assert tool.check(cite, checkouts, {}, set()).status == "file"


def test_every_accepted_exception_has_a_reason_and_every_anchor_a_value(tool):
    import yaml

    data = yaml.safe_load(tool.ANCHORS_FILE.read_text(encoding="utf-8"))
    assert all(str(v).strip() for v in data["anchors"].values())
    assert all(str(e.get("reason", "")).strip() and e.get("citation") for e in data["exceptions"])


def test_a_missing_checkout_is_a_usage_error(tool, tmp_path, capsys):
    assert tool.run({"slime": tmp_path / "none", "megatron": tmp_path, "sglang": tmp_path}) == 2
    assert "checkout not found" in capsys.readouterr().err


def test_a_table_source_must_show_what_its_entry_names(tool, tmp_path):
    """A known bug's source of its fixed file must show the fix its marker names; another entry's source must
    show one of its flags; an entry naming neither is checked for file and lines only."""
    (tmp_path / "a.py").write_text("x = 1\n\ndef sort_key(g):\n    return int(g)\n", encoding="utf-8")
    checkouts = tool.Checkouts({"slime": tmp_path, "megatron": tmp_path, "sglang": tmp_path})
    bug = {"detect": {"file": "a.py", "kind": "added", "markers": ["return int(g)"]}, "flags": ["--colocate"]}
    assert tool._named_in_row(bug, "a.py") == ["return int(g)"]
    assert tool._named_in_row(bug, "b.py") == ["--colocate"]
    assert tool._named_in_row({"flags": []}, "a.py") == []
    cite = tool.Citation("table", "table sources", "a.py", 1, 1, "624b824a", tool._named_in_row(bug, "a.py"))
    assert tool.check(cite, checkouts, {}, set()).status == "anchor"  # line 1 is not the fix
    cite.start = cite.end = 4
    assert tool.check(cite, checkouts, {}, set()).status == "ok"
    bare = tool.Citation("table", "table sources", "a.py", 1, 1, "624b824a", [])
    assert tool.check(bare, checkouts, {}, set()).status == "ok"
