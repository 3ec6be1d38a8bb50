"""Issue 22, defects 2, 3 and 8: chat templates run bounded in the tokenizer's worker process, every
tokenizer file is read under the roots rule, and token batches are bounded by characters.

Caps are small here (2 s, 256 MB) so that every reproducer ends quickly and safely."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from core.data import tokens as tokens_module  # noqa: E402
from core.data.rules import DataKeys  # noqa: E402
from core.data.scan import check_bytes  # noqa: E402
from core.data.tokenizer_worker import TemplateLimits  # noqa: E402
from core.data.tokens import LengthSettings, TokenizerUnusable, load_tokenizer  # noqa: E402
from tests.tokenizer_builder import CHAT_TEMPLATE, build_tokenizer  # noqa: E402

CHAT = DataKeys(input_key="prompt", label_key="label", apply_chat_template=True)
SMALL = TemplateLimits(seconds=2, memory_mb=256)

HOSTILE = {  # the reproducers of the issue, each as a whole chat template
    "nested-loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x", "time"),
    "string-times-1e9": ("{{ 'x' * 10**9 }}", "memory"),
    "doubling-namespace": ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}"
                           "{% endfor %}{{ ns.s }}", "memory"),
    "list-times-1e9": ("{{ ([0] * 10**9) | length }}", "memory"),
    "ten-megabyte-output": ("{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}", "output"),
}
WORDS = {"time": "ran for over 2 s", "memory": "more than 256 MB of memory", "output": "output passed"}


def rows(n: int, content: str = "hello world") -> bytes:
    return b"".join(json.dumps({"prompt": [{"role": "user", "content": f"{content} {i}"}], "label": "1"}).encode()
                    + b"\n" for i in range(n))


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_template_is_stopped_with_its_file_and_the_bound_named(tmp_path, name):
    template, bound = HOSTILE[name]
    loaded = load_tokenizer(build_tokenizer(tmp_path / name, chat_template=template), limits=SMALL)
    started = time.monotonic()
    report = check_bytes(rows(6), "d.jsonl", CHAT, tokenizer=loaded)
    elapsed = time.monotonic() - started
    errors = [f for f in report.findings if f.code == "DATA042"]
    stopped = [f for f in errors if "was stopped on this row" in f.message]
    assert len(stopped) == 3 and [f.line for f in stopped] == [1, 2, 3]  # then the template is run no more
    assert all("tokenizer_config.json" in f.message and WORDS[bound] in f.message for f in stopped)
    [rest] = [f for f in errors if "were not rendered" in f.message]
    assert rest.line == 4 and "3 row(s)" in rest.message
    assert report.summary.rows_crash == 3 and "Traceback" not in " ".join(f.message for f in report.findings)
    assert elapsed < 3 * (SMALL.seconds + 3) + 10  # three stops at most, each bounded
    assert loaded.worker.starts == 1  # stopped from inside: the worker went on
    loaded.worker.close()


def test_a_template_in_chat_template_jinja_is_named_by_that_file(tmp_path):
    directory = build_tokenizer(tmp_path / "jinja", chat_template=None)
    (directory / "chat_template.jinja").write_text(HOSTILE["ten-megabyte-output"][0])
    loaded = load_tokenizer(directory, limits=SMALL)
    assert loaded.info.template_file == "chat_template.jinja"
    report = check_bytes(rows(1), "d.jsonl", CHAT, tokenizer=loaded)
    [error] = [f for f in report.findings if f.code == "DATA042"]
    assert "(chat_template.jinja) was stopped" in error.message and "output passed" in error.message


def test_one_worker_serves_a_whole_check_and_a_stopped_worker_is_replaced(tmp_path):
    """A worker killed mid-row (as when native code aborts it) costs that row only; the check goes on in a
    new worker."""
    slow = ("{% if messages[0]['content'].endswith(' 0') %}{% for i in range(100000) %}{% for j in range(100000) %}"
            "{% endfor %}{% endfor %}{% endif %}{% for m in messages %}{{ m['content'] }}{% endfor %}")
    loaded = load_tokenizer(build_tokenizer(tmp_path / "slow", chat_template=slow),
                            limits=TemplateLimits(seconds=60, memory_mb=256))
    first = loaded.worker._process.pid

    def kill_soon():
        time.sleep(0.5)
        os.kill(first, signal.SIGKILL)

    killer = threading.Thread(target=kill_soon)
    killer.start()
    report = check_bytes(rows(3), "d.jsonl", CHAT, tokenizer=loaded)
    killer.join()
    [error] = [f for f in report.findings if f.code == "DATA042"]
    assert error.line == 1 and "worker process stopped on it" in error.message
    assert report.summary.rows_crash == 1 and report.summary.rows_used == 2
    assert loaded.worker.starts == 2 and loaded.worker._process.pid != first
    loaded.worker.close()


def test_good_rows_around_a_failing_one_are_counted_as_before(tmp_path):
    loaded = load_tokenizer(build_tokenizer(tmp_path / "ok"), limits=SMALL)
    data = rows(2) + json.dumps({"prompt": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
                                 "label": "1"}).encode() + b"\n" + rows(2)
    report = check_bytes(data, "d.jsonl", CHAT, tokenizer=loaded, lengths=LengthSettings(rollout_max_prompt_len=500))
    [error] = [f for f in report.findings if f.code == "DATA042"]
    assert error.line == 3 and "roles must alternate" in error.message
    assert report.summary.rows_used == 4 and report.summary.prompt_tokens is not None
    assert report.summary.rendered_prompts[0].text.startswith("<|im_start|>user\nhello world 0")
    assert loaded.worker.starts == 1


# ---------------------------------------------------------------- defect 3: files under the roots rule ------

def test_a_template_linked_from_outside_the_roots_is_never_read(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the secret text")
    roots = [tmp_path / "roots"]
    directory = build_tokenizer(roots[0] / "model")
    (directory / "chat_template.jinja").symlink_to(secret)
    with pytest.raises(TokenizerUnusable) as refused:
        load_tokenizer(directory, roots=roots)
    assert "chat_template.jinja leads outside the directories this app may read" in str(refused.value)
    assert "secret" not in str(refused.value)


@pytest.mark.parametrize("where", ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                   "additional_chat_templates"])
def test_every_file_the_tokenizer_loads_follows_the_rule(tmp_path, where):
    outside = build_tokenizer(tmp_path / "outside")
    (outside / "additional_chat_templates").mkdir()
    (outside / "additional_chat_templates" / "tool_use.jinja").write_text("{{ 'leaked' }}")
    (outside / "special_tokens_map.json").write_text("{}")
    roots = [tmp_path / "roots"]
    directory = build_tokenizer(roots[0] / "model")
    target = directory / where
    if target.exists():
        target.unlink()
    target.symlink_to(outside / where)
    with pytest.raises(TokenizerUnusable, match="leads outside the directories this app may read"):
        load_tokenizer(directory, roots=roots)


def test_links_inside_the_roots_and_the_command_lines_own_paths_still_load(tmp_path):
    roots = [tmp_path / "roots"]
    shared = build_tokenizer(roots[0] / "shared")
    directory = roots[0] / "model"
    directory.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (directory / name).symlink_to(shared / name)
    assert load_tokenizer(directory, roots=roots).info.chat_template
    assert load_tokenizer(directory).info.chat_template  # no roots: the command line, regular files only


def test_a_fifo_in_a_tokenizer_directory_is_refused_without_blocking(tmp_path):
    directory = build_tokenizer(tmp_path / "fifo")
    os.mkfifo(directory / "special_tokens_map.json")
    with pytest.raises(TokenizerUnusable, match="special_tokens_map.json is a named pipe"):
        load_tokenizer(directory)


# ---------------------------------------------------------------- defect 8: batches bounded by characters ---

def test_batches_are_cut_by_characters_not_only_rows(tmp_path, monkeypatch):
    loaded = load_tokenizer(build_tokenizer(tmp_path / "batches", chat_template=CHAT_TEMPLATE), limits=SMALL)
    sizes: list[tuple[int, int]] = []
    run = loaded.worker.run

    def spy(jobs, kwargs, stops_left=3):
        sizes.append((len(jobs), sum(j.chars for j in jobs)))
        return run(jobs, kwargs, stops_left)

    monkeypatch.setattr(loaded.worker, "run", spy)
    monkeypatch.setattr(tokens_module, "BATCH_CHARS", 50_000)
    long_text = "hello world " * 2_000  # 24,000 characters a row
    report = check_bytes(rows(10, long_text), "d.jsonl", CHAT, tokenizer=loaded)
    assert report.summary.rows_used == 10 and report.summary.prompt_tokens is not None
    assert len(sizes) >= 4 and all(chars < 50_000 + 24_100 for _, chars in sizes)
    assert sum(n for n, _ in sizes) == 10


def test_a_prompt_the_tokenizer_refuses_is_found_among_its_batch(tmp_path):
    """A lone surrogate fails the batch call; the worker counts that batch one by one to find the row."""
    loaded = load_tokenizer(build_tokenizer(tmp_path / "surrogate"), limits=SMALL)
    data = rows(3) + b'{"prompt": [{"role": "user", "content": "bad \\ud800 text"}], "label": "1"}\n' + rows(2)
    report = check_bytes(data, "d.jsonl", CHAT, tokenizer=loaded, lengths=LengthSettings(rollout_max_prompt_len=500))
    refused = [f for f in report.findings if f.code == "DATA045" and "cannot encode" in f.message]
    assert [f.line for f in refused] == [4] and report.summary.stops_at_line == 4
    assert report.summary.prompt_tokens is not None and loaded.worker.starts == 1


def test_the_command_line_takes_the_bounds_and_names_the_stop(tmp_path, capsys):
    from core.cli import main

    directory = build_tokenizer(tmp_path / "cli", chat_template=HOSTILE["nested-loops"][0])
    data = tmp_path / "d.jsonl"
    data.write_bytes(rows(2))
    code = main(["check-data", str(data), "--input-key", "prompt", "--label-key", "label", "--apply-chat-template",
                 "--tokenizer", str(directory), "--template-seconds", "1", "--template-memory-mb", "256",
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    stopped = [f for f in out["findings"] if f["code"] == "DATA042"]
    assert code == 1 and len(stopped) == 2 and all("ran for over 1 s" in f["message"] for f in stopped)
    assert main(["check-data", str(data), "--tokenizer", str(directory), "--template-seconds", "0"]) == 2
    assert "--template-seconds must be more than 0" in capsys.readouterr().err


def test_a_worker_starts_from_a_thread_of_a_script_elsewhere_without_rerunning_its_main(tmp_path):
    """As under Streamlit: the check runs in a thread of a process whose main module is a script file, started
    from another directory, with the app on sys.path only at run time. The worker must not run the script
    again, and must import this copy of the app."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    script = tmp_path / "app.py"
    script.write_text(
        "import sys, threading\n"
        f"sys.path[:0] = [{str(ROOT)!r}]\n"
        "print('main ran')\n"
        "def job():\n"
        "    from pathlib import Path\n"
        "    from tests.tokenizer_builder import build_tokenizer\n"
        "    from core.data.rules import DataKeys\n"
        "    from core.data.scan import check_bytes\n"
        "    from core.data.tokens import load_tokenizer\n"
        f"    loaded = load_tokenizer(build_tokenizer(Path({str(tmp_path / 'tok')!r})))\n"
        "    report = check_bytes(b'{\"prompt\": [{\"role\": \"user\", \"content\": \"hi\"}]}\\n', 'd.jsonl',\n"
        "                         DataKeys(input_key='prompt', apply_chat_template=True), tokenizer=loaded)\n"
        "    print('counted', report.summary.prompt_tokens.max)\n"
        "if __name__ == '__main__':\n"
        "    thread = threading.Thread(target=job)\n"
        "    thread.start()\n"
        "    thread.join()\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("main ran") == 1 and "counted " in done.stdout, done.stdout + done.stderr
