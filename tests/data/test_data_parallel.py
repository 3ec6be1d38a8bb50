"""Reading a file in parts (core/data/parallel.py) gives the very report of one pass, and the fast path's
screens (core/data/rules.py) never pass a value their full rule would find fault with."""

from __future__ import annotations

import json
import os

import pytest

import core.data.parallel as parallel
from core.data.judge import MAX_KEYS
from core.data.rules import (
    MISSING,
    DataKeys,
    LabelState,
    check_label,
    check_metadata,
    check_prompt,
    label_state,
    plain_messages_chars,
    plain_metadata,
)
from core.data.scan import check_path

CHAT = DataKeys(input_key="prompt", label_key="label", apply_chat_template=True)
KEYS = [CHAT, DataKeys(input_key="prompt", label_key="label"), DataKeys(input_key="prompt"),
        DataKeys(input_key="prompt", label_key="prompt", metadata_key="label")]


def bad_line(i: int) -> bytes:
    """One of the lines slime drops, crashes on or warns about, chosen by i."""
    text = f"question {i}"
    kinds = [
        b'{"prompt": "' + text.encode() + b'", "label": ',  # invalid JSON
        json.dumps({"prompt": text}).encode(),  # label missing
        json.dumps({"prompt": text, "label": None}).encode(),  # label null
        json.dumps({"prompt": "  ", "label": "1"}).encode(),  # empty prompt
        b'{"prompt": "' + text.encode() + b'", "label": NaN}',  # NaN
        b'{"prompt": "a", "label": "1", "label": "2"}',  # duplicate key
        json.dumps({"prompt": [{"role": "bot", "content": text}], "label": "1"}).encode(),  # unknown role
        json.dumps({"prompt": text, "label": "1", "metadata": "m"}).encode(),  # metadata a string
        json.dumps({"prompt": text, "label": "1", "tools": {"a": 1}}).encode(),  # tools not a list
        b'{"prompt": "caf\xe9", "label": "1"}',  # not UTF-8
        b'\xef\xbb\xbf{"prompt": "bom", "label": "1"}',  # a byte-order mark mid-file
        b'{"prompt": "crlf", "label": "1"}\r',  # CRLF
        b'{"prompt": "lone", "label": "1"}\r{"prompt": "cr", "label": "1"}',  # a lone carriage return
        b"",  # blank
        b"[1, 2]",  # not an object
        json.dumps({"prompt": 5, "label": "1"}).encode(),  # prompt type
        json.dumps({"prompt": text, "label": "1", "x" * 10: 1}).encode(),  # another key
        b'{"prompt": "' + b"y" * 3000 + b'", "label": "1"}',  # long (over the cap where it is 2048)
    ]
    return kinds[i % len(kinds)]


def good_line(i: int) -> bytes:
    row: dict = {"prompt": f"question {i} " * (i % 9 + 1), "label": str(i), "metadata": {"n": i}}
    if i % 3 == 0:
        row["prompt"] = [{"role": "system", "content": "Answer."}, {"role": "user", "content": f"q{i}"}]
    if i % 4 == 0:
        del row["metadata"]
    return json.dumps(row, separators=(",", ":") if i % 2 else (", ", ": ")).encode()


def errors_everywhere(rows: int = 4000) -> list[bytes]:
    return [bad_line(i // 7) if i % 7 == 3 else good_line(i) for i in range(rows)]


def straddling(lines: list[bytes], parts: int, middle: bytes) -> bytes:
    """The lines joined, with a copy of `middle` (a bad line longer than any of them) across each nominal
    cut size*k/parts, where a reader that cut at fixed offsets would split it."""
    body = b"".join(line + b"\n" for line in lines)
    assert len(middle) > max(map(len, lines)) + 1
    size = len(body) + (parts - 1) * (len(middle) + 1)
    out, taken = b"", 0
    for k in range(1, parts):
        target = size * k // parts - (k - 1) * (len(middle) + 1) - 1  # the cut, in `body`'s offsets
        start = body.rindex(b"\n", 0, target) + 1
        out += body[taken:start] + middle + b"\n"
        taken = start
    out += body[taken:]
    assert len(out) == size
    for k in range(1, parts):
        nominal = size * k // parts
        line_start = out.rindex(b"\n", 0, nominal) + 1
        assert out[line_start:line_start + len(middle) + 1] == middle + b"\n" and line_start < nominal
    return out


MIDDLES = {"invalid-json": b'{"prompt": "cut here", "label": ' + b" " * 3500,
           "over-the-cap": b'{"prompt": "' + b"z" * 9000 + b'", "label": "1"}'}


def report_of(path, keys, processes, **options):
    report = check_path(path, keys, processes=processes, **options).model_dump()
    report["summary"].pop("seconds")
    return report


@pytest.fixture
def small_parts(monkeypatch):
    """Read even small files in parts, and record whether the parts were folded."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    folded: list[bool] = []
    real = parallel.scan_in_parts

    def recording(*args, **kwargs):
        folded.append(real(*args, **kwargs))
        return folded[-1]

    monkeypatch.setattr("core.data.scan.scan_in_parts", recording)
    return folded


@pytest.mark.parametrize("keys", KEYS, ids=str)
@pytest.mark.parametrize(("processes", "per_process"), [(2, 1), (3, 1), (5, 1), (2, 8)], ids=str)
@pytest.mark.parametrize("middle", MIDDLES, ids=str)
def test_parts_give_the_same_report_as_one_pass(tmp_path, monkeypatch, small_parts, keys, processes, per_process,
                                               middle):
    monkeypatch.setattr(parallel, "MIN_PART_BYTES", 1)
    monkeypatch.setattr(parallel, "PARTS_PER_PROCESS", per_process)
    parts = processes * per_process
    path = tmp_path / "d.jsonl"
    path.write_bytes(straddling(errors_everywhere(), parts, MIDDLES[middle]))
    one = report_of(path, keys, 1, max_line_bytes=8192, max_listed=1000)
    assert small_parts == []
    assert report_of(path, keys, processes, max_line_bytes=8192, max_listed=1000) == one
    assert small_parts == [True]
    lines = [f["line"] for f in one["findings"] if f["line"] is not None]
    assert len(lines) > 300 and max(lines) > 0.99 * one["summary"]["lines"] and min(lines) < 10
    middle_code = "DATA001" if middle == "invalid-json" else "DATA025"
    assert one["summary"]["findings_by_code"][middle_code] >= parts - 1


@pytest.mark.parametrize("max_listed", [0, 1, 3])
def test_listed_findings_are_the_first_of_the_file_across_parts(tmp_path, small_parts, max_listed):
    path = tmp_path / "d.jsonl"
    path.write_bytes(straddling(errors_everywhere(900), 2, b'{"prompt": "\xff not UTF-8' + b" " * 3500 + b'"}'))
    one = report_of(path, CHAT, 1, max_listed=max_listed, max_line_bytes=2048)
    assert report_of(path, CHAT, 2, max_listed=max_listed, max_line_bytes=2048) == one
    assert small_parts == [True]


def test_an_unterminated_last_line_and_a_file_starting_with_an_array_stay_the_same(tmp_path, small_parts):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\n\n[\n" + b"".join(good_line(i) + b",\n" for i in range(300)) + b']\n{"prompt": "x", "lab')
    one = report_of(path, CHAT, 1)
    assert "DATA022" in one["summary"]["findings_by_code"] and "DATA019" in one["summary"]["findings_by_code"]
    assert report_of(path, CHAT, 2) == one
    assert small_parts == [True]


def test_a_file_of_blank_lines_before_the_first_cut_is_read_in_one_pass(tmp_path, small_parts):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\n" * 20000 + b"[\n" + b"".join(good_line(i) + b"\n" for i in range(50)))
    one = report_of(path, CHAT, 1)
    assert report_of(path, CHAT, 2) == one
    assert small_parts == []  # slime's json-array rule needs the file's first lines: no parts


def test_more_keys_than_the_summary_keeps_fall_back_to_one_pass(tmp_path, small_parts):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"".join(json.dumps({"prompt": "p", "label": "1", f"k{i}": i}).encode() + b"\n"
                              for i in range(MAX_KEYS + 50)))
    one = report_of(path, CHAT, 1)
    assert report_of(path, CHAT, 2) == one
    assert small_parts == [False]
    assert one["summary"]["other_keys"] > 0


def test_a_part_that_dies_makes_the_check_read_the_file_in_one_pass(tmp_path, small_parts, monkeypatch):
    monkeypatch.setattr(parallel, "_read_parts_in_child", lambda *args: os._exit(3))
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in errors_everywhere(400)))
    one = report_of(path, CHAT, 1, max_line_bytes=2048)
    assert report_of(path, CHAT, 2, max_line_bytes=2048) == one
    assert small_parts == [False]


def test_cuts_are_line_starts_and_a_long_last_line_gets_none(tmp_path):
    path = tmp_path / "d.jsonl"
    data = b"".join(good_line(i) + b"\n" for i in range(200))
    path.write_bytes(data)
    with open(path, "rb") as handle:
        cuts = parallel.line_starts(handle.fileno(), len(data), 4)
    assert len(cuts) == 3 and cuts == sorted(set(cuts))
    assert all(data[cut - 1:cut] == b"\n" for cut in cuts)
    path.write_bytes(b"{}\n" + b"x" * 10_000)
    with open(path, "rb") as handle:
        assert parallel.line_starts(handle.fileno(), 10_003, 2) == []


def test_a_cut_is_looked_for_only_so_far_past_its_offset(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "MAX_SEARCH_BYTES", 1000)
    data = b"{}\n" * 1000 + b"x" * 6000 + b"\n" + b"{}\n" * 1000  # the middle cut falls in the long line
    path = tmp_path / "d.jsonl"
    path.write_bytes(data)
    with open(path, "rb") as handle:
        cuts = parallel.line_starts(handle.fileno(), len(data), 4)
    assert len(cuts) == 2 and all(data[cut - 1:cut] == b"\n" for cut in cuts)
    assert cuts == [3000, 9001]  # the cut inside the long line (nominal 6000) is left out


# ---------------------------------------------------------------- the screens and their rules -------------

VALUES = ["", " ", "\u3000", "x", " x ", None, 0, 1.5, True, [], {}, {"a": 1}, ["x"], MISSING]
MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": ""}, {"role": "bot", "content": "q"},
            {"role": "user"}, {"content": "q"}, {"role": "system", "content": " "}, {"role": "tool", "content": 1},
            {"role": "user", "content": [{"type": "text", "text": "q"}]}, "user", None]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_label_the_screen_calls_given_has_no_finding_and_the_others_have_theirs(value):
    row = {} if value is MISSING else {"label": value}
    problem = check_label(row, CHAT)
    state = label_state(value)
    assert (problem is None) == (state is LabelState.GIVEN)
    if problem is not None:
        assert problem.rule == {LabelState.MISSING: "label-missing"}.get(state, "label-empty")


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_metadata_the_screen_passes_has_no_finding(value):
    row = {} if value is MISSING else {"metadata": value}
    if value is not MISSING and plain_metadata(value):
        assert check_metadata(row, CHAT) is None


@pytest.mark.parametrize("first", range(len(MESSAGES)))
@pytest.mark.parametrize("second", range(len(MESSAGES)))
def test_a_message_list_the_screen_passes_has_no_finding_and_the_same_length(first, second):
    prompt = [MESSAGES[first], MESSAGES[second]]
    chars = plain_messages_chars(prompt)
    fmt, full_chars, problems = check_prompt({"prompt": prompt}, CHAT)
    if chars is not None:
        assert (fmt, full_chars, problems) == ("chat", chars, [])
    assert plain_messages_chars([]) is None and check_prompt({"prompt": []}, CHAT)[2]


@pytest.mark.parametrize("first", [b'\xef\xbb\xbf{"prompt": "bom", "label": "1"}', b"[1,", b"\xff", b"\r"], ids=repr)
def test_the_first_line_of_a_later_part_reads_as_a_line_inside_the_file(tmp_path, small_parts, first):
    """A byte-order mark or an opening '[' on the first line of a part is not the file's first line."""
    data = bytearray(b"".join(good_line(i) + b"\n" for i in range(400)))
    path = tmp_path / "d.jsonl"
    path.write_bytes(data)
    with open(path, "rb") as handle:
        (cut,) = parallel.line_starts(handle.fileno(), len(data), 2)
    end = data.index(b"\n", cut)
    data[cut:end] = first + b" " * (end - cut - len(first))  # same length: the cut stays where it is
    path.write_bytes(bytes(data))
    one = report_of(path, CHAT, 1)
    assert report_of(path, CHAT, 2) == one
    assert small_parts == [True]
    assert any(f["line"] == data[:cut].count(b"\n") + 1 for f in one["findings"])
