"""`slime-assistant check-data`: exit codes, the JSON shape and the text report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import build_parser, main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"
KEYS = ["--input-key", "prompt", "--label-key", "label"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["check-data", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_data_is_a_registered_command():
    parser = build_parser()
    args = parser.parse_args(["check-data", "x.jsonl", "--apply-chat-template", "--format", "json"])
    assert args.apply_chat_template and args.output_format == "json" and callable(args.func)


@pytest.mark.parametrize(("fixture", "extra", "exit_code"), [
    ("text_ok.jsonl", [], 0),
    ("chat_ok.jsonl", ["--apply-chat-template"], 0),
    ("chat_ok.jsonl", [], 1),
    ("mixed_problems.jsonl", [], 1),
    ("latin1.jsonl", [], 1),
    ("array.json", [], 1),
], ids=str)
def test_exit_code_is_1_exactly_when_slime_would_skip_or_crash(capsys, fixture, extra, exit_code):
    code, out, _ = run(capsys, str(FIXTURES / fixture), *KEYS, *extra)
    assert code == exit_code
    assert out.rstrip().endswith("(exit 1)" if exit_code else "no row slime would skip or crash on")


def test_json_output_is_findings_then_summary(capsys):
    code, out, _ = run(capsys, str(FIXTURES / "mixed_problems.jsonl"), *KEYS, "--format", "json")
    data = json.loads(out)
    assert code == 1 and list(data) == ["findings", "summary"]
    for finding in data["findings"]:
        assert list(finding) == ["code", "severity", "message", "line", "fix", "source"]
        assert finding["source"].endswith("@624b824a")
    by_line = {f["line"]: f["code"] for f in data["findings"] if f["severity"] == "error"}
    assert by_line[2] == "DATA006" and by_line[3] == "DATA001" and by_line[4] == "DATA002"
    summary = data["summary"]
    assert (summary["rows_used"], summary["rows_skipped"], summary["rows_crash"]) == (6, 1, 8)
    assert summary["launch_flags"] == ["--input-key prompt", "--label-key label"]


def test_the_default_input_key_is_input_and_the_fix_is_the_flag(capsys):
    code, out, _ = run(capsys, str(FIXTURES / "text_ok.jsonl"), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 1 and summary["flags_to_add"] == ["--input-key prompt", "--label-key label"]


def test_max_listed_caps_findings_and_counts_the_rest(capsys, tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"prompt": "a", "label": "1"}\n' + "{oops\n" * 7)
    code, out, _ = run(capsys, str(path), *KEYS, "--max-listed", "2", "--format", "json")
    data = json.loads(out)
    assert code == 1 and [f["code"] for f in data["findings"]].count("DATA001") == 2
    assert data["summary"]["omitted_by_code"] == {"DATA001": 5}


@pytest.mark.parametrize(("argv", "message"), [
    (["/no/such/file.jsonl"], "no such file or folder"),
    (["{tmp}"], "is a directory"),
    (["{tmp}/x.jsonl", "--multimodal-keys", "{not json"], "--multimodal-keys must be a JSON object"),
    (["{tmp}/x.jsonl", "--max-line-mb", "0"], "--max-line-mb"),
], ids=str)
def test_files_that_cannot_be_checked_exit_2_with_a_message(capsys, tmp_path, argv, message):
    (tmp_path / "x.jsonl").write_text('{"input": "a"}\n')
    code, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and out == "" and message in err


def test_row_slice_on_the_command_line(capsys, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "a", "label": "1"}\n' * 3 + '{"prompt": "b"}\n')
    assert run(capsys, f"{path}@[0:3]", *KEYS)[0] == 0
    assert run(capsys, str(path), *KEYS)[0] == 1


def test_a_binary_file_named_jsonl_says_slime_stops_at_start_up(capsys, tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(bytes((i * 7919 + i // 3) % 256 for i in range(3000)))
    code, out, _ = run(capsys, str(path), *KEYS)
    assert code == 1
    assert "slime would stop at start-up: The file contains NUL bytes" in out and "DATA024" in out
    assert "skip 0 line(s)" not in out and out.rstrip().endswith("RESULT: slime would stop at start-up (exit 1)")
    code, out, _ = run(capsys, str(path), *KEYS, "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 1 and summary["would_fail"] and summary["stops_at_start"].startswith("The file contains NUL")


def test_hostile_arguments_end_in_one_line_and_exit_2(capsys, tmp_path):
    data = tmp_path / "x.jsonl"
    data.write_text('{"input": "a"}\n')
    for argv in ([f"{data}@[{'9' * 5000}:]"], [str(data), "--multimodal-keys", "[" * 100_000],
                 [str(data), "--multimodal-keys", "[" * 5000]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and not out and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_lone_surrogate_key_prints_in_text_and_json(capsys, tmp_path):
    import io
    import sys

    data = tmp_path / "x.jsonl"
    data.write_bytes(b'{"input":"x","\\ud800k":1}\n')
    for fmt in ("text", "json"):
        code = main(["check-data", str(data), "--multimodal-keys", '{"image": "\\ud800"}', "--apply-chat-template",
                     "--format", fmt])
        out = capsys.readouterr().out
        out.encode("utf-8")
        assert code == 0 and "\\ud800k" in out
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    old, sys.stdout = sys.stdout, strict
    try:
        assert main(["check-data", str(data)]) == 0
    finally:
        sys.stdout = old
