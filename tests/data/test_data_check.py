"""The dataset checker: each rule's validator, the streaming reader, and parity with slime's reading."""

from __future__ import annotations

import io
import json
import os
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

import core.data.judge as judge
import core.data.report as report_module
import core.data.scan as dc
from core.data.rules import (
    RULES,
    DataKeys,
    Problem,
    check_extension,
    check_key_names,
    check_label,
    check_magic,
    check_message,
    check_metadata,
    check_multimodal,
    check_multimodal_config,
    check_prompt,
    check_row_count,
    check_row_is_object,
    check_tools,
    keys_from_launch,
    split_row_slice,
)
from core.data.scan import CheckError, check_bytes, check_path, check_stream, render_report_text
from core.knowledge.cards import SOURCE_RE, get_card

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"
PROMPT_LABEL = DataKeys(input_key="prompt", label_key="label")
CHAT = DataKeys(input_key="prompt", label_key="label", apply_chat_template=True)


def rules_of(problems: list[Problem] | Problem | None) -> list[str]:
    if problems is None:
        return []
    if isinstance(problems, Problem):
        return [problems.rule]
    return [p.rule for p in problems]


def codes(report: dc.DataReport) -> dict[int | None, set[str]]:
    out: dict[int | None, set[str]] = {}
    for f in report.findings:
        out.setdefault(f.line, set()).add(f.code)
    return out


# ---------------------------------------------------------------- the rule table ----------------------------

def test_every_rule_has_a_unique_code_a_wellformed_source_and_a_fix():
    assert len({r.name for r in RULES.values()}) == len(RULES)
    for rule in RULES.values():
        assert SOURCE_RE.match(rule.source), rule.source
        assert rule.source.endswith(("@624b824a", "@v0.5.15.post1"))
        assert rule.fix


def test_the_card_the_findings_point_to_exists():
    card = get_card(report_module.CARD)
    assert card is not None and "input" in card.body and "--label-key" in card.body


# ---------------------------------------------------------------- file-level validators ---------------------

@pytest.mark.parametrize(("name", "expected"), [
    ("train.jsonl", None),
    ("train.parquet", None),
    ("/d/train.jsonl@[0:100]", None),
    ("train.JSONL", "case-sensitively"),
    ("train.json", "converted"),
    ("train.jsonl.gz", "'.gz'"),
    ("train", "no extension"),
], ids=str)
def test_check_extension(name, expected):
    problem = check_extension(name)
    if expected is None:
        assert problem is None
    else:
        assert problem.rule == "extension" and expected in problem.detail


@pytest.mark.parametrize(("head", "expected"), [
    (b"PK\x03\x04rest", "zip"),
    (b"\x1f\x8b\x08\x00", "gzip"),
    (b"PAR1\x15\x04", "parquet"),
    (b"\xff\xfe{\x00", "UTF-16"),
    (b'{"a": 1}\x00', "NUL"),
    (b'{"prompt": "x"}\n', None),
], ids=str)
def test_check_magic(head, expected):
    problem = check_magic(head)
    assert (problem is None) if expected is None else expected in problem.detail


@pytest.mark.parametrize(("text", "path", "bounds"), [
    ("a.jsonl@[1:5]", "a.jsonl", (1, 5)),
    ("a.jsonl@[-3:]", "a.jsonl", (-3, None)),
    ("a.jsonl@[:10]", "a.jsonl", (None, 10)),
    ("a.jsonl", "a.jsonl", None),
    ("a@b.jsonl", "a@b.jsonl", None),
], ids=str)
def test_split_row_slice_follows_slimes_syntax(text, path, bounds):
    real, row_slice = split_row_slice(text)
    assert real == path
    assert (row_slice is None) if bounds is None else (row_slice.start, row_slice.stop) == bounds


# ---------------------------------------------------------------- row validators ----------------------------

@pytest.mark.parametrize(("row", "keys", "fmt", "chars", "rules"), [
    ({"prompt": "hello"}, PROMPT_LABEL, "text", 5, []),
    ({"input": "hello"}, DataKeys(), "text", 5, []),
    ({"prompt": "hello"}, DataKeys(), "missing", 0, ["prompt-missing"]),
    ({"prompt": None}, PROMPT_LABEL, "missing", 0, ["prompt-missing"]),
    ({"prompt": "  \n"}, PROMPT_LABEL, "text", 3, ["empty-text"]),
    ({"prompt": 7}, PROMPT_LABEL, "other", 0, ["prompt-type"]),
    ({"prompt": {"role": "user"}}, PROMPT_LABEL, "other", 0, ["prompt-type"]),
    ({"prompt": []}, CHAT, "chat", 0, ["empty-text"]),
    ({"prompt": [{"role": "user", "content": "abc"}]}, CHAT, "chat", 3, []),
    ({"prompt": [{"role": "user", "content": "abc"}, "x"]}, CHAT, "chat", 3, ["message-shape"]),
], ids=str)
def test_check_prompt(row, keys, fmt, chars, rules):
    got_fmt, got_chars, problems = check_prompt(row, keys)
    assert (got_fmt, got_chars, rules_of(problems)) == (fmt, chars, rules)


@pytest.mark.parametrize(("message", "keys", "rules"), [
    ({"role": "user", "content": "hi"}, CHAT, []),
    ({"role": "user", "content": "hi", "step_loss_mask": 1}, CHAT, []),
    ({"role": "assistant", "content": None, "tool_calls": []}, CHAT, []),
    ({"role": "assistant", "content": ""}, CHAT, []),
    ({"role": "user", "content": ""}, CHAT, ["empty-text"]),
    ({"role": "user", "content": [{"type": "text", "text": "hi"}]}, CHAT, []),
    ({"content": "hi"}, CHAT, ["message-shape"]),
    ({"role": "user"}, CHAT, ["message-shape"]),
    ({"role": "bot", "content": "hi"}, CHAT, ["unknown-role"]),
    ({"role": "user", "content": 5}, CHAT, ["message-shape"]),
    ({"role": "user"}, DataKeys(multimodal_keys={"image": "images"}), ["multimodal"]),
    ({"role": "user", "content": 5}, DataKeys(multimodal_keys={"image": "images"}), ["multimodal"]),
    ("just text", CHAT, ["message-shape"]),
], ids=str)
def test_check_message(message, keys, rules):
    assert rules_of(check_message(message, 0, keys)) == rules


@pytest.mark.parametrize(("row", "keys", "rules"), [
    ({"label": "42"}, PROMPT_LABEL, []),
    ({"label": 42}, PROMPT_LABEL, []),
    ({"label": {"answer": 1}}, PROMPT_LABEL, []),
    ({}, PROMPT_LABEL, ["label-missing"]),
    ({"label": None}, PROMPT_LABEL, ["label-empty"]),
    ({"label": " "}, PROMPT_LABEL, ["label-empty"]),
    ({}, DataKeys(), []),
], ids=str)
def test_check_label(row, keys, rules):
    assert rules_of(check_label(row, keys)) == rules


TOOL = {"type": "function", "function": {"name": "f"}}


@pytest.mark.parametrize(("row", "rules"), [
    ({}, []),
    ({"tools": [TOOL]}, []),
    ({"tools": []}, []),
    ({"tools": json.dumps([TOOL])}, []),
    ({"tools": "not json"}, ["tools-type"]),
    ({"tools": json.dumps(TOOL)}, ["tools-type"]),
    ({"tools": None}, ["tools-type"]),
    ({"tools": TOOL}, ["tools-type"]),
    ({"tools": ["calc"]}, ["tools-items"]),
], ids=str)
def test_check_tools(row, rules):
    assert rules_of(check_tools(row, DataKeys())) == rules


@pytest.mark.parametrize(("row", "rules"), [
    ({}, []),
    ({"metadata": {"source_name": "math"}}, []),
    ({"metadata": None}, []),
    ({"metadata": ""}, []),
    ({"metadata": []}, []),
    ({"metadata": "math"}, ["metadata-type"]),
    ({"metadata": [1]}, ["metadata-type"]),
    ({"metadata": {"tools": []}, "tools": []}, ["metadata-tools"]),
], ids=str)
def test_check_metadata(row, rules):
    assert rules_of(check_metadata(row, DataKeys())) == rules


IMAGES = DataKeys(input_key="prompt", multimodal_keys={"image": "images"}, apply_chat_template=True)


@pytest.mark.parametrize(("row", "rules"), [
    ({"prompt": "<image> what is this?", "images": ["a.png"]}, []),
    ({"prompt": "no picture", "images": None}, []),
    ({"prompt": "<image><image>", "images": ["a.png"]}, ["multimodal"]),
    ({"prompt": "<image>", "images": "a.png"}, ["multimodal"]),
    ({"prompt": [{"role": "user", "content": "<image>"}], "images": [{"type": "image", "image": "a"}]}, []),
    ({"prompt": "<image>", "images": 3}, ["multimodal"]),
], ids=str)
def test_check_multimodal(row, rules):
    assert rules_of(check_multimodal(row, IMAGES)) == rules


def test_check_multimodal_config_names_unknown_types():
    assert rules_of(check_multimodal_config(DataKeys(multimodal_keys={"picture": "p"}))) == ["multimodal-config"]
    assert check_multimodal_config(IMAGES) == []


@pytest.mark.parametrize(("row", "rule"), [
    ({"a": 1}, None), ([1, 2], "not-an-object"), ("text", "not-an-object"), (None, "not-an-object"),
], ids=str)
def test_check_row_is_object(row, rule):
    assert rules_of(check_row_is_object(row)) == ([rule] if rule else [])


@pytest.mark.parametrize(("key_counts", "keys", "expected"), [
    ({"prompt": 5, "label": 5}, DataKeys(), [("input-key", "--input-key prompt"), ("label-key", "--label-key label")]),
    ({"input": 5, "label": 5}, DataKeys(label_key="label"), []),
    ({"question": 5, "answer": 5}, DataKeys(label_key="label"),
     [("input-key", "--input-key question"), ("label-missing", "--label-key answer")]),
    ({"input": 5, "meta": 5}, DataKeys(), [("other-key", "--metadata-key meta")]),
    ({"input": 5, "functions": 5}, DataKeys(), [("other-key", "--tool-key functions")]),
    ({"weird": 5}, DataKeys(), [("input-key", None)]),
], ids=str)
def test_check_key_names_gives_the_exact_flag(key_counts, keys, expected):
    found = [(p.rule, flag) for p, flag in check_key_names(key_counts, 5, keys)]
    assert found == expected


def test_check_key_names_message_names_the_keys_and_the_flag():
    (problem, flag), _ = check_key_names({"prompt": 3, "label": 3}, 3, DataKeys())
    assert "'prompt', 'label'" in problem.detail and "'input' unless you pass --input-key prompt" in problem.detail


@pytest.mark.parametrize(("used", "crashed", "rule"), [(0, 0, "no-rows"), (3, 0, "few-rows"), (50, 2, None)],
                         ids=str)
def test_check_row_count(used, crashed, rule):
    assert rules_of(check_row_count(used, crashed)) == ([rule] if rule else [])


# ---------------------------------------------------------------- keys ------------------------------------

def test_keys_from_launch_accepts_flags_or_names_and_ignores_the_rest():
    keys = keys_from_launch({"--input-key": "prompt", "--apply-chat-template": True, "--rollout-batch-size": 8,
                             "label_key": "answer", "multimodal-keys": '{"image": "images"}'})
    assert (keys.input_key, keys.label_key, keys.apply_chat_template) == ("prompt", "answer", True)
    assert keys.multimodal_keys == {"image": "images"}
    assert keys_from_launch(None) == DataKeys()


@pytest.mark.parametrize("bad", [
    {"input_key": ""}, {"input_key": "a\nb"}, {"multimodal_keys": "{not json"}, {"multimodal_keys": "[1]"},
    {"metadata_key": "x" * 300},
], ids=str)
def test_data_keys_refuse_bad_values(bad):
    with pytest.raises(ValidationError):
        DataKeys(**bad)


def test_launch_flags_are_quoted_and_only_list_changes():
    assert DataKeys().launch_flags() == []
    flags = DataKeys(input_key="my prompt", label_key="label", apply_chat_template=True).launch_flags()
    assert flags == ["--input-key 'my prompt'", "--label-key label", "--apply-chat-template"]


# ---------------------------------------------------------------- the reader, line by line --------------------

@pytest.mark.parametrize(("content", "expected", "used", "skipped", "crash"), [
    (b'{"prompt":"a","label":"1"}\n', {}, 1, 0, 0),
    (b'{"prompt": "a", "label": "1"}\n\n   \n', {}, 1, 0, 0),
    (b'\xef\xbb\xbf{"prompt":"a","label":"1"}\n{"prompt":"b","label":"1"}\n', {1: {"DATA013"}}, 1, 1, 0),
    (b'{"prompt":"a","label":"1"}\n\xef\xbb\xbf{"prompt":"b","label":"1"}\n', {2: {"DATA013"}}, 1, 1, 0),
    (b'{"prompt":"a","label":"1"}\r\n{"prompt":"b","label":"1"}\r\n', {1: {"DATA014"}}, 2, 0, 0),
    (b'{"prompt":\r"a","label":"1"}\n', {1: {"DATA015", "DATA001"}}, 0, 2, 0),
    (b'{"prompt":"caf\xe9","label":"1"}\n', {1: {"DATA016"}}, 0, 0, 1),
    (b'{"prompt":"a","label":"1"}\n{"prompt":"\xe4\xb8', {2: {"DATA016"}}, 1, 0, 1),
    (b'{"prompt":"a","label":"1"}\n{"prompt":"b","lab', {2: {"DATA019"}}, 1, 1, 0),
    (b'{"prompt":"a","label":"1"}', {}, 1, 0, 0),
    (b'{"prompt":"a","prompt":"b","label":"1"}\n', {1: {"DATA017"}}, 1, 0, 0),
    (b'{"prompt":"a","label":"1","metadata":{"k":1,"k":2}}\n', {1: {"DATA017"}}, 1, 0, 0),
    (b'{"prompt":"a","label":Infinity}\n', {1: {"DATA018"}}, 1, 0, 0),
    (b'{"prompt":"a","label":"1","n":' + b"9" * 5000 + b"}\n", {1: {"DATA026"}}, 0, 0, 1),
    (b'{"prompt":"a","label":"1","n":' + b"[" * 5000 + b"]" * 5000 + b"}\n", {1: {"DATA027"}}, 0, 0, 1),
    (b'{"prompt":"a","label":"1","d":' + b"[" * 300 + b"]" * 300 + b"}\n", {}, 1, 0, 0),
    (b'{"prompt":"a\\ud800","label":"1"}\n', {1: {"DATA028"}}, 1, 0, 0),
    (b'{"prompt":"a","label":"1","note":"x\\u003ay"}\n', {}, 1, 0, 0),
    (b'[\n  {"prompt": "a", "label": "1"},\n  {"prompt": "b", "label": "2"}\n]\n',
     {1: {"DATA022"}, 2: {"DATA001"}, 4: {"DATA001"}}, 1, 3, 0),
    (b'[{"prompt": "a", "label": "1"}]\n', {1: {"DATA002"}}, 0, 0, 1),
], ids=str)
def test_reader_mirrors_slime_line_by_line(content, expected, used, skipped, crash):
    report = check_bytes(content, "d.jsonl", PROMPT_LABEL)
    found = {line: found for line, found in codes(report).items() if line is not None}
    assert found == expected
    s = report.summary
    assert (s.rows_used, s.rows_skipped, s.rows_crash) == (used, skipped, crash)
    assert s.would_fail == bool(skipped or crash)


def test_big_integers_keep_pythons_exact_value():
    report = check_bytes(b'{"prompt":"a","label":123456789012345678901234567890}\n', "d.jsonl", PROMPT_LABEL)
    assert report.summary.label_types == {"number": 1} and report.summary.findings_by_code == {"DATA020": 1}
    assert "123456789012345678901234567890" in report.summary.samples[0].text


def test_mixed_problems_fixture_gets_one_finding_per_bad_line():
    report = check_path(FIXTURES / "mixed_problems.jsonl", PROMPT_LABEL)
    per_line = {line: c for line, c in codes(report).items() if line is not None}
    assert per_line == {
        2: {"DATA006"}, 3: {"DATA001"}, 4: {"DATA002"}, 5: {"DATA003"}, 6: {"DATA005"}, 7: {"DATA007"},
        8: {"DATA010"}, 9: {"DATA011"}, 10: {"DATA012"}, 11: {"DATA017"}, 12: {"DATA018"}, 14: {"DATA004"},
        16: {"DATA011"},
    }
    s = report.summary
    assert (s.lines, s.blank_lines, s.rows, s.rows_used, s.rows_skipped, s.rows_crash) == (16, 1, 15, 6, 1, 8)
    assert s.object_rows == 13  # line 3 is not JSON, line 4 is a list
    assert s.prompt_format == "mixed" and s.flags_to_add == ["--apply-chat-template"]
    assert all(f.card == "data-formats" and f.source for f in report.findings)


def test_good_fixtures_pass_with_the_right_flags():
    text = check_path(FIXTURES / "text_ok.jsonl", PROMPT_LABEL)
    chat = check_path(FIXTURES / "chat_ok.jsonl", CHAT)
    for report in (text, chat):
        assert not report.summary.would_fail and report.summary.rows_used == 10
        assert [f.code for f in report.findings] == []
    assert text.summary.keys == {"label": 10, "metadata": 10, "prompt": 10}
    assert chat.summary.keys == {"label": 10, "prompt": 10, "tools": 4}
    assert chat.summary.label_types == {"number": 10} and chat.summary.prompt_format == "chat"
    assert len(text.summary.samples) == dc.SAMPLE_ROWS


def test_chat_rows_without_the_template_flag_are_one_finding_with_the_count():
    report = check_path(FIXTURES / "chat_ok.jsonl", PROMPT_LABEL)
    chat = [f for f in report.findings if f.code == "DATA010"]
    assert len(chat) == 1 and chat[0].line == 1 and "10 row(s)" in chat[0].message
    assert report.summary.rows_crash == 10 and report.summary.flags_to_add == ["--apply-chat-template"]


def test_wrong_input_key_is_one_clear_finding_with_the_flag():
    report = check_path(FIXTURES / "text_ok.jsonl", DataKeys(label_key="label"))
    key_finding = [f for f in report.findings if f.code == "DATA029"]
    assert len(key_finding) == 1
    assert "slime will read the prompt from 'input' unless you pass --input-key prompt" in key_finding[0].message
    assert report.summary.flags_to_add == ["--input-key prompt"]


@pytest.mark.parametrize(("name", "code"), [
    ("bom_crlf.jsonl", "DATA013"), ("latin1.jsonl", "DATA016"), ("cut_mid_char.jsonl", "DATA016"),
    ("array.json", "DATA021"),
], ids=str)
def test_bad_fixtures_fail_with_the_right_code(name, code):
    report = check_path(FIXTURES / name, PROMPT_LABEL)
    assert code in report.summary.findings_by_code and report.summary.would_fail


def test_cut_mid_character_says_so():
    report = check_path(FIXTURES / "cut_mid_char.jsonl", PROMPT_LABEL)
    assert any("middle of a UTF-8 character" in f.message for f in report.findings)


# ---------------------------------------------------------------- parity with slime's reader ---------------

def read_like_slime(path: Path) -> tuple[int, int, str | None]:
    """Rows, dropped lines and the exception slime's JSONL reader would meet (behaviour of data.py:33-43)."""
    rows = dropped = 0
    try:
        with open(path, encoding="utf-8") as handle:
            for raw in handle:
                text = raw.strip()
                if not text:
                    continue
                try:
                    json.loads(text)
                except json.JSONDecodeError:
                    dropped += 1
                    continue
                rows += 1
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return rows, dropped, type(exc).__name__
    return rows, dropped, None


NASTY_LINES = [
    b'{"a":1}\n', b'\n', b' \t \n', b'\xc2\xa0{"a":1}\xc2\xa0\n', b'{"a":NaN}\n', b'{"a":1,"a":2}\n',
    b'{"a":"\\ud83d"}\n', b'{"a":1}\r\n', b'{"a":\r1}\n', b'[1]\n', b'"s"\n', b'{"a":1} x\n', b'{"a":1e400}\n',
    b'\x0c{"a":1}\n', b'\x1c{"a":2}\x1d\n', b'{"a":"\\u003a"}\n', b'{"a":18446744073709551616}\n', b'{,}\n',
]


@pytest.mark.parametrize("extra", [b"", b'{"a":' + b"1" * 4400 + b"}\n", b"\xff\n", b"[" * 3000 + b"\n"], ids=str)
def test_row_and_drop_counts_match_a_reader_written_like_slimes(tmp_path, extra):
    path = tmp_path / "nasty.jsonl"
    path.write_bytes(b"".join(NASTY_LINES) + extra)
    rows, dropped, exception = read_like_slime(path)
    report = check_path(path, DataKeys(input_key="a"))
    s = report.summary
    if exception is None:
        assert (s.rows, s.rows_skipped) == (rows + dropped, dropped)
    else:
        assert s.would_fail and s.rows_crash >= 1
        assert {"UnicodeDecodeError": "DATA016", "ValueError": "DATA026",
                "RecursionError": "DATA027"}[exception] in s.findings_by_code


# ---------------------------------------------------------------- every row counted once --------------------

WEIRD = (b'{"prompt":"fine","label":"1"}\n{"prompt":5,"label":"1"}\n\xff\xfe bad\r{"prompt":"cr","label":"1"}\r'
         b'[1,2]\r{"x":1}\n')
HOSTILE_FILES = {
    "weird": WEIRD,
    "random-bytes": bytes((i * 131 + 7) % 255 + 1 for i in range(5000)),  # no NUL, so no magic shortcut
    "cr-only": b'{"prompt":"a","label":"1"}\r' * 5 + b"{broken\r\r[3]\r",
    "crlf-and-lone-cr": b'{"prompt":"a","label":"1"}\r\n{"prompt":"b",\r"label":"1"}\r\n\r\n',
    "not-utf8-everywhere": b'{"prompt":"caf\xe9","label":"1"}\n' * 4 + b'{"prompt":"ok","label":"1"}\n',
    "cut-mid-char": b'{"prompt":"a","label":"1"}\n{"prompt":"\xe4\xb8',
    "numbers-and-depth": (b'{"prompt":"a","label":"1","n":' + b"9" * 5000 + b"}\n"
                          + b"[" * 3000 + b"]" * 3000 + b"\n" + b'{"prompt":"a","label":NaN}\n'),
    "not-objects": b'[1]\n"s"\n3\nnull\ntrue\n{"prompt":"a","label":"1"}\n',
    "bom-and-blank": b'\xef\xbb\xbf{"prompt":"a","label":"1"}\n \t \n\n\xef\xbb\xbf{"prompt":"b","label":"1"}\n',
    "json-array": b'[\n  {"prompt": "a", "label": "1"},\n  {"prompt": "b", "label": "2"}\n]\n',
    "long-line": b'{"prompt":"a","label":"1"}\n{"prompt":"' + b"z" * 5000 + b'","label":"1"}\n{"p":1}',
    "chat-no-template": b'{"prompt":[{"role":"user","content":"q"}],"label":"1"}\n' * 3,
    "only-blank": b"\n \n\r\n",
    "nul-bytes": b'{"prompt":"a"}\n\x00\x00\n',
}


def lines_as_slime_splits_them(data: bytes) -> int:
    """Non-blank lines of a file read in text mode (universal newlines), whatever the bytes are."""
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    return sum(1 for line in text if line.strip())


def assert_every_row_counted_once(report: dc.DataReport, data: bytes | None) -> None:
    s = report.summary
    verdicts = s.rows_used + s.rows_skipped + s.rows_crash + s.rows_unchecked + s.rows_outside_slice
    assert verdicts == s.rows, s
    assert 0 <= s.object_rows <= s.rows and s.rows_with_warnings <= s.rows_used
    if data is not None and s.complete and s.file_format == "jsonl":
        assert s.rows == lines_as_slime_splits_them(data)


@pytest.mark.parametrize("keys", [PROMPT_LABEL, CHAT, DataKeys()], ids=str)
@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.name != "README.md"), ids=str)
def test_every_fixture_row_is_counted_exactly_once(name, keys):
    data = (FIXTURES / name).read_bytes()
    assert_every_row_counted_once(check_path(FIXTURES / name, keys), data)


@pytest.mark.parametrize("max_line_bytes", [dc.MAX_LINE_BYTES, 1024], ids=str)
@pytest.mark.parametrize("row_slice", ["", "@[1:3]", "@[-2:]", "@[:-1]", "@[5:2]", "@[0:1]"], ids=str)
@pytest.mark.parametrize("name", sorted(HOSTILE_FILES), ids=str)
def test_every_row_of_a_hostile_file_is_counted_exactly_once(tmp_path, name, row_slice, max_line_bytes):
    data = HOSTILE_FILES[name]
    path = tmp_path / "d.jsonl"
    path.write_bytes(data)
    report = check_path(f"{path}{row_slice}", PROMPT_LABEL, max_line_bytes=max_line_bytes)
    assert_every_row_counted_once(report, data if max_line_bytes > len(data) else None)


def test_the_weird_file_counts_each_of_its_six_rows_once():
    s = check_bytes(WEIRD, "weird.jsonl", PROMPT_LABEL).summary
    assert (s.lines, s.rows, s.rows_used, s.rows_skipped, s.rows_crash) == (3, 6, 2, 0, 4)
    assert s.object_rows == 4


def test_the_keys_table_shares_are_of_the_rows_read_as_objects():
    from core.data.charts import keys_frame

    summary = check_path(FIXTURES / "mixed_problems.jsonl", PROMPT_LABEL).summary
    frame = keys_frame(summary).set_index("key")
    assert (summary.object_rows, frame.loc["prompt", "rows"], frame.loc["prompt", "share"]) == (13, 12, "92%")


def test_a_parquet_file_counts_each_row_once(tmp_path):
    path = tmp_path / "d.parquet"
    write_parquet(path, {"prompt": ["a", "", None, "b"], "label": ["1", None, "3", "4"]})
    report = check_path(f"{path}@[1:]", PROMPT_LABEL)
    assert_every_row_counted_once(report, None)
    assert (report.summary.rows, report.summary.rows_outside_slice) == (4, 1)


# ---------------------------------------------------------------- fast route == validators -------------------

def varied_rows() -> bytes:
    rows = []
    for i in range(300):
        prompt: object = f"question {i}"
        if i % 7 == 0:
            prompt = [{"role": "system", "content": "s"}, {"role": "user", "content": f"q{i}"}]
        if i % 11 == 0:
            prompt = [{"role": "user", "content": ""}]
        if i % 29 == 1:  # right after a plain chat row: the fast route must not reuse its state
            prompt = [{"role": "bot", "content": "q"}]
        if i % 31 == 1:
            prompt = [{"role": "user", "content": "q"}, {"role": "user"}]
        if i % 13 == 0:
            prompt = ""
        row: dict = {"prompt": prompt, "label": [str(i), i, None, "", 1.5, True][i % 6]}
        if i % 5 == 0:
            row["metadata"] = {"source_name": "x"} if i % 10 else "bad"
        if i % 17 == 0:
            row["id"] = i
        if i % 19 == 0:
            row["tools"] = [TOOL]
        if i % 23 == 0:
            del row["label"]
        rows.append(json.dumps(row, separators=(",", ":") if i % 2 else (", ", ": ")).encode())
    return b"\n".join(rows) + b"\n"


def clean_rows(spaced: bool) -> bytes:
    """Rows the fast route should accept as plain, over several blocks."""
    rows = []
    for i in range(1500):
        prompt: object = f"question {i} " * (i % 40 + 1)
        if i % 3 == 0:
            prompt = [{"role": "system", "content": "s" * (i % 5 + 1)}, {"role": "user", "content": f"q{i}"}]
        row: dict = {"prompt": prompt, "label": str(i) if i < 900 else i}
        if i % 4 and i < 1200:
            row["metadata"] = {"source_name": "x", "n": {"deep": [i]}}
        if 600 <= i < 700:
            row["id"] = i
        rows.append(json.dumps(row, separators=(", ", ": ") if spaced else (",", ":")).encode())
    return b"\n".join(rows) + b"\n"


def repeated_label_rows() -> bytes:
    """Issue 22: one finding repeated on many rows (missing, null and blank labels), past the listing cap."""
    rows = []
    for i in range(1200):
        prompt: object = f"question {i}"
        if i % 2:
            prompt = [{"role": "user", "content": f"q{i}"}]
        row: dict = {"prompt": prompt, "label": [MISSING_LABEL, None, "", "  ", str(i)][i % 5]}
        if row["label"] is MISSING_LABEL:
            del row["label"]
        if i % 7 == 0:
            row["metadata"] = {"n": i}
        rows.append(json.dumps(row, separators=(",", ":") if i % 3 else (", ", ": ")).encode())
    return b"\n".join(rows) + b"\n"


MISSING_LABEL = object()


@pytest.mark.parametrize("keys", [PROMPT_LABEL, CHAT, DataKeys(input_key="prompt"), DataKeys(label_key="label"),
                                  DataKeys(input_key="prompt", label_key="prompt", metadata_key="label")], ids=str)
@pytest.mark.parametrize("source", ["varied", "clean", "clean-spaced", "repeated-labels", "text_ok.jsonl",
                                    "chat_ok.jsonl", "mixed_problems.jsonl"], ids=str)
def test_fast_route_gives_the_same_report_as_the_validators(monkeypatch, keys, source):
    """The fast route (plain rows only counted) must report exactly what the validators report."""
    if source.startswith("clean"):
        content = clean_rows(source.endswith("spaced"))
    elif source == "repeated-labels":
        content = repeated_label_rows()
    else:
        content = varied_rows() if source == "varied" else (FIXTURES / source).read_bytes()
    fast = check_bytes(content, "d.jsonl", keys).model_dump()
    monkeypatch.setattr(dc._Checker, "fast_path", False)
    slow = check_bytes(content, "d.jsonl", keys).model_dump()
    fast["summary"].pop("seconds")
    slow["summary"].pop("seconds")
    assert fast == slow


# ---------------------------------------------------------------- big input, bounded memory -----------------

def test_a_50_mb_single_line_is_reported_not_parsed_and_memory_stays_flat(tmp_path):
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as handle:
        handle.write(b'{"prompt":"')
        chunk = b"a" * (1 << 20)
        for _ in range(50):
            handle.write(chunk)
        handle.write(b'","label":"1"}\n{"prompt":"after","label":"1"}\n')
    tracemalloc.start()
    try:
        report = check_path(path, PROMPT_LABEL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < dc.MAX_LINE_BYTES + 8 * 2**20
    s = report.summary
    assert (s.lines, s.rows_used, s.rows_unchecked) == (2, 1, 1)
    (finding,) = [f for f in report.findings if f.code == "DATA025"]
    assert finding.line == 1 and "50.0 MiB" in finding.message and "8 MiB" in finding.message
    assert not s.would_fail


def test_lines_split_across_blocks_are_joined_and_long_ones_capped():
    long_row = b'{"prompt":"' + b"x" * 3000 + b'","label":"1"}'
    rows = [b'{"prompt":"%d","label":"1"}' % i + b" " * (i * 7 % 977) for i in range(400)]
    rows[200] = long_row
    report = check_bytes(b"\n".join(rows) + b"\n", "d.jsonl", PROMPT_LABEL, max_line_bytes=2048)
    assert sum(len(r) + 1 for r in rows) > 2 * dc.BLOCK_BYTES
    assert codes(report) == {201: {"DATA025"}}, codes(report)
    assert (report.summary.lines, report.summary.rows_used, report.summary.rows_unchecked) == (400, 399, 1)


def test_a_long_last_line_without_newline_is_capped():
    report = check_bytes(b'{"prompt":"a","label":"1"}\n{"prompt":"' + b"y" * (3 * dc.BLOCK_BYTES), "d.jsonl",
                         PROMPT_LABEL, max_line_bytes=dc.BLOCK_BYTES)
    assert codes(report) == {2: {"DATA025"}, None: {"DATA020"}}


def test_findings_are_capped_per_code_with_counts_of_the_rest():
    report = check_bytes(b"{broken\n" * 50 + b'{"prompt":"a","label":"1"}\n', "d.jsonl", PROMPT_LABEL)
    listed = [f for f in report.findings if f.code == "DATA001"]
    assert len(listed) == dc.MAX_LISTED_PER_CODE
    assert report.summary.findings_by_code["DATA001"] == 50
    assert report.summary.omitted_by_code == {"DATA001": 50 - dc.MAX_LISTED_PER_CODE}
    assert "30 more DATA001" in render_report_text(report)


# ---------------------------------------------------------------- row slices ------------------------------

@pytest.mark.parametrize("bounds", [(None, None), (0, 3), (2, None), (-3, None), (None, -2), (-4, -1), (1, -1),
                                    (5, 2), (-100, 100), (3, 3)], ids=str)
@pytest.mark.parametrize("rows", [0, 1, 4, 9], ids=str)
def test_row_tally_counts_exactly_the_rows_python_slicing_selects(bounds, rows):
    row_slice = slice(*bounds)
    verdicts = [list(dc.Verdict)[i % 3] for i in range(rows)]
    tally = judge._RowTally(row_slice)
    for verdict in verdicts:
        tally.add(verdict)
    counts = tally.finish()
    for verdict in dc.Verdict:
        assert counts[verdict] == verdicts[row_slice].count(verdict)
    assert tally.outside == rows - len(verdicts[row_slice])


def test_a_row_slice_in_the_path_limits_what_counts(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"prompt":"a","label":"1"}\n' * 5 + b'{"prompt":"b"}\n' + b"{bad\n")
    first_five = check_path(f"{path}@[0:5]", PROMPT_LABEL)
    assert first_five.summary.row_slice == "[0:5]" and not first_five.summary.would_fail
    assert first_five.summary.rows_used == 5 and first_five.summary.rows_skipped == 0
    last_two = check_path(f"{path}@[-2:]", PROMPT_LABEL)
    assert (last_two.summary.rows_used, last_two.summary.rows_crash, last_two.summary.rows_skipped) == (1, 1, 1)


# ---------------------------------------------------------------- bad files -------------------------------

def test_missing_directory_and_device_paths_raise_clear_errors(tmp_path):
    with pytest.raises(CheckError, match="no such file or folder"):
        check_path(tmp_path / "nope.jsonl")
    with pytest.raises(CheckError, match="is a directory"):
        check_path(tmp_path)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.jsonl"
        os.mkfifo(fifo)
        with pytest.raises(CheckError, match="not a regular file"):
            check_path(fifo)


@pytest.mark.parametrize(("name", "content", "code"), [
    ("d.jsonl", b"", "DATA023"),
    ("d.jsonl", b"\x00\x01\x02binary", "DATA024"),
    ("d.jsonl", b"\xff\xfe{\x00}\x00", "DATA024"),
    ("d.jsonl", b"\n\n\n", "DATA039"),
], ids=str)
def test_empty_and_binary_files_fail_clearly(name, content, code):
    report = check_bytes(content, name, PROMPT_LABEL)
    assert code in report.summary.findings_by_code and report.summary.would_fail


RANDOM_BYTES = bytes((i * 7919 + i // 3) % 256 for i in range(3000))  # holds NUL bytes


@pytest.mark.parametrize(("name", "content", "code", "line"), [
    pytest.param("x.jsonl", RANDOM_BYTES, "DATA024", None, id="random-binary"),
    pytest.param("x.jsonl", bytes((i * 131 + 7) % 255 + 1 for i in range(3000)), "DATA016", 1,
                 id="random-without-nul"),
    pytest.param("x.jsonl", b"", "DATA023", None, id="empty"),
    pytest.param("x.jsonl", b"\n \n\n", "DATA039", None, id="blank-lines-only"),
    pytest.param("x.jsonl", b"{oops\n{broken\n", "DATA039", None, id="every-line-dropped"),
    pytest.param("x.json", b'{"prompt":"a","label":"1"}\n', "DATA021", None, id="json-name"),
    pytest.param("x.JSONL", RANDOM_BYTES, "DATA021", None, id="upper-case-name-binary"),
    pytest.param("x.jsonl", b'{"prompt":"a","label":"1"}\n{"prompt":"caf\xe9","label":"1"}\n', "DATA016", 2,
                 id="latin1-line-2"),
    pytest.param("x.parquet", b"PAR1 not really parquet", "DATA037", None, id="bad-parquet"),
])
def test_a_file_slime_would_stop_on_at_start_up_says_so_in_the_headline(name, content, code, line):
    """The summary's headline and would_fail agree with the file-level finding, whatever the row counts."""
    if code == "DATA037":
        pytest.importorskip("pyarrow")
    report = check_bytes(content, name, PROMPT_LABEL)
    s = report.summary
    finding = next(f for f in report.findings if f.code == code)
    assert s.would_fail and s.stops_at_start == finding.message and s.stops_at_line == line
    text = render_report_text(report)
    where = f" at line {line}" if line else ""
    headline = text.splitlines()[1]  # the line under the file name
    phrase = "slime would have no row to train on" if code in ("DATA023", "DATA039") else \
        "slime would stop at start-up"
    assert headline.startswith(f"  {phrase}{where}: {finding.message}")
    assert text.endswith(f"RESULT: {phrase} (exit 1)")
    assert "\n  slime would use" not in text


WHOLE_FILE_KEY_AND_COUNT_CODES = {"DATA006", "DATA020", "DATA029", "DATA030", "DATA031", "DATA039"}


def test_a_file_of_non_utf8_lines_is_one_finding_and_no_follow_ons():
    """slime stops at the first such byte: say it once, no verdicts on keys of rows it never reads."""
    report = check_bytes(b'{"prompt":"caf\xe9","label":"1"}\n' * 5, "d.jsonl", PROMPT_LABEL)
    s = report.summary
    (finding,) = report.findings
    assert finding.code == "DATA016" and finding.line == 1 and "4 later line(s)" in finding.message
    assert s.findings_by_code == {"DATA016": 1} and s.flags_to_add == []
    assert (s.stops_at_line, s.stops_at_start) == (1, finding.message) and s.would_fail
    assert (s.rows, s.rows_crash, s.object_rows) == (5, 5, 0)


@pytest.mark.parametrize("bad_line", [
    pytest.param(b'{"question":"caf\xe9"}\n', id="latin1"),
    pytest.param(b'{"question":"a"}\r\xff\r\xfe\n', id="two-bad-pieces-on-one-line"),
    pytest.param(b'{"question":"' + b"\xe9" * 3000 + b'"}\n', id="over-the-line-cap"),
])
def test_after_non_utf8_bytes_the_whole_file_key_findings_are_left_out(bad_line):
    rows = b'{"question":"a","answer":"1"}\n' * 3
    clean = check_bytes(rows, "d.jsonl", PROMPT_LABEL, max_line_bytes=1024)
    assert {"DATA029", "DATA006"} <= set(clean.summary.findings_by_code)  # the keys are wrong...
    report = check_bytes(rows + bad_line + rows, "d.jsonl", PROMPT_LABEL, max_line_bytes=1024)
    whole_file = {f.code for f in report.findings if f.line is None}
    assert not whole_file & WHOLE_FILE_KEY_AND_COUNT_CODES  # ...but slime stops before it reads a row
    (finding,) = [f for f in report.findings if f.code == "DATA016"]
    assert finding.line == 4 and "later line" not in finding.message
    assert report.summary.stops_at_line == 4 and report.summary.flags_to_add == []
    assert_every_row_counted_once(report, None)


def test_a_refused_name_does_not_hide_the_key_findings():
    report = check_bytes(b'{"question":"a","answer":"1"}\n' * 3, "d.json", PROMPT_LABEL)
    assert report.summary.stops_at_start.startswith("The name has '.json'")
    assert "DATA029" in report.summary.findings_by_code


def test_the_first_start_up_stop_is_the_headline():
    report = check_bytes(b'{"prompt":"caf\xe9","label":"1"}\n', "x.txt", PROMPT_LABEL)
    assert report.summary.stops_at_start.startswith("The name has '.txt'")
    assert "row by row, slime would use 0, skip 0 line(s), crash on 1 row(s)" in render_report_text(report)


def test_rows_with_problems_alone_do_not_stop_slime_at_start_up():
    report = check_path(FIXTURES / "mixed_problems.jsonl", PROMPT_LABEL)
    assert report.summary.would_fail and report.summary.stops_at_start is None
    assert "slime would use 6, skip 1 line(s), crash on 8 row(s)" in render_report_text(report)


def test_a_parquet_file_under_a_jsonl_name_stops_slime_but_its_rows_are_checked(tmp_path):
    path = tmp_path / "d.parquet"
    write_parquet(path, {"prompt": ["a", "b"], "label": ["1", "2"]})
    report = check_bytes(path.read_bytes(), "train.jsonl", PROMPT_LABEL)
    s = report.summary
    assert s.file_format == "parquet" and s.rows_used == 2 and s.would_fail
    assert s.stops_at_start.startswith("This is a parquet file under another name")
    sliced = check_path(f"{path}@[0:1]", PROMPT_LABEL)  # the slice is not part of the name's ending
    assert sliced.summary.stops_at_start is None and "DATA024" not in sliced.summary.findings_by_code
    assert (sliced.summary.rows_used, sliced.summary.rows_outside_slice) == (1, 1)


def test_a_zip_file_is_named_as_such():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("train.jsonl", '{"prompt":"a"}\n')
    report = check_bytes(buffer.getvalue(), "train.jsonl", PROMPT_LABEL)
    (finding,) = report.findings
    assert finding.code == "DATA024" and "zip archive" in finding.message and report.summary.would_fail


class FailingStream(io.BytesIO):
    """A file that goes away after the first block."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads > 2:  # the first read is the peek at the head
            raise OSError(116, "Stale file handle")
        return super().read(size)


def test_a_file_that_vanishes_mid_read_gives_a_partial_report():
    data = b'{"prompt":"a","label":"1"}\n' * 10000
    report = check_stream(FailingStream(data), "d.jsonl", PROMPT_LABEL, size=len(data))
    s = report.summary
    assert not s.complete and "DATA034" in s.findings_by_code and 0 < s.rows_used < 10000
    assert "Stale file handle" in next(f.message for f in report.findings if f.code == "DATA034")


def test_a_file_that_changes_size_is_flagged():
    data = b'{"prompt":"a","label":"1"}\n' * 3
    report = check_stream(io.BytesIO(data), "d.jsonl", PROMPT_LABEL, size=len(data) + 100)
    assert "DATA035" in report.summary.findings_by_code


# ---------------------------------------------------------------- parquet --------------------------------

def write_parquet(path: Path, columns: dict) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)


def test_parquet_rows_are_checked_like_jsonl(tmp_path):
    path = tmp_path / "d.parquet"
    write_parquet(path, {"prompt": ["a", "", None], "label": ["1", None, "3"]})
    report = check_path(path, PROMPT_LABEL)
    s = report.summary
    assert s.file_format == "parquet" and (s.rows, s.rows_used, s.rows_crash) == (3, 2, 1)
    assert codes(report) == {2: {"DATA005", "DATA007"}, 3: {"DATA003"}, None: {"DATA020"}}


def test_parquet_without_the_label_column_crashes_every_row(tmp_path):
    path = tmp_path / "d.parquet"
    write_parquet(path, {"prompt": ["a"] * 10})
    report = check_path(path, PROMPT_LABEL)
    assert report.summary.rows_crash == 10 and report.summary.would_fail
    assert "DATA006" in report.summary.findings_by_code


def test_unreadable_parquet_and_missing_pyarrow_are_clear(monkeypatch):
    pytest.importorskip("pyarrow")
    report = check_bytes(b"PAR1 this is not really parquet", "d.parquet", PROMPT_LABEL)
    assert "DATA037" in report.summary.findings_by_code and report.summary.would_fail
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    report = check_bytes(b"PAR1....", "d.parquet", PROMPT_LABEL)
    assert "DATA036" in report.summary.findings_by_code and not report.summary.complete


# ---------------------------------------------------------------- reporters -----------------------------

def test_json_report_has_exactly_the_launch_checker_shape():
    report = check_path(FIXTURES / "mixed_problems.jsonl", PROMPT_LABEL)
    out = json.loads(json.dumps(report.to_json()))
    assert list(out) == ["findings", "summary"]
    assert all(list(f) == ["code", "severity", "message", "line", "fix", "source"] for f in out["findings"])
    assert out["summary"]["rows_crash"] == 8 and out["summary"]["keys"]["prompt"] == 12


def test_text_report_ends_with_the_verdict():
    text = render_report_text(check_path(FIXTURES / "text_ok.jsonl", PROMPT_LABEL))
    assert "slime would use 10, skip 0 line(s), crash on 0 row(s)" in text
    assert text.endswith("RESULT: no row slime would skip or crash on")


# ---------------------------------------------------------------- hostile input (issue 15) ------------------

@pytest.mark.parametrize("bounds", ["9" * 5000 + ":", ":-" + "9" * 4301, "-:", "99999999999999999999:"])
def test_row_slices_slime_cannot_read_are_a_clear_message(tmp_path, bounds):
    data = tmp_path / "x.jsonl"
    data.write_text('{"input": "a"}\n')
    with pytest.raises(CheckError, match="slime stops at start-up with ValueError"):
        check_path(f"{data}@[{bounds}]", DataKeys())
    assert check_extension(f"x.jsonl@[{bounds}]") is None


def test_a_huge_negative_row_slice_is_read_like_slime(tmp_path):
    data = tmp_path / "x.jsonl"
    data.write_text('{"input": "a"}\n{"input": "b"}\n')
    report = check_path(f"{data}@[-{'9' * 4000}:]", DataKeys())
    assert report.summary.rows_used == 2


@pytest.mark.parametrize("value", ["[" * 100_000, "[" * 5000, '{"a":' * 1500 + "1" + "}" * 1500])
def test_deeply_nested_multimodal_keys_are_refused_in_words(value):
    with pytest.raises(ValidationError) as exc:
        DataKeys(multimodal_keys=value)
    from core.data.rules import settings_errors

    message = settings_errors(exc.value)[0]
    assert message.startswith("--multimodal-keys") and "Value error" not in message


@pytest.mark.parametrize(("data", "keys"), [
    (b'{"input":"x","\\ud800k":1}\n', DataKeys()),
    (b'{"input":"x"}\n', DataKeys(multimodal_keys='{"image":"\\ud800"}')),
    (b'{"input":"x\\udfff"}\n', DataKeys(input_key="\udcff")),
], ids=["key", "multimodal-keys", "input-key"])
def test_lone_surrogates_never_reach_the_output(data, keys):
    report = check_bytes(data, "d\udcff.jsonl", keys)
    render_report_text(report).encode("utf-8")
    json.dumps(report.to_json(), ensure_ascii=False).encode("utf-8")


def test_a_one_element_per_line_json_array_keeps_its_last_element_and_says_so():
    report = check_bytes(b'[\n{"prompt":"a","label":"1"},\n{"prompt":"b","label":"2"}\n]\n', "d.jsonl", PROMPT_LABEL)
    s = report.summary
    assert (s.rows_used, s.rows_skipped) == (1, 3)
    message = next(f.message for f in report.findings if f.code == "DATA022")
    assert "(the last one) is kept" in message and "every line" not in message.split(":")[0]


def test_an_empty_dataset_says_when_slime_stops_and_when_it_waits():
    report = check_bytes(b"", "d.jsonl", PROMPT_LABEL)
    message = report.summary.stops_at_start
    assert "--num-epoch" in message and "prompt-length limit" in message and "never finishes" in message


def test_a_message_without_content_under_multimodal_keys_is_a_start_up_keyerror():
    keys = DataKeys(input_key="prompt", apply_chat_template=True, multimodal_keys='{"image": "images"}')
    report = check_bytes(b'{"prompt":[{"role":"user"}],"images":[]}\n', "d.jsonl", keys)
    finding = next(f for f in report.findings if f.code == "DATA032")
    assert "KeyError" in finding.message and report.summary.rows_crash == 1


def test_random_bytes_names_and_settings_never_raise_and_always_print():
    """Property: whatever the bytes, the name (row slice included) and the settings, the check ends in a
    report whose text and JSON can be encoded, or in a ValidationError / CheckError message."""
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    from core.data.rules import RowSliceError

    names = st.one_of(st.text(max_size=30), st.builds(lambda a, b: f"d.jsonl@[{a}:{b}]",
                                                      st.from_regex(r"-?[0-9]{0,6000}", fullmatch=True),
                                                      st.from_regex(r"-?[0-9]{0,30}", fullmatch=True)))
    rows = st.lists(st.one_of(st.binary(max_size=200), st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
        max_leaves=20).map(lambda v: json.dumps(v).encode())), max_size=12)

    @hypothesis.settings(max_examples=150, deadline=None)
    @hypothesis.given(names, rows, st.text(max_size=40), st.one_of(st.none(), st.text(max_size=60)))
    def run(name, lines, input_key, multimodal):
        try:
            keys = DataKeys(input_key=input_key or "input", multimodal_keys=multimodal)
        except ValidationError:
            return
        try:
            report = check_bytes(b"\n".join(lines), name, keys)
        except RowSliceError:
            return
        render_report_text(report).encode("utf-8")
        json.dumps(report.to_json(), ensure_ascii=False).encode("utf-8")

    run()
