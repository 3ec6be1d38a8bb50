"""slime's error messages read with `ast`: templates, conditions, functions and lines; matching pasted
errors; the hand-made rule table stays true to the index and the rule registries."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.data import RULES as DATA_RULES
from core.knowledge.errors import (
    ERRORS_PATH,
    build_error_index,
    error_message_of,
    errors_in_source,
    index_to_json,
    links_for,
    load_error_index,
    load_rule_links,
    match_error,
    traceback_frames,
)
from core.launch import RULES as LAUNCH_RULES
from core.pins import pinned_source_dir

SLIME = pinned_source_dir("slime")
SOURCE = '''
import os

def check(args):
    assert args.n > 0, f"n must be positive, got {args.n}"
    assert args.m
    if args.mode not in ("a", "b"):
        raise ValueError(f"unknown mode {args.mode!r}; choose a or b")
    else:
        raise NotImplementedError("mode " + args.mode + " is not ready")
    raise RuntimeError(os.environ["X"])


class Loader:
    def read(self, path):
        if not path:
            raise FileNotFoundError("no path given")
        raise self.error("not a literal")
'''


def test_asserts_and_raises_with_messages_are_indexed_with_template_condition_function_line():
    entries = errors_in_source(SOURCE, "slime/x.py")
    got = [(e.kind, e.exception, e.template, e.condition, e.function, e.line) for e in entries]
    assert got == [
        ("assert", "AssertionError", "n must be positive, got {args.n}", "args.n > 0", "check", 5),
        ("assert", "AssertionError", "", "args.m", "check", 6),  # a bare assert: found by a traceback's frame
        ("raise", "ValueError", "unknown mode {args.mode}; choose a or b", "args.mode not in ('a', 'b')",
         "check", 8),
        ("raise", "NotImplementedError", "mode {args.mode} is not ready", "not (args.mode not in ('a', 'b'))",
         "check", 10),
        ("raise", "FileNotFoundError", "no path given", "not path", "Loader.read", 17),
        ("raise", "self.error", "not a literal", None, "Loader.read", 18),  # a factory call counts too
    ]
    assert entries[0].source == "slime/x.py:5@624b824a" and entries[0].fixed_words == "n must be positive, got"


def test_unparsable_source_gives_nothing_rather_than_an_error():
    assert errors_in_source("def broken(:\n", "x.py") == []
    assert errors_in_source("\x00", "x.py") == []


def test_build_reads_a_checkout_without_tests(tmp_path):
    (tmp_path / "slime" / "tests").mkdir(parents=True)
    (tmp_path / "slime" / "a.py").write_text(SOURCE)
    (tmp_path / "slime" / "tests" / "t.py").write_text("assert False, 'a test'\n")
    (tmp_path / "train.py").write_text("assert 1 == 2, 'top level'\n")
    index = build_error_index(tmp_path, "abc12345")
    assert {e.path for e in index.entries} == {"slime/a.py", "train.py"}
    assert all(e.source.endswith("@abc12345") for e in index.entries)
    assert b'"template"' in index_to_json(index)


def test_pasted_text_parts():
    text = ('(RolloutManager pid=9) Traceback (most recent call last):\n'
            '(RolloutManager pid=9)   File "/root/slime/slime/ray/rollout.py", line 10, in f\n'
            "(RolloutManager pid=9) ValueError: bad thing 3\n")
    assert traceback_frames(text) == [("/root/slime/slime/ray/rollout.py", 10)]
    assert error_message_of(text) == "bad thing 3"
    assert error_message_of("just some words\n\n") == "just some words"


def test_slime_frames_are_named_by_their_repo_path():
    from core.knowledge.errors import slime_frames

    text = ('  File "/root/slime/train.py", line 3, in <module>\n'
            '  File "/root/slime/slime/ray/rollout.py", line 10, in f\n'
            '  File "/usr/lib/python3.11/site-packages/slime/utils/misc.py", line 7, in g\n'
            '  File "/usr/lib/python3.11/site-packages/torch/nn/x.py", line 9, in h\n'
            '  File "C:\\work\\slime_plugins\\models\\m.py", line 2, in k\n'
            '  File "/x/slime/a`](javascript:x)`.py", line 1, in z\n')
    assert slime_frames(text) == [("slime_plugins/models/m.py", 2), ("slime/utils/misc.py", 7),
                                  ("slime/ray/rollout.py", 10), ("train.py", 3)]


def test_matching_on_the_line_then_on_the_fixed_words(tmp_path):
    (tmp_path / "slime").mkdir()
    (tmp_path / "slime" / "a.py").write_text(SOURCE)
    index = build_error_index(tmp_path)
    by_line = match_error('File "/opt/x/slime/a.py", line 8, in check\nValueError: whatever', index)
    assert [(m.how, m.entry.line) for m in by_line][:1] == [("traceback-line", 8)]
    by_words = match_error("ValueError: unknown mode 'zz'; choose a or b", index)
    assert [(m.how, m.entry.line) for m in by_words] == [("message", 8)]
    assert match_error("ValueError: choose a or b; unknown mode", index) == []  # pieces out of order
    assert match_error("x" * 500_000, index) == []


def test_committed_index_covers_slime_at_the_pin():
    index = load_error_index()
    assert index.commit == "624b824a" and len(index.entries) > 500
    temp = next(e for e in index.entries if e.template.startswith("--rollout-temperature must be > 0"))
    assert temp.id == "slime/utils/arguments.py:1771" and temp.function == "slime_validate_args"


def test_rule_table_names_real_messages_and_real_rules():
    from core.knowledge.layers import load_all_messages

    index = load_all_messages()
    for link in load_rule_links():
        hits = [e for e in index.entries if link in links_for(e)]
        assert hits, link
        assert link.contains or (link.line is not None and not hits[0].template), link  # a line: bare asserts only
        for code in link.rules:
            assert code in LAUNCH_RULES or code in DATA_RULES, code
    kl = next(e for e in index.entries if e.template == "Only one of kl_coef and kl_loss_coef can be set")
    assert [r for link in links_for(kl) for r in link.rules] == ["SLIME003"]


@pytest.mark.skipif(not (SLIME / "slime").is_dir(), reason="needs the pinned slime checkout (make sources)")
def test_committed_index_is_what_the_tool_writes_at_the_pin():
    rebuilt = build_error_index(SLIME, "624b824a")
    assert index_to_json(rebuilt) == ERRORS_PATH.read_bytes()


def test_the_tool_writes_an_index_and_refuses_what_is_not_a_checkout(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_error_index", Path(__file__).resolve().parents[2]
                                                  / "tools" / "build_error_index.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    (tmp_path / "slime").mkdir()
    (tmp_path / "slime" / "a.py").write_text(SOURCE)
    out = tmp_path / "errors.json"
    assert tool.main([str(tmp_path), "--commit", "abcdef12", "--out", str(out)]) == 0
    assert load_error_index(out).entries[0].source == "slime/a.py:5@abcdef12"
    assert "6 entries (2 asserts, 1 of them without a message; 4 raises)" in capsys.readouterr().out
    assert tool.main([str(tmp_path / "nothing"), "--out", str(out)]) == 2


def test_the_final_else_of_an_elif_chain_records_every_test_negated():
    source = ('def pick(kind, n):\n'
              '    if kind == "a":\n        pass\n'
              '    elif kind == "b":\n        raise ValueError("b is retired")\n'
              '    elif n > 3:\n        pass\n'
              '    else:\n        raise ValueError(f"unknown kind {kind}")\n')
    got = [(e.line, e.condition) for e in errors_in_source(source, "slime/p.py")]
    assert got == [(5, "kind == 'b'"),
                   (9, "not (kind == 'a') and not (kind == 'b') and not (n > 3)")]
    index = load_error_index()
    loss = next(e for e in index.entries if e.path == "slime/backends/megatron_utils/loss.py"
                and e.condition and "reinforce_plus_plus_baseline" in e.condition and " and " in e.condition)
    assert loss.condition.startswith("not (args.custom_advantage_function_path is not None) and not (")


def test_the_template_prefilter_loses_no_match():
    """Templates are tried only when the message holds their longest whole word: the same matches as trying
    every template, whatever fills the holes."""
    import re

    from core.knowledge.errors import _pieces_in_order, _prepared
    from core.knowledge.layers import load_all_messages

    prepared = _prepared(load_all_messages())
    holes = re.compile(r"\{[^{}]*\}")
    for entry, _, _ in prepared.templates[::9]:
        for fill in ("7", "x_y", "/a/b.py"):
            message = " ".join(holes.sub(fill, entry.template).split())
            brute = {k for _, k, ps in prepared.templates if _pieces_in_order(ps, message)}
            assert {k for _, k, ps in prepared.candidates(message) if _pieces_in_order(ps, message)} == brute


# -- issue 28, defects 1, 2, 3 and 6: a hostile checkout is read with the guarded reader -----------------------
def hostile_checkout(root: Path) -> Path:
    """A checkout holding a FIFO as a .py file, a 10,000-term chained expression, a folder link and a file link
    that lead outside it, and one ordinary message."""
    import os

    (root / "co" / "slime").mkdir(parents=True)
    (root / "co" / "slime" / "a.py").write_text("assert x, 'the checkout own message'\n")
    os.mkfifo(root / "co" / "slime" / "pipe.py")
    (root / "co" / "slime" / "deep.py").write_text("x = " + "+".join(["a"] * 10_000) + "\n")
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "far.py").write_text("assert y, 'a message from outside the checkout'\n")
    (root / "co" / "tools").symlink_to(root / "elsewhere")
    (root / "co" / "slime" / "linked.py").symlink_to(root / "elsewhere" / "far.py")
    return root / "co"


def test_a_hostile_checkout_is_indexed_without_hanging_or_reading_outside(tmp_path):
    index = build_error_index(hostile_checkout(tmp_path), "your-checkout")
    assert [e.template for e in index.entries] == ["the checkout own message"]
    skipped = {(s.path, s.kind) for s in index.skipped}
    assert skipped == {("slime/pipe.py", "not-regular"), ("slime/deep.py", "unparsable"), ("tools", "outside"),
                       ("slime/linked.py", "outside")}
    assert next(s.why for s in index.skipped if s.kind == "unparsable") == "nested too deeply to parse"
    from core.paths import describe_skipped

    lines = describe_skipped(index.skipped)
    assert "1 file, not a regular file (a named pipe, device or socket), never opened: slime/pipe.py" in lines
    assert any("nested too deeply" in line for line in lines) and len(lines) == 3  # one line per kind


def test_links_inside_the_checkout_are_followed_once(tmp_path):
    (tmp_path / "slime" / "real").mkdir(parents=True)
    (tmp_path / "slime" / "real" / "b.py").write_text("raise ValueError('inside the tree')\n")
    (tmp_path / "slime" / "alias").symlink_to(tmp_path / "slime" / "real")
    (tmp_path / "slime" / "real" / "loop").symlink_to(tmp_path / "slime")  # a loop: entered once
    (tmp_path / "slime" / "gone.py").symlink_to(tmp_path / "nothing.py")
    index = build_error_index(tmp_path)
    assert {e.path for e in index.entries} <= {"slime/real/b.py", "slime/alias/b.py"} and index.entries
    assert [(s.path, s.kind, s.why) for s in index.skipped] == [("slime/gone.py", "unreadable", "a link to nothing")]


def test_bytes_per_file_and_in_all_are_bounded_and_named(tmp_path, monkeypatch):
    import core.knowledge.errors as errors

    monkeypatch.setattr(errors, "MAX_FILE_BYTES", 2_000)  # the real limits are 500,000 and 3,000,000 bytes
    monkeypatch.setattr(errors, "MAX_TOTAL_BYTES", 5_000)
    (tmp_path / "slime").mkdir()
    filler = "# " + "x" * 1_400 + "\n"
    for n in range(6):  # 31 files of 1.9 MB in the issue; the same shape at 1/1000
        (tmp_path / "slime" / f"m{n}.py").write_text(f"assert n, 'message {n}'\n" + filler)
    (tmp_path / "slime" / "big.py").write_text("assert n, 'too big'\n" + filler * 2)
    index = build_error_index(tmp_path)
    assert [e.template for e in index.entries] == ["message 0", "message 1", "message 2"]
    kinds = {s.path: s.kind for s in index.skipped}
    assert kinds == {"slime/big.py": "too-large", "slime/m3.py": "budget", "slime/m4.py": "budget",
                     "slime/m5.py": "budget"}
    assert "at most 2,000 are read per file" in next(s.why for s in index.skipped if s.kind == "too-large")


def test_the_limits_hold_the_pinned_index_with_room():
    import core.knowledge.errors as errors

    # slime at the pin: 221 files, 2.04 MB in all, the largest 139 KB (the limits say why they are what they are)
    assert errors.MAX_FILE_BYTES >= 3 * 139_387 and errors.MAX_TOTAL_BYTES >= 1.4 * 2_043_337
    assert errors.MAX_TOTAL_BYTES <= 4_000_000  # about 2 s of `ast` per MB of dense code: within 10 s


@pytest.mark.skipif(not (SLIME / "slime").is_dir(), reason="needs the pinned slime checkout (make sources)")
def test_the_pinned_checkout_is_read_whole():
    assert not build_error_index(SLIME, "624b824a").skipped
