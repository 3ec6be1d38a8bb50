"""The tokenizer step of the data check: our counts equal a direct run of slime's calls (AutoTokenizer +
apply_chat_template + tokenizer(..., add_special_tokens=False)) on tokenizers built here."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from core.cli import main  # noqa: E402
from core.data.rules import DataKeys  # noqa: E402
from core.data.scan import check_bytes, render_report_text  # noqa: E402
from core.data.tokens import LengthSettings, TokenizerUnusable, load_tokenizer  # noqa: E402
from tests.tokenizer_builder import build_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHAT = DataKeys(input_key="prompt", label_key="label", apply_chat_template=True)
TEXT = DataKeys(input_key="prompt", label_key="label")


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "model",
                           config={"max_position_embeddings": 64, "architectures": ["X"]})


@pytest.fixture(scope="module")
def loaded(tok_dir):
    return load_tokenizer(tok_dir)


def jsonl(rows: list) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


ROWS = [
    {"prompt": "hello world", "label": "1"},
    {"prompt": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "what is two plus two?"}],
     "label": "4"},
    {"prompt": "solve the equation x squared minus one equals zero " * 3, "label": "1"},
    {"prompt": "the quick brown fox", "label": "x", "tools": [{"name": "search"}, {"name": "calc"}]},
    {"prompt": "the quick brown fox", "label": "x", "tools": json.dumps([{"name": "search"}])},
    {"prompt": "héllo wörld ✓ 数学", "label": "u"},
]


def direct_counts(tok_dir: Path, rows: list[dict], keys: DataKeys, kwargs: dict | None = None) -> list[int]:
    """What slime computes, called directly (slime/utils/data.py:232-255 and :129-130)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tok_dir), local_files_only=True)
    prompts = []
    for row in rows:
        prompt = row[keys.input_key]
        if keys.apply_chat_template:
            messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
            tools = row.get("tools")
            tools = json.loads(tools) if isinstance(tools, str) else tools
            prompt = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True,
                                                   **(kwargs or {}))
        prompts.append(prompt)
    return [len(ids) for ids in tokenizer(prompts, add_special_tokens=False)["input_ids"]]


def nearest_rank(values: list[int], percent: int) -> int:
    ordered = sorted(values)
    return ordered[max(1, -(-percent * len(ordered) // 100)) - 1]


@pytest.mark.parametrize("kwargs", [None, {"enable_thinking": False}], ids=["plain", "kwargs"])
def test_counts_equal_a_direct_run_of_slimes_calls(tok_dir, loaded, kwargs):
    expected = direct_counts(tok_dir, ROWS, CHAT, kwargs)
    limit = sorted(expected)[3]
    report = check_bytes(jsonl(ROWS), "d.jsonl", CHAT, tokenizer=loaded,
                         lengths=LengthSettings(rollout_max_prompt_len=limit, apply_chat_template_kwargs=kwargs))
    s = report.summary
    assert s.prompt_tokens.model_dump() == {"min": min(expected), "median": nearest_rank(expected, 50),
                                            "p95": nearest_rank(expected, 95), "max": max(expected)}
    over = [(i + 1, n) for i, n in enumerate(expected) if n > limit]
    dropped = [(f.line, f.message) for f in report.findings if f.code == "DATA043"]
    assert [line for line, _ in dropped] == [line for line, _ in over]
    for (_, message), (_, tokens) in zip(dropped, over, strict=True):
        assert f"{tokens:,} tokens" in message and f"{limit:,}" in message
    assert s.dropped_for_length == len(over) and s.rows_used == len(ROWS) - len(over)
    assert s.rows == s.rows_used + s.rows_skipped + s.rows_crash + s.rows_unchecked + s.rows_outside_slice \
        + s.dropped_for_length
    assert s.would_fail and sum(b.rows for b in s.token_histogram) == len(ROWS)
    assert [p.tokens for p in s.rendered_prompts] == expected[:3]
    preview = s.rendered_prompts[0]
    assert preview.text.startswith("<|im_start|>user\nhello world<|im_end|>") and preview.special_tokens[
        "<|im_start|>"] == 2
    assert ("<think>" in preview.text) == bool(kwargs)


def test_string_prompts_without_template_are_counted_raw(tok_dir, loaded):
    rows = [r for r in ROWS if isinstance(r["prompt"], str)]
    expected = direct_counts(tok_dir, rows, TEXT)
    report = check_bytes(jsonl(rows), "d.jsonl", TEXT, tokenizer=loaded,
                         lengths=LengthSettings(rollout_max_prompt_len=max(expected)))
    assert report.summary.prompt_tokens.max == max(expected) and report.summary.dropped_for_length == 0
    assert report.summary.rendered_prompts[0].text == "hello world"


def test_the_limit_defaults_to_context_len_minus_one_and_too_high_a_limit_stops_start_up(loaded):
    rows = [{"prompt": "hello world " * n, "label": "1"} for n in (1, 5, 30)]
    report = check_bytes(jsonl(rows), "d.jsonl", TEXT, tokenizer=loaded,
                         lengths=LengthSettings(rollout_max_context_len=20))
    assert report.summary.prompt_limit == 19 and report.summary.dropped_for_length == 1
    bad = check_bytes(jsonl(rows), "d.jsonl", TEXT, tokenizer=loaded,
                      lengths=LengthSettings(rollout_max_prompt_len=20, rollout_max_context_len=20))
    assert "DATA047" in {f.code for f in bad.findings} and bad.summary.stops_at_start


def test_prompt_plus_response_over_the_models_context(loaded):
    rows = [{"prompt": "hello world " * n, "label": "1"} for n in (1, 2, 20)]
    report = check_bytes(jsonl(rows), "d.jsonl", TEXT, tokenizer=loaded,
                         lengths=LengthSettings(rollout_max_response_len=40))
    s = report.summary
    assert s.context_length == 64 and s.tokenizer.context_length_key == "max_position_embeddings"
    over = [f for f in report.findings if f.code == "DATA046"]
    assert len(over) == 1 and over[0].line == 3 and s.rows_over_context == 1
    assert "= " in render_report_text(report) and "of the model's 64" in render_report_text(report)


def test_slime_skips_the_length_check_when_the_first_prompt_is_a_list(loaded):
    rows = [{"prompt": [{"role": "user", "content": "hi"}], "label": "1"}, {"prompt": "hello " * 50, "label": "1"}]
    report = check_bytes(jsonl(rows), "d.jsonl", TEXT, tokenizer=loaded,
                         lengths=LengthSettings(rollout_max_prompt_len=5))
    assert report.summary.length_check_skipped and report.summary.dropped_for_length == 0
    assert "DATA044" in {f.code for f in report.findings}
    mixed = check_bytes(jsonl(rows[::-1]), "d.jsonl", TEXT, tokenizer=loaded,
                        lengths=LengthSettings(rollout_max_prompt_len=500))
    assert mixed.summary.stops_at_start and mixed.summary.stops_at_line == 2
    assert "DATA045" in {f.code for f in mixed.findings}


def test_a_template_that_raises_is_a_per_row_crash_with_its_own_message(loaded):
    rows = [{"prompt": "hi", "label": "1"},
            {"prompt": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "label": "1"}]
    report = check_bytes(jsonl(rows), "d.jsonl", CHAT, tokenizer=loaded)
    errors = [f for f in report.findings if f.code == "DATA042"]
    assert len(errors) == 1 and errors[0].line == 2 and "roles must alternate" in errors[0].message
    assert report.summary.rows_crash == 1 and report.summary.rows_used == 1


def test_the_row_slice_decides_which_rows_count(loaded):
    rows = [{"prompt": "hello world " * (30 if i % 2 else 1), "label": "1"} for i in range(1200)]
    for bounds, expected in (("[100:200]", 50), ("[-10:]", 5), ("[:-1190]", 5), ("", 600)):
        report = check_bytes(jsonl(rows), "d.jsonl" + (f"@{bounds}" if bounds else ""), TEXT, tokenizer=loaded,
                             lengths=LengthSettings(rollout_max_prompt_len=40),
                             row_slice=_slice(bounds))
        assert report.summary.dropped_for_length == expected, bounds


def _slice(bounds: str) -> slice | None:
    if not bounds:
        return None
    start, stop = bounds.strip("[]").split(":")
    return slice(int(start) if start else None, int(stop) if stop else None)


def test_remote_code_is_refused_before_anything_runs(tmp_path):
    directory = build_tokenizer(tmp_path / "remote")
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["auto_map"] = {"AutoTokenizer": ["evil.Tok", None]}
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    (directory / "evil.py").write_text("raise SystemExit('remote code ran')\n")
    with pytest.raises(TokenizerUnusable, match="never runs code"):
        load_tokenizer(directory)


@pytest.mark.parametrize("make", ["missing", "empty", "garbage"])
def test_unusable_directories_get_a_message(tmp_path, make):
    directory = tmp_path / "t"
    if make != "missing":
        directory.mkdir()
    if make == "garbage":
        (directory / "tokenizer.json").write_text("{not json")
    with pytest.raises(TokenizerUnusable) as exc:
        load_tokenizer(directory)
    assert "Traceback" not in str(exc.value) and len(str(exc.value)) < 600


def test_loading_never_touches_the_network(tok_dir, monkeypatch):
    """No network socket in this process (the tokenizer's worker is reached over a local Unix socket; the
    worker itself loads offline, as the worker's own environment says)."""
    connect = socket.socket.connect

    def refuse(sock, *args, **kwargs):
        if sock.family != socket.AF_UNIX:
            raise AssertionError("network used")
        return connect(sock, *args, **kwargs)

    def refuse_any(*args, **kwargs):
        raise AssertionError("network used")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse_any)
    assert load_tokenizer(tok_dir).info.vocab_size > 256


def test_transformers_loads_only_in_the_tokenizers_worker_and_never_imports_torch(tok_dir):
    """transformers is imported only by the tokenizer's worker process (never by the app's own), and torch
    by neither: the worker's mapped libraries hold the tokenizers library and no torch."""
    code = ("import sys, core.data.scan, core.cli.check_data, core.data.charts; "
            "before = 'transformers' in sys.modules; "
            f"from core.data.tokens import load_tokenizer; loaded = load_tokenizer({str(tok_dir)!r}); "
            "maps = open(f'/proc/{loaded.worker._process.pid}/maps').read(); "
            "print(before, 'transformers' in sys.modules, 'torch' in sys.modules, 'tokenizers' in maps, "
            "'torch' in maps)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False", "True", "False"]


@pytest.mark.parametrize("value", ['{"tools": 1}', "[1]", "{bad", '{"a":' * 5000])
def test_bad_template_kwargs_are_refused_in_words(value):
    with pytest.raises(ValueError) as exc:
        LengthSettings(apply_chat_template_kwargs=value)
    assert "--apply-chat-template-kwargs" in str(exc.value)


def test_cli_json_adds_the_tokenizer_numbers(tok_dir, tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(ROWS))
    expected = direct_counts(tok_dir, ROWS, CHAT)
    code = main(["check-data", str(data), "--input-key", "prompt", "--label-key", "label", "--apply-chat-template",
                 "--tokenizer", str(tok_dir), "--rollout-max-prompt-len", str(max(expected) - 1),
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    summary = out["summary"]
    assert code == 1 and list(out) == ["findings", "summary"]
    assert summary["tokenizer"]["path"] == str(tok_dir)
    assert summary["prompt_tokens"]["max"] == max(expected) and summary["dropped_for_length"] == 1
    assert "--rollout-max-prompt-len" in " ".join(summary["launch_flags"])
    assert any(f["code"] == "DATA043" for f in out["findings"])


def test_cli_with_an_unusable_tokenizer_still_checks_rows_and_exits_2(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_bytes(jsonl(ROWS[:1]))
    code = main(["check-data", str(data), "--input-key", "prompt", "--tokenizer", str(tmp_path / "nothing")])
    out, err = capsys.readouterr()
    assert code == 2 and "DATA048" in out and "was not used" in err and "Traceback" not in err


def test_a_tokenizer_without_a_chat_template_under_apply_chat_template_is_one_start_up_stop(tmp_path):
    loaded = load_tokenizer(build_tokenizer(tmp_path / "plain", chat_template=None))
    report = check_bytes(jsonl(ROWS), "d.jsonl", CHAT, tokenizer=loaded)
    assert [f.code for f in report.findings].count("DATA042") == 1
    assert report.summary.stops_at_start and "no chat template" in report.summary.stops_at_start


def test_uploaded_tokenizer_files_load_and_other_names_are_refused(tok_dir):
    from core.data.tokens import tokenizer_from_files

    files = {name: (tok_dir / name).read_bytes() for name in ("tokenizer.json", "tokenizer_config.json")}
    assert tokenizer_from_files(files).info.chat_template
    with pytest.raises(TokenizerUnusable, match="Only tokenizer.json"):
        tokenizer_from_files({**files, "tokenizer.py": b"import os"})
    with pytest.raises(TokenizerUnusable, match="Upload tokenizer.json"):
        tokenizer_from_files({"tokenizer_config.json": files["tokenizer_config.json"]})
